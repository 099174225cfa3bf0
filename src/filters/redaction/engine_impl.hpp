#pragma once
// Internal: the compiled form of an engine, shared by engine.cpp and stream.cpp. Not part of
// the library's interface (it pulls in RE2, which airlock::filters links privately).

#include "filters/redaction/engine.hpp"
#include "filters/redaction/prefilter.hpp"
#include "filters/redaction/secret_automaton.hpp"

#include <re2/re2.h>
#include <re2/set.h>

#include <memory>
#include <string>
#include <vector>

namespace airlock::filters::redaction {

struct compiled_redactor {
  std::unique_ptr<RE2> re;
  std::uint32_t label = 0;  // index into engine::impl::labels
  validator_fn validator = nullptr;
  std::size_t max_length = 0;  // 0 when windowed
  bool windowed = false;       // no proven bound: matched within a window on the overlap grid
  bool group = false;          // has a capturing group: replace group 1 only
  bool literal = false;        // a literal secret: a prefilter hit is the match, no RE2 needed
  bool prefiltered = false;    // found through the prefilter's windows, not the RE2::Set
  prefilter_hint hint;
};

struct label {
  std::string name;
  std::string replacement;
};

struct engine::impl {
  std::vector<compiled_redactor> redactors;
  std::vector<label> labels;
  std::unique_ptr<prefilter> pre;                   // finds the patterns it serves
  std::unique_ptr<RE2::Set> set;                    // finds the others, in one pass
  std::vector<std::uint32_t> set_patterns;          // set index -> redactors index
  std::unique_ptr<secret_automaton> secret_starts;  // the literal secrets' spellings
  std::size_t overlap = 0;
  bool anchored = false;  // some pattern has ^, $, \A or \z outside a character class
};

}  // namespace airlock::filters::redaction
