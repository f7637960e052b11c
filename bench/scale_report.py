"""The triggerer-scale bench's table and its targets (``bench.triggerer_scale``)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.targets import Targets, quick

TARGET_REQUESTS = 0.2  # JobSet status requests per job per minute of waiting
TARGET_P95 = 2.0  # seconds from a JobSet finishing to its trigger's event
TARGET_CPU = 0.10  # share of one core at N = 1,000
FIRST_FINISH = quick(20.0, 6.0)  # seconds before the first JobSet ends
# Seconds in, by when every trigger has started: from then on they just wait.
QUIET_FROM = quick(15.0, 4.0)
COUNT_AT = QUIET_FROM - 0.5  # when the objects the collector tracks are counted
FAIL_EVERY = 10  # one JobSet in ten fails


@dataclass(frozen=True)
class Row:
    scenario: str
    jobs: int
    status_requests: int
    log_requests: int
    lists: int
    job_minutes: float
    p50: float
    p95: float
    cpu: float
    wall: float
    quiet_cpu_share: float
    baseline_rss_mib: float
    peak_rss_mib: float
    gc_s: float
    gc_full: int
    tracked_per_job: float
    missed: int
    emulator_lag_p95: float

    @property
    def status_rate(self) -> float:
        return self.status_requests / self.job_minutes

    @property
    def cpu_share(self) -> float:
        return self.cpu / self.wall


def print_table(rows: list[Row], window: float, drop_watch: float, targets: Targets) -> None:
    print(
        f"\nJobSets ending at random {FIRST_FINISH:.0f}-{window:.0f} s in, 1 in {FAIL_EVERY} "
        f"failing; watches dropped within {drop_watch:.0f} s; 2 API server restarts (410 Gone)."
    )
    header = (
        f"{'scenario':16} {'N':>5} {'status req':>10} {'/job/min':>8} {'lists':>5} "
        f"{'log req/job':>11} {'p50 s':>6} {'p95 s':>6} {'CPU s':>6} {'CPU %':>6} "
        f"{'wait %':>6} {'ms/job':>6} {'GC s':>7} {'obj/job':>7} {'RSS MiB':>9} {'missed':>6} {'emu lag':>7}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.scenario:16} {r.jobs:>5} {r.status_requests:>10} {r.status_rate:>8.3f} "
            f"{r.lists:>5} {r.log_requests / r.jobs:>11.2f} {r.p50:>6.2f} {r.p95:>6.2f} "
            f"{r.cpu:>6.1f} {r.cpu_share:>6.1%} {r.quiet_cpu_share:>6.1%} "
            f"{1000 * r.cpu / r.jobs:>6.1f} {r.gc_s:>4.1f}/{r.gc_full:<2} {r.tracked_per_job:>7.0f} "
            f"{r.baseline_rss_mib:>4.0f}>{r.peak_rss_mib:<4.0f} "
            f"{r.missed:>6} {r.emulator_lag_p95:>7.2f}"
        )
    print(
        "status: JobSet list/watch/get while waiting; lists: the first, then after 410s.\n"
        "CPU %: of one core over the whole run (every job's start and end within it); wait %: "
        f"{QUIET_FROM:.0f}-{FIRST_FINISH:.0f} s in,\nwhen all have started and none has ended. "
        "GC s: of the CPU s, in the garbage collector / its full collections; obj/job: the\n"
        f"objects it tracks, per job, {COUNT_AT:.1f} s in over those after imports. "
        "RSS: after imports > peak. emu lag: p95 of how late the emulator's loop answers, s."
    )
    for r in rows:
        if r.scenario != "JobSetTrigger":
            continue
        checks = [
            ("status requests/job/min", r.status_rate, TARGET_REQUESTS),
            ("p95 detection latency, s", r.p95, TARGET_P95),
        ]
        if r.jobs >= 1000:
            checks += [
                ("CPU while waiting, of a core", r.quiet_cpu_share, TARGET_CPU),
                ("CPU over the run, of a core", r.cpu_share, TARGET_CPU),
            ]
        for what, value, target in checks:
            targets.at_most(f"N={r.jobs} {what}", value, target)
        targets.at_most(f"N={r.jobs} missed completions", r.missed, 0)
