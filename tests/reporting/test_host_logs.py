"""Gloo's connection reports never reach the task log, however they arrive: whole, in the
newer form without "[Gloo] Rank", glued to another line, or cut across two."""

from __future__ import annotations

import pytest

from airflow_provider_jax.reporting.host_logs import GlooFilter, without_gloo_noise

WHOLE = "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1"
NEWER = "0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1"


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        (WHOLE, None),
        (NEWER, None),
        (WHOLE + WHOLE.replace("Rank 0", "Rank 1"), None),  # two glued together
        ("[Gloo] Rank 3 is connected to 7 peer ranks. ", None),  # cut in two...
        ("Expected number of connected peer ranks is : 7", None),  # ...and its second half
        ("[Gloo] Rank 2", None),
        (WHOLE + "step 10: loss=0.5", "step 10: loss=0.5"),  # glued to a real line
        ("loading data" + NEWER, "loading data"),
        ("step 10: loss=0.5", "step 10: loss=0.5"),
        ("the model is connected to 3 heads", "the model is connected to 3 heads"),
        ("", ""),
    ],
)
def test_gloo_connection_reports_are_taken_out(line, kept):
    assert without_gloo_noise(line) == kept


def test_a_report_in_fragments_goes_whole_and_the_next_line_stays():
    """As the local runner read them from one process (a run of make test): the rank's
    number and an empty line between two pieces go too; the step after it stays."""
    gloo = GlooFilter()
    lines = [
        "airflow-jax: start-up done, calling collective",
        WHOLE + " [Gloo] Rank 1 is connected to 7 peer ranks. [Gloo] Rank",  # one whole, two begun
        "2 is connected to 7 peer ranks.",
        # Two of Gloo's threads writing at once, as seen in a make check run:
        "[Gloo] Rank 0 is connected to [Gloo] Rank 03 peer ranks.  is connected to   peer ranks.",
        "[Gloo] Rank 2 is connected to 15[Gloo] Rank 0[Gloo] Rank 1[Gloo] Rank  is connected to  "
        "peer ranks.",
        "[Gloo] Rank 0[Gloo] Rank 0 is connected to  is connected to 11 peer ranks.  peer ranks. "
        "Expected number of connected peer ranks is :",
        "",
        "[Gloo] Rank",
        "0",
        "is connected to 7 peer ranks.",
        "Expected number of connected peer ranks is :",
        "",
        "7",
        "step 1: process=0 total=12",
        "0",  # a line of the program's own, not a piece of a report
    ]
    kept = [k for line in lines if (k := gloo.keep(line)) is not None]
    assert kept == [
        "airflow-jax: start-up done, calling collective",
        "step 1: process=0 total=12",
        "0",
    ]


def test_a_failed_process_traceback_is_left_out_of_its_streamed_lines():
    from airflow_provider_jax.reporting.host_logs import HostLines
    from airflow_provider_jax.runtime.messages import FAILURE_BEGIN, FAILURE_END

    lines = HostLines()
    said = ["step 3", FAILURE_BEGIN, "Traceback (most recent call last):", '  File "t.py"',
            "ValueError: boom", FAILURE_END, "after", "Traceback (most recent call last):"]  # fmt: skip
    kept = [line for line in said if lines.keep(line) is not None]
    assert kept == ["step 3", "after", "Traceback (most recent call last):"]  # the user's own
