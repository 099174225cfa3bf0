"""A local port whose connections each become a CONNECT tunnel through a proxy, for load
clients that speak no proxy protocol (h2load): they connect here and speak TLS to what is on the
far side. (The integration tests have the same helper in tests/integration/harness/h2_client.py;
the benchmark does not import the test harness.)"""

import socket
import threading


class ConnectForwarder:
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
            up = socket.create_connection(("127.0.0.1", self.proxy_port), timeout=30)
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
            for s in (client, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
                data = src.recv(262144)
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
            src.close()

    def stop(self):
        self.stopped = True
        self.listener.close()
