// What a replica reads from the shared store about approvals (src/filters/approval/
// fleet_message.*) on any bytes: a message on a replica's channel or the grants channel, an
// entry of the held-requests listing, and a replica-qualified id from the admin path. Nothing
// may crash or read out of bounds; whatever decodes must satisfy the checks the replicas rely
// on (a valid replica name, ids > 0, bounded text) and encode back to something that decodes.

#include "filters/approval/fleet_message.hpp"
#include "fuzz_input.hpp"

#include <string_view>

namespace fm = airlock::filters::approval::fleet_msg;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto m = fm::decode(text)) {
    if (m->decision) {
      if (!fm::valid_replica(m->decision->from) || m->decision->id == 0)
        airlock::fuzz::fail("a decision from an invalid replica or for id 0 decoded");
      if (!fm::decode(fm::encode(*m->decision)))
        airlock::fuzz::fail("a decision does not re-decode");
    }
    if (m->grant && !fm::decode(fm::encode(*m->grant)))
      airlock::fuzz::fail("a grant does not re-decode");
    if (m->answer && !fm::decode(fm::encode(*m->answer)))
      airlock::fuzz::fail("an answer does not re-decode");
  }
  if (auto h = fm::decode_held(text)) {
    if (!fm::valid_replica(h->replica) || h->id == 0)
      airlock::fuzz::fail("an entry with an invalid replica or id 0 decoded");
    if (!fm::decode_held(fm::encode(*h))) airlock::fuzz::fail("an entry does not re-decode");
  }
  if (auto q = fm::parse_qualified(text))
    if (!fm::valid_replica(q->replica) || q->id == 0) airlock::fuzz::fail("a bad qualified id");
  return 0;
}
