"""Consumer-protocol groups to and from their ``__consumer_offsets`` records
(KIP-848): a group replayed from the records written after each change is
the group in memory (hypothesis simulation of members joining, reconciling
and leaving); tombstones; and in the GroupCoordinator, a group that
survives its partition moving away and back (members keep their epochs),
deletion, conversion to a classic group, and a failed write."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.errors import ErrorCode
from kavka.group.consumer_group import ConsumerGroup, HeartbeatRequest, TopicMetadata
from kavka.group.consumer_group_replay import ConsumerGroupReplay, WrittenGroup, changes, snapshot, tombstones
from kavka.group.consumer_records import (
    ConsumerKey,
    ConsumerRecordType,
    decode_consumer_key,
    encode_consumer_key,
    encode_consumer_value,
    is_consumer_key,
)
from kavka.group.coordinator import ConsumerGroupConfig, GroupCoordinator
from kavka.protocol.records import iter_batches, iter_records
from tests.group.test_coordinator import CONFIG, MemoryGroupLog, first_generation, join

FOO = TopicMetadata(uuid.UUID(int=1), 6)
BAR = TopicMetadata(uuid.UUID(int=2), 3)
TOPICS = {"foo": FOO, "bar": BAR}


def new_group(gid: str = "g") -> ConsumerGroup:
    ids = (f"gen-{i}" for i in itertools.count())
    return ConsumerGroup(gid, ["uniform", "range"], 100, lambda: next(ids))


def log_bytes(records) -> list[tuple[bytes, bytes | None]]:
    return [(encode_consumer_key(k), None if v is None else encode_consumer_value(v)) for k, v in records]


def replayed(log: list[tuple[bytes, bytes | None]], gid: str = "g") -> ConsumerGroup | None:
    r = ConsumerGroupReplay()
    for k, v in log:
        r.apply(k, v)
    found = [g for g in r.groups(new_group) if g.group_id == gid]
    return found[0] if found else None


def same(a: ConsumerGroup, b: ConsumerGroup) -> None:
    assert snapshot(a) == snapshot(b)
    assert a.state is b.state
    for m in a.members.values():
        for part in (m.assignment.assigned, m.assignment.pending_revocation):
            for t, ps in part.items():
                for p in ps:
                    assert b.holder(t, p) == a.holder(t, p) == m.member_id


# one step of a simulated client: join, heartbeat applying the last answer, leave, static leave
# one step of a simulated client: join, heartbeat applying the last answer,
# leave, static leave; and whether the write of what it changed fails
steps = st.lists(st.tuples(st.sampled_from(["join", "beat", "beat", "beat", "leave", "static-leave"]),
                           st.integers(0, 3), st.sampled_from([("foo",), ("foo", "bar"), ("bar",)]),
                           st.sampled_from([False] * 5 + [True])),
                 min_size=1, max_size=40)


@settings(max_examples=80, deadline=None)
@given(steps)
def test_replaying_the_written_changes_gives_the_group_in_memory(script):
    """Each heartbeat writes only what ``WrittenGroup`` says changed; after
    every write that succeeds, the log replays to the group in memory (a
    failed write's records are missing, and the next write repairs that)."""
    g = new_group()
    owned: dict[str, dict] = {}  # what each simulated client owns
    epochs: dict[str, int] = {}
    written = WrittenGroup()
    log: list[tuple[bytes, bytes | None]] = []
    for action, n, topics, fails in script:
        mid = f"m{n}"
        if action == "join":
            out = g.heartbeat(HeartbeatRequest(mid, 0, instance_id=f"i{n}", rebalance_timeout_ms=30000,
                                               subscribed_topic_names=topics, owned={}), TOPICS)
        elif mid not in epochs:
            continue
        elif action == "beat":
            out = g.heartbeat(HeartbeatRequest(mid, epochs[mid], owned=owned[mid]), TOPICS)
        else:
            out = g.heartbeat(HeartbeatRequest(mid, -1 if action == "leave" else -2,
                                               instance_id=f"i{n}"), TOPICS)
        if out.error is ErrorCode.NONE:
            if out.member_epoch < 0:
                epochs.pop(mid, None)
                owned.pop(mid, None)
            else:
                epochs[mid] = out.member_epoch
                if out.assignment is not None:
                    owned[mid] = dict(out.assignment)
                owned.setdefault(mid, {})
        else:
            epochs.pop(mid, None)
            owned.pop(mid, None)
        records = written.changes_for(g, out.member_id or mid)
        if fails:
            written.write_failed(records)
            continue
        log += log_bytes(records)
        back = replayed(log)
        assert back is not None
        same(g, back)


def test_changes_write_only_what_changed_and_tombstone_what_went():
    g = new_group()
    g.heartbeat(HeartbeatRequest("a", 0, rebalance_timeout_ms=1, subscribed_topic_names=("foo",), owned={}), TOPICS)
    first = snapshot(g)
    assert {k.type for k, _ in changes({}, first)} == set(ConsumerRecordType)
    assert changes(first, snapshot(g)) == []
    g.heartbeat(HeartbeatRequest("a", -1), TOPICS)
    diff = changes(first, snapshot(g))
    gone = {k.type for k, v in diff if v is None}
    assert gone == {ConsumerRecordType.MEMBER_METADATA, ConsumerRecordType.TARGET_ASSIGNMENT_MEMBER,
                    ConsumerRecordType.CURRENT_MEMBER_ASSIGNMENT}
    # the group's epoch is written after the members' records
    assert diff[-1][0].type is ConsumerRecordType.GROUP_METADATA


def test_a_heartbeat_writes_only_its_member_until_a_write_fails():
    g = new_group()
    for mid in ("a", "b"):
        g.heartbeat(HeartbeatRequest(mid, 0, rebalance_timeout_ms=1, subscribed_topic_names=("foo",), owned={}),
                    TOPICS)
    written = WrittenGroup()
    log = log_bytes(written.changes_for(g))
    beat_a = HeartbeatRequest("a", g.members["a"].member_epoch, owned=None, client_id="new-client")
    assert g.heartbeat(beat_a, TOPICS).error is ErrorCode.NONE
    records = written.changes_for(g, "a")
    assert {k.member_id for k, _ in records} == {"a"}  # nothing of b, nor of the group
    assert ConsumerKey(ConsumerRecordType.MEMBER_METADATA, "g", "a") in [k for k, _ in records]
    written.write_failed(records)  # a's new client id is not in the log
    beat_b = HeartbeatRequest("b", g.members["b"].member_epoch, owned=None)
    assert g.heartbeat(beat_b, TOPICS).error is ErrorCode.NONE
    records = written.changes_for(g, "b")
    assert ConsumerKey(ConsumerRecordType.MEMBER_METADATA, "g", "a") in [k for k, _ in records]
    back = replayed(log + log_bytes(records))
    assert back is not None and back.members["a"].client_id == "new-client"
    same(g, back)


def test_group_tombstone_removes_the_group_and_unknown_values_are_rewritten():
    g = new_group()
    g.heartbeat(HeartbeatRequest("a", 0, rebalance_timeout_ms=1, subscribed_topic_names=("foo",), owned={}), TOPICS)
    log = log_bytes(changes({}, snapshot(g)))
    assert replayed(log) is not None
    assert replayed(log + log_bytes(tombstones(snapshot(g)))) is None
    # after a failed write every key's value is unknown: all are written again
    unknown = dict.fromkeys(snapshot(g))
    assert len(changes(unknown, snapshot(g))) == len(snapshot(g))


# -- in the coordinator ---------------------------------------------------------------------------
T = TopicMetadata(uuid.UUID(int=7), 4)


async def elected(c: GroupCoordinator, epoch: int) -> None:
    c.on_elected(0, epoch)
    for _ in range(300):
        if 0 in c.owned:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the partition never loaded")


def coordinator(store: MemoryGroupLog) -> GroupCoordinator:
    return GroupCoordinator(1, CONFIG, store, ConsumerGroupConfig(), lambda: {"t": T})


def joining(member_id: str) -> HeartbeatRequest:
    return HeartbeatRequest(member_id, 0, rebalance_timeout_ms=30000, subscribed_topic_names=("t",), owned={})


def consumer_records(store: MemoryGroupLog) -> list[tuple[ConsumerKey, bool]]:
    out = []
    for batch in store.batches.get(0, []):
        view = memoryview(batch)
        for pos, _ in iter_batches(view):
            for r in iter_records(view[pos:]):
                if r.key is not None and is_consumer_key(bytes(r.key)):
                    out.append((decode_consumer_key(bytes(r.key)), r.value is not None))
    return out


async def test_a_new_coordinator_knows_the_group_and_members_keep_their_epochs():
    store = MemoryGroupLog()
    old = coordinator(store)
    await elected(old, 1)
    a = await old.consumer_group_heartbeat("g", joining("a"))
    assert (a.error, a.member_epoch) == (ErrorCode.NONE, 1)
    b = await old.consumer_group_heartbeat("g", joining("b"))
    assert b.member_epoch == 2 and not b.assignment  # a still owns everything
    a2 = await old.consumer_group_heartbeat("g", HeartbeatRequest("a", 1, owned=dict(a.assignment)))
    assert a2.member_epoch == 1 and len(a2.assignment[T.topic_id]) == 2  # revoking half
    await old.commit_offsets("g", 1, "a", None, {("t", 0): (42, -1, None)})
    old.on_resigned(0)

    new = coordinator(store)  # another broker takes the partition over
    await elected(new, 2)
    code, g = new.describe_consumer_group("g")
    assert code is ErrorCode.NONE and g is not None
    assert (g.group_epoch, g.target_epoch, sorted(g.members)) == (2, 2, ["a", "b"])
    assert g.members["a"].member_epoch == 1 and g.members["b"].member_epoch == 2
    # b gets nothing a still holds; a continues at its epoch, releases, moves on
    b2 = await new.consumer_group_heartbeat("g", HeartbeatRequest("b", 2, owned={}))
    assert (b2.error, b2.member_epoch) == (ErrorCode.NONE, 2) and not b2.assignment
    a3 = await new.consumer_group_heartbeat("g", HeartbeatRequest("a", 1, owned=dict(a2.assignment)))
    assert (a3.error, a3.member_epoch) == (ErrorCode.NONE, 2)
    b3 = await new.consumer_group_heartbeat("g", HeartbeatRequest("b", 2, owned={}))
    assert b3.assignment is not None
    assert b3.assignment[T.topic_id].isdisjoint(a3.assignment[T.topic_id] if a3.assignment else a2.assignment[T.topic_id])
    assert new.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 42
    # a classic group in the same partition loads as before
    new.on_resigned(0)


async def test_classic_and_consumer_groups_share_the_partition():
    store = MemoryGroupLog()
    c = coordinator(store)
    await elected(c, 1)
    await first_generation(c)  # classic group "g"
    await c.consumer_group_heartbeat("k", joining("m"))
    c.on_resigned(0)
    again = coordinator(store)
    await elected(again, 2)
    assert again.describe_group("g")[1].members and again.describe_consumer_group("k")[1].members


async def test_deleting_and_converting_tombstone_the_group():
    store = MemoryGroupLog()
    c = coordinator(store)
    await elected(c, 1)
    await c.consumer_group_heartbeat("g", joining("m"))
    await c.consumer_group_heartbeat("g", HeartbeatRequest("m", -1))
    assert await c.delete_groups(["g"]) == {"g": ErrorCode.NONE}
    written = consumer_records(store)
    assert (ConsumerKey(ConsumerRecordType.GROUP_METADATA, "g"), False) == written[-1]
    c.on_resigned(0)
    again = coordinator(store)
    await elected(again, 2)
    assert not again.consumer.knows("g")
    # an empty consumer group taken over by a classic member (Kafka converts it)
    await again.consumer_group_heartbeat("h", joining("m"))
    await again.consumer_group_heartbeat("h", HeartbeatRequest("m", -1))
    assert again.consumer.knows("h")
    assert (await again.join_group(replace(join(), group_id="h"))).error is ErrorCode.MEMBER_ID_REQUIRED
    assert not again.consumer.knows("h")
    again.on_resigned(0)
    third = coordinator(store)
    await elected(third, 3)
    assert not third.consumer.knows("h") and not third.consumer.knows("g")


async def test_session_fencing_is_written():
    store = MemoryGroupLog()
    c = GroupCoordinator(1, CONFIG, store, ConsumerGroupConfig(session_timeout_ms=50), lambda: {"t": T})
    await elected(c, 1)
    await c.consumer_group_heartbeat("g", joining("m"))
    for _ in range(200):
        if not c.consumer.is_consumer_group("g"):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # the fencing write
    c.on_resigned(0)
    again = coordinator(store)
    await elected(again, 2)
    code, g = again.describe_consumer_group("g")
    assert code is ErrorCode.NONE and g is not None and not g.members and g.group_epoch == 2


async def test_a_failed_write_is_answered_and_the_next_rewrites_the_group():
    store = MemoryGroupLog()
    c = coordinator(store)
    await elected(c, 1)
    await c.consumer_group_heartbeat("g", joining("a"))
    store.fail = ErrorCode.NOT_ENOUGH_REPLICAS
    out = await c.consumer_group_heartbeat("g", joining("b"))
    assert out.error is ErrorCode.COORDINATOR_NOT_AVAILABLE
    store.fail = None
    before = len(consumer_records(store))
    out = await c.consumer_group_heartbeat("g", HeartbeatRequest("a", 1, owned={T.topic_id: frozenset(range(4))}))
    assert out.error is ErrorCode.NONE
    rewritten = {k for k, _ in consumer_records(store)[before:]}
    assert ConsumerKey(ConsumerRecordType.MEMBER_METADATA, "g", "b") in rewritten
    assert ConsumerKey(ConsumerRecordType.GROUP_METADATA, "g") in rewritten
    in_memory = c.describe_consumer_group("g")[1]
    assert in_memory is not None
    expected = snapshot(in_memory)
    c.on_resigned(0)
    again = coordinator(store)
    await elected(again, 2)
    code, back = again.describe_consumer_group("g")
    assert code is ErrorCode.NONE and back is not None
    assert snapshot(back) == expected and sorted(back.members) == ["a", "b"]


async def test_a_large_group_is_written_in_batches_below_message_max_bytes():
    store = MemoryGroupLog()
    small = replace(CONFIG, max_batch_bytes=250)
    c = GroupCoordinator(1, small, store, ConsumerGroupConfig(), lambda: {"t": T})
    await elected(c, 1)
    for i in range(6):
        assert (await c.consumer_group_heartbeat("g", joining(f"member-{i}"))).error is ErrorCode.NONE
    sizes = [len(b) for b in store.batches[0]]
    assert max(sizes) <= 250 and len(sizes) > 6  # the later joins' whole-group writes took several batches
    in_memory = c.describe_consumer_group("g")[1]
    assert in_memory is not None
    expected = snapshot(in_memory)
    c.on_resigned(0)
    again = GroupCoordinator(1, small, store, ConsumerGroupConfig(), lambda: {"t": T})
    await elected(again, 2)
    back = again.describe_consumer_group("g")[1]
    assert back is not None and snapshot(back) == expected


def test_split_records_keeps_order_and_bounds():
    from kavka.group.consumer_membership import split_records
    from kavka.protocol.records import SimpleRecord

    records = [SimpleRecord(b"k%d" % i, b"v" * 100, 0) for i in range(10)]
    chunks = split_records(records, 400)
    assert [r for chunk in chunks for r in chunk] == records
    assert all(128 + sum(len(r.key) + len(r.value) + 32 for r in chunk) <= 400 for chunk in chunks)
    assert split_records([], 400) == []
    big = SimpleRecord(b"k", b"v" * 1000, 0)
    assert split_records([big], 400) == [[big]]  # alone; the log refuses it as Kafka would
