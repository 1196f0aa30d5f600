"""``ReplicaFetcher``: one fetch task serving every partition this broker
follows from one leader (Kafka's ReplicaFetcherThread, seed 002 §6.7;
seed 000 §Follower 从 Leader Fetch 数据).

Each round (``run_once``):

1. Truncation (KIP-101/279, ``replica.truncation.mode=leader-epoch``): a
   partition just added goes FETCHING at once from its log end when the
   leader answers diverging epochs in Fetch (v12+: KIP-595's truncation on
   fetch, as Kafka from inter-broker protocol 2.7; step 3 truncates). For
   the other partitions in the TRUNCATING phase, one OffsetsForLeaderEpoch with
   (current leader epoch, our latest epoch); truncate each log to
   ``truncation_offset`` (through the log manager, which pauses the
   cleaner) and go on FETCHING from the new log end — or ask again when we
   did not know the leader's epoch. A partition enters this phase whenever
   the replica manager adds it with ``truncate_first`` — on every leader
   change and every leader-epoch bump, even with the same leader (KAFKA-7164).
   In "hw" mode the replica manager truncated to the HW already and no epoch
   is ever consulted (the seeds' design, kept to show KIP-101's failures).
2. Fetch: one request for the FETCHING partitions that are not backing off,
   as replica ``broker_id``, ``replica.fetch.max.bytes`` per partition,
   ``replica.fetch.response.max.bytes`` in all, ``replica.fetch.wait.max.ms``,
   ``replica.fetch.min.bytes``, ``current_leader_epoch`` and (epoch mode)
   ``last_fetched_epoch``. Throttled replicas that are not caught up are
   left out while the follower quota is exceeded (seed 002 §8).
3. Per partition: data -> append the leader's batches unchanged, HW = min(leader
   HW, our LEO) (seed 002 §6.7 (1)-(2)), move our log start up to the leader's
   (its retention or DeleteRecords); a diverging epoch -> truncate as in 1;
   OFFSET_OUT_OF_RANGE -> ask the leader's log end: above it, truncate to it;
   else ask its log start: below it, empty the log and start there;
   NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH and any
   other error -> back off ``replica.fetch.backoff.ms`` (the controller's next
   LeaderAndIsr replaces the partition's state).

A response applies only if the partition's state is still the one the
request was built from (states are replaced, never mutated), so a partition
re-added by LeaderAndIsr while a request was in flight never gets stale data.
A failed exchange (``LeaderConnectionError``) backs the whole fetcher off and
reconnects. ``run`` loops ``run_once`` until cancelled; with nothing to do it
sleeps until woken by new partitions, a back-off ending, or the quota.

Event loop only: every log mutation happens between awaits, on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.replication.fetcher.assignments import InitialFetchState
from kavka.replication.fetcher.config import ReplicaFetcherConfig
from kavka.replication.fetcher.leader_endpoint import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    EpochRequest,
    LeaderConnectionError,
    LeaderEndPoint,
)
from kavka.replication.fetcher.state import FetchPhase, PartitionFetchState, truncation_offset
from kavka.replication.partition import Partition
from kavka.replication.quota import ReplicationQuota
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition, FetchPartitionData
from kavka.replication.state import BrokerEndPoint
from kavka.storage.errors import UnexpectedAppendOffsetError
from kavka.storage.log_manager import LogManager

logger = logging.getLogger(__name__)

MIN_IDLE_S = 0.005  # never spin: the shortest sleep between idle rounds
RETRY_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.LEADER_NOT_AVAILABLE,
})


class ReplicaFetcher:
    """See the module docstring. Built and owned by ``ReplicaFetcherManager``."""

    def __init__(
        self,
        name: str,
        broker_id: int,
        source: BrokerEndPoint,
        endpoint: LeaderEndPoint,
        log_manager: LogManager,
        get_partition: Callable[[TopicPartition], Partition | None],
        config: Callable[[], ReplicaFetcherConfig],
        quota: ReplicationQuota,
        throttled: Callable[[TopicPartition], bool],
        now: Callable[[], float] = time.monotonic,
        high_watermark_moved: Callable[[TopicPartition], None] = lambda tp: None,
    ) -> None:
        self.name = name
        # KIP-392: consumers reading this follower wait in its fetch
        # purgatory for its high watermark (Kafka's completeDelayedFetchRequests)
        self._high_watermark_moved = high_watermark_moved
        self.broker_id = broker_id
        self.source = source
        self.endpoint = endpoint
        self._log_manager = log_manager
        self._get_partition = get_partition
        self._config = config
        self._quota = quota
        self._throttled = throttled
        self._now = now
        self._states: dict[TopicPartition, PartitionFetchState] = {}
        # The last request's partitions: one unchanged is asked with the
        # same value, which the fetch session then skips without comparing.
        self._asked: dict[TopicPartition, FetchPartition] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # ---- partitions (the manager calls these, on the loop) --------------------------------------
    def add_partitions(self, states: Mapping[TopicPartition, InitialFetchState]) -> None:
        for tp, s in states.items():
            truncating = s.truncate_first and self._config().by_leader_epoch
            phase = FetchPhase.TRUNCATING if truncating else FetchPhase.FETCHING
            self._states[tp] = PartitionFetchState(s.fetch_offset, s.leader_epoch, phase, new=truncating)
        self._wakeup.set()

    def adopt(self, states: Mapping[TopicPartition, PartitionFetchState]) -> None:
        """Take over partitions (with their progress) from another fetcher."""
        self._states.update(states)
        self._wakeup.set()

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionFetchState]:
        return {tp: s for tp in partitions if (s := self._states.pop(tp, None)) is not None}

    def remove_all(self) -> dict[TopicPartition, PartitionFetchState]:
        states, self._states = self._states, {}
        return states

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        return self._states.get(tp)

    def partition_count(self) -> int:
        return len(self._states)

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run(), name=self.name)

    def stop_nowait(self) -> asyncio.Task[None] | None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        self.endpoint.close()
        return task

    async def stop(self) -> None:
        task = self.stop_nowait()
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def run(self) -> None:
        cfg = self._config()
        while True:
            try:
                cfg = self._config()
                sent = await self.run_once()
            except LeaderConnectionError as e:
                logger.warning("%s: %s; retrying in %d ms", self.name, e, cfg.backoff_ms)
                self.endpoint.close()
                await asyncio.sleep(cfg.backoff_ms / 1000)
                continue
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug must not silently stop replication: log it, back off, go on
                logger.exception("%s: fetch round failed; retrying in %d ms", self.name, cfg.backoff_ms)
                await asyncio.sleep(cfg.backoff_ms / 1000)
                continue
            if not sent:
                await self._idle(cfg)

    async def _idle(self, cfg: ReplicaFetcherConfig) -> None:
        now = self._now()
        wait = cfg.backoff_ms / 1000
        for s in self._states.values():
            if s.delayed_until > now:
                wait = min(wait, s.delayed_until - now)
            elif s.phase is FetchPhase.FETCHING:  # ready but left out: throttled
                wait = min(wait, self._quota.seconds_until_available(now))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), max(wait, MIN_IDLE_S))

    # ---- one round -------------------------------------------------------------------------------
    async def run_once(self) -> bool:
        """One truncation step and one fetch; returns whether anything was
        sent to the leader. Raises ``LeaderConnectionError``."""
        # Partitions added from here on set the event again, so an idle wait
        # after this round ends at once for them.
        self._wakeup.clear()
        cfg = self._config()
        self._quota.set_rate(cfg.throttled_rate, self._now())
        sent = await self._truncate_step(cfg)
        return await self._fetch_step(cfg) or sent

    def _delay(self, tp: TopicPartition, state: PartitionFetchState, cfg: ReplicaFetcherConfig) -> None:
        self._states[tp] = state.delayed(self._now() + cfg.backoff_ms / 1000)

    def _current(self, tp: TopicPartition, sent: PartitionFetchState) -> Partition | None:
        """The partition, if ``sent`` is still its state (else the answer is stale)."""
        if self._states.get(tp) is not sent:
            return None
        partition = self._get_partition(tp)
        if partition is None:
            self._states.pop(tp, None)  # no longer hosted: StopReplica raced the response
        return partition

    def _truncate(self, tp: TopicPartition, partition: Partition, offset: int, why: str) -> None:
        leo = partition.log.log_end_offset
        if offset < leo:
            logger.info("%s: truncating %s from %d to %d (%s)", self.name, tp, leo, offset, why)
        # Called at or past the log end too: no record goes, but an epoch
        # we started there as a leader that wrote nothing does (Log.truncate_to).
        self._log_manager.truncate_to(tp, offset)

    def _apply_epoch_end(
        self, tp: TopicPartition, partition: Partition, state: PartitionFetchState, epoch: int, end: int, why: str
    ) -> None:
        log = partition.log
        decision = truncation_offset(epoch, end, log.end_offset_for_epoch, log.log_end_offset, log.high_watermark)
        self._truncate(tp, partition, decision.offset, f"{why}: leader epoch {epoch} ends at {end}")
        leo = log.log_end_offset
        self._states[tp] = state.fetching_from(leo) if decision.done else state.truncating_from(leo)

    async def _truncate_step(self, cfg: ReplicaFetcherConfig) -> bool:
        now = self._now()
        requests: dict[TopicPartition, EpochRequest] = {}
        sent: dict[TopicPartition, PartitionFetchState] = {}
        on_fetch: bool | None = None  # asked of the leader once, when a new partition needs it
        for tp, state in list(self._states.items()):
            if state.phase is not FetchPhase.TRUNCATING or not state.ready(now):
                continue
            partition = self._current(tp, state)
            if partition is None:
                continue
            latest = partition.log.leader_epoch_cache.latest_epoch()
            if latest is None:
                # No epoch recorded (an empty log): only the HW is known safe.
                self._truncate(tp, partition, partition.log.high_watermark, "no leader epoch recorded")
                self._states[tp] = state.fetching_from(partition.log.log_end_offset)
                continue
            if state.new:
                if on_fetch is None:
                    on_fetch = await self.endpoint.truncates_on_fetch()
                    if self._states.get(tp) is not state:
                        continue  # replaced while we asked: the next round sees it
                if on_fetch:
                    # Kafka's truncation on fetch (KIP-595, inter-broker
                    # protocol 2.7+): fetch from our log end with our latest
                    # epoch; where our log diverged the leader answers the
                    # diverging epoch, with no records, and we truncate then
                    # (``_process_data``). A failover saves a round trip to
                    # every new leader for every partition it moved.
                    self._states[tp] = state.fetching_from(partition.log.log_end_offset)
                    continue
            requests[tp] = EpochRequest(state.leader_epoch, latest)
            sent[tp] = state
        if not requests:
            return False
        answers = await self.endpoint.fetch_epoch_end_offsets(requests)
        for tp, answer in answers.items():
            state = sent[tp]
            partition = self._current(tp, state)
            if partition is None:
                continue
            if answer.error is ErrorCode.NONE:
                self._apply_epoch_end(tp, partition, state, answer.leader_epoch, answer.end_offset,
                                      f"our latest epoch {requests[tp].leader_epoch}")
            else:
                self._log_error(tp, "OffsetsForLeaderEpoch", answer.error, state)
                self._delay(tp, state, cfg)
        return True

    def _fetch_request(
        self, cfg: ReplicaFetcherConfig
    ) -> tuple[dict[TopicPartition, FetchPartition], dict[TopicPartition, PartitionFetchState]]:
        now = self._now()
        parts: dict[TopicPartition, FetchPartition] = {}
        sent: dict[TopicPartition, PartitionFetchState] = {}
        asked = self._asked
        for tp, state in list(self._states.items()):
            if state.phase is not FetchPhase.FETCHING or not state.ready(now):
                continue
            partition = self._current(tp, state)
            if partition is None:
                continue
            if not state.in_sync and self._throttled(tp) and self._quota.exceeded(now):
                continue  # seed 002 §8: a throttled replica still catching up waits for the quota
            log = partition.log
            if state.fetch_offset != log.log_end_offset:
                # Something else moved our log end (it should not): fetch from where the log is.
                logger.warning("%s: %s fetch offset %d differs from the log end %d; fetching from the log end",
                               self.name, tp, state.fetch_offset, log.log_end_offset)
                state = state.fetching_from(log.log_end_offset, state.lag)
                self._states[tp] = state
            latest = log.leader_epoch_cache.latest_epoch() if cfg.by_leader_epoch else None
            last_epoch = -1 if latest is None else latest
            start = log.log_start_offset
            fetch = asked.get(tp)
            if (fetch is None or fetch.fetch_offset != state.fetch_offset or fetch.log_start_offset != start
                    or fetch.current_leader_epoch != state.leader_epoch or fetch.last_fetched_epoch != last_epoch
                    or fetch.max_bytes != cfg.fetch_max_bytes):
                fetch = FetchPartition(state.fetch_offset, cfg.fetch_max_bytes, state.leader_epoch, last_epoch, start)
            parts[tp] = fetch
            sent[tp] = state
        self._asked = parts
        return parts, sent

    async def _fetch_step(self, cfg: ReplicaFetcherConfig) -> bool:
        parts, sent = self._fetch_request(cfg)
        if not parts:
            return False
        params = FetchParams(self.broker_id, cfg.wait_max_ms, cfg.min_bytes, cfg.response_max_bytes,
                             FetchIsolation.LOG_END)
        answers = await self.endpoint.fetch(params, parts)
        out_of_range: list[TopicPartition] = []
        for tp, data in answers.items():
            state = sent.get(tp)
            if state is None:
                continue
            partition = self._current(tp, state)
            if partition is None:
                continue
            if data.error is ErrorCode.NONE:
                self._process_data(tp, partition, state, data, cfg)
            elif data.error is ErrorCode.OFFSET_OUT_OF_RANGE:
                out_of_range.append(tp)
            else:
                self._log_error(tp, "Fetch", data.error, state)
                self._delay(tp, state, cfg)
        for tp in out_of_range:
            await self._handle_out_of_range(tp, sent[tp], cfg)
        return True

    def _process_data(
        self, tp: TopicPartition, partition: Partition, state: PartitionFetchState, data: FetchPartitionData,
        cfg: ReplicaFetcherConfig,
    ) -> None:
        if data.diverging_epoch is not None and cfg.by_leader_epoch:
            div = data.diverging_epoch
            self._apply_epoch_end(tp, partition, state, div.epoch, div.end_offset, "diverging epoch in Fetch")
            return
        log = partition.log
        try:
            if data.records:
                self._append(tp, partition, data.records)
        except KafkaError as e:
            # A corrupt or out-of-order response, or our disk failed: keep
            # what we have, retry after the back-off.
            logger.error("%s: could not append the leader's records for %s at %d: %s",
                         self.name, tp, state.fetch_offset, e)
            self._delay(tp, state, cfg)
            return
        high_watermark = log.high_watermark
        partition.update_follower_high_watermark(data.high_watermark)
        if log.high_watermark != high_watermark:
            self._high_watermark_moved(tp)
        if data.log_start_offset > log.log_start_offset:
            # The leader's retention or DeleteRecords moved its log start.
            log.maybe_increment_log_start_offset(min(data.log_start_offset, log.high_watermark))
        leo = log.log_end_offset
        if data.records and not self._quota.unlimited and self._throttled(tp):  # in sync or not (KIP-73)
            self._quota.record(len(data.records), self._now())
        if data.records:
            # Fetched partitions go to the back of the next request: only the
            # first partition with data may exceed the byte limits (KIP-74),
            # so a fixed order could starve the others of big batches.
            del self._states[tp]
        self._states[tp] = state.fetching_from(leo, max(0, data.high_watermark - leo))

    def _append(self, tp: TopicPartition, partition: Partition, records: bytes | memoryview) -> None:
        try:
            partition.append_records_to_follower(records)
        except UnexpectedAppendOffsetError as e:
            log = partition.log
            leo = log.log_end_offset
            if not (leo == log.log_start_offset and e.first_offset < leo <= e.last_offset):
                raise
            # The leader's log start falls inside its first batch (DeleteRecords
            # need not be batch-aligned) and our log is empty from there on:
            # start at that batch's base offset instead, as Kafka does.
            logger.info("%s: %s starts inside the leader's batch %d-%d; restarting the log at %d",
                        self.name, tp, e.first_offset, e.last_offset, e.first_offset)
            self._log_manager.truncate_fully_and_start_at(tp, e.first_offset)
            partition.append_records_to_follower(records)

    async def _handle_out_of_range(
        self, tp: TopicPartition, state: PartitionFetchState, cfg: ReplicaFetcherConfig
    ) -> None:
        """Kafka's answer to OFFSET_OUT_OF_RANGE for a follower: our log end is
        past the leader's (it lost data: unclean election) -> truncate to its
        end; below its log start (retention or DeleteRecords went past us) ->
        empty our log and start at its log start; else fetch again."""
        end = await self.endpoint.fetch_log_offset(tp, state.leader_epoch, LATEST_TIMESTAMP)
        partition = self._current(tp, state)
        if partition is None:
            return
        if end.error is not ErrorCode.NONE:
            self._log_error(tp, "ListOffsets(latest)", end.error, state)
            self._delay(tp, state, cfg)
            return
        leo = partition.log.log_end_offset
        if end.offset < leo:
            logger.warning("%s: the leader's log end %d of %s is below ours %d; truncating to it",
                           self.name, end.offset, tp, leo)
            self._truncate(tp, partition, end.offset, "OFFSET_OUT_OF_RANGE: behind the leader's log end")
            self._states[tp] = state.fetching_from(partition.log.log_end_offset)
            return
        start = await self.endpoint.fetch_log_offset(tp, state.leader_epoch, EARLIEST_TIMESTAMP)
        partition = self._current(tp, state)
        if partition is None:
            return
        if start.error is not ErrorCode.NONE:
            self._log_error(tp, "ListOffsets(earliest)", start.error, state)
            self._delay(tp, state, cfg)
            return
        leo = partition.log.log_end_offset
        if leo < start.offset:
            logger.warning("%s: our log end %d of %s is below the leader's log start %d; starting over there",
                           self.name, leo, tp, start.offset)
            self._log_manager.truncate_fully_and_start_at(tp, start.offset)
            self._states[tp] = state.fetching_from(start.offset)
        else:
            self._states[tp] = state.fetching_from(leo)

    def _log_error(self, tp: TopicPartition, what: str, error: ErrorCode, state: PartitionFetchState) -> None:
        level = logging.INFO if error in RETRY_ERRORS else logging.WARNING
        logger.log(level, "%s: %s for %s (leader epoch %d, offset %d) answered %s; backing off",
                   self.name, what, tp, state.leader_epoch, state.fetch_offset, error.name)
