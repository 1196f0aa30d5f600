"""Admin operations over the Kafka protocol: topics, partitions, configs,
offsets, records, cluster description, ACLs, client quotas and SCRAM
credentials.

Routing follows ZooKeeper-era Kafka: CreateTopics, DeleteTopics,
CreatePartitions go to the controller (NOT_CONTROLLER makes the client
refresh metadata and retry); DescribeConfigs/AlterConfigs for a broker
resource go to that broker, for topics to any broker; ListOffsets and
DeleteRecords go to each partition's leader. Per-entity errors come back
as the typed exceptions of ``kavka.common.errors`` built from the broker's
code and message: ``create_topics`` & co. raise ``AdminError`` listing every
failed entity (``errors``: name -> KafkaError), after retrying only the
entities that failed retriably. ``describe_topics`` and ``list_topics``
read Metadata; ``describe_topic_partitions`` pages through
DescribeTopicPartitions (KIP-966). The ACL calls (DescribeAcls, CreateAcls, DeleteAcls) go to
any broker, as Kafka's admin client sends them; every broker keeps every
ACL. So do the client quota and SCRAM credential calls (DescribeClientQuotas,
AlterClientQuotas, Describe/AlterUserScramCredentials: KIP-546, KIP-554),
which any ZooKeeper-mode broker answers; a SCRAM password is salted here and
never sent.

One event loop; used by ``kavka topics`` and tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kavka.client import admin_requests as rq
from kavka.client.admin_types import (
    TRANSACTION_STATES,
    AbortTransactionSpec,
    AlterOp,
    ClusterDescription,
    ConfigEntry,
    ListedOffset,
    NewTopic,
    ProducerState,
    ResourceType,
    TransactionDescription,
    TransactionListing,
)
from kavka.client.cluster import Cluster
from kavka.client.metadata import ClusterMetadata, PartitionMetadata, TopicMetadata
from kavka.common.errors import ErrorCode, KafkaError, error_for
from kavka.common.topic_partition import TopicPartition
from kavka.protocol import messages as m

if TYPE_CHECKING:
    # The ACL, quota and SCRAM types are imported by the calls that use
    # them: most users of this client list offsets and topics only (each
    # Spark query's planning process among them).
    from kavka.security.acl import AclBinding, AclBindingFilter
    from kavka.security.quota.entity import ClientQuotaEntity
    from kavka.security.sasl.credentials import ScramMechanism

# Entity codes worth retrying in admin calls (metadata or a coordinator
# moves, a coordinator still loading); other
# retriable codes such as REQUEST_TIMED_OUT on CreateTopics mean the
# controller may have acted, so they are reported, as Kafka's admin does.
_RETRY_ENTITY_CODES = frozenset({ErrorCode.NOT_CONTROLLER, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                                 ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE})


class AdminError(KafkaError):
    """One or more entities failed. ``code`` is the first failure's code;
    ``errors`` maps every failed entity to its typed error."""

    def __init__(self, operation: str, errors: Mapping[Any, KafkaError]) -> None:
        self.errors = dict(errors)
        first = next(iter(self.errors.values()))
        detail = "; ".join(f"{k}: {e}" for k, e in self.errors.items())
        super().__init__(f"{operation} failed for {len(self.errors)} of them: {detail}", code=first.code)


class KafkaAdmin:
    """Admin client on a started ``Cluster`` (which it does not own)."""

    def __init__(self, cluster: Cluster, *, timeout_ms: int = 30_000) -> None:
        self.cluster = cluster
        self.timeout_ms = timeout_ms

    async def _per_entity(self, operation: str, keys: Iterable, send_once) -> dict:
        """Run ``send_once(remaining) -> {key: (code, message, value)}``
        with retries of entities that failed retriably; return {key: value}
        or raise AdminError naming every failure."""
        remaining = list(keys)
        failed: dict[object, KafkaError] = {}
        values: dict[object, object] = {}

        async def attempt():
            nonlocal remaining
            outcome = await send_once(remaining)
            retry, last = [], None
            for key in remaining:
                code, message, value = outcome.get(key, (ErrorCode.UNKNOWN_SERVER_ERROR,
                                                         "the broker's response did not mention it", None))
                if code == ErrorCode.NONE:
                    values[key] = value
                    failed.pop(key, None)
                    continue
                err = error_for(code, message)
                failed[key] = err
                if err.code in _RETRY_ENTITY_CODES:
                    retry.append(key)
                    last = err
            remaining = retry
            if last is not None:
                raise last

        try:
            await self.cluster.call(attempt, deadline_ms=self.timeout_ms)
        except KafkaError as e:
            if not failed:
                raise
            if e.code not in _RETRY_ENTITY_CODES and not any(err is e for err in failed.values()):
                raise
        if failed:
            raise AdminError(operation, failed)
        return values

    def _to_controller(self, build, parse):
        async def send(remaining):
            conn = await self.cluster.connection(await self.cluster.controller_id())
            req, version = build(remaining, conn)
            return parse(await conn.request(req, version=version))
        return send

    # -- topics ----------------------------------------------------------------------

    async def create_topics(self, topics: Iterable[NewTopic], *, validate_only: bool = False) -> None:
        by_name = {t.name: t for t in topics}
        send = self._to_controller(
            lambda names, conn: rq.create_topics([by_name[n] for n in names], self.timeout_ms, validate_only, conn),
            rq.parse_create_topics)
        await self._per_entity("CreateTopics", by_name, send)

    async def delete_topics(self, names: Iterable[str]) -> None:
        send = self._to_controller(lambda names, conn: rq.delete_topics(names, self.timeout_ms, conn),
                                         rq.parse_delete_topics)
        await self._per_entity("DeleteTopics", list(names), send)

    async def create_partitions(self, new_counts: Mapping[str, int], *,
                                assignments: Mapping[str, list[list[int]]] | None = None,
                                validate_only: bool = False) -> None:
        """Grow each topic to ``new_counts[topic]`` partitions; optional
        ``assignments[topic]`` gives the replicas of each new partition."""
        send = self._to_controller(
            lambda names, conn: rq.create_partitions({n: new_counts[n] for n in names}, assignments or {},
                                                     self.timeout_ms, validate_only, conn),
            rq.parse_create_partitions)
        await self._per_entity("CreatePartitions", list(new_counts), send)

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        md = await self.cluster.refresh_metadata()
        return sorted(n for n, t in md.topics.items() if include_internal or not t.is_internal)

    async def describe_topics(self, names: Iterable[str] | None = None) -> dict[str, TopicMetadata]:
        """Leader, replicas and ISR per partition (from Metadata). Raises
        AdminError for topics the cluster reports an error for."""
        wanted = list(names) if names is not None else None
        md: ClusterMetadata = await self.cluster.refresh_metadata(wanted)
        selected = md.topics if wanted is None else {n: md.topics[n] for n in wanted if n in md.topics}
        failed = {n: error_for(t.error, f"topic {n}") for n, t in selected.items() if t.error != ErrorCode.NONE}
        if wanted is not None:
            for n in wanted:
                if n not in md.topics:
                    failed[n] = error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {n}")
        if failed:
            raise AdminError("describe topics", failed)
        return dict(selected)

    async def describe_topic_partitions(self, names: Iterable[str] | None = None, *,
                                        partition_limit: int = 2000
                                        ) -> tuple[dict[str, TopicMetadata], dict[str, uuid.UUID]]:
        """Topics (all when ``names`` is None) and their topic ids through
        DescribeTopicPartitions (KIP-966), at most ``partition_limit``
        partitions per response, following the broker's cursor page by
        page; a topic the broker reports an error for comes back with that
        error and no partitions. Raises UnsupportedVersion where the broker
        lacks the API."""
        if partition_limit < 1:
            raise ValueError(f"a partition limit per response is at least 1, got {partition_limit}")
        wanted = list(dict.fromkeys(names)) if names is not None else []
        errors: dict[str, ErrorCode] = {}
        internal: dict[str, bool] = {}
        ids: dict[str, uuid.UUID] = {}
        partitions: dict[str, dict[int, PartitionMetadata]] = {}
        cursor: tuple[str, int] | None = None
        while True:
            async def page(cursor: tuple[str, int] | None = cursor) -> Any:
                conn = await self.cluster.any_connection()
                return await conn.request(*rq.describe_topic_partitions(wanted, partition_limit, cursor, conn))
            resp = await self.cluster.call(page, deadline_ms=self.timeout_ms)
            for t in resp.topics:
                if t.name is None:
                    continue
                errors[t.name] = ErrorCode.of(t.error_code)
                internal[t.name] = t.is_internal
                if t.topic_id != m.ZERO_UUID:
                    ids[t.name] = t.topic_id
                got = partitions.setdefault(t.name, {})
                for p in t.partitions:
                    got[p.partition_index] = PartitionMetadata(
                        t.name, p.partition_index, p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                        tuple(p.isr_nodes), tuple(p.offline_replicas), ErrorCode.of(p.error_code))
            following = resp.next_cursor
            if following is None:
                break
            step = (following.topic_name, following.partition_index)
            if cursor is not None and step <= cursor:
                raise KafkaError(f"DescribeTopicPartitions: the broker's next cursor {step} does not move past "
                                 f"{cursor}", code=ErrorCode.UNKNOWN_SERVER_ERROR)
            cursor = step
        topics = {name: TopicMetadata(name, errors[name], internal[name],
                                      tuple(got[i] for i in sorted(got)))
                  for name, got in partitions.items()}
        return topics, ids

    async def describe_cluster(self) -> ClusterDescription:
        """Cluster id, controller and brokers: DescribeCluster where the
        broker offers it, else Metadata."""
        conn = await self.cluster.any_connection()
        if 60 in conn.api_versions:
            req, version = rq.describe_cluster(conn)
            resp = await conn.request(req, version=version)
            if resp.error_code != ErrorCode.NONE:
                raise error_for(resp.error_code, resp.error_message)
            brokers = tuple(sorted((b.broker_id, b.host, b.port) for b in resp.brokers))
            return ClusterDescription(resp.cluster_id, resp.controller_id, brokers)
        md = await self.cluster.refresh_metadata()
        return ClusterDescription(md.cluster_id, md.controller_id,
                                  tuple(sorted((b.node_id, b.host, b.port) for b in md.brokers.values())))

    # -- configs ---------------------------------------------------------------------

    async def _config_conn(self, rtype: ResourceType, name: str):
        if rtype in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and name:
            if not name.isdigit():
                raise ValueError(f"a broker resource is named by its broker id (e.g. '0'), got {name!r}")
            return await self.cluster.connection(int(name))
        return await self.cluster.any_connection()

    async def describe_configs(self, resource_type: ResourceType, name: str,
                               keys: Iterable[str] | None = None, *,
                               include_synonyms: bool = False) -> dict[str, ConfigEntry]:
        async def send(remaining):
            conn = await self._config_conn(resource_type, name)
            req, version = rq.describe_configs(resource_type, name, keys, conn, include_synonyms)
            return rq.parse_describe_configs(await conn.request(req, version=version))
        return (await self._per_entity("DescribeConfigs", [name], send))[name]

    async def alter_configs(self, resource_type: ResourceType, name: str, configs: Mapping[str, str | None],
                            *, validate_only: bool = False) -> None:
        """Replace the resource's whole dynamic config (AlterConfigs)."""
        async def send(remaining):
            conn = await self._config_conn(resource_type, name)
            req, version = rq.alter_configs(resource_type, name, configs, validate_only, conn)
            return rq.parse_alter_configs(await conn.request(req, version=version))
        await self._per_entity("AlterConfigs", [name], send)

    async def incremental_alter_configs(self, resource_type: ResourceType, name: str,
                                        ops: Iterable[tuple[str, AlterOp, str | None]], *,
                                        validate_only: bool = False) -> None:
        """Apply (key, SET|DELETE|APPEND|SUBTRACT, value) operations."""
        ops = list(ops)

        async def send(remaining):
            conn = await self._config_conn(resource_type, name)
            req, version = rq.incremental_alter_configs(resource_type, name, ops, validate_only, conn)
            return rq.parse_alter_configs(await conn.request(req, version=version))
        await self._per_entity("IncrementalAlterConfigs", [name], send)

    # -- offsets and records ----------------------------------------------------------

    async def _by_leader(self, operation: str, targets: Mapping[TopicPartition, int], build, parse) -> dict:
        async def send(remaining):
            groups: dict[int, list[TopicPartition]] = {}
            outcome = {}
            for tp in remaining:
                try:
                    groups.setdefault(await self.cluster.leader_for(tp), []).append(tp)
                except KafkaError as e:
                    outcome[tp] = (e.code, e.message, None)
            for leader, tps in groups.items():
                conn = await self.cluster.connection(leader)
                req, version = build({tp: targets[tp] for tp in tps}, conn)
                outcome.update(parse(await conn.request(req, version=version)))
            return outcome
        return await self._per_entity(operation, list(targets), send)

    async def list_offsets(self, specs: Mapping[TopicPartition, int], *,
                           isolation_level: int = 0) -> dict[TopicPartition, ListedOffset]:
        """``specs[tp]`` is OffsetSpec.EARLIEST, OffsetSpec.LATEST (the high
        watermark) or a timestamp in ms (the first offset whose timestamp
        is at least it; offset -1 when there is none)."""
        return await self._by_leader(
            "ListOffsets", specs,
            lambda sub, conn: rq.list_offsets(sub, isolation_level, self.timeout_ms, conn), rq.parse_list_offsets)

    async def delete_records(self, before: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Move each partition's log start offset up to ``before[tp]`` (-1 =
        the high watermark); returns the new low watermarks."""
        return await self._by_leader(
            "DeleteRecords", before,
            lambda sub, conn: rq.delete_records(sub, self.timeout_ms, conn), rq.parse_delete_records)

    # -- ACLs --------------------------------------------------------------------------

    async def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """The ACL bindings the filter selects (DescribeAcls)."""
        async def send() -> list[AclBinding]:
            conn = await self.cluster.any_connection()
            req, version = rq.describe_acls(binding_filter, conn)
            resp = await conn.request(req, version=version)
            if resp.error_code != ErrorCode.NONE:
                raise error_for(resp.error_code, resp.error_message)
            return rq.parse_describe_acls(resp)
        return await self.cluster.call(send, deadline_ms=self.timeout_ms)

    async def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        """Create every binding (CreateAcls); AdminError names each refused one."""
        bindings = list(bindings)
        if not bindings:
            return

        async def send() -> list[tuple[int, str | None]]:
            conn = await self.cluster.any_connection()
            req, version = rq.create_acls(bindings, conn)
            resp = await conn.request(req, version=version)
            return [(r.error_code, r.error_message) for r in resp.results]
        results = await self.cluster.call(send, deadline_ms=self.timeout_ms)
        if len(results) != len(bindings):
            raise KafkaError(f"CreateAcls answered {len(results)} results for {len(bindings)} bindings",
                             code=ErrorCode.UNKNOWN_SERVER_ERROR)
        failed = {str(b): error_for(code, message) for b, (code, message) in zip(bindings, results, strict=True)
                  if code != ErrorCode.NONE}
        if failed:
            raise AdminError("CreateAcls", failed)

    async def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Delete what each filter matches (DeleteAcls); returns the bindings
        each filter deleted. AdminError names each filter, or binding, that
        failed."""
        filters = list(filters)
        if not filters:
            return []

        async def send() -> Any:
            conn = await self.cluster.any_connection()
            req, version = rq.delete_acls(filters, conn)
            return await conn.request(req, version=version)
        resp = await self.cluster.call(send, deadline_ms=self.timeout_ms)
        if len(resp.filter_results) != len(filters):
            raise KafkaError(f"DeleteAcls answered {len(resp.filter_results)} results for {len(filters)} filters",
                             code=ErrorCode.UNKNOWN_SERVER_ERROR)
        out: list[list[AclBinding]] = []
        failed: dict[str, KafkaError] = {}
        for f, r in zip(filters, resp.filter_results, strict=True):
            if r.error_code != ErrorCode.NONE:
                failed[str(f)] = error_for(r.error_code, r.error_message)
                out.append([])
                continue
            deleted = rq.parse_describe_acls_matches(r.matching_acls)
            for b, match in zip(deleted, r.matching_acls, strict=True):
                if match.error_code != ErrorCode.NONE:
                    failed[str(b)] = error_for(match.error_code, match.error_message)
            out.append([b for b, match in zip(deleted, r.matching_acls, strict=True) if match.error_code == ErrorCode.NONE])
        if failed:
            raise AdminError("DeleteAcls", failed)
        return out

    # -- client quotas and SCRAM credentials -------------------------------------------

    async def describe_client_quotas(self, components: Iterable[tuple[str, int, str | None]], *,
                                     strict: bool = False) -> list[tuple[ClientQuotaEntity, dict[str, float]]]:
        """The quotas of the entities a KIP-546 filter selects: each component
        is (entity type, match type 0 exact / 1 default / 2 any, name)."""
        components = list(components)

        async def send() -> list[tuple[ClientQuotaEntity, dict[str, float]]]:
            conn = await self.cluster.any_connection()
            req, version = rq.describe_client_quotas(components, strict, conn)
            resp = await conn.request(req, version=version)
            if resp.error_code != ErrorCode.NONE:
                raise error_for(resp.error_code, resp.error_message)
            return rq.parse_describe_client_quotas(resp)
        return await self.cluster.call(send, deadline_ms=self.timeout_ms)

    async def alter_client_quotas(self, alterations: Mapping[ClientQuotaEntity, Mapping[str, float | None]], *,
                                  validate_only: bool = False) -> None:
        """Set (a number) or remove (None) quota keys per entity;
        AdminError names each entity refused."""
        async def send(remaining):
            conn = await self.cluster.any_connection()
            req, version = rq.alter_client_quotas([(e, alterations[e]) for e in remaining], validate_only, conn)
            return rq.parse_alter_client_quotas(await conn.request(req, version=version))
        await self._per_entity("AlterClientQuotas", list(alterations), send)

    async def describe_user_scram_credentials(self, users: Iterable[str] | None = None
                                              ) -> dict[str, list[tuple[ScramMechanism, int]] | KafkaError]:
        """Each user's SCRAM mechanisms with their iterations, or the error
        the broker gave for that user; ``users`` None: every user that has
        a credential."""
        from kavka.security.sasl import credentials

        wanted = None if users is None else list(users)

        async def send() -> Any:
            conn = await self.cluster.any_connection()
            req, version = rq.describe_user_scram_credentials(wanted, conn)
            resp = await conn.request(req, version=version)
            if resp.error_code != ErrorCode.NONE:
                raise error_for(resp.error_code, resp.error_message)
            return resp
        resp = await self.cluster.call(send, deadline_ms=self.timeout_ms)
        out: dict[str, list[tuple[ScramMechanism, int]] | KafkaError] = {}
        for r in resp.results:
            if r.error_code != ErrorCode.NONE:
                out[r.user] = error_for(r.error_code, r.error_message)
                continue
            infos = []
            for c in r.credential_infos:
                mechanism = credentials.ScramMechanism.of_type_id(c.mechanism)
                if mechanism is not None:
                    infos.append((mechanism, c.iterations))
            out[r.user] = infos
        return out

    async def alter_user_scram_credentials(self, upsertions: Iterable[tuple[str, ScramMechanism, int, str]] = (),
                                           deletions: Iterable[tuple[str, ScramMechanism]] = ()) -> None:
        """Upsert (user, mechanism, iterations, password) and delete (user,
        mechanism) credentials. The password never leaves this process:
        the broker gets a random salt and the salted password (KIP-554).
        AdminError names each user refused."""
        from kavka.security.sasl import credentials

        prepared = []
        for user, mechanism, iterations, password in upsertions:
            salt = credentials.secure_random_string().encode("ascii")
            salted = credentials.ScramFormatter(mechanism).salted_password(password, salt, iterations)
            prepared.append((user, mechanism, iterations, salt, salted))
        removed = list(deletions)
        users = list(dict.fromkeys([u for u, *_ in prepared] + [u for u, _ in removed]))

        async def send(remaining):
            conn = await self.cluster.any_connection()
            req, version = rq.alter_user_scram_credentials(
                [p for p in prepared if p[0] in remaining], [d for d in removed if d[0] in remaining], conn)
            resp = await conn.request(req, version=version)
            return {r.user: (r.error_code, r.error_message, None) for r in resp.results}
        await self._per_entity("AlterUserScramCredentials", users, send)

    # -- transactions (KIP-664) --------------------------------------------------------

    async def list_transactions(self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                                duration_ms: int | None = None,
                                transactional_id_pattern: str | None = None) -> list[TransactionListing]:
        """The transactional ids every coordinator of the cluster owns
        (ListTransactions to every broker, merged), those in one of
        ``states`` (Kafka's names: "Ongoing"...), of one of ``producer_ids``,
        running for longer than ``duration_ms`` (KIP-994: needs v1), matched
        whole by the regular expression ``transactional_id_pattern``
        (KIP-1152: needs v2; RE2 syntax, checked by the broker); an empty
        filter matches everything."""
        wanted_states = list(dict.fromkeys(states))
        unknown = [s for s in wanted_states if s not in TRANSACTION_STATES]
        if unknown:
            raise ValueError(f"unknown transaction state(s) {unknown}; the states are {', '.join(TRANSACTION_STATES)}")
        if duration_ms is not None and duration_ms < 0:
            raise ValueError(f"a duration filter is a number of milliseconds >= 0, got {duration_ms}")
        pids = list(dict.fromkeys(producer_ids))
        md = await self.cluster.refresh_metadata()
        found: list[TransactionListing] = []
        for node_id in sorted(md.brokers):
            async def send(node_id: int = node_id) -> list[TransactionListing]:
                conn = await self.cluster.connection(node_id)
                req, version = rq.list_transactions(wanted_states, pids, duration_ms, transactional_id_pattern, conn)
                resp = await conn.request(req, version=version)
                if resp.error_code != ErrorCode.NONE:
                    raise error_for(resp.error_code, f"ListTransactions on broker {node_id}")
                return [TransactionListing(t.transactional_id, node_id, t.producer_id, t.transaction_state)
                        for t in resp.transaction_states]
            found += await self.cluster.call(send, deadline_ms=self.timeout_ms)
        return sorted(found, key=lambda t: t.transactional_id)

    async def _coordinators(self, key_type: int, keys: list[str]) -> dict[str, tuple[ErrorCode, str | None, int]]:
        """FindCoordinator for ``keys``: key -> (error, message, node id)."""
        conn = await self.cluster.any_connection()
        version = conn.version_for(10)
        Q = m.FindCoordinatorRequest
        out: dict[str, tuple[ErrorCode, str | None, int]] = {}
        if version >= 4:
            resp = await conn.request(Q(key_type=key_type, coordinator_keys=keys), version=version)
            for c in resp.coordinators:
                out[c.key] = (ErrorCode.of(c.error_code), c.error_message, c.node_id)
        else:
            for key in keys:
                resp = await conn.request(Q(key=key, key_type=key_type), version=version)
                out[key] = (ErrorCode.of(resp.error_code), resp.error_message if version >= 1 else None, resp.node_id)
        if any(node_id not in self.cluster.metadata.brokers for code, _, node_id in out.values()
               if code == ErrorCode.NONE):
            await self.cluster.refresh_metadata()
        return out

    async def describe_transactions(self, transactional_ids: Iterable[str]) -> dict[str, TransactionDescription]:
        """Each id's state at its coordinator (FindCoordinator, then
        DescribeTransactions to each coordinator); AdminError names every id
        that failed (TRANSACTIONAL_ID_NOT_FOUND, an authorization failure...)."""
        ids = list(dict.fromkeys(transactional_ids))

        async def send(remaining: list[str]) -> dict:
            located = await self._coordinators(1, remaining)
            outcome: dict[str, tuple[int, str | None, TransactionDescription | None]] = {}
            by_node: dict[int, list[str]] = {}
            for tid in remaining:
                code, message, node_id = located.get(tid, (ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1))
                if code != ErrorCode.NONE:
                    outcome[tid] = (code, message, None)
                else:
                    by_node.setdefault(node_id, []).append(tid)
            for node_id, tids in by_node.items():
                conn = await self.cluster.connection(node_id)
                resp = await conn.request(m.DescribeTransactionsRequest(transactional_ids=tids),
                                          version=conn.version_for(65))
                for t in resp.transaction_states:
                    outcome[t.transactional_id] = (t.error_code, None, TransactionDescription(
                        node_id, t.transaction_state, t.producer_id, t.producer_epoch, t.transaction_timeout_ms,
                        t.transaction_start_time_ms,
                        frozenset(TopicPartition(d.topic, p) for d in t.topics for p in d.partitions)))
            return outcome
        return await self._per_entity("DescribeTransactions", ids, send)

    async def describe_producers(self, partitions: Iterable[TopicPartition], *,
                                 broker_id: int | None = None) -> dict[TopicPartition, list[ProducerState]]:
        """The producers each partition remembers (DescribeProducers), asked
        of its leader, or of ``broker_id`` (any replica) when given."""
        wanted = list(dict.fromkeys(partitions))

        async def ask(conn, tps: list[TopicPartition]) -> dict:
            resp = await conn.request(*rq.describe_producers(tps, conn))
            return rq.parse_describe_producers(resp)

        if broker_id is not None:
            async def send_to_broker(remaining: list[TopicPartition]) -> dict:
                return await ask(await self.cluster.connection(broker_id), remaining)
            return await self._per_entity("DescribeProducers", wanted, send_to_broker)

        async def send(remaining: list[TopicPartition]) -> dict:
            groups: dict[int, list[TopicPartition]] = {}
            outcome = {}
            for tp in remaining:
                try:
                    groups.setdefault(await self.cluster.leader_for(tp), []).append(tp)
                except KafkaError as e:
                    outcome[tp] = (e.code, e.message, None)
            for leader, tps in groups.items():
                outcome.update(await ask(await self.cluster.connection(leader), tps))
            return outcome
        return await self._per_entity("DescribeProducers", wanted, send)

    async def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """End a hanging transaction in one partition, as Kafka's
        Admin.abortTransaction: an ABORT marker (WriteTxnMarkers) with the
        spec's producer id, epoch and coordinator epoch, sent to the
        partition's leader, which needs CLUSTER_ACTION on the cluster."""
        async def send(remaining: list[TopicPartition]) -> dict:
            conn = await self.cluster.connection(await self.cluster.leader_for(spec.topic_partition))
            resp = await conn.request(*rq.abort_transaction(spec, conn))
            return rq.parse_write_txn_markers(resp)
        await self._per_entity("WriteTxnMarkers (abort)", [spec.topic_partition], send)
