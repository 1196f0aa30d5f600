"""Test doubles for the client tests: a fake Kafka broker built from
kavka.protocol, and a fake cluster of them sharing in-memory state.

``FakeBroker`` is an asyncio server on 127.0.0.1 that decodes each request
with ``decode_request`` and answers with whatever its handler for that API
key returns (or, for an async handler, whatever it returns once awaited), encoded with ``encode_response`` (so every answer is
schema-valid). Knobs: ``versions`` (what ApiVersions advertises; a request
for ApiVersions above it gets UNSUPPORTED_VERSION in a v0 body, as KIP-511
says), ``delay`` per API key (requests are handled concurrently, so delays
reorder responses), ``silent`` (never answered) and ``close_on`` (the
connection is closed on receipt).

``FakeCluster`` wires several FakeBrokers to one state: topics with a
leader per partition, a log per partition that stores produced batches
(base offset patched, as a broker does), and topic configs. It is a test
double only — not a broker — and answers just enough for the client's
paths. Tests only; never imported by kavka.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

from kavka.common.topic_partition import TopicPartition
from kavka.protocol import messages as m
from kavka.protocol.errors import UnsupportedVersionError
from kavka.protocol.framing import FrameDecoder, frame
from kavka.protocol.headers import RequestHeader, decode_request, encode_response
from kavka.protocol.records import iter_batches, patch_base_offset, validate_batch
from kavka.protocol.schema import registry

Handler = Callable[["FakeBroker", RequestHeader, object], object]


class FakeBroker:
    def __init__(self, node_id: int = 0, versions: dict[int, tuple[int, int]] | None = None) -> None:
        self.node_id = node_id
        self.versions = versions if versions is not None else {
            k: (a.min_version, a.max_version) for k, a in registry().items()}
        self.handlers: dict[int, Handler] = {18: _api_versions}
        self.delay: dict[int, float] = {}
        self.silent: set[int] = set()
        self.close_on: set[int] = set()
        self.received: list[RequestHeader] = []
        self._received_more = asyncio.Event()
        self.connections = 0
        self.host = "127.0.0.1"
        self.port = 0
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()

    async def start(self, ssl: object = None) -> FakeBroker:
        """Listen; ``ssl`` (an ``ssl.SSLContext``) makes it a TLS listener."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port, ssl=ssl)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.close()
        for t in list(self._tasks):
            t.cancel()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def received_requests(self, api_key: int, count: int) -> None:
        """Until ``count`` requests of ``api_key`` have arrived."""
        while sum(h.api_key == api_key for h in self.received) < count:
            self._received_more.clear()
            await self._received_more.wait()

    def kill_connections(self) -> None:
        for w in list(self._writers):
            w.close()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for f in decoder.feed(data):
                    try:
                        header, body = decode_request(f)
                    except UnsupportedVersionError as e:
                        header, body = e.header, None
                    self.received.append(header)
                    self._received_more.set()
                    if header.api_key in self.close_on:
                        writer.close()
                        return
                    t = asyncio.ensure_future(self._answer(writer, header, body))
                    self._tasks.add(t)
                    t.add_done_callback(self._tasks.discard)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, header: RequestHeader, body) -> None:
        if header.api_key in self.silent:
            return
        if header.api_key in self.delay:
            await asyncio.sleep(self.delay[header.api_key])
        version = header.api_version
        if header.api_key == 18 and (body is None or version > self.versions[18][1]):
            resp, version = _api_versions_list(self, error_code=35), 0
        else:
            resp = self.handlers[header.api_key](self, header, body)
            if inspect.isawaitable(resp):
                resp = await resp
        if resp is None or writer.is_closing():
            return
        writer.write(frame(encode_response(header.api_key, version, header.correlation_id, resp)))


def _api_versions_list(broker: FakeBroker, error_code: int = 0) -> m.ApiVersionsResponse:
    R = m.ApiVersionsResponse
    return R(error_code=error_code, api_keys=[R.ApiKeys(api_key=k, min_version=lo, max_version=hi)
                                              for k, (lo, hi) in sorted(broker.versions.items())])


def _api_versions(broker: FakeBroker, header: RequestHeader, body) -> m.ApiVersionsResponse:
    return _api_versions_list(broker)


@dataclass
class PartitionLog:
    leader: int
    replicas: list[int]
    batches: list[bytes] = field(default_factory=list)
    log_start: int = 0
    next_offset: int = 0
    leader_epoch: int = 0


class FakeCluster:
    """``n`` FakeBrokers (node ids 0..n-1) sharing topics and logs; node 0
    is the controller. Tests move leaders with ``move_leader``."""

    def __init__(self, n: int = 1) -> None:
        self.brokers = [FakeBroker(i) for i in range(n)]
        self.controller_id = 0
        self.topics: dict[str, list[PartitionLog]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        for b in self.brokers:
            b.handlers.update({3: self._metadata, 0: self._produce, 1: self._fetch, 2: self._list_offsets,
                               19: self._create_topics, 20: self._delete_topics, 37: self._create_partitions,
                               21: self._delete_records, 32: self._describe_configs,
                               33: self._alter_configs, 44: self._incremental_alter_configs,
                               60: self._describe_cluster})

    async def start(self) -> FakeCluster:
        for b in self.brokers:
            await b.start()
        return self

    async def stop(self) -> None:
        for b in self.brokers:
            await b.stop()

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def add_topic(self, name: str, partitions: int, leaders: list[int] | None = None) -> None:
        n = len(self.brokers)
        self.topics[name] = [PartitionLog(leaders[i] if leaders else i % n, [leaders[i] if leaders else i % n])
                             for i in range(partitions)]
        self.configs[name] = {"cleanup.policy": "delete"}

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        p = self.topics[topic][partition]
        p.leader = node_id
        p.leader_epoch += 1

    def log(self, tp: TopicPartition) -> PartitionLog:
        return self.topics[tp.topic][tp.partition]

    # -- handlers --------------------------------------------------------------------

    def _metadata(self, broker, header, req):
        R = m.MetadataResponse
        names = list(self.topics) if not req.topics else [t.name for t in req.topics]
        topics = []
        for name in names:
            parts = self.topics.get(name)
            if parts is None:
                topics.append(R.Topics(error_code=3, name=name))
                continue
            topics.append(R.Topics(name=name, partitions=[
                R.Topics.Partitions(partition_index=i, leader_id=p.leader, leader_epoch=p.leader_epoch,
                                    replica_nodes=p.replicas, isr_nodes=p.replicas)
                for i, p in enumerate(parts)]))
        brokers = [R.Brokers(node_id=b.node_id, host=b.host, port=b.port) for b in self.brokers]
        return R(brokers=brokers, cluster_id="fake-cluster", controller_id=self.controller_id, topics=topics)

    def _partition(self, broker, topic, index):
        """(log, error code) for a partition request at ``broker``."""
        parts = self.topics.get(topic)
        if parts is None or not 0 <= index < len(parts):
            return None, 3
        if parts[index].leader != broker.node_id:
            return None, 6
        return parts[index], 0

    def _produce(self, broker, header, req):
        R = m.ProduceResponse
        out = []
        for t in req.topic_data:
            prs = []
            for pd in t.partition_data:
                log, err = self._partition(broker, t.name, pd.index)
                base = -1
                if log is not None:
                    data = bytearray(pd.records)
                    base = log.next_offset
                    for pos, h in list(iter_batches(data)):
                        patch_base_offset(data, log.next_offset, pos)
                        log.batches.append(bytes(data[pos:pos + h.size]))
                        log.next_offset += h.last_offset_delta + 1
                prs.append(R.Responses.PartitionResponses(index=pd.index, error_code=err, base_offset=base))
            out.append(R.Responses(name=t.name, partition_responses=prs))
        return None if req.acks == 0 else R(responses=out)

    def _fetch(self, broker, header, req):
        R = m.FetchResponse
        out = []
        for t in req.topics:
            parts = []
            for fp in t.partitions:
                log, err = self._partition(broker, t.topic, fp.partition)
                if log is not None and fp.current_leader_epoch not in (-1, log.leader_epoch):
                    log, err = None, 74
                data = b""
                hw = -1
                if log is not None:
                    hw = log.next_offset
                    chunks, size = [], 0
                    for b in log.batches:
                        h = validate_batch(b)
                        if h.last_offset < fp.fetch_offset:
                            continue
                        if chunks and size + len(b) > fp.partition_max_bytes:
                            break
                        chunks.append(b)
                        size += len(b)
                    data = b"".join(chunks)
                    if not log.log_start <= fp.fetch_offset <= log.next_offset:
                        err, data = 1, b""
                parts.append(R.Responses.Partitions(partition_index=fp.partition, error_code=err,
                                                    high_watermark=hw, last_stable_offset=hw,
                                                    log_start_offset=log.log_start if log else -1,
                                                    records=data))
            out.append(R.Responses(topic=t.topic, partitions=parts))
        return R(responses=out)

    def _list_offsets(self, broker, header, req):
        R = m.ListOffsetsResponse
        out = []
        for t in req.topics:
            parts = []
            for lp in t.partitions:
                log, err = self._partition(broker, t.name, lp.partition_index)
                offset = -1
                if log is not None:
                    if lp.timestamp == -2:
                        offset = log.log_start
                    elif lp.timestamp == -1:
                        offset = log.next_offset
                    else:
                        found = [validate_batch(b) for b in log.batches]
                        offset = next((h.base_offset for h in found if h.max_timestamp >= lp.timestamp), -1)
                parts.append(R.Topics.Partitions(partition_index=lp.partition_index, error_code=err,
                                                 timestamp=-1, offset=offset))
            out.append(R.Topics(name=t.name, partitions=parts))
        return R(topics=out)

    def _create_topics(self, broker, header, req):
        R = m.CreateTopicsResponse
        out = []
        for t in req.topics:
            if broker.node_id != self.controller_id:
                out.append(R.Topics(name=t.name, error_code=41, error_message="not the controller"))
            elif t.name in self.topics:
                out.append(R.Topics(name=t.name, error_code=36, error_message=f"Topic '{t.name}' already exists."))
            elif t.num_partitions == 0 or (t.num_partitions < 0 and not t.assignments):
                out.append(R.Topics(name=t.name, error_code=37, error_message="partitions must be > 0"))
            else:
                if not req.validate_only:
                    leaders = [a.broker_ids[0] for a in t.assignments] or None
                    self.add_topic(t.name, len(leaders) if leaders else t.num_partitions, leaders)
                    self.configs[t.name].update({c.name: c.value for c in t.configs})
                out.append(R.Topics(name=t.name, error_code=0))
        return R(topics=out)

    def _delete_topics(self, broker, header, req):
        R = m.DeleteTopicsResponse
        names = req.topic_names if header.api_version < 6 else [t.name for t in req.topics]
        out = []
        for name in names:
            err = 0 if self.topics.pop(name, None) is not None else 3
            out.append(R.Responses(name=name, error_code=err))
        return R(responses=out)

    def _create_partitions(self, broker, header, req):
        R = m.CreatePartitionsResponse
        out = []
        for t in req.topics:
            parts = self.topics.get(t.name)
            if parts is None:
                out.append(R.Results(name=t.name, error_code=3, error_message="no such topic"))
            elif t.count <= len(parts):
                out.append(R.Results(name=t.name, error_code=37, error_message=f"already {len(parts)}"))
            else:
                n = len(self.brokers)
                parts.extend(PartitionLog(i % n, [i % n]) for i in range(len(parts), t.count))
                out.append(R.Results(name=t.name, error_code=0))
        return R(results=out)

    def _delete_records(self, broker, header, req):
        R = m.DeleteRecordsResponse
        out = []
        for t in req.topics:
            parts = []
            for dp in t.partitions:
                log, err = self._partition(broker, t.name, dp.partition_index)
                low = -1
                if log is not None:
                    target = log.next_offset if dp.offset == -1 else dp.offset
                    log.log_start = max(log.log_start, min(target, log.next_offset))
                    low = log.log_start
                parts.append(R.Topics.Partitions(partition_index=dp.partition_index, low_watermark=low,
                                                 error_code=err))
            out.append(R.Topics(name=t.name, partitions=parts))
        return R(topics=out)

    def _describe_configs(self, broker, header, req):
        R = m.DescribeConfigsResponse
        out = []
        for r in req.resources:
            cfg = self.configs.get(r.resource_name)
            if cfg is None:
                out.append(R.Results(error_code=3, error_message="no such topic", resource_type=r.resource_type,
                                     resource_name=r.resource_name))
                continue
            keys = r.configuration_keys if r.configuration_keys is not None else sorted(cfg)
            out.append(R.Results(resource_type=r.resource_type, resource_name=r.resource_name, configs=[
                R.Results.Configs(name=k, value=cfg.get(k), config_source=1) for k in keys if k in cfg]))
        return R(results=out)

    def _alter(self, req, incremental: bool):
        out = []
        for r in req.resources:
            cfg = self.configs.get(r.resource_name)
            if cfg is None:
                out.append((r, 3, "no such topic"))
                continue
            if not req.validate_only:
                if not incremental:
                    cfg.clear()
                for c in r.configs:
                    if incremental and c.config_operation == 1:
                        cfg.pop(c.name, None)
                    else:
                        cfg[c.name] = c.value
            out.append((r, 0, None))
        return out

    def _alter_configs(self, broker, header, req):
        R = m.AlterConfigsResponse
        return R(responses=[R.Responses(error_code=e, error_message=msg, resource_type=r.resource_type,
                                        resource_name=r.resource_name) for r, e, msg in self._alter(req, False)])

    def _incremental_alter_configs(self, broker, header, req):
        R = m.IncrementalAlterConfigsResponse
        return R(responses=[R.Responses(error_code=e, error_message=msg, resource_type=r.resource_type,
                                        resource_name=r.resource_name) for r, e, msg in self._alter(req, True)])

    def _describe_cluster(self, broker, header, req):
        R = m.DescribeClusterResponse
        return R(cluster_id="fake-cluster", controller_id=self.controller_id,
                 brokers=[R.Brokers(broker_id=b.node_id, host=b.host, port=b.port) for b in self.brokers])
