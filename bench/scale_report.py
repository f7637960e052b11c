"""The triggerer-scale bench's table and its targets (``bench.triggerer_scale``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.targets import Targets, quick

# The targets at N = 10,000 waiting JobSets in one triggerer (#38); at N = 1,000 the older,
# looser ones (#19), as the shared watch's requests are spread over fewer jobs there.
TARGET_REQUESTS = {10_000: 0.02, 1000: 0.2}  # JobSet status requests per job per minute
TARGET_CPU_WAITING = {10_000: 0.02, 1000: 0.10}  # share of one core while all wait
TARGET_RSS_PER_JOB = 0.1  # MiB of the triggerer's peak RSS over its baseline, per job
TARGET_P95 = 2.0  # seconds from a JobSet finishing to its trigger's event
FAIL_EVERY = 10  # one JobSet in ten fails


@dataclass(frozen=True)
class Schedule:
    """A run's phases, in seconds from the triggers' start.

    :param quiet_from: every trigger has started by then: from then on they just wait.
    :param first_finish: the first JobSet ends then; the wait is measured from ``quiet_from``.
    :param window: the last JobSet ends by then.
    """

    quiet_from: float
    first_finish: float
    window: float

    @property
    def count_at(self) -> float:
        """When the waiting state is counted (objects, live allocations), just before the
        wait window: the count itself takes some 30 ms of CPU at N = 1,000, which inside the
        window read as 0.6 % of a core of "waiting"."""
        return self.quiet_from - 0.5


def schedule(jobs: int, window: float | None = None) -> Schedule:
    """A run's phases for ``jobs`` triggers. Starting them all takes longer with more (some
    5-10 ms of CPU each on this machine, with the garbage collector's share growing with N;
    a leader's log stream opens 2-7 s after its JobSet starts). The ends come at most 50 a
    second: 40 s for 1,000 (25 a second), 200 s for 10,000. The wait between is measured:
    5 s, or 10 s at 10,000 (CPU is sampled every half-second)."""
    quiet_from = quick(max(15.0, jobs / 100), 4.0)
    first_finish = quiet_from + quick(max(5.0, jobs / 1000), 2.0)
    if window is None:
        window = first_finish + quick(max(40.0, jobs / 50), 5.0)
    return Schedule(quiet_from, first_finish, max(window, first_finish + 5))


@dataclass(frozen=True)
class Row:
    scenario: str
    jobs: int
    when: Schedule
    status_requests: int
    log_requests: int
    lists: int
    job_minutes: float
    p50: float
    p95: float
    p95_calm: float  # of the JobSets that ended away from the API restarts
    cpu: float
    wall: float
    quiet_cpu_share: float
    baseline_rss_mib: float
    waiting_rss_mib: float
    peak_rss_mib: float
    peak_at: float  # seconds from the start when the sampled RSS peaked
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

    @property
    def rss_per_job(self) -> float:
        """MiB of peak RSS over the baseline, per job."""
        return (self.peak_rss_mib - self.baseline_rss_mib) / self.jobs

    @property
    def waiting_rss_per_job(self) -> float:
        """MiB of RSS while all wait over the baseline, per job."""
        return (self.waiting_rss_mib - self.baseline_rss_mib) / self.jobs


def _at_scale(targets: dict[int, float], jobs: int) -> float | None:
    """The target for the largest N in ``targets`` that ``jobs`` reaches, if any."""
    reached = [n for n in targets if jobs >= n]
    return targets[max(reached)] if reached else None


def print_table(rows: list[Row], drop_watch: float, targets: Targets) -> None:
    print(
        f"\nJobSets ending at random between the wait window's end and the window's, 1 in {FAIL_EVERY} "
        f"failing; watches dropped within {drop_watch:.0f} s; 2 API server restarts (410 Gone)."
    )
    header = (
        f"{'scenario':16} {'N':>6} {'status req':>10} {'/job/min':>8} {'lists':>5} "
        f"{'log req/job':>11} {'p50 s':>6} {'p95 s':>6} {'CPU s':>6} {'CPU %':>6} "
        f"{'wait %':>6} {'ms/job':>6} {'GC s':>7} {'obj/job':>7} {'RSS MiB':>14} "
        f"{'KiB/job':>9} {'missed':>6} {'emu lag':>7}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.scenario:16} {r.jobs:>6} {r.status_requests:>10} {r.status_rate:>8.4f} "
            f"{r.lists:>5} {r.log_requests / r.jobs:>11.2f} {r.p50:>6.2f} {r.p95:>6.2f} "
            f"{r.cpu:>6.1f} {r.cpu_share:>6.1%} {r.quiet_cpu_share:>6.1%} "
            f"{1000 * r.cpu / r.jobs:>6.1f} {r.gc_s:>4.1f}/{r.gc_full:<2} {r.tracked_per_job:>7.0f} "
            f"{r.baseline_rss_mib:>4.0f}>{r.waiting_rss_mib:>4.0f}>{r.peak_rss_mib:<4.0f} "
            f"{1024 * r.waiting_rss_per_job:>4.0f}/{1024 * r.rss_per_job:<4.0f} "
            f"{r.missed:>6} {r.emulator_lag_p95:>7.2f}"
        )
    print(
        "status: JobSet list/watch/get while waiting; lists: the first, then after 410s.\n"
        "CPU %: of one core over the whole run (every job's start and end within it); wait %: "
        "from when all\nhave started until the first ends (schedule below). GC s: of the CPU s, "
        "in the garbage collector / its full\ncollections; obj/job: the objects it tracks, per "
        "job, while all wait, over those after imports. RSS: after\nimports > while all wait > "
        "peak; KiB/job: over the baseline, while waiting / at peak. emu lag: p95 of how\nlate "
        "the emulator's loop answers, s. Schedule (s from the start: all waiting, first end, "
        "last end); API restarts a\nthird and two thirds of the way from the first end to the last:"
    )
    for r in rows:
        print(
            f"  {r.scenario}, N={r.jobs}: p95 detection away from the API restarts {r.p95_calm:.2f} s"
        )
    for r in rows:
        w = r.when
        print(
            f"  {r.scenario}, N={r.jobs}: {w.quiet_from:.0f}, {w.first_finish:.0f}, "
            f"{w.window:.0f}; RSS peaked {r.peak_at:.0f} s in"
        )
    for r in rows:
        if r.scenario != "JobSetTrigger":
            continue
        targets.at_most(f"N={r.jobs} p95 detection latency, s", r.p95, TARGET_P95)
        targets.at_most(f"N={r.jobs} missed completions", r.missed, 0)
        if (rate := _at_scale(TARGET_REQUESTS, r.jobs)) is not None:
            targets.at_most(f"N={r.jobs} status requests/job/min", r.status_rate, rate)
        if (share := _at_scale(TARGET_CPU_WAITING, r.jobs)) is not None:
            targets.at_most(f"N={r.jobs} CPU while waiting, of a core", r.quiet_cpu_share, share)
        if r.jobs >= 10_000:
            targets.at_most(
                f"N={r.jobs} peak RSS over baseline, MiB/job", r.rss_per_job, TARGET_RSS_PER_JOB
            )


BURST_SLACK = 1.10  # the burst's CPU may be this much over the old code's: run-to-run noise


def compare_with_old(rows: list[Row], targets: Targets) -> None:
    """The working tree's ``JobSetTrigger`` against the old code's, measured in the same run
    (the mean of each's runs): the burst's CPU no worse, and the memory per waiting job."""
    for jobs in sorted({r.jobs for r in rows}):
        now = [r for r in rows if r.jobs == jobs and r.scenario == "JobSetTrigger"]
        old = [r for r in rows if r.jobs == jobs and r.scenario.startswith("...")]
        if not now or not old:
            continue

        def mean(runs: list[Row], figure: Callable[[Row], float]) -> float:
            return sum(figure(r) for r in runs) / len(runs)

        cpu_old, cpu_now = mean(old, lambda r: r.cpu_share), mean(now, lambda r: r.cpu_share)
        print(
            f"  N={jobs} side by side (means of {len(old)} and {len(now)} runs), old > now: CPU "
            f"over the run {cpu_old:.1%} > {cpu_now:.1%}; RSS per waiting job "
            f"{1024 * mean(old, lambda r: r.waiting_rss_per_job):.0f} > "
            f"{1024 * mean(now, lambda r: r.waiting_rss_per_job):.0f} KiB, at peak "
            f"{1024 * mean(old, lambda r: r.rss_per_job):.0f} > "
            f"{1024 * mean(now, lambda r: r.rss_per_job):.0f} KiB"
        )
        targets.at_most(f"N={jobs} burst CPU, now / old code", cpu_now / cpu_old, BURST_SLACK)
