"""What a local job's start-up is made of, up to the user's first line.

Each part runs as its own program in the pods' own command (the shell line that sets the
process id, then ``python3 -c``) and env (``process_env``), both pods at once as the job
starts them; the median and the slowest of ``reps`` runs:

- interpreter start: the shell line and ``python3 -c pass``, wall time to exit;
- runtime bundle: the pod command's bootstrap up to the runtime's ``main()`` (decode and
  unzip the runtime, import it), timed inside the process, the slower of the two;
- ``import jax``, timed the same way (inside, not to exit: an interpreter that imported
  JAX takes a while to tear down, which a job pays after its last line, not before the first);
- ``jax.distributed.initialize`` as the runtime calls it (a worker first waits for the
  coordinator to listen), timed inside the process that reaches it last: the call
  itself once both are in it (the other's wait for it is counted under the imports);
- the backend's pod init (``pod_init.py``, a container's PID 1), less the interpreter: the
  one part "by hand" does not have.

The start-up ``bench.local_overhead`` measured, less the first four, is the rest: decoding
the call, loading the user's module, and two processes sharing two cores.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence

from airflow_provider_jax.backends.local.pods import PodPlan
from airflow_provider_jax.backends.local.processes import POD_INIT_ARGV, process_env
from airflow_provider_jax.manifest.pod_command import BOOTSTRAP

_RUN_MAIN = "sys.exit(main())\n"
assert BOOTSTRAP.endswith(_RUN_MAIN), "the bootstrap no longer ends by calling main()"


def timed(code: str) -> str:
    """``code``, printing how long it took: a program's own time, without its exit (an
    interpreter that imported JAX takes a while to tear down)."""
    return f"import time as _t\n_s = _t.perf_counter()\n{code}\nprint(_t.perf_counter() - _s)\n"


BUNDLE = timed(BOOTSTRAP.removesuffix(_RUN_MAIN))  # everything up to the runtime's main()
IMPORT_JAX = timed("import jax")
# As the runtime joins: a worker first waits for the coordinator to listen.
INITIALIZE = (
    "import jax\nfrom airflow_provider_jax.runtime.main import initialize_distributed\n"
    + timed("initialize_distributed()")
)

#: A pod's command with ``python3 -c CODE`` in place of the bootstrap.
Program = Callable[[PodPlan], list[str]]


def python(code: str) -> Program:
    def argv(plan: PodPlan) -> list[str]:
        assert plan.argv[-1] == BOOTSTRAP, "the pod command no longer ends with the bootstrap"
        return [*plan.argv[:-1], code]

    return argv


def under_pod_init(code: str) -> Program:
    return lambda plan: [*POD_INIT_ARGV, *python(code)(plan)]


def both(
    plans: Sequence[PodPlan],
    pythonpath: Sequence[str],
    program: Program,
    of_both: Callable[[list[float]], float] | None = None,
) -> float:
    """Run ``program`` as every pod at once. Without ``of_both``, the wall time until the last
    one exits; with it, ``of_both`` of the times the processes printed."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as scratch:
        started = time.perf_counter()
        processes = [
            subprocess.Popen(
                program(plan),
                env=process_env(plan, scratch, pythonpath),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for plan in plans
        ]
        outputs = [p.communicate()[0] for p in processes]
        elapsed = time.perf_counter() - started
    if any(p.returncode for p in processes):
        codes = [p.returncode for p in processes]
        raise RuntimeError(f"{program(plans[0])[-1]!r} failed: exit codes {codes}")
    return elapsed if of_both is None else of_both([float(o.split()[-1]) for o in outputs])


def report(
    plans: Callable[[], list[PodPlan]], pythonpath: Sequence[str], startup: float, reps: int
) -> None:
    """Print each part's median and the rest of ``startup`` (by hand's, measured).

    :param plans: the job's pods, with fresh coordinator ports on every call.
    :param pythonpath: the pods' extra ``PYTHONPATH``, as the runs had it.
    :param startup: the median start-up of the runs by hand, before the user's first line.
    :param reps: how many times each part runs (its median is reported).
    """

    def runs(
        program: Program, of_both: Callable[[list[float]], float] | None = None
    ) -> list[float]:
        return sorted(both(plans(), pythonpath, program, of_both) for _ in range(reps))

    interpreter = runs(python("pass"))
    parts = {
        "interpreter start": interpreter,
        "runtime bundle (decode, unzip, import)": runs(python(BUNDLE), max),
        "import jax": runs(python(IMPORT_JAX), max),  # the slower process holds the other up
        # The process that came in last: the call once both are in it (the other one's wait
        # for it is counted above, under its imports).
        "jax.distributed.initialize": runs(python(INITIALIZE), min),
    }
    base = statistics.median(interpreter)
    pod_init = [t - base for t in runs(under_pod_init("pass"))]
    print(f"start-up before the user's first line, by hand, median: {startup:.3f} s; its parts:")
    print(f"  {'':<48} {'median':>7} {'max':>7}")
    for what, times in parts.items():
        print(f"  {what:<48} {statistics.median(times):7.3f} {times[-1]:7.3f}")
    accounted = sum(statistics.median(times) for times in parts.values())
    print(f"  {'the rest (the call, the user module, 2 cores)':<48} {startup - accounted:7.3f}")
    what = "the backend's pod init process (by hand: none)"
    print(f"  {what:<48} {statistics.median(pod_init):7.3f} {pod_init[-1]:7.3f}")
