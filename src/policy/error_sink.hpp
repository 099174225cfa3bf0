#pragma once
// Private to the policy component: collects load errors (every one, up to a cap) and the
// position of every YAML node by its dotted key, so checks made after parsing (the compiler's)
// can still point at the right line and column.

#include "policy/loader.hpp"
#include "policy/model.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace airlock::policy {

class error_sink {
 public:
  // A hostile file (YAML aliases can repeat one bad node a billion times) must not turn into a
  // billion errors: after `cap` errors one last "too many errors" is added and the rest dropped.
  explicit error_sink(std::string file, std::size_t cap = 100)
      : file_(std::move(file)), cap_(cap) {}

  void add(model::mark at, std::string key, std::string message);
  // Something worth fixing that does not stop the load (a secret file others can read).
  void warn(model::mark at, std::string key, std::string message);
  std::vector<load_error> take_warnings() { return std::move(warnings_); }
  bool full() const noexcept { return full_; }
  // True when an error was already reported for exactly this key: later checks skip it, so
  // one mistake yields one error.
  bool reported(const std::string& key) const { return keys_.count(key) != 0; }
  // Mappings with an unknown key: a check for a missing key there ("name", "hosts") is then
  // skipped, because the unknown key is most likely the missing one misspelt.
  void note_unknown_key_in(const std::string& map_key) { unknown_in_.insert(map_key); }
  bool has_unknown_key(const std::string& map_key) const { return unknown_in_.count(map_key) != 0; }
  bool empty() const noexcept { return errors_.empty(); }
  std::size_t size() const noexcept { return errors_.size(); }
  const std::string& file() const noexcept { return file_; }
  std::vector<load_error> take() { return std::move(errors_); }
  // Every error's and warning's key and message with each occurrence of `value` replaced by
  // `shown` (values of 4 bytes or more): the backstop that keeps a secret pasted into a key, a name
  // or a value out of the messages (the checks themselves avoid quoting one; this catches what they
  // cannot know).
  void hide(std::string_view value, std::string_view shown);

 private:
  std::string file_;
  std::size_t cap_;
  bool full_ = false;
  std::vector<load_error> errors_;
  std::vector<load_error> warnings_;
  std::unordered_set<std::string> keys_;
  std::unordered_set<std::string> unknown_in_;
};

// Dotted key ("rules[2].paths[0]") -> where that value stands in the file.
class mark_table {
 public:
  // Marks set from now on stood in the included file `name` (until leave_file()).
  void enter_file(const std::string& name) { file_ = std::make_shared<const std::string>(name); }
  void leave_file() { file_.reset(); }
  void set(const std::string& key, model::mark at) {
    if (!at.file) at.file = file_;
    marks_[key] = std::move(at);
  }
  // The mark of the key, else of its closest recorded parent, else {0, 0}.
  model::mark find(std::string_view key) const;
  bool has(const std::string& key) const { return marks_.count(key) != 0; }

 private:
  std::unordered_map<std::string, model::mark> marks_;
  std::shared_ptr<const std::string> file_;
};

}  // namespace airlock::policy
