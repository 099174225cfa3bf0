#pragma once
// The relay's loop thread (relay.hpp): what it owns (the connections, the name pool and the
// resolver that answers from it, the program-identity lookup) and the steps of its poll(2)
// loop. Private to the relay: relay::loop() makes one and runs it; nothing else does.
//
// relay_worker.cpp holds the loop, the poll set, the accepts and the resolver;
// relay_worker_reads.cpp the reads from each side, where a captured connection's phases
// (capture_protocol.hpp) are taken.

#include "launcher/name_pool.hpp"
#include "launcher/peer_identity.hpp"
#include "launcher/relay.hpp"
#include "launcher/relay_connection.hpp"
#include "launcher/resolver.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cstddef>
#include <list>
#include <vector>

namespace airlock::launcher {

class relay::worker {
 public:
  explicit worker(relay& owner);
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;

  // Until stop() wakes it (or poll fails); then closes every connection.
  void run();

 private:
  using connection = relay_io::connection;
  using io = relay_io::io;

  // The poll set: the wake eventfd, the listeners and the resolver, then two entries (client,
  // upstream) per connection, in the order of conns_.
  static constexpr std::size_t first_connection = 5;
  void build_poll_set();
  void service_connection(connection& c, short client_events, short upstream_events);
  // The upstream's non-blocking connect has finished; false (connection closed) if it failed.
  bool finish_connect(connection& c);
  // Closes c on an error; true if c is done with (an error, or closed by the step).
  bool failed(connection& c, io r);
  void pass_half_closes(connection& c);

  void accept_from(int listener, bool captured);
  void open_captured(int client, const sockaddr_storage& peer);
  connection* open(int client, const sockaddr_storage& source, const sockaddr_storage& destination);
  bool queue_proxy_header(connection& c, const sockaddr_storage& source,
                          const sockaddr_storage& destination);
  void warn_unreachable(int err);

  io read_client(connection& c);
  io read_client_captured(connection& c);
  io read_upstream(connection& c);
  void decide(connection& c);

  void answer_dns();

  relay& owner_;
  const config& cfg_;
  std::list<connection> conns_;
  std::vector<pollfd> fds_;
  bool warned_ = false;
  // The resolver and the pool belong to this thread: the resolver hands out addresses and
  // the capture maps them back, one after the other, without a lock.
  name_pool pool_;
  resolver dns_;
  peer_identity identities_;
};

}  // namespace airlock::launcher
