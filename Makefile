# Every target sets itself up: a venv with the locked dependencies, then the work.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
UV_VERSION := 0.13.9
STAMP := $(VENV)/.installed
export AIRFLOW_HOME ?= $(CURDIR)/.airflow
# Each module's bytecode is written once, at its first import. Where PYTHONDONTWRITEBYTECODE
# is set (some images set it), every process (each Airflow component, task and JAX process)
# would compile jax, orbax and airflow from source again: `import jax` takes 2.8 s so, 1.1 s
# from bytecode; `import orbax.checkpoint` 5.8 s against 1.9 s.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install check check-under-load test lint format demo dags-test bench lock clean cluster cluster-down control-plane images docs compose-images

install: $(STAMP)

$(STAMP): pyproject.toml requirements/constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "uv==$(UV_VERSION)"
	$(UV) pip install -q --python $(PY) -c requirements/constraints.txt -e ".[test,docs]"
	touch $@

# The fast tier, for a change to one module: lint, then every test that needs neither the real
# control plane, nor a running Airflow stack, nor a drill of a minute or more (the markers in
# pyproject.toml; tests/conftest.py marks the first two from the fixtures a test uses).
CHECK_MARKERS := not real_cluster and not airflow_stack and not slow
# Test workers (pytest-xdist), each a test file at a time (its module fixtures set up once):
# most tests wait on processes (JAX, Airflow, the control plane) rather than use the CPU. Not
# loadgroup: pytest 9.2 ignores the group xdist 3.8 writes into a test's id
# (pytest-dev/pytest-xdist#1386), and the tests would go out one by one. 0: one process, in
# file order.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile

check: lint
	bash scripts/test-deps.sh check
	$(PY) -m pytest $(XDIST) -m "$(CHECK_MARKERS)" $(PYTEST_ARGS)

# The fast tier on a busy machine: a busy loop per core beside it, RUNS times (default 3).
RUNS ?= 3
check-under-load: $(STAMP)
	RUNS=$(RUNS) bash scripts/check-under-load.sh

# The whole suite: what CI runs.
test: lint control-plane
	bash scripts/test-deps.sh test
	$(PY) tools/images/build.py >/dev/null
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# The real cluster's binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# JobSet and its in-place restart agent, Kueue; the nodes' kubelet, kube-proxy, CoreDNS, pause
# and device plugin; kubectl), built from the Go modules pinned in
# tools/control-plane/versions.env. Once per machine (README: what it costs), nothing after.
control-plane:
	bash tools/control-plane/build.sh

# The stand-ins for the images docker-compose.yaml and the Dockerfile start from (apache/airflow,
# postgres, redis), built offline into the Docker engine at DOCKER_HOST (else the default
# socket) by tools/compose-images/build.sh: Debian root filesystems from mmdebstrap, Airflow
# from wheels of the lock. Once per machine, cached in ~/.cache/airflow-provider-jax/.
compose-images: $(STAMP)
	bash tools/compose-images/build.sh

# The images the real nodes run (tools/images/build.py: Debian's python3 and the lock's JAX
# wheels, JobSet's agent, pause), built offline into the per-user cache; seconds once cached.
images: $(STAMP) control-plane
	$(PY) tools/images/build.py

# Start it in the background (state in .cache/control-plane/run); the last lines printed are
# `export AIRFLOW__JAX__DEFAULT_IMAGE=...` (the runtime image its nodes hold), the in-place
# restart agent's image likewise, and `export KUBECONFIG=...`. WORKERS=2 makes it a MultiKueue
# manager of two more clusters (a `# worker <name>: export KUBECONFIG=...` line each).
# `make cluster-down` stops them all.
WORKERS ?= 0
cluster: $(STAMP) control-plane
	@$(PY) tools/images/build.py >/dev/null
	@$(PY) -m harness.real_cluster up --workers $(WORKERS)

cluster-down: $(STAMP)
	@$(PY) -m harness.real_cluster down

# The operators' signatures (operators/signatures.py, base_arguments.py), docs/arguments.md and
# docs/accelerators.md, from the code (a test fails when one is stale).
docs: $(STAMP)
	$(PY) -m airflow_provider_jax.operators.argument_signature
	$(PY) -m airflow_provider_jax.operators.argument_docs
	$(PY) -m airflow_provider_jax.manifest.accelerators.catalogue_docs

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

demo: $(STAMP)
	bash scripts/demo.sh

# Any DAG of dags/ through `airflow dags test`, as `make demo` runs the quickstart;
# CONF='{"steps": 80}' is the run's --conf (scripts/demo.sh reads it from the environment).
DAG ?= quickstart
dags-test: $(STAMP)
	bash scripts/demo.sh $(DAG)

bench: $(STAMP)
	$(PY) -m bench

lock:
	test -x $(UV) || { $(PYTHON) -m venv $(VENV) && $(PY) -m pip install -q "uv==$(UV_VERSION)"; }
	$(UV) pip compile -q --python-version 3.11 --extra test --extra docs --no-header \
		pyproject.toml requirements/lock.in requirements/image.in -o requirements/constraints.txt

clean:
	rm -rf $(VENV) .airflow .pytest_cache .cache/control-plane/run
