"""Integration-test harness for airlock: real binary, real loopback origins, real clients.

Importing the package moves this process into its own network namespace when it can (see
netns.py), before any thread or child exists, so nothing a test does can leave the machine.
"""

import os

from . import netns

netns.isolate()

# Clients must never pick up a proxy from the environment: every test names its proxy.
for _var in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY",
             "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
    os.environ.pop(_var, None)
