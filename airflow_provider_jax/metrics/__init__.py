"""What the provider tells Airflow's metrics (StatsD, Datadog or OpenTelemetry, as the
deployment configures ``[metrics]``) and traces (``[traces]``): the names, declared once, how
they are sent, and a try's phases as spans."""
