"""What this machine can do, probed once per run and never from the feature under test.

A test may skip only because the machine lacks something (no user namespaces, a kernel without
nf_tables nat, a tool that is not installed), never because airlock itself failed: a skip
decided from airlock's own error message would turn a regression into a green "skipped".
So the probes below use only the kernel, /proc and the standard tools, never `airlock`.

ctest runs `python3 -m harness.capabilities --write FILE` once per run (a fixture that every
integration test requires) and passes FILE in $AIRLOCK_ITEST_CAPABILITIES; a module run by
hand probes for itself. `require(test, name)` skips with the probe's reason; in CI the runner
(harness/runner.py) turns every skip that is not on its allow-list into a failure.
"""

import gzip
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import unittest

_cache = {}


def _run(cmd, **kw):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, **kw)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    if r.returncode == 0:
        return True, ""
    return False, (r.stderr.strip() or "exit %d" % r.returncode)


def _userns(uid=None):
    kw = {}
    if uid is not None:
        kw = {"user": uid, "group": uid, "extra_groups": []}
    ok, why = _run(["unshare", "-Urnmp", "--fork", "true"], **kw)
    if not ok:
        why += (" (user namespaces disabled: kernel.unprivileged_userns_clone, "
                "user.max_user_namespaces or AppArmor restrict_unprivileged_userns)")
    return ok, why


def _kernel_config():
    """The running kernel's config options (CONFIG_X -> 'y'/'m'), or None when unknown."""
    paths = ["/proc/config.gz", "/boot/config-" + platform.release()]
    for path in paths:
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt") as f:
                out = {}
                for line in f:
                    key, sep, value = line.strip().partition("=")
                    if sep and key.startswith("CONFIG_"):
                        out[key] = value
                return out
        except OSError:
            continue
    return None


def _nat_capture():
    """Transparent capture needs nf_tables with nat + redirect and policy routing
    (src/launcher/nftables.cpp, routes.cpp). Decided from the kernel's config; where the config
    cannot be read, the capability is assumed (then a failure is a failure, not a skip)."""
    config = _kernel_config()
    if config is None:
        return True, "kernel config unreadable: assumed"
    needed = ("CONFIG_NF_TABLES", "CONFIG_NFT_NAT", "CONFIG_NFT_REDIR", "CONFIG_NF_TABLES_IPV4",
              "CONFIG_IP_MULTIPLE_TABLES")
    # Newer kernels fold NFT_REDIR into NFT_NAT; accept either spelling of redirect support.
    missing = [k for k in needed if config.get(k) not in ("y", "m")
               and not (k == "CONFIG_NFT_REDIR" and config.get("CONFIG_NFT_NAT") in ("y", "m"))]
    if missing:
        return False, "kernel lacks " + ", ".join(missing)
    return True, ""


def _netns():
    return _run(["unshare", "-n", "true"]) if os.geteuid() == 0 else _run(
        ["unshare", "-Urn", "true"])


def _ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True, ""
    except OSError as e:
        return False, "no IPv6 loopback: %s" % e


def _tool(*names):
    missing = [n for n in names if shutil.which(n) is None]
    return (not missing), ("not installed: " + ", ".join(missing) if missing else "")


def _pip():
    return _run(["/usr/bin/python3", "-m", "pip", "--version"])


PROBES = {
    "root": lambda: (True, "") if os.geteuid() == 0 else (False, "not root"),
    "netns": _netns,
    "userns": _userns,
    # As `nobody` (65534): what an unprivileged user may do, without creating one here.
    "userns_unprivileged": lambda: _userns(65534) if os.geteuid() == 0 else (
        False, "needs root to switch to the unprivileged test user"),
    "capture": lambda: _nat_capture() if _userns()[0] else _userns(),
    "ipv6_loopback": _ipv6_loopback,
    "node": lambda: _tool("node"),
    "git": lambda: _tool("git"),
    "jdk": lambda: _tool("java", "javac", "keytool"),
    "pip": _pip,
    "curl": lambda: _tool("curl"),
    "promtool": lambda: _tool("promtool"),
    "prometheus": lambda: _tool("prometheus"),
    "kubectl": lambda: _tool("kubectl"),
}


def probe_all():
    return {name: dict(zip(("ok", "why"), fn())) for name, fn in PROBES.items()}


def _load():
    if _cache:
        return _cache
    path = os.environ.get("AIRLOCK_ITEST_CAPABILITIES")
    if path and os.path.exists(path):
        with open(path) as f:
            _cache.update(json.load(f))
    return _cache


def has(name):
    """(ok, why) for one capability; probed here when the run's file does not have it."""
    caps = _load()
    if name not in caps:
        ok, why = PROBES[name]()
        caps[name] = {"ok": ok, "why": why}
    return caps[name]["ok"], caps[name]["why"]


def require(test_case, name):
    """Skips test_case (a TestCase, or the class when given a type) unless the machine has
    `name`. The skip reason starts with 'lacks NAME:' so the runner's allow-list can name it."""
    ok, why = has(name)
    if not ok:
        raise unittest.SkipTest("lacks %s: %s" % (name, why))


def main(argv):
    caps = probe_all()
    if len(argv) >= 2 and argv[0] == "--write":
        with open(argv[1], "w") as f:
            json.dump(caps, f, indent=1)
    for name, c in sorted(caps.items()):
        print("%-20s %s %s" % (name, "yes" if c["ok"] else "NO ", c["why"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
