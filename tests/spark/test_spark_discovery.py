"""PySpark's automatic discovery of format "kavka": a fresh SparkSession
(in its own process, without ``kavka.spark.register``) finds
``pyspark_kavka.DefaultSource`` on the Python path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import os, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.format("kavka").option("kafka.bootstrap.servers", "127.0.0.1:1").option("subscribe", "t").load()
print("SCHEMA", df.schema.simpleString())
spark.stop()
"""


def test_format_kavka_is_found_without_register():
    # An editable install hides top-level modules from pkgutil.iter_modules
    # (PySpark's discovery); a regular install puts pyspark_kavka on the path,
    # as PYTHONPATH does here.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=240,
                         cwd="/")
    assert "SCHEMA struct<key:binary,value:binary,topic:string,partition:int,offset:bigint" in out.stdout, \
        out.stderr[-2000:]
