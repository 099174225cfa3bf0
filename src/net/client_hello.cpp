#include "net/client_hello.hpp"

#include <algorithm>
#include <bitset>

namespace airlock::net {
namespace {

// RFC 8446 section 5.1 (TLSPlaintext) and section 4 (Handshake).
constexpr std::uint8_t content_type_handshake = 22;
constexpr std::uint8_t handshake_client_hello = 1;
constexpr std::size_t record_header_size = 5;
constexpr std::size_t handshake_header_size = 4;
constexpr std::size_t max_fragment = std::size_t{1} << 14;
// legacy_version (2) + random (32) + session id length (1) + one cipher suite (2 + 2) +
// one compression method (1 + 1): nothing shorter is a ClientHello.
constexpr std::size_t min_client_hello_body = 41;

constexpr std::uint16_t ext_server_name = 0;  // RFC 6066 section 3
constexpr std::uint16_t ext_alpn = 16;        // RFC 7301 section 3.1
constexpr std::uint8_t name_type_host_name = 0;
// Browsers offer two or three protocols. A list of thousands is an attack on our memory,
// not a client.
constexpr std::size_t max_alpn_protocols = 128;

using bytes = std::span<const std::uint8_t>;

// Bounds-checked big-endian cursor: every read fails instead of running past the end, so
// a lying length field can only ever produce `malformed`.
class reader {
 public:
  explicit reader(bytes data) noexcept : data_(data) {}
  bool empty() const noexcept { return pos_ == data_.size(); }
  std::size_t remaining() const noexcept { return data_.size() - pos_; }

  bool u8(std::size_t& v) noexcept {
    if (remaining() < 1) return false;
    v = data_[pos_++];
    return true;
  }
  bool u16(std::size_t& v) noexcept {
    if (remaining() < 2) return false;
    v = (std::size_t(data_[pos_]) << 8) | data_[pos_ + 1];
    pos_ += 2;
    return true;
  }
  bool take(std::size_t n, bytes& out) noexcept {
    if (remaining() < n) return false;
    out = data_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  bool skip(std::size_t n) noexcept {
    bytes ignored;
    return take(n, ignored);
  }
  // A vector with a one- or two-byte length prefix (RFC 8446 section 3.4).
  bool vec8(bytes& out) noexcept {
    std::size_t n;
    return u8(n) && take(n, out);
  }
  bool vec16(bytes& out) noexcept {
    std::size_t n;
    return u16(n) && take(n, out);
  }

 private:
  bytes data_;
  std::size_t pos_ = 0;
};

std::string to_string(bytes b) {
  return std::string(b.begin(), b.end());
}

// RFC 6066 section 3: ServerNameList server_name_list<1..2^16-1>, each entry a NameType and,
// for host_name, HostName<1..2^16-1>. The list must fill the extension exactly. Entries of
// other name types are skipped on the assumption (made by every implementation) that they
// carry a 16-bit length too. A second host_name is refused: RFC 6066 forbids it, and two
// parsers taking different ones is exactly the confusion this check exists to prevent.
bool parse_server_name(bytes ext, client_hello& out) {
  reader r(ext);
  bytes list;
  if (!r.vec16(list) || !r.empty() || list.empty()) return false;
  reader entries(list);
  while (!entries.empty()) {
    std::size_t type;
    bytes name;
    if (!entries.u8(type) || !entries.vec16(name) || name.empty()) return false;
    if (type != name_type_host_name) continue;
    if (out.server_name) return false;
    out.server_name = to_string(name);
  }
  return true;
}

// RFC 7301 section 3.1: ProtocolNameList<2..2^16-1> of ProtocolName<1..2^8-1>, filling the
// extension exactly.
bool parse_alpn(bytes ext, client_hello& out) {
  reader r(ext);
  bytes list;
  if (!r.vec16(list) || !r.empty() || list.empty()) return false;
  reader names(list);
  while (!names.empty()) {
    bytes name;
    if (!names.vec8(name) || name.empty()) return false;
    if (out.alpn.size() == max_alpn_protocols) return false;
    out.alpn.push_back(to_string(name));
  }
  return true;
}

// RFC 8446 section 4.1.2 (and RFC 5246 section 7.4.1.2, whose hellos may end without an
// extensions block). `body` is exactly the handshake message body.
hello_status parse_body(bytes body, client_hello& out) {
  reader r(body);
  std::size_t major, minor;
  bytes session_id, cipher_suites, compression;
  if (!r.u8(major) || !r.u8(minor) || major != 3 || minor > 4) return hello_status::malformed;
  if (!r.skip(32)) return hello_status::malformed;  // random
  if (!r.vec8(session_id) || session_id.size() > 32) return hello_status::malformed;
  if (!r.vec16(cipher_suites) || cipher_suites.empty() || cipher_suites.size() % 2 != 0) {
    return hello_status::malformed;
  }
  if (!r.vec8(compression) || compression.empty()) return hello_status::malformed;
  if (r.empty()) return hello_status::complete;

  bytes extensions;
  if (!r.vec16(extensions) || !r.empty()) return hello_status::malformed;
  reader e(extensions);
  // RFC 8446 section 4.2: no extension type may appear twice. 8 KiB of stack, and no
  // quadratic scan however many (empty) extensions a hostile hello carries.
  std::bitset<65536> seen;
  while (!e.empty()) {
    std::size_t type;
    bytes data;
    if (!e.u16(type) || !e.vec16(data)) return hello_status::malformed;
    if (seen.test(type)) return hello_status::malformed;
    seen.set(type);
    if (type == ext_server_name && !parse_server_name(data, out)) return hello_status::malformed;
    if (type == ext_alpn && !parse_alpn(data, out)) return hello_status::malformed;
  }
  return hello_status::complete;
}

}  // namespace

const client_hello& client_hello_parser::finish(hello_status status) {
  out_.status = status;
  if (status != hello_status::complete) {
    out_.server_name.reset();
    out_.alpn.clear();
  }
  assembled_ = {};
  return out_;
}

const client_hello& client_hello_parser::parse(bytes data) {
  if (out_.status != hello_status::need_more) return out_;
  // (A caller that handed in less than before broke the contract: fail closed.)
  if (data.size() < pos_) return finish(hello_status::malformed);
  // The handshake message is reassembled from the fragments of consecutive handshake records
  // (RFC 8446 section 5.1: a message may span records, and its 4-byte header may too). In the
  // usual case of one record holding the whole hello, it is parsed in place; otherwise it is
  // copied into `assembled_` as its bytes arrive.
  while (true) {
    if (record_left_ == 0) {
      const std::size_t avail = data.size() - pos_;
      if (avail == 0) return out_;
      // Judge each header byte as soon as it is there, so that "GET " or an SSLv2-compatible
      // hello (first byte >= 0x80) is not_tls at once. In later records the peer has already
      // shown a handshake record, so a bad header is malformed.
      const hello_status bad = records_ == 0 ? hello_status::not_tls : hello_status::malformed;
      // No room left for another record within the bound. Checked before waiting for the
      // header, so that max_client_hello_bytes of input always give a final answer.
      if (pos_ + record_header_size + 1 > max_client_hello_bytes)
        return finish(hello_status::malformed);
      if (data[pos_] != content_type_handshake) return finish(bad);
      // Record layer version: 0x0300..0x0304 (TLS 1.3 clients send 0x0301 or 0x0303).
      if (avail >= 2 && data[pos_ + 1] != 3) return finish(bad);
      if (avail >= 3 && data[pos_ + 2] > 4) return finish(bad);
      if (avail < record_header_size) return out_;
      const std::size_t length = (std::size_t(data[pos_ + 3]) << 8) | data[pos_ + 4];
      // Zero-length handshake fragments are forbidden; a plaintext record holds at most 2^14.
      if (length == 0 || length > max_fragment) return finish(hello_status::malformed);
      if (pos_ + record_header_size + length > max_client_hello_bytes)
        return finish(hello_status::malformed);
      pos_ += record_header_size;
      record_left_ = length;
      ++records_;
    }
    bytes fragment = data.subspan(pos_, std::min(record_left_, data.size() - pos_));
    if (fragment.empty()) return out_;
    pos_ += fragment.size();
    record_left_ -= fragment.size();

    while (header_have_ < handshake_header_size && !fragment.empty()) {
      header_[header_have_++] = fragment.front();
      fragment = fragment.subspan(1);
      if (header_[0] != handshake_client_hello) return finish(hello_status::malformed);
      if (header_have_ == handshake_header_size) {
        body_size_ = (std::size_t(header_[1]) << 16) | (std::size_t(header_[2]) << 8) | header_[3];
        if (body_size_ < min_client_hello_body ||
            body_size_ > max_client_hello_bytes - record_header_size - handshake_header_size) {
          return finish(hello_status::malformed);
        }
      }
    }
    if (header_have_ == handshake_header_size) {
      if (assembled_.empty() && fragment.size() >= body_size_)
        return finish(parse_body(fragment.first(body_size_), out_));
      const std::size_t want = std::min(body_size_ - assembled_.size(), fragment.size());
      if (assembled_.empty()) assembled_.reserve(std::min(body_size_, data.size()));
      assembled_.insert(assembled_.end(), fragment.begin(), fragment.begin() + want);
      if (assembled_.size() == body_size_) return finish(parse_body(assembled_, out_));
    }
    // A whole record taken and the hello still not complete: no more records than the bound.
    if (record_left_ == 0 && records_ == max_client_hello_records)
      return finish(hello_status::malformed);
  }
}

client_hello parse_client_hello(bytes data) {
  client_hello_parser parser;
  return parser.parse(data);
}

}  // namespace airlock::net
