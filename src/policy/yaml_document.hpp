#pragma once
// Reads the one YAML document of a policy file. Not YAML::LoadAll: in yaml-cpp 0.7 (Debian 12)
// it never returns, allocating without bound, on a stray flow indicator at the root (a policy
// file of just ","): the parser reports an empty document without consuming the token, again
// and again (yaml-cpp issue #1040, fixed upstream by pull request #1319). Found by
// fuzz/policy_fuzz.cpp; the input is kept in fuzz/corpus/policy/.

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace airlock::policy {

struct yaml_document {
  enum class status { one, none, several, stuck } what = status::none;
  YAML::Node root;    // set when what == one
  YAML::Mark second;  // the second document's root node (several, stuck)
};

// Throws YAML::Exception on a syntax error, as yaml-cpp does.
yaml_document read_yaml_document(std::string_view yaml);

}  // namespace airlock::policy
