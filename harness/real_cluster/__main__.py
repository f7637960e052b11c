"""``python -m harness.real_cluster up [--workers N]|down``: what ``make cluster``
(``WORKERS=N``) and ``make cluster-down`` run. ``up`` builds what is missing, starts the
cluster (control plane and real nodes) in the background in ``.cache/control-plane/run`` and
prints ``export AIRFLOW__JAX__DEFAULT_IMAGE=<the runtime image its nodes hold>``, the agent
image of in-place restarts likewise, and ``export KUBECONFIG=<path>`` last. With workers, that one is a MultiKueue manager, each worker
a whole control plane of its own under ``run/workers/<name>``, printed first as
``# worker <name>: export KUBECONFIG=<path>``."""

from __future__ import annotations

import sys

from harness.real_cluster.components import ControlPlaneError
from harness.real_cluster.control_plane import RUN_DIR, ControlPlane, stop_recorded
from harness.real_cluster.images import AGENT_IMAGE, RUNTIME_IMAGE
from harness.real_cluster.multikueue import connect, start_workers, stop_workers, worker_names

WORKERS_DIR = RUN_DIR / "workers"


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "up"
    workers = int(argv[3]) if len(argv) > 3 and argv[2] == "--workers" else 0
    if command == "down":
        stopped = stop_workers(WORKERS_DIR) + stop_recorded(RUN_DIR)
        print(f"stopped: {', '.join(stopped)}" if stopped else "no control plane was running")
        return 0
    if command != "up":
        print("usage: python -m harness.real_cluster [up [--workers N]|down]", file=sys.stderr)
        return 2
    if stop_workers(WORKERS_DIR) + stop_recorded(RUN_DIR):
        print("stopped the control plane that was running", file=sys.stderr)
    try:
        plane = ControlPlane(RUN_DIR).up()  # first: it starts from an empty RUN_DIR
        planes = start_workers(WORKERS_DIR, worker_names(workers)) if workers else {}
        if planes:
            connect(plane, planes)
    except ControlPlaneError as err:
        stop_workers(WORKERS_DIR)
        stop_recorded(RUN_DIR)
        print(f"make cluster: {err}", file=sys.stderr)
        return 1
    for component in plane.components:
        print(f"{component.name}: pid {component.pid}, log {component.log}", file=sys.stderr)
    nodes = ", ".join(plane.cluster.nodes)
    print(f"cluster ready in {plane.started_in:.1f} s at {plane.url}; nodes: {nodes}",
          file=sys.stderr)  # fmt: skip
    for name, worker in planes.items():
        print(f"# worker {name}: export KUBECONFIG={worker.kubeconfig('admin')}")
    if planes:
        print(f"# the manager: MultiKueue over {', '.join(planes)}, LocalQueue default/multikueue")
    print(f"export AIRFLOW__JAX__DEFAULT_IMAGE={RUNTIME_IMAGE}")
    print(f"export AIRFLOW__JAX__IN_PLACE_RESTART_AGENT_IMAGE={AGENT_IMAGE}")
    print(f"export KUBECONFIG={plane.kubeconfig('admin')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
