"""CPU contention for a test whose failure is a race between two threads of the proxy: busy
processes at the test's own priority make the scheduler preempt the proxy's worker threads
often, so an ordering the code leaves to chance shows up in a bounded number of rounds instead
of once in many CI runs. Bounded in time (each process stops itself) and stopped by PID."""

import contextlib
import subprocess
import sys

SPIN = "import time\nend = time.monotonic() + %f\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def busy_cpus(count=2, seconds=120.0):
    """`count` processes that spin for at most `seconds` while the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN % seconds])
                for _ in range(count)]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
        for p in spinners:
            p.wait()
