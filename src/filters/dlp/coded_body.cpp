#include "filters/dlp/coded_body.hpp"

#include "filters/dlp/carry.hpp"

namespace airlock::filters::dlp {
namespace {
constexpr std::size_t kInflateStep = 64 * 1024;  // inflated text read at a time
}  // namespace

coded_body::coded_body(const scanner& s, redaction::content_coding coding) : scanner_(s) {
  inflate_.emplace(coding);
}

void coded_body::scan(scan_window& window, std::string_view bytes, bool last, findings& found) {
  scanner_.scan(window.add(bytes, last), scanner::kind::body, "body", found);
  window.trim();
}

std::optional<std::string_view> coded_body::read(std::string_view piece, bool last,
                                                 findings& found) {
  scan(raw_carry_, piece, last, found);
  std::optional<std::string_view> gave_up;
  while (inflate_ && !gave_up) {
    std::string out;
    const auto st = inflate_->decode(piece, out, kInflateStep);
    // (The last of the body's inflated text: what this piece gave and none is left.)
    const bool done = last && st != redaction::decoder::status::output_full;
    if (!out.empty() || done) scan(inflated_carry_, out, done, found);
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
