#pragma once
// A throw-away CA and a certificate for 127.0.0.1 and redis.test signed by it (serverAuth and
// clientAuth, so that it also serves as a client certificate), made with the openssl CLI at
// test time in a private temporary folder (no key is kept in the repository).

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace airlock::state::test {

class test_certs {
 public:
  explicit test_certs(const std::string& tag) {
    dir_ = std::filesystem::temp_directory_path() /
           ("airlock-state-tls-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "leaf.ext") << "subjectAltName=DNS:redis.test,IP:127.0.0.1\n"
                                     << "basicConstraints=critical,CA:FALSE\n"
                                     << "extendedKeyUsage=serverAuth,clientAuth\n";
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string script =
        "cd '" + dir_.string() + "' && openssl req -x509" + ec +
        " -keyout ca.key -out ca.pem -days 2 -subj '/CN=airlock state test CA'"
        " -addext basicConstraints=critical,CA:TRUE 2>/dev/null && openssl req -new" +
        ec + " -keyout leaf.key -out leaf.csr -subj /CN=redis.test 2>/dev/null &&" +
        " openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial" +
        " -out leaf.pem -days 2 -sha256 -extfile leaf.ext 2>/dev/null";
    ok_ = std::system(script.c_str()) == 0;
  }
  ~test_certs() { std::filesystem::remove_all(dir_); }
  test_certs(const test_certs&) = delete;
  test_certs& operator=(const test_certs&) = delete;

  bool ok() const { return ok_; }
  std::string ca() const { return (dir_ / "ca.pem").string(); }
  std::string cert() const { return (dir_ / "leaf.pem").string(); }
  std::string key() const { return (dir_ / "leaf.key").string(); }

  // redis-server's arguments for a TLS port with this certificate; client certificates
  // verified against this CA, and required when `require_clients`.
  std::vector<std::string> server_args(bool require_clients) const {
    return {"--tls-cert-file",    cert(), "--tls-key-file",     key(),
            "--tls-ca-cert-file", ca(),   "--tls-auth-clients", require_clients ? "yes" : "no"};
  }

 private:
  std::filesystem::path dir_;
  bool ok_ = false;
};

}  // namespace airlock::state::test
