"""The provider's retry policy: the decision for each kind of failure, and on real local jobs
through ``airflow dags test`` (Airflow's own task runner evaluates it, with the exception in
hand), that a programming error uses none of its retries while I/O and unclassified errors do."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from airflow.sdk.definitions.retry_policy import (
    ExceptionRetryPolicy,
    RetryAction,
    RetryDecision,
    RetryRule,
)

from airflow_provider_jax.exceptions import JaxCodeError, JaxJobFailed, JaxResultError, NoCapacity
from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.operators.retry_policy import CAPACITY_DELAY, JaxRetryPolicy
from airflow_provider_jax.reporting.failures import ProcessFailure
from airflow_provider_jax.runtime.exits import CODE_ERROR, LOST_PEER
from tests.support.airflow_home import AirflowHome
from tests.support.dag_runs import dags_test

DAGS = Path(__file__).parent / "dags"


def code_error(*types: str, error: str = "") -> JaxCodeError:
    failure = ProcessFailure(
        "[0/1]", error or f"{types[0]}: boom", kind=CODE_ERROR, error_types=types
    )
    return JaxCodeError("the code raised on [0/1]", [failure])


def decide(policy: JaxRetryPolicy, error: BaseException) -> RetryDecision:
    return policy.evaluate(error, try_number=1, max_tries=3)


@pytest.mark.parametrize(
    ("types", "action"),
    [
        (("NameError", "Exception"), RetryAction.FAIL),
        (("ModuleNotFoundError", "ImportError", "Exception"), RetryAction.FAIL),
        (("FileNotFoundError", "OSError", "Exception"), RetryAction.RETRY),
        (("mypkg.DataServiceDown", "ConnectionError", "OSError"), RetryAction.RETRY),
        (("ValueError", "Exception"), RetryAction.DEFAULT),
    ],
)
def test_a_code_error_is_decided_by_its_class_and_its_bases(types, action):
    decision = decide(JaxRetryPolicy(), code_error(*types))
    assert decision.action is action
    if action is not RetryAction.DEFAULT:
        assert "[0/1]" in decision.reason and types[0] in decision.reason


def test_without_the_bases_the_class_name_in_the_error_still_decides():
    error = JaxCodeError("x", [ProcessFailure("[0/0]", "TypeError: bad operand", kind=CODE_ERROR)])
    assert decide(JaxRetryPolicy(), error).action is RetryAction.FAIL


def test_disruptions_and_capacity_retry_with_their_delays_and_results_fail():
    lost = JaxJobFailed("restarts used up", [ProcessFailure("[0/0]", "lost", kind=LOST_PEER)])
    assert decide(JaxRetryPolicy(), lost).action is RetryAction.RETRY
    none = decide(JaxRetryPolicy(), NoCapacity("no spot capacity within capacity_wait"))
    assert (none.action, none.retry_delay) == (RetryAction.RETRY, CAPACITY_DELAY)
    assert decide(JaxRetryPolicy(), JaxResultError("nan")).action is RetryAction.FAIL


def test_code_errors_fail_or_retry_alike_when_asked_and_a_fallback_gets_the_rest():
    assert decide(JaxRetryPolicy("fail"), code_error("OSError")).action is RetryAction.FAIL
    assert decide(JaxRetryPolicy("retry"), code_error("NameError")).action is RetryAction.RETRY
    mine = ExceptionRetryPolicy(
        [RetryRule(exception=KeyboardInterrupt, action=RetryAction.FAIL, reason="mine")]
    )
    composed = JaxRetryPolicy(fallback=mine)
    assert decide(composed, KeyboardInterrupt()).reason == "mine"
    assert decide(composed, code_error("NameError")).action is RetryAction.FAIL  # ours first
    with pytest.raises(ValueError, match="code_errors must be one of"):
        JaxRetryPolicy("Fail")


def test_it_is_the_operators_default_and_a_users_own_policy_wins():
    base = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}
    assert isinstance(JaxTpuSliceOperator(**base).retry_policy, JaxRetryPolicy)
    mine = ExceptionRetryPolicy([], default=RetryAction.RETRY)
    assert JaxTpuSliceOperator(**base, retry_policy=mine).retry_policy is mine
    with pytest.warns(DeprecationWarning, match="retry_on_code_error is deprecated"):
        op = JaxTpuSliceOperator(**base, retry_on_code_error=False)
    assert op.retry_policy.code_errors == "fail"
    with (
        pytest.raises(ValueError, match="retry_on_code_error does not go with retry_policy"),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", DeprecationWarning)
        JaxTpuSliceOperator(**base, retry_on_code_error=False, retry_policy=mine)


@pytest.mark.slow  # four tasks' real failures and retries under `airflow dags test`
def test_on_real_failures_only_what_another_try_can_fix_is_tried_again(
    airflow_home: AirflowHome, tmp_path
):
    ran = dags_test(airflow_home, DAGS, "jax_retry_policy", tmp_path, 280)
    log, states = ran["proc"].stdout, ran["states"]
    assert states["programming_error"] == ("failed", 1), log[-6000:]
    assert "a programming error fails every try alike" in log
    assert states["transient_error"] == ("failed", 3), log[-6000:]
    assert states["other_error"] == ("failed", 3), log[-6000:]
    assert states["other_error_no_retry"] == ("failed", 1), log[-6000:]


def test_bad_policies_and_delays_are_refused_by_name():
    base = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}
    with pytest.raises(TypeError, match="retry_policy must be a RetryPolicy"):
        JaxTpuSliceOperator(**base, retry_policy="fail")
    for bad in (-1, 0, float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="disruption_delay must be"):
            JaxRetryPolicy(disruption_delay=bad)
    with pytest.raises(ValueError, match="argv argument holds a NUL byte"):
        JaxTpuSliceOperator(**base, argv=["a\0b"])
