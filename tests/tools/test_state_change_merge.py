"""``kavka state-change-log-merge`` (seed 000 §State Change Log Merge Tool):
files in the broker's format merged in time order, continuation lines kept
with their entry, filters by topic (not matching longer names), partitions
and time, --logs-regex, and bad arguments; plus the merge of the real
state-change.log files of a 3-broker cluster."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.tools.state_change_log_merge import EntryFilter, entries, merge

from .repl_cli_helpers import wait_until

B0 = """\
2026-11-21 09:00:00,100 INFO [kavka.state.change] [Controller id=0 epoch=1] Partition t-0 state changed from NonExistentPartition to NewPartition
2026-11-21 09:00:00,300 INFO [kavka.state.change] [Controller id=0 epoch=1] Sending LeaderAndIsr to broker 1 for partition t-1: leader 1
2026-11-21 09:00:02,000 ERROR [kavka.state.change] [Controller id=0 epoch=1] Partition t-3: no leader elected: all replicas offline
Traceback (most recent call last):
  ValueError: boom
2026-11-21 09:00:03,000 INFO [kavka.state.change] [Controller id=0 epoch=1] Partition t-x-0 state changed from NewPartition to OnlinePartition
"""
B1 = """\
2026-11-21 09:00:00,200 INFO [kavka.state.change] broker 1 received LeaderAndIsr v5 from controller 0 epoch 1 for 2 partitions
2026-11-21 09:00:00,400 INFO [kavka.state.change] broker 1 leads t-1: epoch 0, isr [1, 0], replicas [1, 0]
2026-11-21 09:00:01,000 INFO [kavka.state.change] broker 1 follows 0 for t-0: epoch 0, replicas [0, 1]
"""


@pytest.fixture
def logs(tmp_path):
    (tmp_path / "b0").mkdir()
    (tmp_path / "b1").mkdir()
    a = tmp_path / "b0" / "state-change.log"
    b = tmp_path / "b1" / "state-change.log"
    a.write_text(B0)
    b.write_text(B1)
    return a, b


def _times(out: str) -> list[str]:
    return [line[:23] for line in out.splitlines() if re.match(r"\d{4}-", line)]


def test_merge_orders_by_time_and_keeps_tracebacks(kavka, logs) -> None:
    r = kavka("state-change-log-merge", "--logs", f"{logs[0]},{logs[1]}")
    assert r.returncode == 0, r.stderr
    assert _times(r.stdout) == sorted(_times(B0 + B1))
    lines = r.stdout.splitlines()
    i = next(k for k, line in enumerate(lines) if "no leader elected" in line)
    assert lines[i + 1:i + 3] == ["Traceback (most recent call last):", "  ValueError: boom"]


def test_filters(kavka, logs) -> None:
    files = f"{logs[0]},{logs[1]}"
    r = kavka("state-change-log-merge", "--logs", files, "--topic", "t")
    assert r.returncode == 0, r.stderr
    assert "t-x-0" not in r.stdout and "received LeaderAndIsr" not in r.stdout
    assert len(_times(r.stdout)) == 5
    r = kavka("state-change-log-merge", "--logs", files, "--topic", "t", "--partitions", "0,3")
    assert _times(r.stdout) == ["2026-11-21 09:00:00,100", "2026-11-21 09:00:01,000", "2026-11-21 09:00:02,000"]
    r = kavka("state-change-log-merge", "--logs", files, "--topic", "t-x")
    assert _times(r.stdout) == ["2026-11-21 09:00:03,000"]
    r = kavka("state-change-log-merge", "--logs", files, "--start-time", "2026-11-21 09:00:00,200",
              "--end-time", "2026-11-21 09:00:01")
    assert _times(r.stdout) == ["2026-11-21 09:00:00,200", "2026-11-21 09:00:00,300", "2026-11-21 09:00:00,400",
                                "2026-11-21 09:00:01,000"]


def test_logs_regex(kavka, logs, tmp_path) -> None:
    (tmp_path / "b0" / "state-change.log.1").write_text(
        "2026-11-21 08:59:59,000 INFO [kavka.state.change] broker 0 rotated t-0\n")
    (tmp_path / "b0" / "server.log").write_text("2026-11-21 08:00:00,000 INFO not a state change t-0\n")
    r = kavka("state-change-log-merge", "--logs-regex", str(tmp_path / "b0" / r"state-change\.log.*"),
              "--topic", "t")
    assert r.returncode == 0, r.stderr
    assert _times(r.stdout)[0] == "2026-11-21 08:59:59,000" and "not a state change" not in r.stdout


@pytest.mark.parametrize("args, message, code", [
    (["--partitions", "0"], "--partitions needs --topic", 2),
    (["--topic", "t", "--partitions", "x"], "not a list of partition numbers", 2),
    (["--start-time", "yesterday"], "is not a time", 2),
    (["--start-time", "2026-01-02 00:00:00", "--end-time", "2026-01-01 00:00:00"], "after --end-time", 2),
])
def test_bad_arguments(kavka, logs, args, message, code) -> None:
    r = kavka("state-change-log-merge", "--logs", str(logs[0]), *args)
    assert r.returncode == code and message in r.stderr, r.stderr


def test_missing_file(kavka, tmp_path) -> None:
    r = kavka("state-change-log-merge", "--logs", str(tmp_path / "nope.log"))
    assert r.returncode == 1 and "cannot read" in r.stderr


def test_help(kavka) -> None:
    for command, option in (("state-change-log-merge", "--logs-regex"), ("replica-verification", "--topic-white-list")):
        r = kavka(command, "--help")
        assert r.returncode == 0 and option in r.stdout, r.stderr


stamps = st.lists(st.integers(0, 10_000), max_size=15).map(sorted)


@given(st.lists(stamps, min_size=1, max_size=4))
def test_merge_is_ordered_and_loses_nothing(files) -> None:
    def line(ms: int, f: int) -> str:
        t = datetime.fromtimestamp(1_700_000_000 + ms / 1000)
        return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} INFO broker {f} t-{ms % 3}\n"
    streams = [entries([line(ms, f) for ms in ms_list], f) for f, ms_list in enumerate(files)]
    out = list(merge(streams, EntryFilter()))
    assert len(out) == sum(len(f) for f in files)
    assert [(e.time, e.source) for e in out] == sorted((e.time, e.source) for e in out)


@pytest.mark.cluster
def test_merges_a_real_clusters_logs(make_cluster, kavka) -> None:
    cluster = make_cluster(brokers=3)
    bs = cluster.bootstrap
    r = kavka("topics", "--bootstrap-server", bs, "--create", "--topic", "sc", "--replica-assignment", "0:1,1:2")
    assert r.returncode == 0, r.stderr
    files = [cluster.brokers[b].directory / "logs" / "state-change.log" for b in sorted(cluster.brokers)]

    def merged():
        r = kavka("state-change-log-merge", "--logs", ",".join(map(str, files)), "--topic", "sc",
                  "--partitions", "1")
        return r.stdout if "broker 2 follows 1 for sc-1" in r.stdout else None
    out = wait_until(merged, 30, "the followers' state-change lines")
    assert _times(out) == sorted(_times(out))
    assert "sc-0" not in out
    assert "Partition sc-1 state changed from NonExistentPartition to NewPartition" in out
    assert "broker 1 leads sc-1" in out
