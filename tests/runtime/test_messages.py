from __future__ import annotations

import pytest

from airflow_provider_jax.runtime.messages import (
    TERMINATION_MESSAGE_LIMIT,
    failure_message,
    format_report,
    parse_message,
    parse_report,
    report_line,
    success_message,
)


def test_failure_message_keeps_the_tail_and_fits():
    traceback = "".join(f"frame {i} é\n" for i in range(2000)) + "ValueError: boom"
    text = failure_message("ValueError: boom", traceback)
    assert len(text.encode()) <= TERMINATION_MESSAGE_LIMIT
    body = parse_message(text)
    assert body["ok"] is False
    assert body["traceback"].endswith("ValueError: boom")
    assert body["traceback"].startswith("...")


def test_success_message_round_trip_and_limit():
    assert parse_message(success_message({"loss": 0.5}, {"step": 3})) == {
        "ok": True,
        "result": {"loss": 0.5},
        "report": {"step": 3},
    }
    with pytest.raises(ValueError):
        success_message("x" * TERMINATION_MESSAGE_LIMIT)
    with pytest.raises(ValueError):
        success_message(float("nan"))


def test_foreign_messages_are_ignored():
    assert parse_message(None) is None
    assert parse_message("Traceback (most recent call last):") is None
    assert parse_message('{"result": 1}') is None


def test_reports():
    line = report_line({"step": 7, "loss": 0.0312345})
    assert parse_report(line + "\n") == {"step": 7, "loss": 0.0312345}
    assert parse_report("print " + line) is None
    assert parse_report("ordinary output") is None
    assert (
        format_report({"step": 7, "loss": 0.0312345, "epoch": 1}) == "step 7: loss=0.03123 epoch=1"
    )


def test_an_oversized_report_is_plain_output_not_parsed() -> None:
    from airflow_provider_jax.runtime.messages import MAX_REPORT_CHARS, parse_report, report_line

    assert parse_report(report_line({"step": 1})) == {"step": 1}
    assert parse_report(report_line({"blob": "x" * MAX_REPORT_CHARS})) is None
