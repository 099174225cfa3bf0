#include "filters/credentials/query_params.hpp"

#include "filters/validation/text.hpp"

namespace airlock::filters::credentials {

namespace {

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

}  // namespace

std::string percent_encode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (unreserved(c)) {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

void remove_query_param(std::string& target, std::string_view name) {
  const std::size_t q = target.find('?');
  if (q == std::string::npos) return;
  const std::string_view query = std::string_view(target).substr(q + 1);
  std::string kept;
  std::string buf;
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view param = query.substr(start, end - start);
    const std::string_view raw_name = param.substr(0, param.find('='));
    const auto decoded = validation::form_decode(raw_name, buf);
    const std::string_view n = decoded ? *decoded : raw_name;
    if (!param.empty() && n != name && !validation::lenient_name_equal(n, name)) {
      if (!kept.empty()) kept += '&';
      kept += param;
    }
    start = end + 1;
  }
  target.resize(q);
  if (!kept.empty()) {
    target += '?';
    target += kept;
  }
}

void append_query_param(std::string& target, std::string_view name, std::string_view value) {
  const std::size_t q = target.find('?');
  if (q == std::string::npos)
    target += '?';
  else if (q + 1 != target.size())
    target += '&';
  target += percent_encode(name);
  target += '=';
  target += percent_encode(value);
}

}  // namespace airlock::filters::credentials
