"""An OriginServer for load: the same endpoints, with TCP_NODELAY on every accepted connection.

The base origin writes a response's head and body in separate sends; without TCP_NODELAY the
second waits for the ACK of the first, which a keep-alive client delays by up to 40 ms
(Nagle + delayed ACK), so each request costs ~40 ms however fast the proxy is. Load tests need
the proxy, not this interaction, to set the pace.
"""

import socket

from .origin import OriginServer


class FastOriginServer(OriginServer):
    def _connection_started(self, sock):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        return super()._connection_started(sock)
