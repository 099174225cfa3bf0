#include "filters/redaction/content_coding.hpp"

#include "core/ascii.hpp"

#include <string>

namespace airlock::filters::redaction {
using core::iequals;

content_coding parse_content_encoding(std::string_view value) noexcept {
  content_coding result = content_coding::identity;
  while (true) {
    const auto comma = value.find(',');
    const std::string_view item = core::trim_ows(value.substr(0, comma));
    if (!item.empty() && !iequals(item, "identity")) {
      content_coding c;
      if (iequals(item, "gzip") || iequals(item, "x-gzip"))
        c = content_coding::gzip;
      else if (iequals(item, "deflate"))
        c = content_coding::deflate;
      else
        return content_coding::unsupported;
      if (result != content_coding::identity) return content_coding::unsupported;  // stacked
      result = c;
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return result;
}

content_coding parse_content_encoding(const boost::beast::http::fields& head) {
  std::string joined;
  for (const auto& f : head) {
    if (f.name() != boost::beast::http::field::content_encoding) continue;
    if (!joined.empty()) joined += ',';
    joined += f.value();
  }
  return parse_content_encoding(std::string_view(joined));
}

bool grpc_compressed(const boost::beast::http::fields& head) {
  for (const auto& f : head)
    if ((iequals(f.name_string(), "grpc-encoding") ||
         iequals(f.name_string(), "connect-content-encoding")) &&
        !iequals(core::trim_ows(f.value()), "identity"))
      return true;
  return false;
}

content_coding grpc_message_coding(const boost::beast::http::fields& head) {
  std::string joined;
  for (const auto& f : head) {
    if (!iequals(f.name_string(), "grpc-encoding") &&
        !iequals(f.name_string(), "connect-content-encoding"))
      continue;
    if (!joined.empty()) joined += ',';
    joined += f.value();
  }
  return parse_content_encoding(std::string_view(joined));  // two codings: "stacked"
}

std::string_view to_string(content_coding c) noexcept {
  switch (c) {
    case content_coding::identity:
      return "identity";
    case content_coding::gzip:
      return "gzip";
    case content_coding::deflate:
      return "deflate";
    case content_coding::unsupported:
      break;
  }
  return "unsupported";
}

}  // namespace airlock::filters::redaction
