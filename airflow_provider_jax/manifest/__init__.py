"""The manifest: a JAX job's spec in, a JobSet out. Pure: this folder imports no Airflow,
Kubernetes or Google code and does no I/O (an import-linter contract keeps it so).

``spec`` holds and checks what the manifest depends on, ``build`` renders it, ``api`` names
every key and version; the rest are one concept each (``accelerators/``, ``capacity``,
``coordination``, ``failure_policy``, ``gpu_direct``, ``names``, ``pod_command``,
``pod_override``, ``secret_refs``) and ``status`` reads what the controller writes back.
"""
