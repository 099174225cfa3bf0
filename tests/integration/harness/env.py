"""Where the airlock binary is, and how much slower than a plain build it runs."""

import functools
import os
import unittest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def airlock_bin():
    """The binary under test: $AIRLOCK_BIN (set by ctest), else build/src/app/airlock.

    A test that needs the binary and cannot find it is skipped when AIRLOCK_BIN is unset (a
    developer running the harness self-tests alone) and fails when AIRLOCK_BIN names a file
    that is not there (ctest always sets it, so a missing binary there is a real failure).
    """
    explicit = os.environ.get("AIRLOCK_BIN")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise AssertionError("AIRLOCK_BIN=%s is not an executable file" % explicit)
        return explicit
    fallback = os.path.join(REPO_ROOT, "build", "src", "app", "airlock")
    if os.access(fallback, os.X_OK):
        return fallback
    raise unittest.SkipTest("no airlock binary: set AIRLOCK_BIN")


@functools.lru_cache(maxsize=None)
def _is_sanitized(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return b"__asan_init" in data or b"__ubsan_handle" in data


@functools.lru_cache(maxsize=None)
def scale():
    """Multiplier for every timeout: $AIRLOCK_ITEST_TIMEOUT_SCALE, else 3 for an ASan build."""
    value = os.environ.get("AIRLOCK_ITEST_TIMEOUT_SCALE")
    if value:
        return max(1.0, float(value))
    try:
        path = airlock_bin()
    except (unittest.SkipTest, AssertionError):
        return 1.0
    return 3.0 if _is_sanitized(path) else 1.0


def sanitized():
    try:
        return _is_sanitized(airlock_bin())
    except (unittest.SkipTest, AssertionError):
        return False


def t(seconds):
    """A timeout in seconds, scaled for slow (sanitized) builds."""
    return seconds * scale()


# What the harness needs from the sanitizers, whatever the caller exported (scripts/test.sh
# exports CI's ASAN_OPTIONS): a modest quarantine so that RSS numbers measure the proxy's own
# buffering rather than ASan's free list, and leak detection. The sanitizers read their options
# left to right and the last one wins, so these are appended, not set only when unset (a
# setdefault lost to scripts/test.sh's export, and the quarantine never took effect).
HARNESS_ASAN_OPTIONS = "quarantine_size_mb=16:detect_leaks=1"
HARNESS_UBSAN_OPTIONS = "print_stacktrace=1"


def _append_options(current, extra):
    return extra if not current else current.rstrip(":") + ":" + extra


def sanitizer_env(environ):
    """environ with the harness's sanitizer options appended (they take effect)."""
    environ["ASAN_OPTIONS"] = _append_options(environ.get("ASAN_OPTIONS"), HARNESS_ASAN_OPTIONS)
    environ["UBSAN_OPTIONS"] = _append_options(environ.get("UBSAN_OPTIONS"),
                                               HARNESS_UBSAN_OPTIONS)
    return environ
