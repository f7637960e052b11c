"""A node's first process (``harness/real_cluster/node_init.py``) names only its own UTS
namespace: started in the namespace it was told is the machine's, it refuses before naming
anything (a node that ran ``hostname`` in the machine's namespace renamed the whole machine,
and Gloo in every other process here then looked up a name that was no longer this
machine's)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from harness.real_cluster.node_init import MACHINE_UTS
from tests.support.jobset_schema import REPO


def test_a_node_in_the_machines_uts_namespace_refuses_to_name_it(tmp_path):
    before = socket.gethostname()
    config = {"directory": str(tmp_path), "hostname": "gke-not-this-machine", "ip": "10.0.0.2"}
    (tmp_path / "node.json").write_text(json.dumps(config))
    # The "machine" here is a UTS namespace of the test's own (were the guard gone, only it
    # would be renamed), and node_init runs in it; its mounts stay in a namespace of its own.
    as_the_machine = f'export {MACHINE_UTS}="$(readlink /proc/self/ns/uts)" && exec "$@"'
    ran = subprocess.run(
        ["unshare", "--uts", "--mount", "--propagation", "private", "--",
         "sh", "-c", as_the_machine, "sh",
         sys.executable, "-m", "harness.real_cluster.node_init", str(tmp_path / "node.json")],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode != 0
    assert "naming the node would rename the machine" in ran.stderr, ran.stderr
    assert socket.gethostname() == before
