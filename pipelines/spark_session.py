"""The SparkSession the pipeline's jobs run in: local, sized for a 2-core
machine (``SETTINGS``: two shuffle partitions and default parallelism, a
1 GB driver with the serial GC and fast JIT start-up, no UI, adaptive
execution off, loopback only), with format "kavka" registered.

``spark.sql.shuffle.partitions`` is 2: the streaming aggregation's state
has one store per shuffle partition, and the value is fixed in the
checkpoint once a query has started. The session time zone is UTC so that
nothing the jobs compute depends on the machine's zone (the jobs use the
scheduled hour in New York time as the data states it, never a conversion).

Create from the driver's main thread; one session per process.
"""

from __future__ import annotations

import os
import sys

SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.streaming.stopTimeout": "10s",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def build_session(app_name: str = "kavka-flights", master: str = "local[2]"):
    """Get or create the session and register format "kavka" in it."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Spark's Python workers (the data source's readers and writers) must
    # run this interpreter, the one with kavka, pyarrow and confluent-kafka;
    # Spark's default is whatever `python3` is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in SETTINGS.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import kavka.spark

    kavka.spark.register(spark)
    return spark
