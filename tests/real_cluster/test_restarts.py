"""A host that exits with a restartable code: the real JobSet controller recreates the set,
and the provider's restart accounting agrees with the JobSet's own ``status.restarts``."""

from __future__ import annotations

from airflow_provider_jax.exceptions import JaxCodeError
from harness.real_cluster.control_plane import ControlPlane
from tests.support.real_cluster_jobs import logger, run


def test_a_lost_host_restarts_the_slice_and_the_count_agrees(real_k8s: ControlPlane):
    log, lines = logger("restarts")
    thread, out = run(
        "restarts", log, entrypoint="flaky_train:lose_host_1_once", on_finish_action="keep_jobset"
    )
    thread.join(120)
    outcome = out["value"]
    assert not isinstance(outcome, BaseException), outcome
    assert outcome.result == {"attempt": 1, "processes": 2}
    restarts = [
        line for line in lines.lines if "restart 1/3 after" in line and "finished" not in line
    ]
    assert len(restarts) == 1 and "[0/1]" in restarts[0], lines.lines
    jobsets = real_k8s.api().get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets")
    (jobset,) = [j for j in jobsets["items"] if j["metadata"]["name"].startswith("restarts-")]
    assert jobset["status"]["restarts"] == 1
    assert outcome.goodput["restarts"] == {"disruption": 1}
    real_k8s.api().request(
        "DELETE",
        f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/{jobset['metadata']['name']}",
    )


def test_a_python_that_does_not_exist_fails_the_jobset_at_once(real_k8s: ControlPlane):
    """A typo in ``python=``: the container never starts (kubelet's StartError, exit 128), the
    pod failure policy fails the JobSet at once, and the task names the missing command."""
    log, lines = logger("typo")
    thread, out = run(
        "typo", log, entrypoint="failing_train:fail_on_host_1", python="pythn-no-such-interpreter"
    )
    thread.join(120)
    failure = out["value"]
    assert isinstance(failure, JaxCodeError), failure
    assert "pythn-no-such-interpreter" in str(failure), str(failure)
    assert "the command could not be started" in str(failure)
    assert not [line for line in lines.lines if "restart 1/3" in line], lines.lines
