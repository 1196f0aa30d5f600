"""The pipeline's SparkSession settings and ``--master`` (no SparkSession
is started): loopback for local masters; for a cluster master the driver
on SPARK_LOCAL_IP and small executors running this Python."""

from __future__ import annotations

import sys

import pytest

from pipelines.flights import _parser
from pipelines.spark_session import session_settings


def test_local_master_binds_loopback(monkeypatch):
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.9.0.1")
    s = session_settings("local[2]")
    assert s["spark.driver.host"] == s["spark.driver.bindAddress"] == "127.0.0.1"
    assert s["spark.pyspark.python"] == sys.executable
    assert "spark.executor.memory" not in s


def test_cluster_master_binds_spark_local_ip_and_sizes_executors(monkeypatch):
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.9.0.1")
    s = session_settings("spark://10.9.0.14:7077", {"spark.cores.max": "2"})
    assert s["spark.driver.host"] == s["spark.driver.bindAddress"] == "10.9.0.1"
    assert (s["spark.executor.cores"], s["spark.executor.memory"], s["spark.cores.max"]) == ("1", "512m", "2")
    assert s["spark.pyspark.python"] == sys.executable
    monkeypatch.delenv("SPARK_LOCAL_IP")
    assert "spark.driver.host" not in session_settings("spark://h:7077")  # Spark's own choice


def test_master_option():
    args = _parser().parse_args(["batch", "--bootstrap-server", "h:9092", "--output", "o",
                                 "--master", "spark://h:7077"])
    assert args.master == "spark://h:7077"
    assert _parser().parse_args(["batch", "--bootstrap-server", "h:9092", "--output", "o"]).master == "local[2]"
    with pytest.raises(SystemExit):
        _parser().parse_args(["batch", "--bootstrap-server", "h:9092", "--output", "o", "--master", "yarn"])
