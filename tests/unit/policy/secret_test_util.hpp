#pragma once
// Helpers for the secret tests: a scratch folder that holds a policy and its secret files, and
// environment variables set for one test only.

#include "policy/loader.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy::test {

class scratch_dir {
 public:
  scratch_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "airlock-secrets-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp";
    path_ = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `content` to `name` (folders created), mode 0600 unless told otherwise.
  std::string write(const std::string& name, std::string_view content, mode_t mode = 0600) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    {
      std::ofstream f(p, std::ios::binary | std::ios::trunc);
      f.write(content.data(), static_cast<std::streamsize>(content.size()));
    }
    ::chmod(p.c_str(), mode);
    return p.string();
  }
  // Writes the policy as policy.yaml and loads it from there (relative paths resolve here).
  load_result load(std::string_view yaml) const { return load_file(write("policy.yaml", yaml)); }

 private:
  std::filesystem::path path_;
};

// Sets an environment variable for the lifetime of the object (the tests are single-threaded).
class scoped_env {
 public:
  scoped_env(std::string name, const std::string& value) : name_(std::move(name)) {
    ::setenv(name_.c_str(), value.c_str(), 1);
  }
  ~scoped_env() { ::unsetenv(name_.c_str()); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  std::string name_;
};

inline std::string dump(const std::vector<load_error>& errors) {
  std::string out;
  for (const auto& e : errors)
    out += e.to_string() + "\n";
  return out;
}

}  // namespace airlock::policy::test
