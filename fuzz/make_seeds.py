#!/usr/bin/python3
"""Writes the seed corpora under fuzz/corpus/<target>/ from the inputs the unit tests use.

Run once when a target is added (the files are committed; fuzzers only read them). Files whose
names start with crash- or timeout- are inputs the fuzzers found; this script never touches
them. No private keys: the redaction seeds use token shapes, not PEM key blocks.
"""
import hashlib
import os
import ssl
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, data, name=None):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    name = name or "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- http_request: config byte, 8 split-seed bytes, then the client's byte stream ----
def http(config, stream):
    put("http_request", bytes([config]) + b"\x01\x23\x45\x67\x89\xab\xcd\xef" + stream.encode())


requests = [
    "GET http://example.com/a?b=c HTTP/1.1\r\nHost: example.com\r\n\r\n",
    "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    "CONNECT [::1]:8443 HTTP/1.1\r\n\r\n",
    "POST http://api.example.com:8080/v1 HTTP/1.1\r\nHost: api.example.com:8080\r\n"
    "Content-Length: 5\r\n\r\nhello",
    "POST http://h/ HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n",
    "GET http://h/1 HTTP/1.1\r\nHost: h\r\n\r\nGET http://h/2 HTTP/1.1\r\nHost: h\r\n\r\n"
    "POST http://h/3 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nokGET /x HTTP/1.1\r\n\r\n",
    "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
    "0\r\n\r\n",
    "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde",
    "POST http://h/ HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "POST http://h/ HTTP/1.0\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "GET http://h/ HTTP/1.1\r\nHost: h\r\nHost: evil\r\n\r\n",
    "GET http://h/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
    "GET http://user@h/ HTTP/1.1\r\n\r\n",
    "GET http://0x7f.1:80/%2e%2e/ HTTP/1.1\r\nConnection: close\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    "GET http://h/ HTTP/1.0\r\n\r\n",
    "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
]
for i, r in enumerate(requests):
    http(0, r)
    http(3 + 4 * i, r)  # small limits

# ---- host: what Host headers, CONNECT targets, URLs and SNI carry ----
for h in ["example.com", "Example.COM.", "127.1", "0x7f000001", "2130706433", "[::ffff:127.0.0.1]",
          "::1", "[::1]", "[::1]:8443", "LOCALHOST.", "10.0.0.1:80", "h:0", "h:080", "h:", "a_b.c-d",
          "0177.0.0.1", "1.2.3.4.5", "xn--bcher-kva.example", "[fe80::1%25eth0]:80",
          "http://Example.com/a/b?c=d", "HTTP://example.com:8080/", "hTtP://[::1]:81/x",
          "http://0x7f.1/", "http://example.com?x=1", "http://example.com:82?",
          "http://h/%2e%2e/a;b=c/../d?e=%20&f=@:/?", "http://h/user@x", "http://u:p@h/",
          "http://h/#frag", "http://h\\x/"]:
    put("host", h)

# ---- client_hello: real ClientHellos from OpenSSL (Python's ssl module, memory BIOs) ----
def client_hello(server_name, alpn):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if alpn:
        ctx.set_alpn_protocols(alpn)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


for name, alpn in [("example.com", ["h2", "http/1.1"]), ("api.example.org", None), (None, ["h2"]),
                   ("a" * 60 + "." + "b" * 60 + ".example", ["http/1.1"])]:
    hello = client_hello(name, alpn)
    put("client_hello", hello)
    # The same hello split into several TLS records (RFC 8446 section 5.1 allows it).
    body = hello[5:]
    split = b""
    for i in range(0, len(body), 100):
        piece = body[i:i + 100]
        split += b"\x16\x03\x01" + struct.pack(">H", len(piece)) + piece
    put("client_hello", split)
put("client_hello", b"GET / HTTP/1.1\r\n\r\n")

# ---- proxy_v2: headers as the launcher's relay writes them ----
SIG = bytes([0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A])


def pp2(cmd, fam, addr, tlvs):
    body = addr + b"".join(bytes([t]) + struct.pack(">H", len(v)) + v for t, v in tlvs)
    return SIG + bytes([0x20 | cmd, fam]) + struct.pack(">H", len(body)) + body


v4 = bytes([10, 0, 0, 2, 127, 0, 0, 1]) + struct.pack(">HH", 40000, 3128)
v6 = bytes(15) + b"\x01" + bytes(15) + b"\x01" + struct.pack(">HH", 40000, 3128)
put("proxy_v2", pp2(1, 0x11, v4, [(0xE0, b"agent-a")]))
put("proxy_v2", pp2(1, 0x21, v6, [(0xE0, b"default"), (0x04, b"")]))
put("proxy_v2", pp2(0, 0x00, b"", []))
put("proxy_v2", pp2(1, 0x11, v4, []) + b"CONNECT h:443 HTTP/1.1\r\n\r\n")
put("proxy_v2", pp2(1, 0x31, bytes(216), [(0xE0, b"x")]))

# ---- dns_query: what the agent's resolver library sends ----
def qname(name):
    out = b""
    for label in name.split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\x00"


def dns(qid, flags, name, qtype, qclass=1, opt=False, extra=b""):
    header = struct.pack(">HHHHHH", qid, flags, 1, 0, 0, 1 if opt else 0)
    q = qname(name) + struct.pack(">HH", qtype, qclass)
    o = b"\x00" + struct.pack(">HHIH", 41, 1232, 0, 0) if opt else b""
    return header + q + o + extra


put("dns_query", dns(0x1234, 0x0100, "example.com", 1))
put("dns_query", dns(0x1, 0x0100, "API.Example.COM", 28, opt=True))
put("dns_query", dns(0x2, 0x0100, "_srv._tcp.example.com", 33))
put("dns_query", dns(0x3, 0x0000, "", 1))
put("dns_query", dns(0x4, 0x8180, "example.com", 1))  # a response: never answered
put("dns_query", dns(0x5, 0x2800, "example.com", 6))  # opcode UPDATE
put("dns_query", struct.pack(">HHHHHH", 6, 0x100, 1, 0, 0, 0) + b"\xc0\x0c" + b"\x00\x01\x00\x01")
put("dns_query", b"\x00\x07\x01\x00")

# ---- policy: the shipped examples, plus a policy using most keys ----
for f in ["example.yaml", "minimal.yaml"]:
    with open(os.path.join(ROOT, "..", "..", "config", f), "rb") as fh:
        put("policy", fh.read(), "seed-config-" + f)

# ---- redaction_stream: config byte, 8 split-seed bytes, then the body ----
bodies = [
    "AKIAIOSFODNN7EXAMPLE alpha beta sk-live-0123456789abcdefXYZ ops@example.com",
    "data: {\"token\":\"sk-live-0123456789abcdefXYZ\"}\n\nevent: msg\r\ndata: mail ops@example.com\r\n\r\n",
    "{\"a\":\"hunter2hunter2\"}\n{\"card\":\"4111 1111 1111 1111\"}\n{\"jwt\":\"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c\"}\n",
    "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 xoxb-" + "7" * 60 + " (415) 555-0132 +1 415 555 0132",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "user" + "sk-live-0123456789abcdefXYZ" + "@example.com bob@example.com" + "x" * 300 + "hunter2hunt",
    # A secret streamed across server-sent events, a model API's deltas (the event guard).
    "".join("data: {\"choices\":[{\"delta\":{\"content\":\"%s\"}}]}\n\n" % p
            for p in ("key ", "sk-live-0123", "456789abcd", "efXYZ", " hunter", "2hunter2")),
    "data: {\"t\":\"sk-li\"}\r\n\r\ndata: {\"u\":\"x\"}\r\n\r\ndata: {\"t\":\"ve-0123456789abcdefXYZ\"}\r\n\r\n",
]
for i, b in enumerate(bodies):
    for config in (0, 1, 2, 5):
        put("redaction_stream", bytes([config]) + bytes([i, 1, 2, 3, 4, 5, 6, 7]) + b.encode())

# ---- json_body: documents the validation tests use ----
for j in ['{"model":"small"}',
          '{"model":"large","max_tokens":4096,"user":{"name":"alice"},"extra":[1]}',
          '{"model":"small","user":{"name":"Bob"}}', '{"id":"\\u0031\\u0032"}', '{"a":1,"a":2}',
          '{"Model":"small","model":"large"}', '{"mo\\u0064el":"x"}', '[1,2,3]',
          '{"max_tokens":3.0}', '{"max_tokens":-9223372036854775809}', '{"max_tokens":1e400}',
          '{"options":{"sampling":{"temperature":0.7}},"tags":["a","b"],"mode":true,"stream":false,'
          '"stop":null,"meta":{}}', "[" * 70 + "]" * 70, '{"k\\u0000":1}', '"\\ud800"', '{} x']:
    put("json_body", j)

# ---- h2_client_session: an origin's frames (RFC 9113 section 4.1) after our preface ----
def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):  # HPACK literal without indexing, new name (RFC 7541 section 6.2.2)
    return bytes([0, len(name)]) + name + bytes([len(value)]) + value


SETTINGS = frame(4, 0, 0, struct.pack(">HI", 3, 2))  # MAX_CONCURRENT_STREAMS 2
ACK = frame(4, 1, 0)
OK = b"\x88"  # HPACK static index 8, ":status: 200"
put("h2_client_session", SETTINGS + ACK + frame(1, 4, 1, OK) + frame(0, 1, 1, b"hello"), "answer")
put("h2_client_session", SETTINGS + ACK + frame(1, 4, 1, OK + literal(b"content-type", b"application/grpc"))
    + frame(0, 0, 1, b"\0\0\0\0\2hi") + frame(1, 5, 1, literal(b"grpc-status", b"0")), "trailers")
put("h2_client_session", SETTINGS + ACK + frame(1, 4, 1, literal(b":status", b"100"))
    + frame(1, 5, 1, OK), "interim")
put("h2_client_session", SETTINGS + ACK + frame(3, 0, 1, struct.pack(">I", 7))
    + frame(7, 0, 0, struct.pack(">II", 1, 0)), "reset_goaway")
put("h2_client_session", SETTINGS + frame(6, 0, 0, b"12345678") + frame(8, 0, 0, struct.pack(">I", 1000))
    + frame(1, 0, 1, OK) + frame(9, 4, 1, literal(b"x-a", b"b")), "ping_window_continuation")
# ---- approval_fleet: what the replicas exchange through the store (fleet_message.hpp) ----
for m in ['{"t":"decide","from":"r2","nonce":1,"id":7,"approve":true,"scope":"agent_host",'
          '"duration_ms":3600000,"method":true,"path_prefix":"/v1/","by":"alice"}',
          '{"t":"ack","nonce":1,"status":404,"message":"no pending approval 7","agent":"a",'
          '"host":"h.test","port":443,"method":"GET","path":"/x"}',
          '{"t":"grant","from":"r1","id":3,"agent":"a","host":"h.test","port":443,"method":"",'
          '"path_prefix":"","expires_ms":0,"by":"bob"}',
          '{"replica":"r1","id":4,"kind":"access_request","agent":"a","host":"h.test","port":443,'
          '"method":"CONNECT","path":"","in_tunnel":false,"connect":true,"rule":"","reason":"why",'
          '"since":1700000000,"deadline_ms":1700000030000}',
          'r2:7', 'host-1.x:18446744073709551615', '{"t":"decide","nonce":1e400}']:
    put("approval_fleet", m)
# ---- protobuf_view: 8 split-seed bytes, then a gRPC or protobuf request body ----
def pb_field(number, payload):
    n, varint = len(payload), b""
    while True:
        varint += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)])
        n >>= 7
        if not n:
            break
    return bytes([number << 3 | 2]) + varint + payload


def grpc_frame(message, flag=0):
    return bytes([flag]) + struct.pack(">I", len(message)) + message


KEYED = pb_field(1, b"AKIAIOSFODNN7EXAMPLE" + b"x" * 45) + pb_field(6, b"z")
for name, body in (("keyed", KEYED), ("nested", pb_field(1, pb_field(3, KEYED) + b"\x08\x96\x01")),
                   ("grpc", grpc_frame(KEYED) + grpc_frame(b"") + grpc_frame(pb_field(2, b"x" * 200))),
                   ("grpc_compressed", grpc_frame(b"\x1f\x8b", 1)), ("numbers", b"\x09" + b"\0" * 8 + b"\x15abcd")):
    put("protobuf_view", b"\x01\x23\x45\x67\x89\xab\xcd\xef" + body, name)
print("seeds written under", ROOT, file=sys.stderr)
