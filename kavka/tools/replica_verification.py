"""``kavka replica-verification``: check that every replica of the chosen
topics' partitions holds the same record batches (seed 000 §Replica
Verification Tool; kafka-replica-verification.sh).

How: one fetcher per broker asks that broker, in rounds, for all the
partitions it hosts a replica of, with Fetch replica id -2 (Kafka's
debugging consumer: served by followers as well as leaders, below each
replica's own high watermark; ``kavka.replication.requests``). After every
round the replicas' batches are compared in lockstep from the partition's
verified offset (``kavka.tools.replica_compare``) and the offset moves past
every batch all replicas agree on. A broker that does not answer delays its
partitions until it does.

Output, as Kafka's tool: ``<time>: verification process is started``; every
``--report-interval-ms`` ``<time>: max lag is L for partition T-P at offset
O among N partitions`` (L: the highest high watermark minus the verified
offset); one line per mismatch (differing checksum, damaged batch) and, for
logs that diverged (batches holding different offsets), a last line and
exit code 1 at once. With ``--time-limit-ms`` the tool stops after that
long with a summary line and exits 1 if any mismatch was seen or some
partition was never compared (a replica did not answer), else 0.

``--time``: where verification starts: -2 the log start (default, so that
a one-shot run checks all retained data), -1 the high watermark (Kafka's
default: only what arrives from now on), or a timestamp in ms. Runs in a
command-line process.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Mapping
from datetime import datetime

from kavka.client.admin import AdminError, KafkaAdmin
from kavka.client.cluster import Cluster
from kavka.client.errors import ClientConnectionError
from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import FetchRequest, FetchResponse
from kavka.tools.client_cli import (
    CliError,
    add_bootstrap_argument,
    add_command_config_argument,
    load_command_config,
    open_cluster,
    run_main,
    usage,
)
from kavka.tools.replica_compare import Mismatch, ReplicaFetch, batches_below, compare, lag

DESCRIPTION = ("Check that all replicas of the chosen topics hold the same record batches, reporting the "
               "replication lag and any mismatch (the options and output of kafka-replica-verification.sh).")
FETCH_KEY = 1
FETCH_BY_NAME_MAX_VERSION = 12  # v13+ names topics by id; names keep the tool simple
DEBUGGING_CONSUMER_ID = -2
EARLIEST, LATEST = -2, -1
MAX_RESPONSE_BYTES = 64 << 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    p.add_argument("--topic-white-list", "--topics-include", default=".*", metavar="REGEX",
                   help="topics to verify: a regular expression matched against whole names (default all)")
    p.add_argument("--report-interval-ms", type=int, default=30_000,
                   help="how often to print the max lag (default 30000)")
    p.add_argument("--max-wait-ms", type=int, default=1_000,
                   help="how long each fetch may wait for new data (default 1000)")
    p.add_argument("--fetch-size", type=int, default=1 << 20,
                   help="bytes fetched per partition per round (default 1048576)")
    p.add_argument("--time", type=int, default=EARLIEST,
                   help="where to start: -2 the log start (default), -1 the high watermark, or a time in ms")
    p.add_argument("--time-limit-ms", type=int,
                   help="stop after this long; exit 1 if a mismatch was seen or a partition could not be "
                        "verified (default: run until interrupted)")


def _check(args: argparse.Namespace) -> re.Pattern:
    for opt in ("report_interval_ms", "max_wait_ms", "fetch_size"):
        if getattr(args, opt) <= 0:
            raise usage(f"--{opt.replace('_', '-')} must be positive, got {getattr(args, opt)}")
    if args.time_limit_ms is not None and args.time_limit_ms <= 0:
        raise usage(f"--time-limit-ms must be positive, got {args.time_limit_ms}")
    if args.time < EARLIEST:
        raise usage(f"--time must be -2, -1 or a timestamp in ms, got {args.time}")
    try:
        return re.compile(args.topic_white_list)
    except re.error as e:
        raise usage(f"--topic-white-list {args.topic_white_list!r} is not a regular expression: {e}") from None


def _now() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        pattern = _check(args)
        properties = load_command_config(args.command_config)
        cluster = await open_cluster(args.bootstrap_server, request_timeout_ms=30_000, properties=properties)
        try:
            return await _Verifier(cluster, args).run(pattern)
        finally:
            await cluster.close()
    return run_main(main)


class _Verifier:
    """The verification state of one run: each partition's replicas and
    verified offset, and the mismatches seen so far."""

    def __init__(self, cluster: Cluster, args: argparse.Namespace) -> None:
        self.cluster = cluster
        self.args = args
        self.replicas: dict[TopicPartition, tuple[int, ...]] = {}
        self.offsets: dict[TopicPartition, int] = {}
        self.lags: dict[TopicPartition, int] = {}
        self.mismatches = 0
        self.compared = 0
        self.down: set[int] = set()
        self.reported: set[tuple[TopicPartition, str]] = set()

    async def run(self, pattern: re.Pattern) -> int:
        md = await self.cluster.refresh_metadata()
        topics = sorted(n for n, t in md.topics.items()
                        if pattern.fullmatch(n) and t.error in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE))
        if not topics:
            raise CliError(f"no topic matches --topic-white-list {self.args.topic_white_list!r}")
        for name in topics:
            for p in md.topics[name].partitions:
                self.replicas[TopicPartition(name, p.partition)] = tuple(p.replicas)
        await self._initial_offsets()
        print(f"{_now()}: verification process is started", flush=True)
        loop = asyncio.get_running_loop()
        started = last_report = loop.time()
        limit = self.args.time_limit_ms / 1000 if self.args.time_limit_ms is not None else None
        while limit is None or loop.time() - started < limit:
            fetched = await self._round()
            if self._verify(fetched):
                print(f"{_now()}: verification stopped: the replicas diverged ({self.mismatches} mismatch(es))",
                      flush=True)
                return 1
            if (loop.time() - last_report) * 1000 >= self.args.report_interval_ms:
                self._report()
                last_report = loop.time()
        self._report()
        print(f"{_now()}: verification finished: {len(self.replicas)} partitions, {self.compared} batches "
              f"compared, {self.mismatches} mismatch(es)", flush=True)
        unverified = sorted(str(tp) for tp in self.replicas if tp not in self.lags)
        if unverified:
            # Never compared: a replica did not answer. Not a pass.
            print(f"{_now()}: {len(unverified)} partition(s) could not be verified, a replica never answered: "
                  f"{', '.join(unverified)}", flush=True)
        return 1 if self.mismatches or unverified else 0

    async def _initial_offsets(self) -> None:
        admin = KafkaAdmin(self.cluster, timeout_ms=30_000)
        try:
            listed = await admin.list_offsets({tp: self.args.time for tp in self.replicas})
        except AdminError as e:
            raise CliError(f"cannot find the starting offsets: {e}") from None
        latest = None
        for tp, found in listed.items():
            if found.offset < 0:  # no record at or after --time yet: start at the end
                latest = latest or await admin.list_offsets({t: LATEST for t in self.replicas})
                self.offsets[tp] = latest[tp].offset
            else:
                self.offsets[tp] = found.offset

    async def _round(self) -> dict[TopicPartition, dict[int, FetchResponse.Responses.Partitions]]:
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp, replicas in self.replicas.items():
            for r in replicas:
                by_broker.setdefault(r, []).append(tp)
        brokers = sorted(by_broker)
        answers = await asyncio.gather(*(self._fetch(b, by_broker[b]) for b in brokers), return_exceptions=True)
        fetched: dict[TopicPartition, dict[int, FetchResponse.Responses.Partitions]] = {tp: {} for tp in self.replicas}
        for broker, answer in zip(brokers, answers, strict=True):
            if isinstance(answer, (KafkaError, ClientConnectionError, OSError, asyncio.TimeoutError)):
                if broker not in self.down:
                    print(f"{_now()}: broker {broker} did not answer ({answer}); its partitions wait for it",
                          flush=True)
                    self.down.add(broker)
                continue
            if isinstance(answer, BaseException):
                raise answer
            self.down.discard(broker)
            for tp, data in answer.items():
                fetched[tp][broker] = data
        return fetched

    async def _fetch(self, broker: int,
                     tps: list[TopicPartition]) -> dict[TopicPartition, FetchResponse.Responses.Partitions]:
        R = FetchRequest
        by_topic: dict[str, list] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(R.Topics.Partitions(
                partition=tp.partition, fetch_offset=self.offsets[tp], partition_max_bytes=self.args.fetch_size,
                current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1))
        conn = await self.cluster.connection(broker)
        version = conn.version_for(FETCH_KEY, FETCH_BY_NAME_MAX_VERSION)
        req = R(replica_id=DEBUGGING_CONSUMER_ID, max_wait_ms=self.args.max_wait_ms, min_bytes=1,
                max_bytes=min(MAX_RESPONSE_BYTES, self.args.fetch_size * len(tps)), isolation_level=0,
                topics=[R.Topics(topic=t, partitions=ps) for t, ps in by_topic.items()])
        resp = await conn.request(req, version=version, timeout_ms=conn.request_timeout_ms + self.args.max_wait_ms)
        if resp.error_code:
            raise KafkaError(f"Fetch from broker {broker} failed", code=ErrorCode.of(resp.error_code))
        return {TopicPartition(t.topic, p.partition_index): p for t in resp.responses for p in t.partitions}

    def _verify(self, fetched: Mapping[TopicPartition, dict[int, FetchResponse.Responses.Partitions]]) -> bool:
        """Compare every partition all of whose replicas answered; True when
        some partition's logs diverged (nothing more can be verified)."""
        diverged = False
        for tp, answers in fetched.items():
            replicas = self.replicas[tp]
            if set(answers) != set(replicas):
                continue  # a broker is down: wait for it
            errors = {r: ErrorCode.of(p.error_code) for r, p in answers.items() if p.error_code}
            if errors:
                self._on_errors(tp, answers, errors)
                continue
            views = {r: ReplicaFetch(p.high_watermark, batches_below(p.records or b"", p.high_watermark))
                     for r, p in answers.items()}
            result = compare(str(tp), self.offsets[tp], views)
            for m in result.mismatches:
                self._print_mismatch(m)
            self.compared += result.batches
            self.offsets[tp] = result.next_offset
            self.lags[tp] = lag(result.next_offset, views)
            diverged = diverged or result.fatal
        return diverged

    def _on_errors(self, tp: TopicPartition, answers, errors: dict[int, ErrorCode]) -> None:
        out_of_range = [r for r, e in errors.items() if e is ErrorCode.OFFSET_OUT_OF_RANGE]
        start = max((answers[r].log_start_offset for r in out_of_range), default=-1)
        if out_of_range and len(out_of_range) == len(errors) and start > self.offsets[tp]:
            # Retention removed the start on some replica: verify from the
            # highest log start instead (Kafka's tool stops here).
            print(f"{_now()}: partition {tp}: offsets {self.offsets[tp]}-{start - 1} are no longer on replica(s) "
                  f"{out_of_range}; verifying from {start}", flush=True)
            self.offsets[tp] = start
            return
        detail = ", ".join(f"replica {r}: {e.name}" for r, e in sorted(errors.items()))
        if (tp, detail) not in self.reported:  # once per distinct problem, not every round
            self.reported.add((tp, detail))
            print(f"{_now()}: partition {tp} cannot be read at offset {self.offsets[tp]} ({detail}); retrying",
                  flush=True)

    def _print_mismatch(self, m: Mismatch) -> None:
        self.mismatches += 1
        print(f"{_now()}: {m.describe()}", flush=True)

    def _report(self) -> None:
        if not self.lags:
            print(f"{_now()}: max lag is unknown (no round with every replica answering yet) among "
                  f"{len(self.replicas)} partitions", flush=True)
            return
        tp = max(sorted(self.lags), key=lambda t: self.lags[t])
        print(f"{_now()}: max lag is {self.lags[tp]} for partition {tp} at offset {self.offsets[tp]} among "
              f"{len(self.replicas)} partitions", flush=True)
