# Airflow 3 with this provider and CPU JAX, for docker-compose.yaml's local stack.
ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.11
FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}
ARG AIRFLOW_VERSION

COPY --chown=airflow:root pyproject.toml README.md /opt/airflow-provider-jax/
COPY --chown=airflow:root airflow_provider_jax /opt/airflow-provider-jax/airflow_provider_jax
# Pin Airflow so the provider's install never upgrades or downgrades the image's Airflow.
RUN pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" \
        "/opt/airflow-provider-jax[local]" "optax>=0.2"
