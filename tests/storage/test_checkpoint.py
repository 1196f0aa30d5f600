"""Checkpoint files: seed 002's text format, round trips, malformed content,
atomic replacement."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.checkpoint import LeaderEpochCheckpointFile, OffsetCheckpointFile
from kavka.storage.errors import CheckpointFormatError

from .conftest import STORAGE_SETTINGS

topics = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789._-", min_size=1, max_size=20)


def test_format_matches_the_seed_example(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    f.write({("log-format", 1): 0, ("log-format", 2): 0, ("kafka-action", 1): 1, ("kafka-action", 2): 0})
    lines = f.path.read_text().splitlines()
    assert lines[:2] == ["0", "4"]
    assert sorted(lines[2:]) == sorted(["log-format 1 0", "log-format 2 0", "kafka-action 1 1", "kafka-action 2 0"])
    seed_text = "0\n4\nlog-format 1 0\nlog-format 2 0\nkafka-action 1 1\nkafka-action 2 0\n"
    f.path.write_text(seed_text)
    assert f.read() == {("log-format", 1): 0, ("log-format", 2): 0, ("kafka-action", 1): 1, ("kafka-action", 2): 0}


@STORAGE_SETTINGS
@given(st.dictionaries(st.tuples(topics, st.integers(0, 10_000)), st.integers(-1, 2**62), max_size=40))
def test_offset_checkpoint_round_trip(tmp_path_factory, offsets):
    f = OffsetCheckpointFile(tmp_path_factory.mktemp("c") / "cp")
    f.write(offsets)
    assert f.read() == offsets
    assert not list(f.path.parent.glob("*.tmp"))


@STORAGE_SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**62)), max_size=30))
def test_leader_epoch_checkpoint_round_trip(tmp_path_factory, entries):
    f = LeaderEpochCheckpointFile(tmp_path_factory.mktemp("e") / "leader-epoch-checkpoint")
    f.write(entries)
    assert f.read() == entries


def test_missing_file_reads_empty(tmp_path):
    assert OffsetCheckpointFile(tmp_path / "nope").read() == {}


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("", 1, "empty"),
        ("1\n0\n", 1, "unsupported version"),
        ("0\n", 2, "missing the entry count"),
        ("0\nx\n", 2, "not an integer"),
        ("0\n2\nt 0 5\n", 2, "says 2"),
        ("0\n1\nt 0\n", 3, "topic partition offset"),
        ("0\n1\nt zero 5\n", 3, "invalid literal"),
        ("0\n1\nt -1 5\n", 3, "negative partition"),
        ("0\n2\nt 0 5\nt 1 5 9\n", 4, "topic partition offset"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, text, line, words):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointFormatError) as e:
        OffsetCheckpointFile(path).read()
    msg = str(e.value)
    assert f"line {line}" in msg and words in msg and str(path) in msg
    assert e.value.code_name == "KAFKA_STORAGE_ERROR"


def test_non_utf8_is_reported(tmp_path):
    path = tmp_path / "cp"
    path.write_bytes(b"0\n1\nt\xff 0 1\n")
    with pytest.raises(CheckpointFormatError, match="line 3"):
        OffsetCheckpointFile(path).read()


def test_write_replaces_atomically(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "cp")
    f.write({("a", 0): 1})
    inode = f.path.stat().st_ino
    f.write({("a", 0): 2})
    assert f.read() == {("a", 0): 2}
    assert f.path.stat().st_ino != inode  # a new file renamed over, never rewritten in place
