"""What the provider tells Airflow's metrics (StatsD, Datadog or OpenTelemetry, as the
deployment configures ``[metrics]``): the names, declared once, and how they are sent."""
