#include "proxy/file_watches.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace airlock::proxy {

std::vector<std::string> file_watches::files_of(const policy::model::policy& policy) {
  std::vector<std::string> out;
  for (const auto& s : policy.secrets)
    if (!s.file.empty()) out.push_back(s.file);
  // The CA key comes with its certificate (interception::built_from compares the certificate).
  for (const auto* f : {&policy.tls.ca_cert, &policy.tls.upstream_ca})
    if (!f->empty()) out.push_back(*f);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void file_watches::follow(const std::vector<std::string>& paths) {
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (std::find(paths.begin(), paths.end(), it->first) == paths.end())
      it = watches_.erase(it);
    else
      ++it;
  }
  for (const auto& p : paths) {
    if (watches_.count(p)) continue;
    // The callback may re-enter follow() (a reload): it is posted, not called from inside the
    // watcher that is being replaced.
    watches_.emplace(p, std::make_unique<policy_watcher>(
                            ioc_, p, [this] { boost::asio::post(ioc_, [this] { changed_(); }); }));
  }
}

void file_watches::stop() {
  for (auto& [path, w] : watches_)
    w->stop();
}

}  // namespace airlock::proxy
