#pragma once
// Helpers shared by the tls tests: a self-removing temporary directory, a ready CA, and
// hand-built certificates for the negative cases (non-CA, no keyCertSign, expired, ...).

#include "tls/ca.hpp"
#include "tls/openssl_util.hpp"

#include <chrono>
#include <filesystem>
#include <string>

namespace airlock::tls::test {

class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Creates a CA in dir and loads it; fails the current test on error.
std::shared_ptr<const certificate_authority> make_ca(const std::filesystem::path& dir);

struct cert_spec {
  bool ca = true;                 // basicConstraints CA:TRUE (else CA:FALSE)
  bool basic_constraints = true;  // include basicConstraints at all
  const char* key_usage = "critical,keyCertSign,cRLSign";    // nullptr: no keyUsage
  std::chrono::seconds not_before = std::chrono::hours(-1);  // relative to now
  std::chrono::seconds not_after = std::chrono::hours(24 * 365);
  std::string common_name = "Test CA";
};

// Writes a self-signed certificate and its (P-256) key as PEM files cert and key (0600).
void write_self_signed(const cert_spec& spec, const std::filesystem::path& cert,
                       const std::filesystem::path& key);
// The same, signed by issuer (an intermediate CA under it, with spec's defaults).
void write_issued(const cert_spec& spec, const certificate_authority& issuer,
                  const std::filesystem::path& cert, const std::filesystem::path& key);

std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, std::string_view data);
// Runs a shell command, returns its exit status and captures stdout+stderr into output.
int run_command(const std::string& command, std::string& output);

}  // namespace airlock::tls::test
