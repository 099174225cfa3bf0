"""An HTTP/2 client over a CONNECT tunnel through the proxy, on Debian's python3-h2: the test
writes the frames it wants (several streams on one connection, resets, floods) and reads what
the proxy answers, stream by stream."""

import socket
import ssl
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

from harness import env


class H2Tunnel:
    """CONNECT `authority` through the proxy, TLS with ALPN h2 (trusting `cafile`), then an h2
    client connection. `responses[stream_id]` collects each stream's answer."""

    def __init__(self, proxy_port, authority, cafile, server_name=None, timeout=None,
                 settings=None, alpn=("h2",)):
        self.timeout = env.t(15) if timeout is None else timeout
        raw = socket.create_connection(("127.0.0.1", proxy_port), timeout=self.timeout)
        raw.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            piece = raw.recv(4096)
            if not piece:
                raise AssertionError("proxy closed after CONNECT: %r" % head)
            head += piece
        if not head.startswith(b"HTTP/1.1 200"):
            raise AssertionError("CONNECT refused: %r" % head)
        ctx = ssl.create_default_context(cafile=cafile)
        ctx.set_alpn_protocols(list(alpn))
        self.sock = ctx.wrap_socket(raw, server_hostname=server_name or authority.rsplit(":", 1)[0])
        self.alpn = self.sock.selected_alpn_protocol()
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8", validate_outbound_headers=False,
            validate_inbound_headers=False))
        self.write_failed = False
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.flush()
        self.responses = {}
        self.goaway = None
        self.closed = False
        self.authority = authority

    def flush(self):
        data = self.conn.data_to_send()
        if data and not self.write_failed:
            self.send(data)

    def send(self, data):
        """Sends raw bytes; a proxy that closed first leaves what it said still to be read."""
        try:
            self.sock.sendall(data)
        except (OSError, ssl.SSLError):
            self.write_failed = True

    def headers(self, path, method="GET", extra=(), end_stream=True):
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", method), (":scheme", "https"), (":authority", self.authority),
                (":path", path)] + list(extra)
        self.conn.send_headers(sid, hdrs, end_stream=end_stream)
        self.responses[sid] = {"headers": None, "body": b"", "trailers": None, "ended": False,
                               "reset": None}
        return sid

    def request(self, path, method="GET", extra=(), body=None):
        sid = self.headers(path, method, extra, end_stream=body is None)
        if body is not None:
            self.send_body(sid, body)
        self.flush()
        return sid

    def send_body(self, sid, body, end=True):
        """Sends as much as the flow-control window allows, reading (and so opening windows)
        as needed."""
        view = memoryview(body)
        deadline = time.monotonic() + self.timeout
        while view:
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if room <= 0:
                self.flush()
                self.pump(until=lambda: self.conn.local_flow_control_window(sid) > 0,
                          deadline=deadline)
                continue
            self.conn.send_data(sid, bytes(view[:room]))
            view = view[room:]
        if end:
            self.conn.end_stream(sid)
        self.flush()

    def pump(self, until, deadline=None):
        """Reads and handles events until `until()` or the connection closes."""
        deadline = deadline or time.monotonic() + self.timeout
        while not until():
            if self.closed:
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("HTTP/2: condition not met in time; %r" % self.responses)
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except (ConnectionError, ssl.SSLError):
                data = b""
            if not data:
                self.closed = True
                return until()
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                self.closed = True
                return until()
            for ev in events:
                self.handle(ev)
            self.flush()
        return True

    def handle(self, ev):
        r = self.responses.get(getattr(ev, "stream_id", None))
        if isinstance(ev, h2.events.ConnectionTerminated):
            self.goaway = ev.error_code
            return
        if r is None:
            if isinstance(ev, h2.events.DataReceived):
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            return
        if isinstance(ev, h2.events.ResponseReceived):
            r["headers"] = dict(ev.headers)
        elif isinstance(ev, h2.events.DataReceived):
            r["body"] += ev.data
            self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.TrailersReceived):
            r["trailers"] = dict(ev.headers)
        elif isinstance(ev, h2.events.StreamEnded):
            r["ended"] = True
        elif isinstance(ev, h2.events.StreamReset):
            r["reset"] = ev.error_code

    def wait(self, *sids):
        self.pump(lambda: all(self.responses[s]["ended"] or self.responses[s]["reset"] is not None
                              for s in sids))
        return [self.responses[s] for s in sids]

    def wait_closed(self):
        """Reads until the proxy closes the connection; returns the GOAWAY code (None: none)."""
        self.pump(lambda: self.closed)
        return self.goaway

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class ConnectForwarder:
    """A local port whose connections each become a CONNECT `authority` tunnel through the
    proxy, for clients that cannot use a proxy themselves (nghttp, h2load): they connect here
    and speak TLS to what is on the far side of the tunnel."""

    def __init__(self, proxy_port, authority):
        self.proxy_port = proxy_port
        self.authority = authority
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        up = None
        try:
            up = socket.create_connection(("127.0.0.1", self.proxy_port), timeout=env.t(15))
            up.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                        % (self.authority, self.authority)).encode())
            head = b""
            while b"\r\n\r\n" not in head:
                piece = up.recv(4096)
                if not piece:
                    raise OSError("proxy closed")
                head += piece
            if not head.startswith(b"HTTP/1.1 200"):
                raise OSError("CONNECT refused")
            up.settimeout(None)
            threading.Thread(target=self._pipe, args=(client, up), daemon=True).start()
            self._pipe(up, client)
        except OSError:
            client.close()
            if up is not None:
                up.close()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            src.close()  # (the other direction's thread closes the other socket)

    def stop(self):
        self.stopped = True
        self.listener.close()
