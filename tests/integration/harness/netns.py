"""Network isolation for the integration tests.

The tests ask the proxy to reach addresses such as 10.0.0.1 or 169.254.169.254 and names that
would need DNS, expecting a refusal *before* any connect. If the proxy had a bug it would send
packets off this machine. To make that impossible, the test process moves itself into a fresh
network namespace (only a loopback interface) before it starts any thread or child: the proxy,
the origins and every client inherit it, so a connect to anything but loopback fails with
ENETUNREACH and a DNS query goes nowhere.

This needs CAP_SYS_ADMIN (root, or an unprivileged user namespace). When it is not available
the suite still runs, but the tests that name non-loopback destinations are skipped
(see `require_isolation`).
"""

import ctypes
import fcntl
import os
import socket
import struct
import subprocess

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

_state = {"isolated": False, "why": "not attempted"}


def _loopback_up():
    # ioctl first (no dependency on iproute2); `ip` as a fallback.
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            ifreq = struct.pack("16sh14x", b"lo", 0)
            flags = struct.unpack("16sh14x", fcntl.ioctl(s, SIOCGIFFLAGS, ifreq))[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))
        return True
    except OSError:
        pass
    for ip in ("/usr/sbin/ip", "/sbin/ip", "ip"):
        try:
            if subprocess.run([ip, "link", "set", "lo", "up"], check=False).returncode == 0:
                return True
        except FileNotFoundError:
            continue
    return False


def _only_loopback():
    """True when every interface of this namespace is `lo`."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return False
    return names == ["lo"]


def isolate():
    """Enter a new network namespace once per process. Returns True when isolated."""
    if _state["isolated"] or _state["why"] != "not attempted":
        return _state["isolated"]
    if os.environ.get("AIRLOCK_ITEST_NETNS", "1") == "0":
        _state["why"] = "disabled by AIRLOCK_ITEST_NETNS=0"
        return False
    if _only_loopback():
        # Already inside an isolated namespace (e.g. a parent did this for us).
        _state["isolated"] = True
        _state["why"] = "already isolated"
        return True
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        _state["why"] = "unshare(CLONE_NEWNET) failed: " + os.strerror(ctypes.get_errno())
        return False
    if not _loopback_up():
        _state["why"] = "could not bring up lo in the new namespace"
        return False
    _state["isolated"] = True
    _state["why"] = "isolated"
    return True


def isolated():
    return _state["isolated"]


def reason():
    return _state["why"]


def require_isolation(test_case):
    """Skip a test that could make a buggy proxy send packets off this machine, but only
    where the machine cannot make a network namespace (the run's capability probe): where it
    can and isolation still failed, that is a failure of the harness, not a reason to skip."""
    if _state["isolated"]:
        return
    from . import capabilities
    ok, why = capabilities.has("netns")
    if ok and os.environ.get("AIRLOCK_ITEST_NETNS", "1") != "0":
        test_case.fail("this machine can make network namespaces but the harness could not "
                       "isolate itself: %s" % _state["why"])
    test_case.skipTest("lacks netns: %s (%s); this test names non-loopback destinations"
                       % (why or "disabled", _state["why"]))
