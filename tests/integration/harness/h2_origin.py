"""A scripted HTTP/2 origin on Debian's python3-h2, TLS on 127.0.0.1 with ALPN h2, for what
nghttpd cannot be made to do on cue: refuse a stream unprocessed (RST_STREAM REFUSED_STREAM),
or answer one stream and send GOAWAY for the others (RFC 9113 sections 6.8 and 8.7).

What it does with a stream depends on its path:
- /once/...: the first arrival of that path is refused as soon as its HEADERS come; later
  arrivals are answered;
- /always/...: every arrival is refused;
- /late/...: the first arrival is refused only once its whole body was read (the window
  granted, as an origin may do before it processes anything); later arrivals are answered;
- /batchN/...: the first arrival of each such path is held once its whole body was read, until
  N of them are held; then all N are refused at once (so all N requests are in flight when
  they are); later arrivals are answered;
- /goaway/...: the first two are held until both came; then the lower one is answered and
  GOAWAY names it as the last stream processed, so the other is not; later ones are answered;
- anything else: answered.
With close_on_goaway, the origin stops listening as it sends that GOAWAY: the stream it did not
process finds no connection to go again on.
An answer is 200 with "PATH BODY_LENGTH BODY_SHA256 conn=N" (N counts connections from 1).
`arrivals` lists (conn, path, outcome) in order: outcome "refused", "answered" or "goaway".
"""

import hashlib
import re
import socket
import ssl
import threading

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions


class H2Origin:
    def __init__(self, cert, key, close_on_goaway=False):
        self.close_on_goaway = close_on_goaway
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.set_alpn_protocols(["h2"])
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.arrivals = []
        self.seen = {}  # path -> arrivals so far
        self.connections = 0
        self.goaway_done = set()  # paths answered after a GOAWAY
        self.stopped = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def outcomes(self, path):
        with self.lock:
            return [(conn, outcome) for conn, p, outcome in self.arrivals if p == path]

    def stop(self):
        self.stopped = True
        self._stop_listening()
        self.listener.close()

    def _stop_listening(self):
        # shutdown, not close: it wakes the accept() blocked on it (a close would leave the
        # socket listening until that accept returns), and a connect then finds it refused.
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _accept(self):
        while not self.stopped:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self._serve, args=(raw, number), daemon=True).start()

    def _note(self, conn_no, path, outcome):
        with self.lock:
            self.arrivals.append((conn_no, path, outcome))

    def _first(self, path):
        with self.lock:
            n = self.seen.get(path, 0)
            self.seen[path] = n + 1
            return n == 0

    def _serve(self, raw, conn_no):
        try:
            sock = self.ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=False, header_encoding="utf-8"))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        streams = {}  # stream id -> {"path", "body", "refuse_late"}
        held = []  # /goaway/ streams whose body ended, waiting for their pair
        goaway_sent = False
        try:
            while not self.stopped:
                data = sock.recv(65536)
                if not data:
                    break
                try:
                    events = conn.receive_data(data)
                except h2.exceptions.ProtocolError:
                    if goaway_sent:
                        continue  # (h2 takes nothing after its GOAWAY: read on until EOF)
                    break
                for ev in events:
                    sid = getattr(ev, "stream_id", None)
                    if isinstance(ev, h2.events.RequestReceived):
                        path = dict(ev.headers)[":path"]
                        if goaway_sent:
                            continue
                        if path.startswith("/always/") or (
                                path.startswith("/once/") and self._first(path)):
                            conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
                            self._note(conn_no, path, "refused")
                            continue
                        late = path.startswith("/late/") and self._first(path)
                        first = path.startswith("/batch") and self._first(path)
                        # (Its end, even with the HEADERS, comes as a StreamEnded event.)
                        streams[sid] = {"path": path, "body": b"", "late": late, "first": first}
                    elif isinstance(ev, h2.events.DataReceived):
                        conn.acknowledge_received_data(ev.flow_controlled_length, sid)
                        if sid in streams:
                            streams[sid]["body"] += ev.data
                    elif isinstance(ev, h2.events.StreamEnded) and sid in streams:
                        held, goaway_sent = self._ended(conn, conn_no, sid, streams, held)
                sock.sendall(conn.data_to_send())
        except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
            pass
        except Exception:  # a bug here: say so in the test's output
            import traceback
            traceback.print_exc()
            raise
        finally:
            sock.close()

    def _ended(self, conn, conn_no, sid, streams, held):
        """The request on `sid` is whole: refuse, answer or hold it. Returns (held, goaway)."""
        s = streams[sid]
        if s["late"]:
            conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
            self._note(conn_no, s["path"], "refused")
            return held, False
        batch = re.match(r"/batch(\d+)/", s["path"])
        if batch and s["first"]:
            batch_held = streams.setdefault("batch", [])
            batch_held.append(sid)
            if len(batch_held) == int(batch.group(1)):
                for each in batch_held:
                    conn.reset_stream(each, h2.errors.ErrorCodes.REFUSED_STREAM)
                    self._note(conn_no, streams[each]["path"], "refused")
                batch_held.clear()
            return held, False
        if not s["path"].startswith("/goaway/") or s["path"] in self.goaway_done:
            self._answer(conn, conn_no, sid, s)
            return held, False
        held = held + [sid]
        if len(held) < 2:
            return held, False
        first, other = min(held), max(held)
        self.goaway_done |= {streams[first]["path"], streams[other]["path"]}
        self._answer(conn, conn_no, first, streams[first])
        if self.close_on_goaway:
            self._stop_listening()
        conn.close_connection(error_code=0, last_stream_id=first)
        self._note(conn_no, streams[other]["path"], "goaway")
        return [], True

    def _answer(self, conn, conn_no, sid, s):
        body = ("%s %d %s conn=%d" % (s["path"], len(s["body"]),
                                      hashlib.sha256(s["body"]).hexdigest(), conn_no)).encode()
        conn.send_headers(sid, [(":status", "200"), ("content-length", str(len(body)))])
        conn.send_data(sid, body, end_stream=True)
        self._note(conn_no, s["path"], "answered")
