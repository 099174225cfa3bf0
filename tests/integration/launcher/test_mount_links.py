#!/usr/bin/python3
"""`airlock run` against symlinks swapped in or planted where the launcher mounts, end to end:
a bind source swapped for a link between the check and the mount (a concurrent swapper, as a
second jail in the same work directory could be), a link planted through an earlier run's --rw
path that a later run names a path through, and one planted through an earlier run's --home DIR
below a later run's mount point.

Usage: /usr/bin/python3 test_mount_links.py /path/to/airlock [unittest args...]
Like test_launcher.py (whose helpers it uses), every test runs as the caller and, when that is
root, as the unprivileged user airlock-test; nothing of a jail may be left behind.
"""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_launcher as base  # noqa: E402


# Exchanges two names atomically until killed: renameat2(2) with RENAME_EXCHANGE (glibc 2.28),
# so the path is always either the directory or the link; each state lasts a random time up to
# a millisecond, so that runs meet the swap at every step (too fast a swapper makes every run
# see the link while the plan checks it, and none reaches the mount).
SWAPPER = r"""
import ctypes, os, random, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(p) for p in sys.argv[1:3])
AT_FDCWD, RENAME_EXCHANGE = -100, 2
print("swapping", flush=True)
while True:
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
    time.sleep(random.random() / 1000)
"""


def mount_roots(mountinfo):
    """The root field (4th) of each /proc/self/mountinfo line: which directory of its file
    system each mount shows (proc(5))."""
    return [line.split()[3] for line in mountinfo.splitlines() if len(line.split()) > 4]


class MountLinksTestBase(base.LauncherTestBase):
    """The tests; mixed into one TestCase per user variant."""

    # The base class's own tests run in test_launcher.py, not again here.
    for _name in [n for n in vars(base.LauncherTestBase) if n.startswith("test_")]:
        locals()[_name] = None
    del _name

    def make_victim(self):
        """A directory outside everything the jail is given, with a secret and a cache/."""
        victim = os.path.join(self.outside, "victim")
        os.makedirs(os.path.join(victim, "cache"))
        with open(os.path.join(victim, "secret"), "w") as f:
            f.write("the victim's secret\n")
        self.own(victim, os.path.join(victim, "cache"), os.path.join(victim, "secret"))
        return victim

    # ---- a bind source swapped for a link between the check and the mount ---------------

    def test_bind_source_swapped_for_a_link_is_never_mounted(self):
        self.make_victim()
        deps = os.path.join(self.work, "deps")
        os.makedirs(os.path.join(deps, "cache"))
        # Relative, so that it leads to the victim below the launcher's view of the host's root
        # too (the launcher mounts from there).
        swap = os.path.join(self.work, "deps_swap")
        os.symlink("../outside/victim", swap)
        self.own(deps, os.path.join(deps, "cache"), swap)
        swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, deps, swap],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        outcomes = {"bound": 0, "refused": 0}
        leaked = []
        try:
            self.assertEqual(swapper.stdout.readline().strip(), "swapping")
            # Bounded in runs and time (30 s); the old launcher (which resolved the path again
            # at mount time) mounted the victim within the first few dozen runs (three tries
            # of three, each in under 2 s).
            deadline = time.monotonic() + 30
            for _ in range(300):
                if time.monotonic() > deadline:
                    break
                r = self.jail("cat /proc/self/mountinfo", "--rw", "deps/cache", rc=None)
                self.assertIn(r.returncode, (0, 125), r.stdout[-2000:] + r.stderr[-2000:])
                if r.returncode == 125:
                    outcomes["refused"] += 1
                    continue
                outcomes["bound"] += 1
                roots = mount_roots(r.stdout)
                leaked += [root for root in roots if "/outside/victim" in root]
                if leaked:
                    break
                # What was mounted is the directory that was checked (under either name).
                self.assertTrue(any(root.endswith(("/work/deps/cache", "/work/deps_swap/cache"))
                                    for root in roots), r.stdout[-3000:])
            # (The swapper swapped all along: a run that found nothing to race proves nothing.)
            self.assertIsNone(swapper.poll(), "the swapper stopped")
        finally:
            swapper.kill()
            _, err = swapper.communicate()
        self.assertEqual(leaked, [], f"the victim was mounted into the jail ({outcomes})")
        # Enough runs raced (how many were bound and how many refused depends on where each
        # met the swap). Without the swapper, the same run binds the directory.
        self.assertGreaterEqual(outcomes["bound"] + outcomes["refused"], 20, (outcomes, err))
        r = self.jail("cat /proc/self/mountinfo", "--rw", "deps/cache", rc=None)
        if r.returncode == 125:  # (the swapper may have left the link in place)
            os.rename(deps, deps + ".link")
            os.rename(swap, deps)
            r = self.jail("cat /proc/self/mountinfo", "--rw", "deps/cache", rc=None)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        print(f"\n  swapped source: {outcomes}", file=sys.stderr)

    # ---- a link planted through an earlier run's --rw path -------------------------------

    def test_link_planted_in_a_rw_path_is_not_followed_by_the_next_run(self):
        victim = self.make_victim()
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        self.own(shared)
        # The first run may write its --rw path, and plants a link there.
        self.jail(f"ln -s {victim} {shared}/cache", "--rw", shared)
        self.assertTrue(os.path.islink(os.path.join(shared, "cache")))
        # A later run with the same --rw that names a path through it: refused, naming the link.
        for opt in ("--ro", "--rw"):
            r = self.jail(f"cat {victim}/secret", "--rw", shared, opt, f"{shared}/cache",
                          rc=125)
            self.assertIn(f"{shared}/cache leads to {victim}, outside --rw {shared}", r.stderr)
            self.assertNotIn("secret", r.stdout)

    # ---- a link planted through an earlier run's --home DIR ------------------------------

    def test_link_planted_in_the_home_dir_is_not_followed_below_a_mount_point(self):
        home = os.path.join(self.tmp, "home")  # the caller's home
        proj = os.path.join(home, "sub", "proj")
        agent_home = os.path.join(self.tmp, "agent-home")  # --home DIR, bound at the home
        os.makedirs(proj)
        os.mkdir(agent_home)
        self.own(home, os.path.join(home, "sub"), proj, agent_home)
        made = os.path.join(self.outside, "proj")
        # The first run writes its home (agent-home) and plants sub -> the host's outside/,
        # as the launcher sees the host while it assembles a jail (/oldroot).
        self.run_jail_in(self.work, home, f"ln -s /oldroot{self.outside} \"$HOME/sub\"",
                         "--home", agent_home)
        self.assertTrue(os.path.islink(os.path.join(agent_home, "sub")))
        # The next run works in ~/sub/proj: its mount point is below the home, i.e. in
        # agent-home, where sub is the link. The launcher must not follow it: neither create
        # outside/proj on the host for a mount point nor mount the work directory there.
        r = self.run_jail_in(proj, home, "pwd", "--home", agent_home, rc=None)
        self.assertFalse(os.path.exists(made), "the launcher created a directory through a link")
        self.assertEqual(r.returncode, 125, r.stdout[-2000:] + r.stderr[-3000:])
        self.assertIn(f"mount point {proj}: {home}/sub is a symlink", r.stderr)

    def run_jail_in(self, cwd, home, script, *opts, rc=0):
        p = self.run_in(cwd, "run", *opts, "--", "sh", "-c", script, home=home)
        if rc is not None:
            self.assertEqual(p.returncode, rc, p.stdout[-2000:] + p.stderr[-3000:])
        return p


class AsCaller(MountLinksTestBase, unittest.TestCase):
    """As the user running the tests (root in CI)."""

    setUpClass = classmethod(base.AsCaller.setUpClass.__func__)


class AsUnprivilegedUser(MountLinksTestBase, unittest.TestCase):
    """As `airlock-test`, a user without privileges (only when the tests run as root)."""

    setUpClass = classmethod(base.AsUnprivilegedUser.setUpClass.__func__)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        base.AIRLOCK = os.path.abspath(sys.argv.pop(1))
        os.environ["AIRLOCK_BIN"] = base.AIRLOCK  # for the harness's proxy starter
    unittest.main(verbosity=2)
