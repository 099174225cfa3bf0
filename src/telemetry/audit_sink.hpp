#pragma once
// Writing the audit log's buffered lines to its descriptor so that the sink only ever holds
// whole lines: a write cut short by a full or failing disk (ENOSPC, EIO, EDQUOT) is cut back to
// the last whole line, so the record written after it starts on a line of its own.
// Internal to audit_log.cpp; a header of its own so the unit tests can drive it on any fd.

#include <cstddef>
#include <string_view>

namespace airlock::telemetry::audit_sink {

struct outcome {
  std::size_t consumed = 0;  // bytes of `lines` now in the sink: erase them from the buffer
  int error = 0;             // errno of the failure; 0 when all of `lines` was written
  // The sink ends with the first part of a line (the descriptor could not be cut back: a pipe,
  // or ftruncate failed): the rest of it, which the buffer now begins with, must come next.
  bool mid_line = false;
};

// Writes `lines` (whole lines, or the rest of a line when `starts_mid_line`) to `fd`, retrying
// after EINTR and short writes. `regular_file`: fd is our O_APPEND file, which this may
// ftruncate(2) back to where the failed write began plus the whole lines it wrote.
outcome write_lines(int fd, std::string_view lines, bool regular_file,
                    bool starts_mid_line) noexcept;

}  // namespace airlock::telemetry::audit_sink
