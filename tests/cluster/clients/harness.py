"""One Kavka cluster per test module, every broker behind the recording
proxy, plus what every client test shares: the records to send, the
expected-version check, and Kavka's own admin client for what a client
cannot do itself (kcat has no admin API).

``ProxiedCluster`` is a ``LocalCluster`` whose brokers advertise the
proxy's ports (``advertised.listeners``): Metadata then hands clients the
proxy addresses, so every connection a client opens is recorded. The
brokers' own traffic (controller requests) also flows through the proxy;
it is told apart by its client id.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kavka.tools.cluster import BrokerProcess, LocalCluster

from .proxy import ApiCall, RecordingProxy

RECORDS = 10_000
PARTITIONS = 3
# Created with the topic: small segments, so that consuming and the
# time-index lookups of ListOffsets cross segment boundaries. A batch
# larger than a segment is refused (RECORD_LIST_TOO_LARGE, as Kafka does),
# so producers keep batches at or below PRODUCER_BATCH_BYTES (kafka-python's
# and aiokafka's default; librdkafka's is 1 MB and is set explicitly).
TOPIC_CONFIGS = {"segment.bytes": "65536"}
PRODUCER_BATCH_BYTES = 16384
# What the config tests alter, and to what.
ALTERED_KEY, ALTERED_VALUE = "retention.ms", "3600000"
DEFAULT_RETENTION_MS = "604800000"


@dataclass(frozen=True, slots=True)
class Rec:
    """One record as the test sends it and expects it back."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp: int


class Plan:
    """The 2 x 10,000 records a client sends: run 0 with acks=1, run 1
    with acks=all. Record i of a run goes to partition i % 3 with key
    ``k<i>`` (null for every 100th, so null keys are covered) and the
    explicit timestamp ``base + run * RECORDS + i``, so that ListOffsets by
    time has exactly one right answer per partition. Offsets follow from
    the order: each partition receives its records in send order."""

    def __init__(self, base_timestamp: int) -> None:
        self.base = base_timestamp
        self.runs: list[list[Rec]] = []
        next_offset = [0] * PARTITIONS
        for run, acks in enumerate(("1", "all")):
            recs = []
            for i in range(RECORDS):
                p = i % PARTITIONS
                key = None if i % 100 == 99 else f"k{i:05d}".encode()
                recs.append(Rec(p, next_offset[p], key, f"acks{acks}-value-{i:05d}".encode(),
                                base_timestamp + run * RECORDS + i))
                next_offset[p] += 1
            self.runs.append(recs)
        self.end_offsets = tuple(next_offset)

    @property
    def expected(self) -> list[Rec]:
        return sorted((r for run in self.runs for r in run), key=lambda r: (r.partition, r.offset))

    def mid_timestamp(self) -> int:
        """A time in the middle of the acks=all run."""
        return self.base + RECORDS + RECORDS // 2

    def offset_for_time(self, partition: int, timestamp: int) -> int | None:
        """The first offset whose timestamp is >= ``timestamp`` (None: none)."""
        return next((r.offset for r in self.expected if r.partition == partition and r.timestamp >= timestamp), None)


def assert_rolled(cluster: ProxiedCluster, topic: str) -> None:
    """Every partition of ``topic`` spans several segments (so reads and
    time lookups crossed segment boundaries)."""
    counts = cluster.segment_counts(topic)
    assert sorted(counts) == list(range(PARTITIONS)) and min(counts.values()) > 1, \
        f"segments per partition of {topic}: {counts}"


def assert_same_records(consumed: list[Rec], plan: Plan, client: str, with_timestamps: bool = True) -> None:
    """Every (partition, offset, key, value[, timestamp]) as planned."""
    got = sorted(consumed, key=lambda r: (r.partition, r.offset))
    want = plan.expected
    if not with_timestamps:
        got = [Rec(r.partition, r.offset, r.key, r.value, 0) for r in got]
        want = [Rec(r.partition, r.offset, r.key, r.value, 0) for r in want]
    if got != want:
        diffs = [(g, w) for g, w in zip(got, want, strict=False) if g != w][:5]
        raise AssertionError(f"{client}: consumed {len(got)} records, expected {len(want)}; "
                             f"first differences (got, expected): {diffs}")


API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
             9: "OffsetFetch", 10: "FindCoordinator", 18: "ApiVersions", 19: "CreateTopics",
             20: "DeleteTopics", 22: "InitProducerId", 32: "DescribeConfigs", 33: "AlterConfigs",
             21: "DeleteRecords", 35: "DescribeLogDirs", 37: "CreatePartitions",
             44: "IncrementalAlterConfigs", 60: "DescribeCluster"}


class ProxiedCluster(LocalCluster):
    """See the module docstring."""

    def __init__(self, brokers: int, data_dir: Path, zookeeper: str, config: Mapping[str, str]) -> None:
        super().__init__(brokers, data_dir, zookeeper=zookeeper, config=config)
        self.proxy = RecordingProxy()
        self.proxy_ports = {i: self.proxy.add_route(b.port) for i, b in self.brokers.items()}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.proxy_ports.values())

    def _write_properties(self, b: BrokerProcess) -> None:
        super()._write_properties(b)
        with open(b.properties, "a") as f:
            f.write(f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.proxy_ports[b.broker_id]}\n")

    def stop(self) -> None:
        super().stop()
        self.proxy.close()

    def segment_counts(self, topic: str) -> dict[int, int]:
        """Partition -> number of ``.log`` segment files, over every broker."""
        counts: dict[int, int] = {}
        for b in self.brokers.values():
            for d in (b.directory / "logs").glob(f"{topic}-*"):
                partition = d.name[len(topic) + 1:]
                if partition.isdigit():
                    counts[int(partition)] = counts.get(int(partition), 0) + len(list(d.glob("*.log")))
        return counts

    def broker_logs(self, lines: int = 40) -> str:
        return "\n".join(f"--- broker {i} ({b.log_path}) ---\n{b.log_tail(lines)}" for i, b in self.brokers.items())


def proxied_cluster(zookeeper: str, tmp_path_factory, brokers: int = 3,
                    config: Mapping[str, str] | None = None) -> Iterator[ProxiedCluster]:
    """Generator body for a module-scoped fixture: a fresh ZooKeeper chroot
    (deleted afterwards) and a started ``ProxiedCluster``."""
    from kazoo.client import KazooClient

    chroot = f"/kavka-clients-{uuid.uuid4().hex[:12]}"
    cluster = ProxiedCluster(brokers, tmp_path_factory.mktemp("clients-cluster"), f"{zookeeper}{chroot}",
                             dict(config or {}))
    try:
        cluster.start()
        wait_metadata_ready(cluster)
        yield cluster
    finally:
        cluster.stop()
        zk = KazooClient(hosts=zookeeper)
        zk.start(10)
        try:
            zk.delete(chroot, recursive=True)
        except Exception:  # noqa: BLE001 - the cluster may not have created it
            pass
        finally:
            zk.stop()
            zk.close()


def wait_metadata_ready(cluster: ProxiedCluster, timeout_s: float = 30.0) -> None:
    """Wait until every broker's Metadata names the controller and lists
    every broker. ``LocalCluster.start`` returns once the brokers are
    registered in ZooKeeper, but a broker learns the controller id only
    from the controller's UpdateMetadata; a librdkafka admin request that
    sees controller id -1 then waits for a controller without asking
    again, until its timeout ("Failed while waiting for controller"). Asked
    of each broker's own port with Kavka's client, so no client's recorded
    traffic changes."""
    from kavka.client.cluster import Cluster

    async def ready(port: int) -> bool:
        try:
            async with Cluster(f"127.0.0.1:{port}", client_id="kavka-test-readiness",
                               request_timeout_ms=5_000, default_deadline_ms=5_000) as c:
                md = c.metadata
                return md.controller_id >= 0 and set(md.brokers) == set(cluster.brokers)
        except Exception:  # noqa: BLE001 - not ready yet; asked again below
            return False

    deadline = time.monotonic() + timeout_s
    pending = {b.broker_id: b.port for b in cluster.brokers.values()}
    while pending:
        pending = {i: p for i, p in pending.items() if not asyncio.run(ready(p))}
        if pending and time.monotonic() > deadline:
            raise AssertionError(f"brokers {sorted(pending)} do not know the controller and every broker after "
                                 f"{timeout_s:.0f} s\n{cluster.broker_logs(20)}")
        if pending:
            time.sleep(0.1)


@dataclass(frozen=True, slots=True)
class Negotiated:
    """Per API key, the set of versions one client sent."""

    versions: Mapping[int, frozenset[int]]
    software: frozenset[tuple[str, str]] = frozenset()  # from ApiVersions v3+

    @classmethod
    def of(cls, calls: list[ApiCall]) -> Negotiated:
        seen: dict[int, set[int]] = defaultdict(set)
        for c in calls:
            seen[c.api_key].add(c.api_version)
        return cls({k: frozenset(v) for k, v in seen.items()},
                   frozenset(c.software for c in calls if c.software is not None))

    def describe(self) -> str:
        who = "; ".join(f"{n} {v}" for n, v in sorted(self.software)) or "no client_software_name sent"
        return f"[{who}] " + ", ".join(f"{API_NAMES.get(k, k)}({k}) v{'/v'.join(map(str, sorted(v)))}"
                                       for k, v in sorted(self.versions.items()))


def assert_preferred_versions(calls: list[ApiCall], expected: Mapping[int, int], client: str) -> Negotiated:
    """Every request of ``calls`` uses the one version ``expected`` names
    for its API and every expected API was seen. A client retrying
    ApiVersions lower (KIP-511) would show up here as a second version:
    Kavka serves ApiVersions v0-v4, so none should. Returns what was seen."""
    assert calls, f"{client}: the proxy recorded no request from it"
    negotiated = Negotiated.of(calls)
    problems = []
    for api_key, versions in sorted(negotiated.versions.items()):
        name = f"{API_NAMES.get(api_key, api_key)}({api_key})"
        if api_key not in expected:
            problems.append(f"{name} sent v{sorted(versions)} but the test expects no such request")
        elif versions != {expected[api_key]}:
            problems.append(f"{name} sent v{sorted(versions)}, preferred v{expected[api_key]}")
    for api_key in sorted(set(expected) - set(negotiated.versions)):
        problems.append(f"{API_NAMES.get(api_key, api_key)}({api_key}) expected at v{expected[api_key]} but never sent")
    assert not problems, f"{client}: " + "; ".join(problems) + f"\nseen: {negotiated.describe()}"
    return negotiated


def assert_known_versions(calls: list[ApiCall], expected: Mapping[int, int], client: str) -> Negotiated:
    """The APIs of ``expected`` that ``calls`` used went out at the expected
    version; other APIs (those the reference table does not cover) are
    only recorded. Returns what was seen."""
    seen = Negotiated.of(calls)
    wrong = {f"{API_NAMES.get(k, k)}({k})": f"sent v{sorted(v)}, preferred v{expected[k]}"
             for k, v in seen.versions.items() if k in expected and v != {expected[k]}}
    assert not wrong, f"{client}: {wrong}"
    return seen


def kavka_admin(bootstrap: str, fn):
    """Run ``await fn(admin)`` with Kavka's own admin client."""
    from kavka.client.admin import KafkaAdmin
    from kavka.client.cluster import Cluster

    async def main():
        async with Cluster(bootstrap) as cluster:
            return await fn(KafkaAdmin(cluster))

    return asyncio.run(main())


# -- the second scenario: compression, headers, acks=0, admin extras ------------------

CODECS = ("gzip", "snappy", "lz4", "zstd")
PER_CODEC = 500
ACKS0_RECORDS = 100
EXTRA_PARTITIONS = 2


@dataclass(frozen=True, slots=True)
class HRec:
    """A record with headers, as sent and expected back."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


def extras_plan() -> dict[str, list[HRec]]:
    """Per codec, PER_CODEC records for partition 0 (offsets follow the
    codec order of CODECS), each with two headers; under "acks0",
    ACKS0_RECORDS header-less records for partition 1."""
    plan: dict[str, list[HRec]] = {}
    offset = 0
    for codec in CODECS:
        plan[codec] = [HRec(0, offset + i, f"{codec}-k{i}".encode(), f"{codec}-value-{i:04d}-".encode() * 4,
                            (("codec", codec.encode()), ("seq", str(i).encode())))
                       for i in range(PER_CODEC)]
        offset += PER_CODEC
    plan["acks0"] = [HRec(1, i, None, f"acks0-{i}".encode(), ()) for i in range(ACKS0_RECORDS)]
    return plan


def assert_same_hrecords(consumed: list[HRec], plan: dict[str, list[HRec]], client: str) -> None:
    got = sorted(consumed, key=lambda r: (r.partition, r.offset))
    want = sorted((r for recs in plan.values() for r in recs), key=lambda r: (r.partition, r.offset))
    if got != want:
        diffs = [(g, w) for g, w in zip(got, want, strict=False) if g != w][:3]
        raise AssertionError(f"{client}: consumed {len(got)} records with headers, expected {len(want)}; "
                             f"first differences (got, expected): {diffs}")
