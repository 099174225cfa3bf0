#pragma once
// A request body in gzip or deflate (RFC 9110 section 8.4.1), read the two ways an origin may
// take it: inflated, as a server that decodes request bodies reads it, and as the bytes on the
// wire, as one that stores them does (an upload endpoint, an object store) — these keep what an
// inflater skips: the gzip header's file name, comment and extra field (RFC 1952 section 2.3),
// and bytes after the end of the stream. Each way has its own carry (carry.hpp).
//
// Inflation is bounded (kMaxInflated in all): past it, or when the data does not decode, the
// reader gives up inflating, says why once, and goes on reading the raw bytes.
//
// @par Thread Safety
// One per request body, one thread.

#include "filters/dlp/carry.hpp"
#include "filters/dlp/scanner.hpp"
#include "filters/redaction/content_coding.hpp"
#include "filters/redaction/decoder.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::dlp {

class coded_body {
 public:
  static constexpr std::uint64_t kMaxInflated = 64ull << 20;

  coded_body(const scanner& s, redaction::content_coding coding);

  // Reads one piece as it came (`last`: the body's last); findings go to `found`. The first
  // time inflating is given up, says why.
  std::optional<std::string_view> read(std::string_view piece, bool last, findings& found);

 private:
  void scan(scan_window& window, std::string_view bytes, bool last, findings& found);

  const scanner& scanner_;
  std::optional<redaction::decoder> inflate_;  // until given up
  scan_window inflated_carry_;                 // each reading's carry (carry.hpp)
  scan_window raw_carry_;
};

}  // namespace airlock::filters::dlp
