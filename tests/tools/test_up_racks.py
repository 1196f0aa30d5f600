"""``kavka up --racks``: each broker's server.properties gets its
broker.rack; a list that does not name one rack per broker is refused
before anything starts."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.cluster]


@pytest.mark.parametrize("racks", ["r1,r2", "r1,,r3", "r1,r2,r3,r4"])
def test_up_refuses_a_rack_list_that_does_not_fit(tmp_path, racks) -> None:
    r = subprocess.run([sys.executable, "-m", "kavka", "up", "--brokers", "3", "--racks", racks,
                        "--data-dir", str(tmp_path / "c")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--racks" in r.stderr and "3 broker(s)" in r.stderr, r.stderr
    assert not (tmp_path / "c" / "broker-0").exists()


def test_up_gives_each_broker_its_rack(tmp_path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "kavka", "up", "--brokers", "2", "--base-port", "0",
                             "--racks", "east,west", "--no-metrics", "--data-dir", str(tmp_path / "c")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        assert proc.stdout is not None
        while True:
            assert time.monotonic() < deadline and proc.poll() is None, "kavka up did not come up"
            if proc.stdout.readline().startswith("data: "):
                break
        for i, rack in enumerate(("east", "west")):
            props = (tmp_path / "c" / f"broker-{i}" / "server.properties").read_text().splitlines()
            assert f"broker.rack={rack}" in props
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
