"""Names of the environment variables that tell every JAX process where it stands.

Stdlib only, like the rest of the runtime: the launcher and the JobSet builder write these,
the runtime reads them. (The call itself travels as described in ``call.py``.)
"""

from __future__ import annotations

OUTPUT_DIR_ENV = "AIRFLOW_JAX_OUTPUT_DIR"
TERMINATION_PATH_ENV = "AIRFLOW_JAX_TERMINATION_MESSAGE_PATH"
DEFAULT_TERMINATION_PATH = "/dev/termination-log"  # Kubernetes' default terminationMessagePath

# Set for every pod by the JobSet builder (the process id by its `sh` prelude).
COORDINATOR_ADDRESS_ENV = "JAX_COORDINATOR_ADDRESS"
NUM_PROCESSES_ENV = "JAX_NUM_PROCESSES"
PROCESS_ID_ENV = "JAX_PROCESS_ID"
RESTART_ATTEMPT_ENV = "AIRFLOW_JAX_RESTART_ATTEMPT"
