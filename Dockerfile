# Airflow 3 with this provider and CPU JAX, for docker-compose.yaml's local stack.
ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.11
FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}
ARG AIRFLOW_VERSION

# Every package at the lock's version (requirements/constraints.txt), the versions the tests
# test: the provider's dependencies with its local extra (JAX), and the image's own
# (requirements/image.in: what the example DAGs import, and CeleryExecutor's). Airflow stays
# the image's. A layer of their own, built again only when the lock or pyproject.toml changes:
# the project is installed from its pyproject.toml alone here, for its dependencies, with an
# empty README.md for the description it names (the real one comes with the code, so an edit
# of it rebuilds nothing here). Then every module is byte-compiled, Airflow's too (the base
# image ships no bytecode): each of the stack's containers would otherwise compile what it
# imports at its first start, seconds of CPU each.
COPY --chown=airflow:root requirements/constraints.txt requirements/image.in \
     /opt/airflow-provider-jax/requirements/
COPY --chown=airflow:root pyproject.toml /opt/airflow-provider-jax/
RUN touch /opt/airflow-provider-jax/README.md
RUN pip install --no-cache-dir -c /opt/airflow-provider-jax/requirements/constraints.txt \
        "apache-airflow==${AIRFLOW_VERSION}" -r /opt/airflow-provider-jax/requirements/image.in \
        "/opt/airflow-provider-jax[local]" \
    && python -m compileall -q -j 0 "$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"

# The provider itself, and airflow-init's script (docker-compose.yaml).
COPY --chown=airflow:root README.md /opt/airflow-provider-jax/
COPY --chown=airflow:root airflow_provider_jax /opt/airflow-provider-jax/airflow_provider_jax
COPY --chown=airflow:root docker/airflow-init.sh /opt/airflow-provider-jax/docker/
RUN pip install --no-cache-dir --no-deps --force-reinstall /opt/airflow-provider-jax
