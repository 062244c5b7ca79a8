"""The multi-host bed's hosts are separate where it matters: a server on one host is reached
at its address from another, each host sees its own name and its own pids, a pid of one host
means nothing on another, and nothing is left after teardown."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from kafkaspark_devstack.netbed import NetBed

PROBE = """
import json, os, socket, sys, urllib.request
url = sys.argv[1]
body = urllib.request.urlopen(url, timeout=5).read().decode()
print(json.dumps({"host": socket.gethostname(), "body": body, "pid": os.getpid()}))
"""


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_hosts_reach_each_other_and_keep_their_pids(tmp_path: Path) -> None:
    bed = NetBed(tmp_path / "bed", ["alpha", "beta"])
    with bed:
        www = bed.folder("alpha")
        (www / "index.html").write_text("served by alpha")
        bed.popen(
            "alpha",
            [sys.executable, "-m", "http.server", "8000", "--bind", bed.address("alpha")],
            cwd=str(www),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        seen, done = None, None
        for _ in range(50):  # the server binds within a few hundred ms
            done = bed.run("beta", [sys.executable, "-c", PROBE, "http://alpha:8000/"])
            if done.returncode == 0:
                seen = json.loads(done.stdout)
                break
            time.sleep(0.2)
        assert done is not None
        assert seen is not None, done.stderr
        assert seen["host"] == "beta" and seen["body"] == "served by alpha"
        # Pids are per host: small inside, and alpha's server pid is not beta's to signal.
        alpha_pids = bed.run("alpha", ["sh", "-c", "ls /proc | grep -E '^[0-9]+$'"]).stdout.split()
        beta_pids = bed.run("beta", ["sh", "-c", "ls /proc | grep -E '^[0-9]+$'"]).stdout.split()
        assert "1" in alpha_pids and "1" in beta_pids
        assert len(alpha_pids) < 10 and len(beta_pids) < 10
        names = bed.run("alpha", ["cat", "/proc/1/cmdline"]).stdout
        assert names.startswith("sleep")
        assert bed.run("alpha", ["hostname"]).stdout.strip() == "alpha"
        # From beta, alpha's name resolves to alpha's bed address, not to loopback.
        resolved = bed.run("beta", ["getent", "hosts", "alpha"]).stdout.split()
        assert resolved[:2] == [bed.address("alpha"), "alpha"]
        assert bed.hub in namespaces()
    left = namespaces()
    assert bed.hub not in left and bed.hosts["alpha"].namespace not in left
