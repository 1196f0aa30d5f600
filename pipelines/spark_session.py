"""The SparkSession the pipeline's jobs run in, with format "kavka"
registered: by default local, sized for a 2-core machine (``SETTINGS``: two
shuffle partitions and default parallelism, a 1 GB driver with the serial
GC and fast JIT start-up, no UI, adaptive execution off, loopback only).

With a cluster master (``spark://host:port``, a standalone cluster) the
executors run on the workers (``CLUSTER_SETTINGS``: one core and 512 MB
each, the same JVM options) and must reach the driver, so the driver
binds and advertises ``SPARK_LOCAL_IP`` (Spark's own variable: the
driver's address on the network the workers are on) instead of
loopback; unset, Spark picks the address the host name resolves to.
Executors run the driver's Python (``spark.pyspark.python``), which must
exist at the same path on every worker with Kavka installed: the venv on
the workers (a shared filesystem or the same install on each), as the
README describes.

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
from collections.abc import Mapping

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


CLUSTER_SETTINGS = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.executor.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}


def session_settings(master: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What ``build_session`` sets for ``master`` (see the module docstring)."""
    if master.startswith("local"):
        settings = dict(SETTINGS)
    else:
        settings = {k: v for k, v in SETTINGS.items() if k not in ("spark.driver.host", "spark.driver.bindAddress")}
        settings.update(CLUSTER_SETTINGS)
        address = os.environ.get("SPARK_LOCAL_IP", "").strip()
        if address:
            settings.update({"spark.driver.host": address, "spark.driver.bindAddress": address})
    # Spark's Python workers (the data source's readers and writers) must
    # run this interpreter, the one with kavka, pyarrow and confluent-kafka;
    # Spark's default is whatever `python3` is first on PATH.
    settings["spark.pyspark.python"] = sys.executable
    settings.update(extra or {})
    return settings


def build_session(app_name: str = "kavka-flights", master: str = "local[2]",
                  extra: Mapping[str, str] | None = None):
    """Get or create the session and register format "kavka" in it;
    ``extra``: settings over ``session_settings``'s."""
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in session_settings(master, extra).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import kavka.spark

    kavka.spark.register(spark)
    return spark
