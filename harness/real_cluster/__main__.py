"""``python -m harness.real_cluster up|down``: what ``make cluster`` and
``make cluster-down`` run. ``up`` builds what is missing, starts the control plane in the
background in ``.cache/control-plane/run``, and prints ``export KUBECONFIG=<path>`` last."""

from __future__ import annotations

import sys

from harness.real_cluster.components import ControlPlaneError
from harness.real_cluster.control_plane import RUN_DIR, ControlPlane, stop_recorded


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "up"
    if command == "down":
        stopped = stop_recorded(RUN_DIR)
        print(f"stopped: {', '.join(stopped)}" if stopped else "no control plane was running")
        return 0
    if command != "up":
        print("usage: python -m harness.real_cluster [up|down]", file=sys.stderr)
        return 2
    if stop_recorded(RUN_DIR):
        print("stopped the control plane that was running", file=sys.stderr)
    try:
        plane = ControlPlane(RUN_DIR).up()
    except ControlPlaneError as err:
        print(f"make cluster: {err}", file=sys.stderr)
        return 1
    for component in plane.components:
        print(f"{component.name}: pid {component.pid}, log {component.log}", file=sys.stderr)
    print(f"control plane ready in {plane.started_in:.1f} s at {plane.url}", file=sys.stderr)
    print(f"export KUBECONFIG={plane.kubeconfig('admin')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
