"""Metadata answer benchmark: what one client's metadata refresh costs the
broker's event loop at ``--partitions`` partitions (topics of 100, RF 3,
three brokers), as librdkafka asks it (Metadata v12, every topic by name)
and as a listing of every topic asks it (an admin's ``list_topics``).

Measured: the handler's answer (``MetadataHandler``, from a filled
``MetadataCache``) and its encoding (``encode_response_parts`` and the join
a send does), CPU time per answer, ``--answers`` answers a round.

Also the first answer after a metadata update, which builds and encodes
every entry again (the others reuse them until the next update).

Reference, in the same run: the same answers with each topic's entry
encoded anew per answer (its ``SharedStruct`` handed to the encoder as its
bare struct: what every answer cost before the entries' encoding was
remembered). The two sides alternate, ``--rounds`` rounds each; best round
of each side.

Run: ``.venv/bin/python bench/metadata.py [--partitions 10000] [--answers 20] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kavka.protocol.headers import RequestHeader, encode_response_parts  # noqa: E402
from kavka.protocol.messages import MetadataRequest, SharedStruct  # noqa: E402
from kavka.protocol.messages import UpdateMetadataRequest as U  # noqa: E402
from kavka.server.authorization import AuthHelper  # noqa: E402
from kavka.server.handlers.metadata import API_KEY, MetadataHandler  # noqa: E402
from kavka.server.metadata_cache import MetadataCache  # noqa: E402
from kavka.server.network import RequestContext  # noqa: E402

VERSION = 12
PER_TOPIC = 100


def filled_cache(partitions: int) -> MetadataCache:
    cache = MetadataCache(1)
    topics = []
    for t in range((partitions + PER_TOPIC - 1) // PER_TOPIC):
        count = min(PER_TOPIC, partitions - t * PER_TOPIC)
        states = []
        for p in range(count):
            replicas = [(p + i) % 3 + 1 for i in range(3)]
            states.append(U.TopicStates.PartitionStates(
                partition_index=p, controller_epoch=1, leader=replicas[0], leader_epoch=4, isr=replicas,
                zk_version=4, replicas=replicas, offline_replicas=[]))
        topics.append(U.TopicStates(topic_name=f"topic-{t:04d}", partition_states=states))
    brokers = [U.LiveBrokers(id=b, endpoints=[U.LiveBrokers.Endpoints(port=9090 + b, host="127.0.0.1",
                                                                      listener="PLAINTEXT", security_protocol=0)])
               for b in (1, 2, 3)]
    cache.update(U(controller_id=1, controller_epoch=1, broker_epoch=-1, topic_states=topics,
                   live_brokers=brokers), 7)
    return cache


async def answers(handler: MetadataHandler, request: MetadataRequest, count: int) -> tuple[float, int]:
    """CPU seconds per answer (handled and encoded into one frame body), bytes."""
    ctx = RequestContext(RequestHeader(API_KEY, VERSION, 7, "rdkafka"), "conn-1", "127.0.0.1", 40000, "PLAINTEXT", 0)
    size = 0
    t0 = time.process_time()
    for _ in range(count):
        response = await handler(ctx, request)
        size = len(b"".join(encode_response_parts(API_KEY, VERSION, 7, response)))
    return (time.process_time() - t0) / count, size


class EncodedPerAnswer(MetadataHandler):
    """The reference: each answer encodes every topic's entry itself."""

    def _topic(self, name: str, version: int) -> SharedStruct:
        return super()._topic(name, version).struct  # type: ignore[return-value]


async def run(args: argparse.Namespace) -> None:
    cache = filled_cache(args.partitions)
    names = cache.topics()
    requests = {
        "refresh, every topic by name (librdkafka)": MetadataRequest(
            topics=[MetadataRequest.Topics(name=n) for n in names], allow_auto_topic_creation=False),
        "listing of every topic (list_topics)": MetadataRequest(topics=None),
    }
    sides = {"shared entries": MetadataHandler(cache, lambda: "cluster", None, AuthHelper(None)),
             "encoded per answer": EncodedPerAnswer(cache, lambda: "cluster", None, AuthHelper(None))}
    print(f"Metadata v{VERSION} answers at {args.partitions} partitions ({len(names)} topics, RF 3); "
          f"CPU per answer, best of {args.rounds} rounds of {args.answers}, sides alternating")
    for label, request in requests.items():
        best: dict[str, float] = {}
        size = 0
        for r in range(args.rounds):
            order = list(sides.items()) if r % 2 == 0 else list(reversed(sides.items()))
            for side, handler in order:
                per, size = await answers(handler, request, args.answers)
                best[side] = min(best.get(side, per), per)
            print(f"  round {r + 1}/{args.rounds}: " + ", ".join(f"{s} {best[s] * 1e3:.2f} ms" for s in sides),
                  file=sys.stderr)
        shared, per_answer = best["shared entries"], best["encoded per answer"]
        print(f"{label}: {size / 1e6:.2f} MB an answer; shared entries {shared * 1e3:.3f} ms, "
              f"encoded per answer {per_answer * 1e3:.2f} ms ({per_answer / shared:.0f}x the CPU)")
    # After a metadata update the first answer builds and encodes every entry again.
    handler = sides["shared entries"]
    request = next(iter(requests.values()))
    firsts = []
    for _ in range(args.rounds):
        cache.generation += 1  # what an UpdateMetadata does to the entries
        first, _ = await answers(handler, request, 1)
        firsts.append(first)
    print(f"first answer after a metadata update (entries built and encoded): {min(firsts) * 1e3:.2f} ms, "
          f"best of {args.rounds}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=10_000, help="partitions in the cache (topics of 100)")
    ap.add_argument("--answers", type=int, default=20, help="answers per round")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per side (alternating)")
    args = ap.parse_args()
    if args.partitions < 1 or args.answers < 1 or args.rounds < 1:
        ap.error("--partitions, --answers and --rounds must be positive")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
