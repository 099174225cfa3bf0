#include "filters/rate_limit/control_outbox.hpp"

#include <algorithm>

namespace airlock::filters::rate_limit {

control_outbox::slot& control_outbox::slot_of(std::string_view agent) {
  auto it = agents_.find(agent);
  if (it == agents_.end()) it = agents_.emplace(std::string(agent), slot{}).first;
  return it->second;
}

control_outbox::message control_outbox::put_control(std::string_view agent, bool stop) {
  std::lock_guard lock(mutex_);
  slot& s = slot_of(agent);
  message m{std::string(agent), stop ? message::kind::stop : message::kind::resume, 0, ++seq_};
  s.control = m;
  if (!stop) {
    s.trip.reset();  // a resume lifts the suspension as well
    s.resumed_at = m.seq;
  }
  return m;
}

control_outbox::message control_outbox::put_trip(std::string_view agent, std::int64_t until_ns) {
  std::lock_guard lock(mutex_);
  message m{std::string(agent), message::kind::trip, until_ns, ++seq_};
  slot_of(agent).trip = m;
  return m;
}

void control_outbox::delivered(const message& m) {
  std::lock_guard lock(mutex_);
  const auto it = agents_.find(m.agent);
  if (it == agents_.end()) return;
  std::optional<message>& kept =
      m.what == message::kind::trip ? it->second.trip : it->second.control;
  if (kept && kept->seq == m.seq) kept.reset();
}

std::vector<control_outbox::message> control_outbox::pending(std::int64_t now_ns) {
  std::lock_guard lock(mutex_);
  std::vector<message> out;
  for (auto& [name, s] : agents_) {
    if (s.trip && s.trip->until_ns <= now_ns) s.trip.reset();
    if (s.control) out.push_back(*s.control);
    if (s.trip) out.push_back(*s.trip);
  }
  std::sort(out.begin(), out.end(),
            [](const message& a, const message& b) { return a.seq < b.seq; });
  return out;
}

std::size_t control_outbox::size() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& [name, s] : agents_)
    n += (s.control ? 1 : 0) + (s.trip ? 1 : 0);
  return n;
}

void control_outbox::note_resume(std::string_view agent) {
  std::lock_guard lock(mutex_);
  slot_of(agent).resumed_at = ++seq_;
}

std::uint64_t control_outbox::mark() const {
  std::lock_guard lock(mutex_);
  return seq_;
}

bool control_outbox::resumed_since(std::string_view agent, std::uint64_t mark) const {
  std::lock_guard lock(mutex_);
  const auto it = agents_.find(agent);
  if (it == agents_.end()) return false;
  const slot& s = it->second;
  return s.resumed_at > mark || (s.control && s.control->what == message::kind::resume);
}

}  // namespace airlock::filters::rate_limit
