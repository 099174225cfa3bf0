#include "filters/dlp/coded_body.hpp"

#include "filters/dlp/carry.hpp"

namespace airlock::filters::dlp {
namespace {
constexpr std::size_t kInflateStep = 64 * 1024;  // inflated text read at a time
}  // namespace

coded_body::coded_body(const scanner& s, redaction::content_coding coding) : scanner_(s) {
  inflate_.emplace(coding);
}

void coded_body::scan(std::string& carry, std::string_view bytes, findings& found) {
  carry.append(bytes);
  scanner_.scan(carry, scanner::kind::body, "body", found);
  keep_tail(carry);
}

std::optional<std::string_view> coded_body::read(std::string_view piece, findings& found) {
  scan(raw_carry_, piece, found);
  std::optional<std::string_view> gave_up;
  while (inflate_ && !gave_up) {
    std::string out;
    const auto st = inflate_->decode(piece, out, kInflateStep);
    if (!out.empty()) scan(inflated_carry_, out, found);
    if (st == redaction::decoder::status::error)
      gave_up = "a request body whose content coding does not decode";
    else if (inflate_->total_out() > kMaxInflated)
      gave_up = "a request body that inflates past 64 MiB";
    else if (st != redaction::decoder::status::output_full)
      break;
  }
  if (gave_up) inflate_.reset();
  return gave_up;
}

}  // namespace airlock::filters::dlp
