"""What storing a consumer-protocol group (KIP-848) in ``__consumer_offsets``
costs a heartbeat, on the coordinator's event loop.

Every ConsumerGroupHeartbeat that changes the group appends records before
it is answered (``kavka.group.consumer_group_replay``). A group of
``--members`` members, all stable on a topic of ``--partitions``
partitions, receives steady heartbeats (each member in turn, as consumers
do every ``group.consumer.heartbeat.interval.ms``), and per heartbeat:

- ``state machine``: ``ConsumerGroup.heartbeat`` alone (the reference: the
  work the heartbeat does anyway);
- ``WrittenGroup``: choosing the records to write the way the coordinator
  does (only the heartbeating member and the group's own records when no
  epoch moved and no member came or went);
- ``whole group``: the naive way, a snapshot of every member compared with
  the previous one (what ``WrittenGroup`` avoids);
- ``encode``: the same heartbeat plus encoding a changed member's three
  records (a reconciliation step) into bytes.

Run: ``.venv/bin/python bench/consumer_group_writes.py [--members 10,100,1000] [--beats 2000]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kavka.group.consumer_group import ConsumerGroup, HeartbeatRequest, TopicMetadata  # noqa: E402
from kavka.group.consumer_group_replay import WrittenGroup, changes, snapshot  # noqa: E402
from kavka.group.consumer_records import encode_consumer_key, encode_consumer_value  # noqa: E402


def stable_group(members: int, partitions: int) -> tuple[ConsumerGroup, dict[str, TopicMetadata]]:
    topics = {"t": TopicMetadata(uuid.UUID(int=1), partitions)}
    g = ConsumerGroup("g", ["uniform"], members + 1)
    for i in range(members):
        g.heartbeat(HeartbeatRequest(f"m{i}", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("t",),
                                     owned={}), topics)
    for _ in range(3):  # every member reconciles to the final target
        for mid, m in g.members.items():
            g.heartbeat(HeartbeatRequest(mid, m.member_epoch, owned=dict(m.assignment.assigned)), topics)
    return g, topics


def per_beat(g: ConsumerGroup, topics, beats: int, after) -> float:
    ids = list(g.members)
    start = time.perf_counter()
    for i in range(beats):
        mid = ids[i % len(ids)]
        g.heartbeat(HeartbeatRequest(mid, g.members[mid].member_epoch, owned=None), topics)
        after(mid)
    return (time.perf_counter() - start) / beats * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", default="10,100,1000", help="group sizes, comma-separated")
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--beats", type=int, default=2000, help="heartbeats timed per case")
    args = ap.parse_args()
    print(f"{'members':>8} {'state machine':>14} {'WrittenGroup':>13} {'whole group':>12} {'encode 3':>9}"
          f" {'Written/sm':>11} {'whole/sm':>9}   (microseconds per heartbeat)")
    for n in (int(x) for x in args.members.split(",")):
        sm, wg, wh, enc = measure(n, args.partitions, args.beats)
        print(f"{n:>8} {sm:>14.1f} {wg:>13.1f} {wh:>12.1f} {enc:>9.1f} {wg / sm:>11.2f} {wh / sm:>9.1f}")


def measure(n: int, partitions: int, beats: int) -> tuple[float, float, float, float]:
    """Microseconds per heartbeat: state machine, WrittenGroup, whole group, encode."""
    g, topics = stable_group(n, partitions)
    written = WrittenGroup()
    written.changes_for(g)
    prior = {"s": snapshot(g)}

    def whole(_mid: str) -> None:
        after = snapshot(g)
        changes(prior["s"], after)
        prior["s"] = after

    def encode(mid: str) -> None:
        for k, v in snapshot(g, (mid,)).items():
            if k.member_id == mid:
                encode_consumer_key(k)
                encode_consumer_value(v)

    beats = max(20, beats // max(1, n // 100))
    sm = min(per_beat(g, topics, beats, lambda _m: None) for _ in range(3))
    wg = min(per_beat(g, topics, beats, lambda m: written.changes_for(g, m)) for _ in range(3))
    wh = min(per_beat(g, topics, max(5, beats // 10), whole) for _ in range(3))
    enc = min(per_beat(g, topics, beats, encode) for _ in range(3))
    return sm, wg, wh, enc

if __name__ == "__main__":
    main()
