"""``kavka up`` prints each broker's Prometheus endpoint, and it answers
with Kafka's metric names; ``--no-metrics`` serves none."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests.metrics.scrape import scrape

pytestmark = [pytest.mark.cluster]


def _up(tmp_path, *extra: str) -> tuple[subprocess.Popen, dict[str, str]]:
    proc = subprocess.Popen([sys.executable, "-m", "kavka", "up", "--brokers", "1", "--base-port", "0",
                             "--data-dir", str(tmp_path / "cluster"), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    printed: dict[str, str] = {}
    deadline = time.monotonic() + 90
    assert proc.stdout is not None
    while "data" not in printed:
        assert time.monotonic() < deadline and proc.poll() is None, f"kavka up printed {printed}"
        line = proc.stdout.readline()
        key, sep, value = line.partition(": ")
        if sep and key in ("bootstrap", "zookeeper", "data", "metrics"):
            printed[key] = value.strip()
    return proc, printed


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def test_up_prints_the_metrics_urls_and_they_answer(tmp_path) -> None:
    proc, printed = _up(tmp_path)
    try:
        line = proc.stdout.readline().strip() if "metrics" not in printed else ""  # printed after data:
        urls = (printed.get("metrics") or line.partition(": ")[2]).split()
        assert len(urls) == 1 and urls[0].startswith("http://127.0.0.1:") and urls[0].endswith("/metrics")
        s = scrape(urls[0])
        assert s.value("kafka_controller_kafkacontroller_activecontrollercount") == 1
        assert s.value("kafka_server_replicamanager_underreplicatedpartitions") == 0
    finally:
        _stop(proc)


def test_up_no_metrics_prints_none(tmp_path) -> None:
    proc, printed = _up(tmp_path, "--no-metrics")
    try:
        assert "metrics" not in printed
        props = (tmp_path / "cluster" / "broker-0" / "server.properties").read_text()
        assert "metrics.port" not in props
    finally:
        _stop(proc)
