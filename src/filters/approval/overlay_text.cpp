#include "filters/approval/overlay_text.hpp"

#include "core/str_cat.hpp"
#include "filters/approval/approval_filter.hpp"
#include "policy/yaml_document.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>

namespace airlock::filters::approval {
namespace {

constexpr auto npos = std::string::npos;

constexpr std::string_view header =
    "# Permanent approvals, written by airlock (approvals.overlay) and included by the\n"
    "# policy (include:). Each permanent approval adds its rule and the agent's use of it at the\n"
    "# end of the lists below; the rest of the file is kept as it is written. Edit it to narrow\n"
    "# or withdraw an approval, then reload.\n";

std::size_t line_end(const std::string& t, std::size_t pos) {
  const auto nl = t.find('\n', pos);
  return nl == npos ? t.size() : nl + 1;
}

// Where a block collection that starts at `from` ends: after its last line that is not blank
// or a comment. Its lines are those indented deeper than the key it is the value of (at
// `key_column`; -1 for the root), and for a sequence also the "- " items at the key's own
// column (YAML 1.2 section 8.2.1 lets them stand there). A document marker ends the root.
std::size_t block_end(const std::string& t, std::size_t from, int key_column, bool sequence) {
  std::size_t end = line_end(t, from);  // the collection's first entry is on this line
  for (std::size_t at = end; at < t.size();) {
    const std::size_t next = line_end(t, at);
    const std::string_view line(t.data() + at, next - at);
    const auto indent = line.find_first_not_of(' ');
    if (indent == npos || line[indent] == '\n' || line[indent] == '\r' || line[indent] == '#') {
      at = next;
      continue;
    }
    if (indent == 0 && (line.starts_with("---") || line.starts_with("..."))) break;
    const auto column = static_cast<int>(indent);
    const bool item = sequence && column == key_column && line[indent] == '-' &&
                      (indent + 1 == line.size() || line[indent + 1] == ' ' ||
                       line[indent + 1] == '\n' || line[indent + 1] == '\r');
    if (column <= key_column && !item) break;
    end = at = next;
  }
  return end;
}

// The bracket closing the flow collection that opens at `open`, or npos. Quoted scalars
// (YAML 1.2 sections 7.3.1, 7.3.2) and comments are skipped; a quote inside a plain scalar
// (it's) is part of it.
std::size_t flow_close(const std::string& t, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    const char c = t[i];
    const char before = i > open ? t[i - 1] : '[';
    const bool token_start = std::string_view(" \t\n\r[{,:").find(before) != npos;
    if (c == '"' && token_start) {
      for (++i; i < t.size() && t[i] != '"'; ++i)
        if (t[i] == '\\') ++i;
    } else if (c == '\'' && token_start) {
      for (++i; i < t.size(); ++i)
        if (t[i] == '\'' && (i + 1 == t.size() || t[++i] != '\'')) break;
    } else if (c == '#' && (before == ' ' || before == '\t' || before == '\n')) {
      i = line_end(t, i) - 1;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && --depth == 0) {
      return i;
    }
  }
  return npos;
}

// One entry added at the end of `coll` (a sequence or a mapping, the value of a key at
// `key_column`): `flow` into a flow collection, `block` (lines without their indentation, the
// first at the collection's own column, the others relative to it) into a block one.
bool append_entry(std::string& text, const YAML::Node& coll, int key_column,
                  const std::vector<std::string>& block, const std::string& flow,
                  std::string& error) {
  const YAML::Mark at = coll.Mark();
  if (at.pos < 0 || static_cast<std::size_t>(at.pos) >= text.size()) {
    error = "a list the new entry would go in has no place in the text";
    return false;
  }
  const auto pos = static_cast<std::size_t>(at.pos);
  if (coll.Style() == YAML::EmitterStyle::Flow) {
    const std::size_t close = text[pos] == '[' || text[pos] == '{' ? flow_close(text, pos) : npos;
    if (close == npos) {
      error = core::str_cat("cannot find the end of the list at line ", at.line + 1);
      return false;
    }
    text.insert(close, core::str_cat(coll.size() > 0 ? ", " : "", flow));
    return true;
  }
  const std::size_t end = block_end(text, pos, key_column, coll.IsSequence());
  std::string lines = end == text.size() && !text.empty() && text.back() != '\n' ? "\n" : "";
  for (const auto& l : block)
    lines += core::str_cat(std::string(static_cast<std::size_t>(at.column), ' '), l, "\n");
  text.insert(end, lines);
  return true;
}

// The value under `key` in the mapping `map`, and its key's column; nullopt when absent.
std::optional<std::pair<YAML::Node, int>> entry(const YAML::Node& map, std::string_view key) {
  for (auto it = map.begin(); it != map.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == key)
      return std::pair{it->second, it->first.Mark().column};
  return std::nullopt;
}

YAML::Node parsed(const std::string& text, std::string& error) {
  try {
    auto doc = policy::read_yaml_document(text);
    using status = policy::yaml_document::status;
    if (doc.what == status::several || doc.what == status::stuck) {
      error = "it holds more than one YAML document";
      return YAML::Node(YAML::NodeType::Undefined);
    }
    if (doc.what == status::none || doc.root.IsNull()) return YAML::Node(YAML::NodeType::Null);
    if (!doc.root.IsMap()) {
      error = "it is not a mapping of rules and agents";
      return YAML::Node(YAML::NodeType::Undefined);
    }
    return doc.root;
  } catch (const YAML::Exception& e) {
    error = core::str_cat("it does not parse (line ", e.mark.line + 1, ": ", e.msg, ")");
    return YAML::Node(YAML::NodeType::Undefined);
  }
}

// One item at the end of the list under `key` in `map` (whose own key is at `map_column`),
// or, when the mapping has no such key, the key with a list of that item.
bool add_to_list(std::string& text, const YAML::Node& map, int map_column, std::string_view key,
                 const std::vector<std::string>& item_block, const std::string& item_flow,
                 std::string& error) {
  const auto list = entry(map, key);
  if (!list) {
    std::vector<std::string> block{core::str_cat(key, ":")};
    for (const auto& l : item_block)
      block.push_back("  " + l);
    return append_entry(text, map, map_column, block, core::str_cat(key, ": [", item_flow, "]"),
                        error);
  }
  if (!list->first.IsSequence()) {
    error = core::str_cat("`", key, "` at line ", list->first.Mark().line + 1,
                          " is not a list (write [] for an empty one)");
    return false;
  }
  return append_entry(text, list->first, list->second, item_block, item_flow, error);
}

// The rule's name at the end of the agent's `rules` in `root`; the agent's entry, or the
// whole `agents` mapping, when there is none.
bool add_to_agent(std::string& text, const YAML::Node& root, const std::string& agent,
                  const std::string& name, std::string& error) {
  const std::string quoted_agent = yaml_quoted(agent);
  const std::string uses = core::str_cat("rules: [", name, "]");
  const auto agents = entry(root, "agents");
  if (!agents)
    return append_entry(text, root, -1, {"agents:", "  " + quoted_agent + ":", "    " + uses},
                        core::str_cat("agents: {", quoted_agent, ": {", uses, "}}"), error);
  if (!agents->first.IsMap()) {
    error = core::str_cat("`agents` at line ", agents->first.Mark().line + 1,
                          " is not a mapping (write {} for an empty one)");
    return false;
  }
  const auto mine = entry(agents->first, agent);
  if (!mine)
    return append_entry(text, agents->first, agents->second, {quoted_agent + ":", "  " + uses},
                        core::str_cat(quoted_agent, ": {", uses, "}"), error);
  if (!mine->first.IsMap()) {
    error = core::str_cat("the entry of agent ", agent, " at line ", mine->first.Mark().line + 1,
                          " is not a mapping");
    return false;
  }
  return add_to_list(text, mine->first, mine->second, "rules", {"- " + name}, name, error);
}

// A node's content, with its styles, quoting and comments left out: two texts that read the
// same give the same string.
void content(const YAML::Node& n, std::string& out) {
  if (n.IsScalar()) {
    out += core::str_cat("s", n.Scalar().size(), ":", n.Scalar());
  } else if (n.IsSequence()) {
    out += '[';
    for (const auto& item : n) {
      content(item, out);
      out += ',';
    }
    out += ']';
  } else if (n.IsMap()) {
    out += '{';
    for (auto it = n.begin(); it != n.end(); ++it) {
      content(it->first, out);
      out += ':';
      content(it->second, out);
      out += ',';
    }
    out += '}';
  } else {
    out += '~';
  }
}

std::string content(const YAML::Node& n) {
  std::string out;
  content(n, out);
  return out;
}

}  // namespace

std::string yaml_quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

std::uint64_t approved_number(std::string_view name) {
  if (!name.starts_with(approved_rule_prefix)) return 0;
  name.remove_prefix(approved_rule_prefix.size());
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  return ec == std::errc{} && p == name.data() + name.size() ? n : 0;
}

std::uint64_t last_approved_number(const std::string& text) {
  std::string ignored;
  const YAML::Node root = parsed(text, ignored);
  if (!root.IsMap()) return 0;
  const auto rules = entry(root, "rules");
  std::uint64_t last = 0;
  if (rules && rules->first.IsSequence())
    for (const auto& r : rules->first)
      if (const auto name = r.IsMap() ? entry(r, "name") : std::nullopt;
          name && name->first.IsScalar())
        last = std::max(last, approved_number(name->first.Scalar()));
  return last;
}

std::string append_to_overlay(const std::string& old_text, const overlay_addition& add,
                              std::string& error) {
  const YAML::Node before = parsed(old_text, error);
  if (!before.IsDefined()) return {};
  // The rule as a block sequence item and as a flow mapping.
  std::vector<std::string> rule_block;
  std::string rule_flow = "{";
  for (const auto& [key, value] : add.fields) {
    rule_block.push_back(core::str_cat(rule_block.empty() ? "- " : "  ", key, ": ", value));
    rule_flow += core::str_cat(rule_flow.size() > 1 ? ", " : "", key, ": ", value);
  }
  rule_flow += "}";
  const std::string name = yaml_quoted(add.rule_name);
  std::string text = old_text;
  try {
    if (before.IsNull()) {
      // Nothing in it yet, or only comments: a header, then the two lists.
      if (text.find_first_not_of(" \t\r\n") == npos) text = header;
      if (text.back() != '\n') text += '\n';
      text += "rules:\n";
      for (const auto& l : rule_block)
        text += core::str_cat("  ", l, "\n");
      text += core::str_cat("agents:\n  ", yaml_quoted(add.agent), ":\n    rules: [", name, "]\n");
    } else if (!add_to_list(text, before, -1, "rules", rule_block, rule_flow, error) ||
               !add_to_agent(text, parsed(text, error), add.agent, name, error)) {
      return {};  // (read again between the two: the offsets moved)
    }
    // What the new text says must be what the old one said plus the two entries.
    YAML::Node expected = before.IsNull() ? YAML::Node(YAML::NodeType::Map) : YAML::Clone(before);
    expected["rules"].push_back(YAML::Load(rule_flow));
    expected["agents"][add.agent]["rules"].push_back(YAML::Node(add.rule_name));
    const YAML::Node after = parsed(text, error);
    if (!after.IsDefined() || content(after) != content(expected)) {
      error =
          "the rule cannot be added at the end of its lists without changing what the rest "
          "of the file says";
      return {};
    }
  } catch (const YAML::Exception& e) {
    error = core::str_cat("its shape leaves no place for the rule (", e.msg, ")");
    return {};
  }
  return text;
}

}  // namespace airlock::filters::approval
