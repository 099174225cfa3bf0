#include "policy/secret_reader.hpp"

#include "core/regular_file.hpp"
#include "core/str_cat.hpp"
#include "policy/secrets.hpp"

#include <openssl/crypto.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace airlock::policy {
namespace {

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

bool valid_env_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 255 || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

secret_read check_secret(std::string& raw, std::string_view what) {
  secret_read out;
  std::size_t n = raw.size();
  while (n > 0 && (raw[n - 1] == '\n' || raw[n - 1] == '\r'))
    --n;
  const std::string_view v(raw.data(), n);
  auto fail = [&](std::string message) {
    OPENSSL_cleanse(raw.data(), raw.size());
    out.error = std::move(message);
    return std::move(out);
  };
  if (v.empty()) return fail(core::str_cat(what, " is empty"));
  if (v.size() > max_secret_bytes)
    return fail(core::str_cat(what, " holds more than ", max_secret_bytes, " bytes"));
  if (v.size() < min_secret_bytes)
    return fail(core::str_cat(what, " holds ", v.size(), " bytes; a secret needs at least ",
                              min_secret_bytes,
                              " (every secret is redacted from responses, and a short one would "
                              "cut unrelated text)"));
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f)
      return fail(core::str_cat(what,
                                " holds a control character (a line break inside the value?); "
                                "it could not be sent in a header"));
  }
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  if (blank(v.front()) || blank(v.back()))
    return fail(core::str_cat(what, " starts or ends with white space"));
  out.value = secret_value(v);
  OPENSSL_cleanse(raw.data(), raw.size());
  return out;
}

secret_read read_secret_env(const std::string& variable) {
  const std::string what = core::str_cat("environment variable '", variable, "'");
  const char* value = std::getenv(variable.c_str());
  if (value == nullptr) {
    secret_read out;
    out.error = core::str_cat(what, " is not set");
    return out;
  }
  std::string raw(value);
  return check_secret(raw, what);
}

secret_read read_secret_file(const std::string& path) {
  secret_read out;
  // Not blocking on a FIFO, regular files only (core/regular_file.hpp); the read below is our
  // own, to leave no copy of the value behind.
  const auto opened = core::open_regular_file(path);
  if (opened.problem == core::file_problem::cannot_open) {
    out.error = core::str_cat("cannot read '", path, "': ", opened.error);
    return out;
  }
  if (opened.problem != core::file_problem::none) {
    out.error = core::str_cat("'", path, "' ", opened.error);
    return out;
  }
  const core::unique_fd& f = opened.fd;
  const struct stat& st = opened.st;
  // Read into a buffer of our own (no stdio buffer left holding the bytes), at most the limit
  // plus a CRLF plus one byte to tell "too large".
  const std::size_t cap = max_secret_bytes + 3;
  std::string raw(cap, '\0');
  std::size_t got = 0;
  while (got < cap) {
    const ssize_t n = ::read(f.get(), raw.data() + got, cap - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      OPENSSL_cleanse(raw.data(), raw.size());
      out.error = core::str_cat("cannot read '", path, "': ", std::strerror(e));
      return out;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got == cap) {
    OPENSSL_cleanse(raw.data(), raw.size());
    out.error = core::str_cat("'", path, "' is larger than ", max_secret_bytes, " bytes");
    return out;
  }
  // Shrinking keeps the buffer (no copy is left behind); check_secret wipes it.
  raw.resize(got);
  out = check_secret(raw, core::str_cat("'", path, "'"));
  if (out.ok() && (st.st_mode & 077) != 0)
    out.warning = core::str_cat("'", path, "' is accessible by group or others (mode ",
                                mode_text(st.st_mode), "); run chmod 600 on it");
  return out;
}

}  // namespace airlock::policy
