"""Training code that reports what a pod sees of its node and its cluster (``test_real_nodes``)."""

from __future__ import annotations

import json
import os
import socket
import ssl
import urllib.request
from pathlib import Path
from typing import Any

SA = "/var/run/secrets/kubernetes.io/serviceaccount"


def what_a_pod_sees() -> dict[str, Any]:
    import jax

    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
    request = urllib.request.Request(
        f"https://{host}:{port}/version",
        headers={"Authorization": f"Bearer {Path(SA, 'token').read_text()}"},
    )
    context = ssl.create_default_context(cafile=f"{SA}/ca.crt")
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        version = json.load(response)["gitVersion"]
    try:
        socket.gethostbyname("example.com")
        outside = "resolved"
    except OSError as err:
        outside = type(err).__name__
    return {
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "api_through_the_service": version,
        "kubernetes_service": socket.gethostbyname("kubernetes.default.svc.cluster.local"),
        "outside_name": outside,
        "devices": jax.local_device_count(),
        "platform": jax.devices()[0].platform,
        "processes": jax.process_count(),
    }
