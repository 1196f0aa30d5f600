"""Data pipelines on Kavka and Spark (``python -m pipelines.flights --help``).

Not part of the installed ``kavka`` package: run from the repository root.
The jobs talk to Kavka only through the Kafka protocol (confluent-kafka for
the loader, the ``kavka`` Spark data source for the jobs).
"""
