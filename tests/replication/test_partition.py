"""Partition: roles and epochs, HW arithmetic, ISR proposals, appends with
acks and min.insync.replicas, reads (HW bound, out of range, KIP-320)."""

from __future__ import annotations

import pytest

from kavka.common.errors import (
    ErrorCode,
    FencedLeaderEpochError,
    InvalidRequestError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    UnknownLeaderEpochError,
)
from kavka.protocol.records.batch import iter_batches
from kavka.replication.requests import DEBUGGING_CONSUMER_ID, FetchIsolation
from kavka.replication.state import isr_proposal
from kavka.storage.fetch_data_info import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

from .conftest import LAG_MS, T0, batch, log_config, make_partition, state


def fetch(p, replica_id: int, offset: int) -> None:
    """A follower fetch at ``offset`` as the replica manager records it."""
    assert p.update_follower_fetch_state(replica_id, offset, 0, p._clock.milliseconds(), p.log.log_end_offset)


# ---- roles and epochs --------------------------------------------------------------------------
def test_make_leader_stamps_epoch_and_records_epoch_start(log, clock):
    p = make_partition(log, clock)
    assert p.make_leader(state(1, 3, (1,)))
    assert p.is_leader and p.leader_epoch == 3 and p.leader_epoch_start_offset == 0
    p.append_records_to_leader(batch(2), required_acks=1)
    headers = [h for _, h in iter_batches(p.log.read(0, 1 << 20).records)]
    assert [h.partition_leader_epoch for h in headers] == [3]
    assert log.leader_epoch_cache.latest_epoch() == 3


def test_make_leader_twice_same_role_returns_false_and_stale_epoch_is_rejected(log, clock):
    p = make_partition(log, clock)
    assert p.make_leader(state(1, 5, (1, 2)))
    assert not p.make_leader(state(1, 6, (1, 2)))  # already leader: not a new leader
    assert p.leader_epoch == 6
    assert not p.make_leader(state(1, 4, (1,)))  # stale: nothing changes
    assert p.leader_epoch == 6 and p.isr == (1, 2)
    assert not p.make_follower(state(2, 5, (2,), (1, 2)))
    assert p.is_leader


def test_make_follower_reports_leader_or_epoch_change(log, clock):
    p = make_partition(log, clock)
    assert p.make_follower(state(2, 1, (2, 1)))
    assert not p.is_leader and p.isr == () and p.leader_id == 2
    assert not p.make_follower(state(2, 1, (2, 1)))  # nothing new
    assert p.make_follower(state(2, 2, (2,), (2, 1)))  # same leader, new epoch: re-truncate (KAFKA-7164)
    assert p.make_follower(state(3, 3, (3,), (3, 1)))


def test_leader_becoming_follower_stops_accepting_appends(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 1, (1, 2)))
    assert p.make_follower(state(2, 2, (2, 1)))
    with pytest.raises(NotLeaderOrFollowerError):
        p.append_records_to_leader(batch(), required_acks=1)


# ---- high watermark ------------------------------------------------------------------------------
def test_isr_of_one_commits_each_append(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1,)))
    p.append_records_to_leader(batch(3), required_acks=-1)
    assert log.high_watermark == log.log_end_offset == 3


def test_isr_of_three_hw_is_min_follower_leo(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2, 3)))
    p.append_records_to_leader(batch(10), required_acks=-1)
    assert log.high_watermark == 0  # followers' LEOs unknown
    fetch(p, 2, 10)
    assert not p.maybe_increment_hw()  # follower 3 unknown still
    fetch(p, 3, 4)
    assert p.maybe_increment_hw() and log.high_watermark == 4
    fetch(p, 3, 10)
    assert p.maybe_increment_hw() and log.high_watermark == 10
    fetch(p, 2, 7)  # a follower going back never moves the HW down
    assert not p.maybe_increment_hw() and log.high_watermark == 10


def test_non_isr_replica_does_not_hold_the_hw(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2), (1, 2, 3)))
    p.append_records_to_leader(batch(5), required_acks=1)
    fetch(p, 2, 5)
    assert p.maybe_increment_hw() and log.high_watermark == 5


def test_new_leader_forgets_follower_leos(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2)))
    p.append_records_to_leader(batch(5), required_acks=1)
    fetch(p, 2, 5)
    p.maybe_increment_hw()
    p.make_follower(state(2, 1, (2, 1)))
    p.make_leader(state(1, 2, (1, 2)))
    assert p.replica(2).log_end_offset == -1
    p.append_records_to_leader(batch(1), required_acks=1)
    assert log.high_watermark == 5


# ---- ISR expansion and shrink ------------------------------------------------------------------------
def test_shrink_proposes_removing_a_lagging_follower_and_conflict_fences(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2, 3)))
    p.append_records_to_leader(batch(4), required_acks=1)
    fetch(p, 2, 4)
    fetch(p, 3, 0)
    assert p.maybe_shrink_isr(clock.milliseconds(), LAG_MS) is None  # just reset: caught up at leadership
    clock.advance(LAG_MS + 1)
    fetch(p, 2, 4)
    proposal = p.maybe_shrink_isr(clock.milliseconds(), LAG_MS)
    assert proposal is not None and proposal.leader_and_isr.isr == (1, 2) and proposal.leader_and_isr.leader == 1
    assert proposal.leader_and_isr.zk_version == p.zk_version  # made against the version held
    assert p.maybe_shrink_isr(clock.milliseconds(), LAG_MS) is None  # one write in flight
    assert not p.maybe_increment_hw()  # the pending shrink still counts follower 3
    assert p.fail_isr_update(proposal, conflict=True)
    assert not p.is_leader and p.fenced
    with pytest.raises(NotLeaderOrFollowerError):
        p.append_records_to_leader(batch(), required_acks=1)
    assert p.make_leader(state(1, 1, (1, 2)))  # the controller's next word restores it
    assert p.is_leader


def test_shrink_then_hw_moves_and_expand_when_caught_up(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2, 3)))
    p.append_records_to_leader(batch(4), required_acks=1)
    clock.advance(LAG_MS + 1)
    fetch(p, 2, 4)
    proposal = p.maybe_shrink_isr(clock.milliseconds(), LAG_MS)
    assert p.complete_isr_update(proposal, 7)
    assert p.isr == (1, 2) and p.zk_version == 7
    assert p.maybe_increment_hw() and log.high_watermark == 4
    fetch(p, 3, 2)
    assert p.maybe_expand_isr(3) is None  # below the HW
    fetch(p, 3, 4)
    grow = p.maybe_expand_isr(3)
    assert grow is not None and grow.leader_and_isr.isr == (1, 2, 3)
    assert not p.complete_isr_update(isr_proposal(1, 0, (1, 2, 3), 1), 8)  # not the proposal in flight
    assert p.complete_isr_update(grow, 8) and p.isr == (1, 2, 3)


def test_failed_write_without_conflict_keeps_leading(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2)))
    clock.advance(LAG_MS + 1)
    proposal = p.maybe_shrink_isr(clock.milliseconds(), LAG_MS)
    assert not p.fail_isr_update(proposal, conflict=False)
    assert p.is_leader and p.isr == (1, 2) and p.pending_isr is None


def test_follower_at_leader_leo_is_never_out_of_sync(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2)))
    fetch(p, 2, 0)
    clock.advance(10 * LAG_MS)
    assert p.out_of_sync_replicas(clock.milliseconds(), LAG_MS) == []


def test_caught_up_time_uses_previous_fetch_rule(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2)))
    p.append_records_to_leader(batch(5), required_acks=1)  # leader LEO 5
    fetch(p, 2, 5)  # caught up at T0
    p.append_records_to_leader(batch(5), required_acks=1)  # LEO 10
    clock.advance(3_000)
    fetch(p, 2, 5)  # reached the LEO seen at the previous fetch: caught up as of then (T0)
    assert p.replica(2).last_caught_up_time_ms == T0
    p.append_records_to_leader(batch(5), required_acks=1)  # LEO 15
    clock.advance(3_000)
    fetch(p, 2, 10)  # reached the LEO of the previous fetch (10): caught up as of T0+3000
    assert p.replica(2).last_caught_up_time_ms == T0 + 3_000


# ---- acks and min.insync.replicas -------------------------------------------------------------
def test_acks_all_refused_before_append_when_isr_too_small(tmp_path, clock):
    from kavka.storage.log import Log

    log = Log(tmp_path / "orders-0", log_config(**{"min.insync.replicas": 2}), clock=clock)
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1,), (1, 2)))
    with pytest.raises(NotEnoughReplicasError):
        p.append_records_to_leader(batch(), required_acks=-1)
    assert log.log_end_offset == 0
    p.append_records_to_leader(batch(), required_acks=1)  # acks=1 is not bound by min.insync
    assert log.log_end_offset == 1
    log.close()


def test_check_enough_replicas_after_append(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2)))
    info = p.append_records_to_leader(batch(2), required_acks=-1, min_insync_replicas=2)
    required = info.last_offset + 1
    assert p.check_enough_replicas_reach_offset(required, 0, 2) == (False, ErrorCode.NONE)
    clock.advance(LAG_MS + 1)
    proposal = p.maybe_shrink_isr(clock.milliseconds(), LAG_MS)
    p.complete_isr_update(proposal, 1)
    assert p.maybe_increment_hw()
    assert p.check_enough_replicas_reach_offset(required, 0, 2) == (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    assert p.check_enough_replicas_reach_offset(required, 0, 1) == (True, ErrorCode.NONE)
    assert p.check_enough_replicas_reach_offset(required, 5, 1) == (True, ErrorCode.NOT_LEADER_OR_FOLLOWER)


# ---- reads ----------------------------------------------------------------------------------------
def test_consumer_reads_only_below_hw_and_empty_between_hw_and_leo(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2)))
    p.append_records_to_leader(batch(3), required_acks=1)
    fetch(p, 2, 3)
    p.maybe_increment_hw()
    p.append_records_to_leader(batch(2), required_acks=1)  # offsets 3, 4 above the HW
    r = p.read_records(0, 1 << 20, FetchIsolation.HIGH_WATERMARK)
    assert r.error is ErrorCode.NONE and r.high_watermark == 3
    assert [h.last_offset for _, h in iter_batches(r.records)] == [2]
    between = p.read_records(4, 1 << 20, FetchIsolation.HIGH_WATERMARK)  # seed 001 #7
    assert between.error is ErrorCode.NONE and between.records == b""
    follower = p.read_records(3, 1 << 20, FetchIsolation.LOG_END, replica_id=2)
    assert [h.last_offset for _, h in iter_batches(follower.records)] == [4]


def test_out_of_range_and_unknown_follower(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2)))
    p.append_records_to_leader(batch(2), required_acks=1)
    assert p.read_records(3, 100, FetchIsolation.HIGH_WATERMARK).error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert p.read_records(2, 100, FetchIsolation.HIGH_WATERMARK).error is ErrorCode.NONE  # at the LEO
    assert p.read_records(0, 100, FetchIsolation.LOG_END, replica_id=9).error is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_leader_epoch_checks_kip_320(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 4, (1,)))
    assert p.read_records(0, 100, FetchIsolation.HIGH_WATERMARK, current_leader_epoch=3).error is ErrorCode.FENCED_LEADER_EPOCH
    assert p.read_records(0, 100, FetchIsolation.HIGH_WATERMARK, current_leader_epoch=5).error is ErrorCode.UNKNOWN_LEADER_EPOCH
    assert p.read_records(0, 100, FetchIsolation.HIGH_WATERMARK, current_leader_epoch=4).error is ErrorCode.NONE
    with pytest.raises(FencedLeaderEpochError):
        p.fetch_offset_for_timestamp(LATEST_TIMESTAMP, FetchIsolation.HIGH_WATERMARK, 2)
    with pytest.raises(UnknownLeaderEpochError):
        p.last_offset_for_leader_epoch(9, 4)


def test_follower_does_not_serve_reads(log, clock):
    p = make_partition(log, clock)
    p.make_follower(state(2, 1, (2, 1)))
    assert p.read_records(0, 100, FetchIsolation.HIGH_WATERMARK).error is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_serves_a_debugging_consumer_below_its_hw(log, clock):
    # Fetch replica id -2 (kavka replica-verification) reads any replica.
    p = make_partition(log, clock)
    p.make_leader(state(1, 1, (1,)))
    p.append_records_to_leader(batch(3), required_acks=1)
    p.make_follower(state(2, 2, (2, 1)))
    hw = p.log.high_watermark
    assert hw == 3  # the single-replica ISR committed everything before the switch
    r = p.read_records(0, 1 << 20, FetchIsolation.HIGH_WATERMARK, replica_id=DEBUGGING_CONSUMER_ID)
    assert r.error is ErrorCode.NONE and r.high_watermark == hw
    assert [h.last_offset for _, h in iter_batches(r.records)] == [2]
    assert p.read_records(0, 1 << 20, FetchIsolation.HIGH_WATERMARK).error is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_diverging_epoch_for_a_follower(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 1, (1, 2)))
    p.append_records_to_leader(batch(3), required_acks=1)  # epoch 1: offsets 0-2
    p.make_follower(state(2, 2, (2, 1)))
    p.make_leader(state(1, 3, (1, 2)))
    p.append_records_to_leader(batch(2), required_acks=1)  # epoch 3: offsets 3-4
    # A follower that has epoch 2 up to offset 5 diverged at 3 (epoch 1 ends there).
    r = p.read_records(5, 1 << 20, FetchIsolation.LOG_END, replica_id=2, last_fetched_epoch=2)
    assert r.diverging_epoch is not None and (r.diverging_epoch.epoch, r.diverging_epoch.end_offset) == (1, 3)
    assert r.records == b""
    ok = p.read_records(3, 1 << 20, FetchIsolation.LOG_END, replica_id=2, last_fetched_epoch=1)
    assert ok.diverging_epoch is None and ok.records
    # An epoch newer than every one we know (Kafka's validateFetchOffsetAndEpoch):
    # diverging (-1, -1), and the follower falls back to its high watermark.
    unknown = p.read_records(5, 1 << 20, FetchIsolation.LOG_END, replica_id=2, last_fetched_epoch=4)
    assert unknown.diverging_epoch is not None
    assert (unknown.diverging_epoch.epoch, unknown.diverging_epoch.end_offset) == (-1, -1) and unknown.records == b""


def test_list_offsets_bounds(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1, 2)))
    p.append_records_to_leader(batch(4), required_acks=1)
    latest = p.fetch_offset_for_timestamp(LATEST_TIMESTAMP, FetchIsolation.HIGH_WATERMARK)
    assert latest.offset == 0 and latest.leader_epoch == 0
    assert p.fetch_offset_for_timestamp(LATEST_TIMESTAMP, None).offset == 4
    assert p.fetch_offset_for_timestamp(EARLIEST_TIMESTAMP, FetchIsolation.HIGH_WATERMARK).offset == 0
    assert p.fetch_offset_for_timestamp(T0 + 2, FetchIsolation.HIGH_WATERMARK) is None  # not yet committed
    assert p.fetch_offset_for_timestamp(T0 + 2, None).offset == 2
    assert p.fetch_offset_for_timestamp(-4, FetchIsolation.HIGH_WATERMARK).offset == 0
    with pytest.raises(InvalidRequestError):
        p.fetch_offset_for_timestamp(-7, FetchIsolation.HIGH_WATERMARK)


def test_new_leader_with_lagging_hw_answers_offset_not_available(log, clock):
    p = make_partition(log, clock)
    p.make_follower(state(2, 0, (2, 1)))
    p.append_records_to_follower(_leader_batches(clock, 3))
    p.make_leader(state(1, 1, (1, 3)))
    assert p.leader_epoch_start_offset == 3 and log.high_watermark == 0
    with pytest.raises(OffsetNotAvailableError):
        p.fetch_offset_for_timestamp(LATEST_TIMESTAMP, FetchIsolation.HIGH_WATERMARK)


def _leader_batches(clock, count: int) -> bytes:
    """Batches as a leader of epoch 0 wrote them (offsets from 0)."""
    import tempfile
    from pathlib import Path

    from kavka.storage.log import Log

    with tempfile.TemporaryDirectory() as d:
        other = Log(Path(d) / "orders-0", log_config(), clock=clock)
        other.append_as_leader(batch(count), 0)
        data = bytes(other.read(0, 1 << 20).records)
        other.close()
    return data


# ---- an idempotent producer's pipelined requests across an ISR change --------------------------
def idempotent(seq: int, count: int = 1, epoch: int = 0) -> bytes:
    from kavka.protocol.records.builder import build_batch
    from kavka.protocol.records.record import SimpleRecord

    return build_batch([SimpleRecord(b"k", b"v%d" % (seq + i), T0) for i in range(count)], producer_id=1000,
                       producer_epoch=epoch, base_sequence=seq)


def test_pipelined_idempotent_requests_across_an_isr_growth_are_answered_as_kafka(tmp_path, clock):
    """What a new leader answers a producer's five in-flight requests when
    its ISR is below min.insync.replicas and grows between two of them
    (seen in a chaos run): the refusal comes before the sequence check, so
    a retry of a batch the leader already holds is refused
    NOT_ENOUGH_REPLICAS like the new ones (Kafka's
    Partition.appendRecordsToLeader); once the ISR grew, a request whose
    sequence skips the refused ones is OUT_OF_ORDER_SEQUENCE_NUMBER, and
    the retried batch is answered with its original offsets. librdkafka
    answers that OUT_OF_ORDER_SEQUENCE_NUMBER by bumping its epoch and
    resending what it had not seen acknowledged, the retried batch
    included (kavka.testing.duplicates): the duplicate is the client's."""
    from kavka.storage.log import Log
    from kavka.storage.producer_state.append_check import OutOfOrderSequenceError

    log = Log(tmp_path / "orders-0", log_config(**{"min.insync.replicas": 2}), clock=clock)
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1,), (1, 2)))
    held = p.append_records_to_leader(idempotent(0, 2), required_acks=1)  # written before the leader moved here
    assert (held.first_offset, held.last_offset) == (0, 1)
    for request in (idempotent(0, 2), idempotent(2), idempotent(3)):  # R1 (a retry), R2, R3
        with pytest.raises(NotEnoughReplicasError):
            p.append_records_to_leader(request, required_acks=-1)
    fetch(p, 2, 2)
    grow = p.maybe_expand_isr(2)
    assert grow is not None and p.complete_isr_update(grow, 1) and p.isr == (1, 2)
    with pytest.raises(OutOfOrderSequenceError):  # R4: sequence 4 after 1, 2 and 3 were refused
        p.append_records_to_leader(idempotent(4), required_acks=-1)
    again = p.append_records_to_leader(idempotent(0, 2), required_acks=-1)  # R1 retried: deduplicated
    assert (again.first_offset, again.last_offset) == (0, 1) and log.log_end_offset == 2
    # the client's resend under a bumped epoch starts a new sequence space: not a retry to the broker
    resent = p.append_records_to_leader(idempotent(0, 2, epoch=1), required_acks=-1)
    assert (resent.first_offset, resent.last_offset) == (2, 3)
    log.close()
