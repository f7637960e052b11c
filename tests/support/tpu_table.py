"""xpk's TPU device table as the tests hold it: the oracle for the accelerator catalogue."""

import json
from pathlib import Path

# name, gke-tpu-accelerator, topology, hosts, chips per host, machine type
TPU_TABLE = [
    ("v4-8", "tpu-v4-podslice", "2x2x1", 1, 4, "ct4p-hightpu-4t"),
    ("v4-16", "tpu-v4-podslice", "2x2x2", 2, 4, "ct4p-hightpu-4t"),
    ("v4-32", "tpu-v4-podslice", "2x2x4", 4, 4, "ct4p-hightpu-4t"),
    ("v5p-8", "tpu-v5p-slice", "2x2x1", 1, 4, "ct5p-hightpu-4t"),
    ("v5p-16", "tpu-v5p-slice", "2x2x2", 2, 4, "ct5p-hightpu-4t"),
    ("v5p-32", "tpu-v5p-slice", "2x2x4", 4, 4, "ct5p-hightpu-4t"),
    ("v5p-64", "tpu-v5p-slice", "2x4x4", 8, 4, "ct5p-hightpu-4t"),
    ("v5litepod-1", "tpu-v5-lite-podslice", "1x1", 1, 1, "ct5lp-hightpu-1t"),
    ("v5litepod-4", "tpu-v5-lite-podslice", "2x2", 1, 4, "ct5lp-hightpu-4t"),
    ("v5litepod-8", "tpu-v5-lite-podslice", "2x4", 2, 4, "ct5lp-hightpu-4t"),
    ("v5litepod-16", "tpu-v5-lite-podslice", "4x4", 4, 4, "ct5lp-hightpu-4t"),
    ("v5litepod-32", "tpu-v5-lite-podslice", "4x8", 8, 4, "ct5lp-hightpu-4t"),
    ("v5litepod-64", "tpu-v5-lite-podslice", "8x8", 16, 4, "ct5lp-hightpu-4t"),
    ("v5litepod-128", "tpu-v5-lite-podslice", "8x16", 32, 4, "ct5lp-hightpu-4t"),
    ("v5litepod-256", "tpu-v5-lite-podslice", "16x16", 64, 4, "ct5lp-hightpu-4t"),
    ("v6e-1", "tpu-v6e-slice", "1x1", 1, 1, "ct6e-standard-1t"),
    ("v6e-4", "tpu-v6e-slice", "2x2", 1, 4, "ct6e-standard-4t"),
    ("v6e-8", "tpu-v6e-slice", "2x4", 2, 4, "ct6e-standard-4t"),
    ("v6e-16", "tpu-v6e-slice", "4x4", 4, 4, "ct6e-standard-4t"),
    ("v6e-32", "tpu-v6e-slice", "4x8", 8, 4, "ct6e-standard-4t"),
    ("v6e-64", "tpu-v6e-slice", "8x8", 16, 4, "ct6e-standard-4t"),
    ("v6e-128", "tpu-v6e-slice", "8x16", 32, 4, "ct6e-standard-4t"),
    ("v6e-256", "tpu-v6e-slice", "16x16", 64, 4, "ct6e-standard-4t"),
]

# xpk 1.16's device types as xpk itself lists them (tests/fixtures/xpk/device_types.json)
XPK = json.loads((Path(__file__).parents[1] / "fixtures" / "xpk" / "device_types.json").read_text())
XPK_ROWS = [dict(zip(XPK["columns"], row, strict=True)) for row in XPK["rows"]]
