"""One finished job's goodput ledger and the tags its metrics carry, as the metrics tests send them."""

LEDGER = {
    "wall_s": 100.0,
    "queued_s": 12.5,
    "startup_s": 8.0,
    "productive_s": 70.0,
    "lost_s": 9.5,
    "restarts": {"lost peer": 1, "hang": 2},
    "resumed_from": 40,
    "chips": 16,
    "chip_hours": 0.39,
    "goodput": 0.7,
}
TAGS = {"dag_id": "nightly", "task_id": "train", "accelerator": "tpu-v6e-16"}
