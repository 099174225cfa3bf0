#include "policy/error_sink.hpp"

#include "core/str_cat.hpp"

namespace airlock::policy {

void error_sink::add(model::mark at, std::string key, std::string message) {
  if (full_) return;
  if (errors_.size() >= cap_) {
    full_ = true;
    errors_.push_back({file_, 0, 0, "",
                       core::str_cat("too many errors (more than ", cap_, "); fix these first")});
    return;
  }
  keys_.insert(key);
  errors_.push_back(
      {at.file ? *at.file : file_, at.line, at.column, std::move(key), std::move(message)});
}

void error_sink::warn(model::mark at, std::string key, std::string message) {
  if (warnings_.size() >= cap_) return;
  warnings_.push_back(
      {at.file ? *at.file : file_, at.line, at.column, std::move(key), std::move(message)});
}

void error_sink::hide(std::string_view value, std::string_view shown) {
  // A value of a few characters would blot out ordinary words of every message.
  if (value.size() < 4) return;
  const auto replace_in = [&](std::string& text) {
    for (std::size_t at = text.find(value); at != std::string::npos;
         at = text.find(value, at + shown.size()))
      text.replace(at, value.size(), shown);
  };
  for (auto* list : {&errors_, &warnings_}) {
    for (auto& e : *list) {
      replace_in(e.key);
      replace_in(e.message);
    }
  }
}

model::mark mark_table::find(std::string_view key) const {
  std::string k(key);
  while (true) {
    if (auto it = marks_.find(k); it != marks_.end()) return it->second;
    // Strip the last component: "a.b[1]" -> "a.b" -> "a".
    const std::size_t cut = k.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) return {};
    k.resize(cut);
  }
}

std::string load_error::to_string() const {
  std::string out = file;
  if (line > 0) out += core::str_cat(":", line, ":", column);
  out += ": ";
  if (!key.empty()) out += core::str_cat(key, ": ");
  out += message;
  return out;
}

}  // namespace airlock::policy
