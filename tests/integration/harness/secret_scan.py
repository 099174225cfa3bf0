"""Spellings of a secret value a leak could take, and a scan of text for any of them.

The credential-injection and redaction tests end by scanning the proxy's whole audit log and
its captured stderr for every secret they used: a value must not appear raw, base64-encoded
(standard or URL-safe, with or without padding), percent-encoded or JSON-escaped. Basic
credentials are also scanned as the base64 of "user:password" (what the Authorization header
carries).
"""

import base64
import json
import os
import urllib.parse


def spellings(value):
    """{label: bytes} of the ways `value` (str) may be written in a log line or a response."""
    raw = value.encode()
    out = {"raw": raw}
    b64 = base64.b64encode(raw)
    out["base64"] = b64.rstrip(b"=")
    out["base64url"] = base64.urlsafe_b64encode(raw).rstrip(b"=")
    pct = urllib.parse.quote(value, safe="").encode()
    if pct != raw:
        out["percent"] = pct
        out["percent-lower"] = _lower_hex(pct)
    # RFC 3986 lets '/' and '?' stand unencoded in a query; form encoding writes ' ' as '+'.
    for label, text in (("percent-query", urllib.parse.quote(value, safe="/?")),
                        ("form", urllib.parse.quote_plus(value, safe="/"))):
        if text.encode() not in out.values() and text.encode() != raw:
            out[label] = text.encode()
            out[label + "-lower"] = _lower_hex(text.encode())
    js = json.dumps(value)[1:-1].encode()
    if js != raw:
        out["json"] = js
    return out


def _lower_hex(pct):
    out = bytearray()
    i = 0
    while i < len(pct):
        if pct[i:i + 1] == b"%":
            out += b"%" + pct[i + 1:i + 3].lower()
            i += 3
        else:
            out.append(pct[i])
            i += 1
    return bytes(out)


def basic_spelling(user, password):
    return base64.b64encode(("%s:%s" % (user, password)).encode()).rstrip(b"=")


def scan(data, secrets, extra=None):
    """Every (secret name, spelling label) found in `data` (bytes). `secrets` maps names to
    values; `extra` maps labels to literal bytes (e.g. a Basic credential) to look for too."""
    found = []
    for name, value in secrets.items():
        for label, needle in spellings(value).items():
            if needle and needle in data:
                found.append((name, label))
    for label, needle in (extra or {}).items():
        if needle and needle in data:
            found.append((label, "literal"))
    return found


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def scan_proxy_files(proxy, secrets, extra=None):
    """Scans the proxy's audit file and captured stderr. Returns a list of problems (text
    naming the file, the secret and the spelling, never the value)."""
    problems = []
    for label, path in (("audit log", proxy.audit_path), ("stderr", proxy.stderr_path)):
        if not os.path.exists(path):
            continue
        for name, how in scan(read_bytes(path), secrets, extra):
            problems.append("%s holds secret %s (%s spelling)" % (label, name, how))
    return problems
