"""Gloo's connection reports never reach the task log, however they arrive: whole, in the
newer form without "[Gloo] Rank", glued to another line, or cut across two."""

from __future__ import annotations

import pytest

from airflow_provider_jax.reporting.host_logs import without_gloo_noise

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
