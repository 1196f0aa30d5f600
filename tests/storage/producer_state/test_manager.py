"""The producer state machine (duplicates, gaps, fencing, the five-batch
window) and its use by ``Log``: duplicates answered with their original
offsets, state rebuilt after restart, truncation and from followers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.protocol.records.batch import parse_header
from kavka.storage.errors import InvalidRecordError
from kavka.storage.log import Log as RealLog
from kavka.storage.producer_state.append_check import InvalidProducerEpochError, OutOfOrderSequenceError
from kavka.storage.producer_state.entry import in_sequence
from kavka.storage.producer_state.manager import ProducerStateManager
from tests.storage.conftest import STORAGE_SETTINGS, T0, make_batch, small_config

PID = 4000


def idem(seq: int, count: int = 1, *, pid: int = PID, epoch: int = 0, base_offset: int = 0) -> bytes:
    return make_batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=seq, base_offset=base_offset)


def hdr(seq: int, count: int = 1, **kw):
    return parse_header(idem(seq, count, **kw))


@pytest.fixture
def psm(tmp_path):
    return ProducerStateManager(tmp_path)


def append(psm: ProducerStateManager, seq: int, count: int, offset: int, **kw):
    h = hdr(seq, count, **kw)
    dup = psm.check_leader_append([h])
    if dup is None:
        psm.update_leader([h], offset, None)
    return dup


def test_sequence_wraps():
    assert in_sequence(5, 6) and in_sequence(2**31 - 1, 0)
    assert not in_sequence(5, 7) and not in_sequence(5, 5)


def test_duplicate_returns_original_offsets(psm):
    assert append(psm, 0, 3, 100) is None
    assert append(psm, 3, 2, 103) is None
    dup = append(psm, 0, 3, 999)
    assert (dup.first_offset, dup.last_offset) == (100, 102)
    assert append(psm, 3, 2, 999).first_offset == 103


def test_gap_and_overlap_are_out_of_order(psm):
    append(psm, 0, 3, 0)
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, 4, 1, 3)  # gap
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, 1, 3, 3)  # overlaps but is no remembered batch


def test_older_epoch_is_fenced_and_new_epoch_restarts_at_zero(psm):
    append(psm, 0, 1, 0, epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        append(psm, 1, 1, 1, epoch=0)
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, 5, 1, 1, epoch=2)
    assert append(psm, 0, 1, 1, epoch=2) is None
    assert psm.last_entry(PID).producer_epoch == 2


def test_unknown_producer_accepts_any_sequence(psm):
    # KIP-360: state lost to retention must not stop a live producer.
    assert append(psm, 42, 1, 0) is None
    assert psm.last_entry(PID).last_seq == 42


def test_only_five_batches_remembered(psm):
    for i in range(7):
        append(psm, i, 1, i)
    assert [b.first_seq for b in psm.last_entry(PID).batches] == [2, 3, 4, 5, 6]
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, 1, 1, 99)  # too old to recognise
    assert append(psm, 2, 1, 99).first_offset == 2


def test_more_than_one_idempotent_batch_refused(psm):
    with pytest.raises(InvalidRecordError):
        psm.check_leader_append([hdr(0), hdr(1)])
    assert psm.check_leader_append([parse_header(make_batch()), parse_header(make_batch())]) is None


@STORAGE_SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3)), min_size=1, max_size=30))
def test_model_every_retry_deduplicated(tmp_path, ops):
    """A producer that sends new batches (op 0) or retries one of its last
    five (op 1, 2 = which) never gets a batch written twice, and the log
    order equals the sequence order."""
    psm = ProducerStateManager(tmp_path)
    sent: list[tuple[int, int, int]] = []  # (seq, count, offset)
    next_seq, next_offset = 0, 0
    for op, count in ops:
        if op == 0 or not sent:
            assert append(psm, next_seq, count, next_offset) is None
            sent.append((next_seq, count, next_offset))
            next_seq, next_offset = next_seq + count, next_offset + count
        else:
            seq, c, off = sent[-min(op, len(sent), 5)]
            dup = append(psm, seq, c, 10**9)
            assert dup is not None and dup.first_offset == off and dup.last_offset == off + c - 1


# ---- through Log ---------------------------------------------------------------------------------
def Log(directory, config, **kw):  # noqa: N802 - the real Log at the batches' time (no expiry)
    return RealLog(directory, config, clock=ManualClock(T0), **kw)


def test_idle_producers_expire(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, small_config())
    log.append_as_leader(idem(0, 1), 0)
    log.close()
    later = RealLog(d, small_config(), clock=ManualClock(T0 + 86_400_000), recovery_point=1, had_clean_shutdown=True)
    assert later.producer_state.producers == {}
    later.close()


def test_log_duplicate_not_appended_and_survives_restart(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, small_config())
    first = log.append_as_leader(idem(0, 2), 0)
    log.append_as_leader(make_batch(1), 0)
    again = log.append_as_leader(idem(0, 2), 0)
    assert (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset) == (0, 1)
    assert log.log_end_offset == 3
    log.close()
    assert list(d.glob("*.snapshot"))
    log = Log(d, small_config(), recovery_point=3, had_clean_shutdown=True)
    assert log.append_as_leader(idem(0, 2), 0).first_offset == 0
    assert log.log_end_offset == 3
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(5), 0)
    log.close()


def test_log_state_rebuilt_after_crash_from_snapshots_and_log(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, small_config(**{"segment.bytes": 600}))
    seq = 0
    for _ in range(20):
        log.append_as_leader(idem(seq, 2), 0)
        seq += 2
    assert len(log.segments()) > 2 and len(list(d.glob("*.snapshot"))) >= 2
    log.flush()
    log.close_quietly()  # a crash: no snapshot at close
    log = Log(d, small_config(**{"segment.bytes": 600}), recovery_point=0)
    assert log.append_as_leader(idem(seq - 2, 2), 0).first_offset == 38
    assert log.append_as_leader(idem(seq, 1), 0).first_offset == 40
    log.close()


def test_corrupt_snapshot_ignored_and_rebuilt_from_log(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, small_config())
    log.append_as_leader(idem(0, 3), 0)
    log.close()
    (snap,) = d.glob("*.snapshot")
    raw = bytearray(snap.read_bytes())
    raw[-1] ^= 0xFF
    snap.write_bytes(bytes(raw))
    log = Log(d, small_config(), recovery_point=3, had_clean_shutdown=True)
    assert log.append_as_leader(idem(0, 3), 0).first_offset == 0  # rebuilt: still a duplicate
    assert log.log_end_offset == 3
    log.close()


def test_truncation_rolls_back_producer_state(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, small_config())
    log.append_as_leader(idem(0, 1), 0)
    log.append_as_leader(idem(1, 1), 0)
    log.truncate_to(1)
    # seq 1 is gone with its offset: it is a new batch again, not a duplicate
    assert log.append_as_leader(idem(1, 1), 0).first_offset == 1
    log.truncate_fully_and_start_at(10)
    assert not list(d.glob("*.snapshot")) and log.producer_state.producers == {}
    log.close()


def test_follower_builds_state_then_leads(tmp_path):
    leader = Log(tmp_path / "a-0", small_config())
    follower = Log(tmp_path / "b-0", small_config())
    leader.append_as_leader(idem(0, 2), 3)
    leader.append_as_leader(idem(2, 1), 3)
    follower.append_as_follower(leader.read(0, 1 << 20).records)
    # the follower becomes leader: the producer's retry is recognised
    assert follower.append_as_leader(idem(2, 1), 4).first_offset == 2
    leader.append_as_leader(idem(0, 1, epoch=1), 3)  # a newer instance of the producer
    follower.append_as_follower(leader.read(3, 1 << 20).records)
    with pytest.raises(InvalidProducerEpochError):
        follower.append_as_leader(idem(3, 1), 4)
    leader.close()
    follower.close()


def test_retention_deletes_snapshots_below_the_first_segment(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, small_config(**{"segment.bytes": 600}))
    for seq in range(0, 40, 2):
        log.append_as_leader(idem(seq, 2), 0)
    log.update_high_watermark(log.log_end_offset)
    before = log.producer_state.snapshot_offsets()
    log.delete_records_before(30)
    first_base = log.segments()[0].base_offset
    after = log.producer_state.snapshot_offsets()
    assert min(before) < first_base and after and min(after) >= first_base
    # the producer's state outlives its deleted batches (KIP-360)
    assert log.append_as_leader(idem(38, 2), 0).first_offset == 38
    log.close()


@STORAGE_SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.booleans()), min_size=1, max_size=25),
       st.booleans())
def test_reload_equals_live_state(tmp_path_factory, appends, clean):
    """Whatever the producers, rolls and shutdown kind, the state loaded from
    snapshots plus the log equals the live one for every producer's epoch and
    last batch (all a snapshot keeps), and a retry of each producer's last
    batch is still recognised."""
    d = tmp_path_factory.mktemp("reload") / "t-0"
    log = Log(d, small_config(**{"segment.bytes": 700}))
    seqs: dict[int, int] = {}
    last_batch: dict[int, bytes] = {}
    for who, count, plain in appends:
        if plain:
            log.append_as_leader(make_batch(count), 0)
            continue
        pid = PID + who
        batch = idem(seqs.get(pid, 0), count, pid=pid)
        log.append_as_leader(batch, 0)
        seqs[pid] = seqs.get(pid, 0) + count
        last_batch[pid] = batch
    live = {pid: (e.producer_epoch, e.batches[-1]) for pid, e in log.producer_state.producers.items()}
    end = log.log_end_offset
    log.flush()
    if clean:
        log.close()
    else:
        log.close_quietly()
    log = Log(d, small_config(**{"segment.bytes": 700}), recovery_point=end if clean else 0, had_clean_shutdown=clean)
    loaded = {pid: (e.producer_epoch, e.batches[-1]) for pid, e in log.producer_state.producers.items()}
    assert loaded == live
    for pid, batch in last_batch.items():
        assert log.append_as_leader(batch, 0).first_offset == live[pid][1].first_offset
    assert log.log_end_offset == end
    log.close()
