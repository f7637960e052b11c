"""Two triggerers on one running Airflow, as production runs them for HA."""

from __future__ import annotations

from tests.support.airflow_stack import AirflowStack, free_port


class Triggerers:
    """The stack's triggerer plus a second one, told apart by the job row each creates when
    it starts (both run on this host, so the hostname cannot tell them apart)."""

    def __init__(self, stack: AirflowStack, second: str = "triggerer-2") -> None:
        self.stack = stack
        self.jobs: dict[str, int] = {"triggerer": self._wait_for_job(set())}
        self.start(second)

    def _job_ids(self) -> set[int]:
        rows = self.stack.query("SELECT id FROM job WHERE job_type = 'TriggererJob'")
        return {job_id for (job_id,) in rows}

    def _wait_for_job(self, known: set[int]) -> int:
        new = self.stack.wait_until(lambda: self._job_ids() - known, 60, "a triggerer to start")
        return max(new)

    def start(self, name: str) -> None:
        known = self._job_ids()
        # Its own trigger log server port: both run on this host.
        port = {"AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port())}
        self.stack.start("triggerer", name, env=None if name == "triggerer" else port)
        self.jobs[name] = self._wait_for_job(known)

    def name_of(self, job_id: int | None) -> str | None:
        """Which of ours runs as job ``job_id`` (None: none, or one that has been replaced)."""
        return next((name for name, job in self.jobs.items() if job == job_id), None)

    def stop_second(self, second: str = "triggerer-2") -> None:
        """Back to one triggerer named ``triggerer``, as the stack started."""
        if second in self.stack.procs:
            self.stack.kill(second)
        if "triggerer" not in self.stack.procs:
            self.stack.start("triggerer")
