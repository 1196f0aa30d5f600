"""``kavka up`` prints the ``kavka console`` command for the cluster it
started, and that command, run as printed, serves the cluster's pages."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from .browser import ConsoleProcess

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


def test_the_printed_console_command_serves_the_cluster(tmp_path) -> None:
    up = subprocess.Popen([sys.executable, "-m", "kavka", "up", "--brokers", "1", "--data-dir", str(tmp_path / "c")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    console = None
    try:
        assert up.stdout is not None
        deadline = time.monotonic() + 90
        command = None
        while command is None:
            assert time.monotonic() < deadline and up.poll() is None, "kavka up printed no console line"
            key, _, value = up.stdout.readline().partition(": ")
            if key == "console":
                command = shlex.split(value)
        assert command[:2] == ["kavka", "console"] and "--metrics-url" in command
        bootstrap = command[command.index("--bootstrap-server") + 1]
        rest = [a for a in command[2:] if a != bootstrap and a != "--bootstrap-server"]
        console = ConsoleProcess(bootstrap, *rest, log_dir=tmp_path)
        deadline = time.monotonic() + 60
        while True:
            with urllib.request.urlopen(console.url + "/", timeout=20) as resp:  # noqa: S310 - loopback
                page = resp.read().decode()
            if 'id="broker-0"' in page or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert 'id="broker-0"' in page and ">up<" in page
    finally:
        if console is not None:
            console.stop()
        up.send_signal(signal.SIGINT)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait(10)
