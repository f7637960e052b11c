"""What ``dags/elastic_train.py`` trains to, computed with NumPy: the same batches and the same
SGD at any size, so an elastic run must end where a run that never changed size ends."""

from __future__ import annotations

import sys

import numpy as np

from tests.support.jobset_schema import REPO


def reference_w(steps: int, learning_rate: float = 0.1) -> np.ndarray:
    """What ``dags/elastic_train.py`` trains to at any size: the same batches, the same SGD."""
    sys.path.insert(0, str(REPO / "dags"))
    from elastic_train import FEATURES, GLOBAL_BATCH

    w_true = np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32)
    w = np.zeros(FEATURES, np.float32)
    for step in range(1, steps + 1):
        x = np.random.default_rng(seed=step).normal(size=(GLOBAL_BATCH, FEATURES))
        x = x.astype(np.float32)
        y = x @ w_true
        grad = 2 * x.T @ (x @ w - y) / GLOBAL_BATCH
        w = w - learning_rate * grad
    return w
