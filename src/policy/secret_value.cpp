#include "policy/secret_value.hpp"

#include "core/str_cat.hpp"

#include <openssl/crypto.h>

#include <cstring>
#include <ostream>

namespace airlock::policy {
namespace {

std::unique_ptr<char[]> copy_of(std::string_view bytes) {
  if (bytes.empty()) return nullptr;
  auto data = std::make_unique<char[]>(bytes.size());
  std::memcpy(data.get(), bytes.data(), bytes.size());
  return data;
}

}  // namespace

secret_value::secret_value(std::string_view bytes) : data_(copy_of(bytes)), size_(bytes.size()) {}

secret_value::secret_value(const secret_value& other)
    : data_(copy_of(other.reveal())), size_(other.size_) {}

secret_value& secret_value::operator=(const secret_value& other) {
  if (this != &other) *this = secret_value(other);
  return *this;
}

secret_value::secret_value(secret_value&& other) noexcept
    : data_(std::move(other.data_)), size_(other.size_) {
  other.size_ = 0;
}

secret_value& secret_value::operator=(secret_value&& other) noexcept {
  if (this != &other) {
    if (data_) OPENSSL_cleanse(data_.get(), size_);
    data_ = std::move(other.data_);
    size_ = other.size_;
    other.size_ = 0;
  }
  return *this;
}

secret_value::~secret_value() {
  // Freed memory is reused by later allocations (a response buffer, a log line): wipe first.
  if (data_) OPENSSL_cleanse(data_.get(), size_);
}

bool secret_value::same_as(const secret_value& other) const noexcept {
  if (size_ != other.size_) return false;
  if (size_ == 0) return true;
  return CRYPTO_memcmp(data_.get(), other.data_.get(), size_) == 0;
}

std::string secret_value::to_string() const {
  return core::str_cat("<secret: ", size_, " bytes>");
}

void PrintTo(const secret_value& value, std::ostream* os) {
  *os << value.to_string();
}

}  // namespace airlock::policy
