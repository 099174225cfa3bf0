#pragma once
// nghttp2's name/value view of a header list (shared by the server and client sessions). The
// views point into `fields`, which must outlive the submit call that reads them (nghttp2 copies
// them into its own frame).

#include "h2/server_session.hpp"

#include <nghttp2/nghttp2.h>

#include <vector>

namespace airlock::h2 {

// RFC 9113 section 6.5.2: a field's size is its name and value and 32 octets of overhead.
inline constexpr std::size_t field_overhead = 32;

inline std::vector<nghttp2_nv> to_nv(const header_list& fields) {
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields.size());
  for (const auto& [name, value] : fields)
    nv.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                  reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                  value.size(), NGHTTP2_NV_FLAG_NONE});
  return nv;
}

}  // namespace airlock::h2
