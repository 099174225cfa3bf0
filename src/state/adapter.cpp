#include "state/adapter.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>

#include <hiredis/async.h>

#include <memory>

namespace airlock::state {
namespace {

namespace asio = boost::asio;

struct watcher {
  explicit watcher(asio::io_context& ioc, int fd) : descriptor(ioc, fd) {}
  asio::posix::stream_descriptor descriptor;
  redisAsyncContext* ac = nullptr;  // null once hiredis cleaned up
  bool want_read = false, read_armed = false;
  bool want_write = false, write_armed = false;
};

// The hooks' privdata: the watcher, shared with the waits in flight, which may complete after
// cleanup (they then see ac == null and do nothing).
using holder = std::shared_ptr<watcher>;

void arm(const holder& w, bool read) {
  bool& armed = read ? w->read_armed : w->write_armed;
  if (armed || w->ac == nullptr) return;
  armed = true;
  const auto what =
      read ? asio::posix::stream_descriptor::wait_read : asio::posix::stream_descriptor::wait_write;
  w->descriptor.async_wait(what, [w, read](const boost::system::error_code& ec) {
    (read ? w->read_armed : w->write_armed) = false;
    if (ec || w->ac == nullptr) return;
    // hiredis re-adds the hook itself while it still wants the event (async.c: reads are
    // always re-scheduled; writes until the output buffer is empty).
    if (read && w->want_read)
      redisAsyncHandleRead(w->ac);
    else if (!read && w->want_write)
      redisAsyncHandleWrite(w->ac);
  });
}

holder& of(void* privdata) {
  return *static_cast<holder*>(privdata);
}

void add_read(void* p) {
  of(p)->want_read = true;
  arm(of(p), true);
}
void del_read(void* p) {
  of(p)->want_read = false;
}
void add_write(void* p) {
  of(p)->want_write = true;
  arm(of(p), false);
}
void del_write(void* p) {
  of(p)->want_write = false;
}
void cleanup(void* p) {
  auto* h = static_cast<holder*>(p);
  (*h)->ac = nullptr;
  boost::system::error_code ignored;
  // hiredis closes the socket; the waits in flight complete with operation_aborted.
  (*h)->descriptor.cancel(ignored);
  (void)(*h)->descriptor.release();
  delete h;
}

}  // namespace

bool attach_asio(redisAsyncContext* ac, asio::io_context& ioc) {
  if (ac == nullptr || ac->ev.data != nullptr || ac->c.fd < 0) return false;
  auto* h = new holder(std::make_shared<watcher>(ioc, ac->c.fd));
  (*h)->ac = ac;
  ac->ev.data = h;
  ac->ev.addRead = add_read;
  ac->ev.delRead = del_read;
  ac->ev.addWrite = add_write;
  ac->ev.delWrite = del_write;
  ac->ev.cleanup = cleanup;
  return true;
}

}  // namespace airlock::state
