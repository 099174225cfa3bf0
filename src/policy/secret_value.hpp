#pragma once
// The bytes of one secret (an API key read from the environment or a file at load time), held
// so that printing them by accident is hard: no conversion to a string, no operator<<, no
// operator==, a to_string() and a GoogleTest printer that say only how long it is, and the
// memory wiped when the value goes away. The bytes are reachable only through reveal(), so
// every place that uses them stands out in review.
//
// Thread safety: immutable after construction; const members may be called concurrently.

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::policy {

class secret_value {
 public:
  secret_value() noexcept = default;
  explicit secret_value(std::string_view bytes);
  secret_value(const secret_value& other);
  secret_value& operator=(const secret_value& other);
  secret_value(secret_value&& other) noexcept;
  secret_value& operator=(secret_value&& other) noexcept;
  ~secret_value();

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  // The secret itself. Hand it only to what must send it upstream (injection) or find it in a
  // response (the redaction engine); never to a log line, an error, a metric or an answer.
  std::string_view reveal() const noexcept { return {data_.get(), size_}; }

  // Compares in time that depends only on the lengths (a reload may tell "rotated" from
  // "unchanged" without a timing oracle on the bytes).
  bool same_as(const secret_value& other) const noexcept;

  // "<secret: 40 bytes>": safe in any message.
  std::string to_string() const;

  // Deleted on purpose: a secret is neither streamed nor compared with ==.
  friend std::ostream& operator<<(std::ostream&, const secret_value&) = delete;
  bool operator==(const secret_value&) const = delete;

  // GoogleTest prints objects without operator<< as raw bytes (which would include a short
  // value's characters); this makes it print to_string() instead.
  friend void PrintTo(const secret_value& value, std::ostream* os);

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
};

}  // namespace airlock::policy
