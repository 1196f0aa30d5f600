"""``kavka dump-log`` on real segment, index, checkpoint and leader-epoch
files: batch and record output, index verification against the log, and
damage reported with its position, a non-zero exit code and no traceback."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kavka.cli import main
from kavka.common.clock import ManualClock
from kavka.protocol.records.batch import Compression
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.checkpoint import LeaderEpochCheckpointFile, OffsetCheckpointFile
from kavka.storage.log import Log
from kavka.storage.log_config import LogConfig

T0 = 1_700_000_000_000
SEG = "00000000000000000000"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kavka", "dump-log", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def segment_dir(tmp_path: Path) -> Path:
    """One closed segment of 30 batches (every codec, an idempotent
    producer, a transaction marker) plus the active one."""
    config = LogConfig.from_props({"index.interval.bytes": 100, "segment.index.bytes": 4096})
    log = Log(tmp_path / "t-0", config, clock=ManualClock(T0))
    for i in range(29):
        records = [SimpleRecord(b"key-%d" % i, b"value-%d" % i, T0 + i, (("h", b"x"),))]
        # The idempotent producer's batches carry consecutive sequences (every other batch, one record each).
        kw = {"producer_id": 42, "producer_epoch": 3, "base_sequence": i // 2} if i % 2 else {}
        log.append_as_leader(build_batch(records, compression=Compression(i % 5), **kw), leader_epoch=5)
    log.append_as_leader(build_control_batch(ControlRecordType.COMMIT, 42, 3, 7, T0 + 40), leader_epoch=5,
                         origin=AppendOrigin.COORDINATOR)
    log.roll()
    log.append_as_leader(build_batch([SimpleRecord(b"a", b"b", T0 + 50)]), leader_epoch=6)
    log.close()
    return tmp_path / "t-0"


def test_batches_are_listed_with_their_fields(segment_dir):
    result = cli(str(segment_dir / f"{SEG}.log"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [l for l in result.stdout.splitlines() if l.startswith("baseOffset:")]
    assert len(lines) == 30
    assert lines[0].startswith("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1")
    assert "producerId: 42 producerEpoch: 3 partitionLeaderEpoch: 5" in lines[1] and "baseSequence: 0" in lines[1]
    assert "baseSequence: 1 lastSequence: 1" in lines[3]
    assert "compresscodec: gzip" in lines[1] and "compresscodec: zstd" in lines[4]
    assert "isTransactional: true isControl: true" in lines[29]
    assert all("isvalid: true" in l for l in lines) and "position: 0 " in lines[0]
    assert "| offset:" not in result.stdout


def test_deep_iteration_prints_records_and_markers(segment_dir):
    result = cli("--deep-iteration", str(segment_dir / f"{SEG}.log"))
    assert result.returncode == 0
    records = [l for l in result.stdout.splitlines() if l.startswith("| offset:")]
    assert len(records) == 30
    assert records[3].startswith(f"| offset: 3 CreateTime: {T0 + 3} keySize: 5 valueSize: 7 sequence: 1 headerKeys: [h]")
    assert "endTxnMarker: COMMIT coordinatorEpoch: 7" in records[29]
    assert "payload" not in result.stdout
    data = cli("--print-data-log", str(segment_dir / f"{SEG}.log"))
    assert "key: key-3 payload: value-3 headers: h=x" in data.stdout


def test_index_files_alone_and_verified(segment_dir):
    result = cli(str(segment_dir / f"{SEG}.index"), str(segment_dir / f"{SEG}.timeindex"))
    assert result.returncode == 0
    assert "offset: " in result.stdout and "position: " in result.stdout and "timestamp: " in result.stdout
    verified = cli("--verify-index", str(segment_dir / f"{SEG}.log"))
    assert verified.returncode == 0, verified.stdout
    assert f"{SEG}.index: " in verified.stdout and "entries agree with the log" in verified.stdout


def test_a_damaged_index_is_reported(segment_dir):
    index = segment_dir / f"{SEG}.index"
    raw = bytearray(index.read_bytes())
    assert len(raw) >= 16
    rel, pos = struct.unpack_from(">ii", raw, 8)
    struct.pack_into(">ii", raw, 8, rel, pos + 3)  # entry 1 no longer points at a batch start
    index.write_bytes(bytes(raw))
    timeindex = segment_dir / f"{SEG}.timeindex"
    traw = bytearray(timeindex.read_bytes())
    ts, trel = struct.unpack_from(">qi", traw, 0)
    struct.pack_into(">qi", traw, 0, ts + 10_000, trel)  # entry 0 claims a timestamp the log never reached
    timeindex.write_bytes(bytes(traw))
    result = cli("--verify-index", str(index))
    assert result.returncode == 1
    assert f"index mismatch: {SEG}.index entry 1 (offset {rel}, position {pos + 3}) does not point at the start of a batch" in result.stdout
    tresult = cli("--verify-index", str(timeindex))
    assert tresult.returncode == 1 and f"{SEG}.timeindex entry 0 (timestamp {ts + 10_000}" in tresult.stdout
    assert "Traceback" not in result.stdout + result.stderr + tresult.stdout + tresult.stderr


def test_a_corrupt_log_reports_the_position_and_fails(segment_dir):
    log_file = segment_dir / f"{SEG}.log"
    raw = bytearray(log_file.read_bytes())
    # the third batch starts after the first two
    first = struct.unpack_from(">i", raw, 8)[0] + 12
    second = struct.unpack_from(">i", raw, first + 8)[0] + 12
    third = first + second
    raw[third + 70] ^= 0x5A
    log_file.write_bytes(bytes(raw))
    result = cli("--deep-iteration", str(log_file))
    assert result.returncode == 1
    assert f"corrupt: CRC mismatch in the batch at position {third} (base offset 2)" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    # a torn tail
    log_file.write_bytes(bytes(raw[: third + 30]))
    torn = cli(str(log_file))
    assert torn.returncode == 1 and f"batch at position {third} declares" in torn.stdout
    assert "Traceback" not in torn.stdout + torn.stderr


def test_checkpoint_and_leader_epoch_files(tmp_path, segment_dir):
    cp = tmp_path / "recovery-point-offset-checkpoint"
    OffsetCheckpointFile(cp).write({("orders", 0): 12, ("orders", 1): 7})
    epochs = segment_dir / "leader-epoch-checkpoint"
    result = cli(str(cp), str(epochs))
    assert result.returncode == 0
    assert "topic: orders partition: 0 offset: 12" in result.stdout
    assert "epoch: 5 startOffset: 0" in result.stdout and "epoch: 6 startOffset: 30" in result.stdout
    bad = tmp_path / "cleaner-offset-checkpoint"
    bad.write_text("0\n2\norders 0 12\n")
    broken = cli(str(bad))
    assert broken.returncode == 1 and "line 2" in broken.stdout and "Traceback" not in broken.stdout + broken.stderr
    unordered = tmp_path / "x" / "leader-epoch-checkpoint"
    unordered.parent.mkdir()
    LeaderEpochCheckpointFile(unordered).write([(3, 10), (2, 20)])
    assert "does not follow epoch 3" in cli(str(unordered)).stdout


def test_unknown_and_missing_files_exit_2_and_help_works(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["dump-log", str(tmp_path / "notes.txt")]) == 2
    assert "is not a .log/.index/.timeindex segment file" in capsys.readouterr().out
    assert main(["dump-log", str(tmp_path / f"{SEG}.log")]) == 2
    assert "does not exist" in capsys.readouterr().out
    helped = cli("--help")
    assert helped.returncode == 0 and "--deep-iteration" in helped.stdout and "--verify-index" in helped.stdout


def test_temporary_suffixes_are_looked_through(segment_dir, capsys):
    src = segment_dir / f"{SEG}.log"
    swap = segment_dir / f"{SEG}.log.swap"
    swap.write_bytes(src.read_bytes())
    assert main(["dump-log", str(swap)]) == 0
    assert capsys.readouterr().out.count("baseOffset:") == 30


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_damage_never_raises(segment_dir, tmp_path_factory, capsys, data):
    raw = bytearray((segment_dir / f"{SEG}.log").read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    target = tmp_path_factory.mktemp("d") / f"{SEG}.log"
    target.write_bytes(bytes(raw[:cut]))
    code = main(["dump-log", "--deep-iteration", "--verify-index", str(target)])
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "error:" not in out  # damage is reported as corruption, not as a failure of the tool
