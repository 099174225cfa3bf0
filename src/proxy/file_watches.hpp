#pragma once
// The files a policy reads besides itself, watched like the policy file (policy_watcher): the
// secret files (`secrets.NAME.file`) and the TLS files (`tls.ca_cert`, `tls.upstream_ca`), so a
// rotated secret or a CA bundle rewritten in place is picked up without SIGHUP. A change of any
// of them calls back (the caller reloads the policy, which reads them again). The set follows
// the policy in force: call follow() after every load.
//
// Thread safety: runs on the io_context it is given; follow() and the callback run there.

#include "policy/model.hpp"
#include "proxy/policy_watcher.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace airlock::proxy {

class file_watches {
 public:
  file_watches(boost::asio::io_context& ioc, std::function<void()> changed)
      : ioc_(ioc), changed_(std::move(changed)) {}

  // The files `policy` reads (paths already resolved by the loader).
  static std::vector<std::string> files_of(const policy::model::policy& policy);

  // Watches exactly `paths`: keeps the watches it has for those still named (so their last
  // seen content stays), starts new ones, stops the rest.
  void follow(const std::vector<std::string>& paths);
  void stop();
  std::size_t size() const noexcept { return watches_.size(); }

 private:
  boost::asio::io_context& ioc_;
  std::function<void()> changed_;
  std::map<std::string, std::unique_ptr<policy_watcher>> watches_;
};

}  // namespace airlock::proxy
