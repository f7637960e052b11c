"""A real OpenTelemetry Collector for the tests: built from the collector's pinned Go modules
(``tools/otel-collector``: the OTLP receiver and the file exporter, nothing else) the way the
real control plane is built, cached under ``.cache/otel-collector/<go.sum hash>/``, and
started on a free port. What it receives lands as JSON lines, one OTLP export request each.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from harness.real_cluster.components import Component, ControlPlaneError, free_port, port_in_use

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tools" / "otel-collector"
CACHE = Path(os.environ.get("OTEL_COLLECTOR_CACHE", REPO / ".cache" / "otel-collector"))


def binary() -> Path:
    """The collector, built once per change of its pinned modules (about 2 minutes on 2 cores
    with warm Go caches)."""
    key = hashlib.sha256((SOURCE / "go.sum").read_bytes() + (SOURCE / "main.go").read_bytes())
    out = CACHE / key.hexdigest()[:12] / "otelcol"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        log = out.parent / "build.log"
        with log.open("w") as sink:
            built = subprocess.run(
                ["go", "build", "-o", str(out), "."], cwd=SOURCE, stdout=sink, stderr=sink
            )
        if built.returncode:
            raise ControlPlaneError(f"the collector did not build:\n{log.read_text()[-3000:]}")
    return out


class Collector:
    """One collector, receiving OTLP over HTTP on ``port``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.out = directory / "received.jsonl"
        self.component: Component | None = None

    def start(self) -> Collector:
        config = {
            "receivers": {"otlp": {"protocols": {"http": {"endpoint": f"127.0.0.1:{self.port}"}}}},
            "exporters": {"file": {"path": str(self.out), "flush_interval": "100ms"}},
            "service": {
                # Its own telemetry off: no second port to collide with.
                "telemetry": {"metrics": {"level": "none"}},
                "pipelines": {
                    "metrics": {"receivers": ["otlp"], "exporters": ["file"]},
                    "traces": {"receivers": ["otlp"], "exporters": ["file"]},
                },
            },
        }
        path = self.directory / "collector.yaml"
        path.write_text(yaml.safe_dump(config))
        self.component = Component(
            "otel-collector",
            [str(binary()), f"--config=file:{path}"],
            self.directory / "collector.log",
            lambda: port_in_use(self.port),
            ports=(self.port,),
        )
        self.component.start()
        return self

    def stop(self) -> None:
        if self.component is not None:
            self.component.stop()

    def requests(self) -> Iterator[dict[str, Any]]:
        """Each export request received so far."""
        if self.out.exists():
            for line in self.out.read_text().splitlines():
                if line.strip():
                    yield json.loads(line)

    def metrics(self) -> dict[str, list[dict[str, Any]]]:
        """Metric name -> its data points (with their ``attributes`` as a plain dict)."""
        found: dict[str, list[dict[str, Any]]] = {}
        for request in self.requests():
            for resource in request.get("resourceMetrics", []):
                for scope in resource.get("scopeMetrics", []):
                    for metric in scope.get("metrics", []):
                        points = found.setdefault(metric["name"], [])
                        for kind in ("sum", "gauge", "histogram", "exponentialHistogram"):
                            for point in (metric.get(kind) or {}).get("dataPoints", []):
                                attributes = _attributes(point)
                                points.append({**point, "kind": kind, "attributes": attributes})
        return found

    def spans(self) -> list[dict[str, Any]]:
        """Every span received so far (ids as OTLP's JSON spells them: hex)."""
        return [
            {**span, "attributes": _attributes(span)}
            for request in self.requests()
            for resource in request.get("resourceSpans", [])
            for scope in resource.get("scopeSpans", [])
            for span in scope.get("spans", [])
        ]


def _attributes(item: dict[str, Any]) -> dict[str, Any]:
    """OTLP's key/typed-value attribute list as a plain dict."""
    return {a["key"]: next(iter(a["value"].values())) for a in item.get("attributes", [])}
