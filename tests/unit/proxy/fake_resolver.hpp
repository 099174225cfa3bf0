// The test seam of fake_resolver.cpp: the stalled lookup of slow.test is a gate the test opens,
// so that "the session did not wait for the resolver" is checked as a condition (the lookup is
// still blocked when the session finished), not as a duration.
#pragma once

namespace airlock::proxy::test {

// Lookups of slow.test block from now on, until release_slow_lookups() (or 30 s, so that a
// test that forgets cannot hang the run).
void hold_slow_lookups();
void release_slow_lookups();
// How many slow.test lookups are blocked right now.
int slow_lookups_waiting();

}  // namespace airlock::proxy::test
