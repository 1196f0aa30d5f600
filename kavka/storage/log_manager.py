"""The log manager: every partition log of a broker, over several ``log.dirs``.

Startup (seed 002 §5.2/§5.3 loadLogs): for each directory, create it, take
its ``.lock``, note whether ``.kafka_cleanshutdown`` is present, read the
recovery-point, log-start-offset and replication-offset checkpoints, open
every ``<topic>-<partition>`` directory as a ``Log`` on a pool of
``num.recovery.threads.per.data.dir`` threads (``-delete`` directories are
removed), then delete the clean-shutdown marker.

Then, when ``log.cleaner.enable`` is true (the default), the manager
creates the ``LogCleaner`` (``self.cleaner``) over its logs; ``startup()``
starts its ``log.cleaner.threads`` threads (seed 002 §5.2 startup()).

The scheduling model, in one place:

* Compaction runs only on the cleaner's own threads (started by
  ``startup()``), or synchronously when a caller without threads calls
  ``clean_once()``. ``tick()`` never compacts.
* Periodic jobs are ``periodic_jobs()``, named as Kafka names them, for a
  scheduler that never runs one job twice at once (the broker's
  ``background.threads`` pool, ``kavka.server.scheduler``); ``tick(now_ms)``
  runs the due ones one after another (``LogManagerRunner`` is a plain
  background thread doing so, for standalone use; its ``start()`` calls
  ``startup()``): flushing
  (``flush.ms``, and right after a roll), the recovery-point and
  high-watermark checkpoints (``log.flush.offset.checkpoint.interval.ms``),
  the log-start-offset checkpoint
  (``log.flush.start.offset.checkpoint.interval.ms``), retention
  (``log.retention.check.interval.ms``, seed 002 §5.4.1), the expiration
  of idle producer ids (``producer.id.expiration.ms``, checked every
  ``producer.id.expiration.check.interval.ms``, KIP-854) and the removal of
  ``.deleted`` files and deleted partition directories after their delay.
* Retention has one owner per policy. Logs whose ``cleanup.policy`` lacks
  ``compact`` belong to the manager's pass, which pauses cleaning on them
  meanwhile. Compacted logs (``compact``, ``compact,delete``) belong to the
  cleaner, which applies retention to each while marking it in progress,
  so cleaning and retention never touch one log at once; only while no
  cleaner thread runs (disabled, or ``startup()`` not called) does the
  manager's pass take them, through the same in-progress marking. A pure
  ``compact`` log never loses segments to time or size retention, only
  below its log start offset (DeleteRecords).

Truncation and deletion go through the manager (``truncate_to``,
``truncate_fully_and_start_at``, ``delete_log``): it stops any cleaning
pass on the partition first and fixes its ``cleaner-offset-checkpoint``
entry after. The replication layer calls these, never ``Log``'s own.

Shutdown stops the cleaner threads, then flushes and closes every log,
writes the checkpoints and the clean-shutdown marker, and releases the locks.

Log directory failure (KIP-112, Kafka's LogManager.handleLogDirFailure):
every ``Log`` reports an I/O error to the manager's
``LogDirFailureChannel``, and so does a checkpoint write. The replica
manager then calls ``handle_log_dir_failure``: the directory leaves the
live ones (no new log is created there, no checkpoint or clean-shutdown
marker is written there), its logs leave the table and are closed. When no
live directory remains the broker cannot serve anything: the manager logs
the directories and halts the process with exit code 1 (Kafka's
Exit.halt(1)); ``halt`` is the process's ``os._exit`` unless a test gives
another. A directory already failed at startup (its ``meta.properties``
unreadable: ``initial_offline_dirs``; it cannot be created or locked; its
checkpoints or a log cannot be read for an I/O error) is offline from the
start and the others load; none left is a startup error naming each. While
a directory is offline, a replica the controller says existed
(LeaderAndIsr's ``is_new`` false) is not recreated empty elsewhere: its
data may be on the failed disk (``get_or_create_log``).

Thread-safe: the manager's lock guards the table of logs; each ``Log`` has
its own lock, so a slow fsync on one partition holds up no other. Lock
order: the cleaner manager's lock may be held while taking the log
manager's, never the reverse (the manager calls the cleaner unlocked).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from functools import partial
from pathlib import Path

from kavka.common.broker_config_keys import before_3_0
from kavka.common.clock import Clock, SystemClock
from kavka.common.topic_partition import TopicPartition
from kavka.storage.cleaner.config import LogCleanerConfig
from kavka.storage.cleaner.thread import CleanOutcome, LogCleaner
from kavka.storage.errors import KafkaStorageError, LogDirLockedError, StorageError
from kavka.storage.log import Log
from kavka.storage.log_config import LogConfig
from kavka.storage.log_dir import LogDir
from kavka.storage.log_dir_failure_channel import LogDirFailureChannel
from kavka.storage.log_dir_names import delete_dir_name, is_delete_dir, log_dir_name, parse_topic_partition
from kavka.storage.log_manager_config import LogManagerConfig
from kavka.storage.retention import delete_old_segments

logger = logging.getLogger(__name__)

# How often the per-log deadlines (flush.ms and a roll's flush,
# file.delete.delay.ms) are checked.
LOG_CHECK_MS = 1000


@dataclasses.dataclass(frozen=True)
class PeriodicJob:
    """One of the manager's periodic jobs: run ``run`` every ``period_ms``."""

    name: str
    period_ms: int
    run: Callable[[], object]


class LogManager:
    """See the module docstring. Constructing it loads every log."""

    def __init__(
        self,
        config: LogManagerConfig,
        default_config: LogConfig,
        *,
        topic_configs: Mapping[str, LogConfig] | None = None,
        clock: Clock | None = None,
        failure_channel: LogDirFailureChannel | None = None,
        halt: Callable[[int], object] = os._exit,
        initial_offline_dirs: Iterable[str | Path] = (),
    ) -> None:
        if not config.log_dirs:
            raise ValueError("log.dirs names no directory")
        self.config = config
        self.default_config = default_config
        self._topic_configs = dict(topic_configs or {})
        self._format_warned: dict[str, str] = {}
        self.clock = clock or SystemClock()
        self._lock = threading.RLock()
        for topic, topic_config in self._topic_configs.items():
            self._warn_ignored(topic, topic_config)
        self._checkpoint_locks = {which: threading.Lock()
                                  for which in ("recovery_points", "log_start_offsets", "replication_offsets")}
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, LogDir] = {}
        self._pending_dir_deletes: list[tuple[int, Path]] = []
        self._shut_down = False
        self._dirs = [LogDir(p) for p in config.log_dirs]
        self.failure_channel = failure_channel or LogDirFailureChannel(len(self._dirs))
        self._halt = halt
        self._offline_dirs: set[Path] = set()
        self.had_clean_shutdown: dict[Path, bool] = {}
        now = self.clock.milliseconds()
        self._last = {"recovery": now, "start": now, "hw": now, "retention": now, "producers": now}
        locked: list[LogDir] = []
        offline_at_start = {Path(p).absolute() for p in initial_offline_dirs}
        try:
            for d in self._dirs:
                if d.path in offline_at_start:
                    self._fail_at_startup(d, "Failed to read meta.properties", None)
                    continue
                try:
                    d.lock()
                except LogDirLockedError:
                    raise
                except KafkaStorageError as e:  # KIP-112: a failed disk leaves the broker its other directories
                    self._fail_at_startup(d, "Failed to create or validate data directory", e.__cause__ or e)
                    continue
                locked.append(d)
            if not self._live_dirs():
                raise KafkaStorageError(
                    "every directory of log.dirs failed: " + "; ".join(
                        f"{d.path}: {self.failure_channel.error_of(d.path)}" for d in self._dirs), self._dirs[0].path)
            self._load_logs()
        except BaseException:
            for log in self._logs.values():
                log.close_quietly()
            for d in locked:
                d.unlock()
            raise
        # seed 002 §5.2: "若开启了日志定时清理功能，则实例化一个 LogCleaner 对象"
        self.cleaner: LogCleaner | None = (
            LogCleaner(self, config.cleaner, clock=self.clock, failure_channel=self.failure_channel)
            if config.cleaner.enable else None
        )

    # ---- loading (seed 002 §5.3) -------------------------------------------------------------
    def _fail_at_startup(self, d: LogDir, message: str, error: BaseException | None) -> None:
        """KIP-112 at startup: the directory is offline from the start;
        the broker serves from the others (Kafka's initialOfflineDirs)."""
        self._offline_dirs.add(d.path)
        self.failure_channel.maybe_add_offline_log_dir(d.path, message, error)
        d.unlock()

    def _load_logs(self) -> None:
        # no partition (and no Log): a -delete removal
        jobs: list[tuple[LogDir, TopicPartition | None, Future[Log] | Future[None]]] = []
        pools: list[ThreadPoolExecutor] = []
        try:
            for d in self._live_dirs():
                try:
                    self._submit_loads(d, jobs, pools)
                except (KafkaStorageError, OSError) as e:  # reading the directory or its checkpoints
                    self._fail_at_startup(d, "Error while loading log dir", e.__cause__ or e)
            for d, loaded_tp, loading in jobs:  # (5)
                try:
                    result = loading.result()
                except (KafkaStorageError, OSError) as e:
                    self._fail_at_startup(d, f"Error while loading log {loaded_tp}", e.__cause__ or e)
                    continue
                if loaded_tp is None or result is None:
                    continue
                if d.path in self._offline_dirs:
                    result.close_quietly()
                    continue
                if loaded_tp in self._logs:
                    result.close()
                    raise KafkaStorageError(
                        f"partition {loaded_tp} found in two log directories ({self._dir_of[loaded_tp].path} and {d.path})",
                        d.path,
                    )
                self._logs[loaded_tp] = result
                self._dir_of[loaded_tp] = d
            for tp in [tp for tp, d in self._dir_of.items() if d.path in self._offline_dirs]:
                self._logs.pop(tp).close_quietly()  # its directory failed after this log loaded
                del self._dir_of[tp]
            if not self._live_dirs():
                raise KafkaStorageError(
                    "every directory of log.dirs failed while loading: " + "; ".join(
                        f"{d.path}: {self.failure_channel.error_of(d.path)}" for d in self._dirs), self._dirs[0].path)
            for d in self._live_dirs():
                d.consume_clean_shutdown()
        finally:
            for pool in pools:
                pool.shutdown(wait=True)

    def _submit_loads(
        self,
        d: LogDir,
        jobs: list[tuple[LogDir, TopicPartition | None, Future[Log] | Future[None]]],
        pools: list[ThreadPoolExecutor],
    ) -> None:
        """Steps (1)-(4) of seed 002 §5.3 for one directory: its markers and
        checkpoints read, a load job per partition directory queued."""
        clean = d.had_clean_shutdown()  # (2)
        self.had_clean_shutdown[d.path] = clean
        if not clean:
            logger.info("%s: no clean shutdown marker, recovering from the recovery points", d.path)
        recovery_points = d.read_offsets(d.recovery_points)  # (3)
        start_offsets = d.read_offsets(d.log_start_offsets)
        hws = d.read_offsets(d.replication_offsets)
        pool = ThreadPoolExecutor(self.config.num_recovery_threads_per_data_dir, f"recovery-{d.path.name}")  # (1)
        pools.append(pool)
        for sub in sorted(d.path.iterdir()):
            if not sub.is_dir():
                continue
            if is_delete_dir(sub.name):
                jobs.append((d, None, pool.submit(shutil.rmtree, sub, True)))
                continue
            tp = parse_topic_partition(sub.name)
            config = self.config_for(tp.topic)
            job = pool.submit(  # (4)
                Log,
                sub,
                config,
                clock=self.clock,
                log_start_offset=start_offsets.get(tp, 0),
                recovery_point=recovery_points.get(tp, 0),
                high_watermark=hws.get(tp, 0),
                had_clean_shutdown=clean,
                producer_id_expiration_ms=self.config.producer_id_expiration_ms,
                failure_channel=self.failure_channel,
            )
            jobs.append((d, tp, job))

    # ---- table of logs -----------------------------------------------------------------------
    def config_for(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self.default_config)

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        """Dynamic topic override: applies to the topic's logs at once. The
        cleaner reads each log's config when it picks the next log, so a
        topic switched to ``compact`` becomes cleanable (idle cleaner threads
        are woken), and one switched away is not picked again; its
        segments then belong to the manager's retention, which pauses
        cleaning first (waiting out a pass still running)."""
        self._warn_ignored(topic, config)
        with self._lock:
            self._topic_configs[topic] = config
            logs = [log for tp, log in self._logs.items() if tp.topic == topic]
        for log in logs:
            log.update_config(config)
        if self.cleaner is not None and config.compact:
            self.cleaner.wakeup()

    def _warn_ignored(self, topic: str, config: LogConfig) -> None:
        """A topic's message.format.version below 3.0 is deprecated and
        ignored (KIP-724): format v2 is written whatever it says. Said once
        per topic and value, and only for the topic's own override (the
        broker's log.message.format.version is said once at startup)."""
        version = config.message_format_version
        if version == self.default_config.message_format_version or not before_3_0(version):
            return
        with self._lock:
            if self._format_warned.get(topic) == version:
                return
            self._format_warned[topic] = version
        logger.warning("Topic configuration message.format.version=%s of topic %s is ignored: deprecated "
                       "(KIP-724), record format v2 is written as from inter-broker protocol 3.0", version, topic)

    def get_log(self, topic: str, partition: int) -> Log | None:
        with self._lock:
            return self._logs.get(TopicPartition(topic, partition))

    def all_logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        with self._lock:
            d = self._dir_of.get(TopicPartition(topic, partition))
            return None if d is None else d.path

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None, *,
                          is_new: bool = True) -> Log:
        """The partition's log, created (empty) in the live directory holding
        the fewest partitions when it does not exist. ``is_new`` False (the
        controller says the replica existed, LeaderAndIsr's isNew) refuses to
        create it while a directory is offline: its data may be on the failed
        disk, and an empty replica elected leader would lose it (Kafka's
        getOrCreateLog, KIP-112)."""
        tp = TopicPartition(topic, partition)
        parse_topic_partition(log_dir_name(tp))  # validates the topic name
        with self._lock:
            log = self._logs.get(tp)
            if log is not None:
                return log
            offline = [d.path for d in self._dirs if d not in self._live_dirs()]
            if not is_new and offline:
                raise KafkaStorageError(
                    f"Can not create log for {tp} because log directories {', '.join(map(str, offline))} are offline",
                    offline[0])
            live = self._live_dirs()
            if not live:
                raise KafkaStorageError(f"cannot create a log for {tp}: every log directory is offline",
                                        self._dirs[0].path)
            counts = {id(d): 0 for d in live}
            for d in self._dir_of.values():
                if id(d) in counts:
                    counts[id(d)] += 1
            target = min(live, key=lambda d: counts[id(d)])
            if config is not None:
                self._topic_configs.setdefault(topic, config)
                self._warn_ignored(topic, config)
            log = Log(target.path / log_dir_name(tp), config or self.config_for(topic), clock=self.clock,
                      had_clean_shutdown=True, producer_id_expiration_ms=self.config.producer_id_expiration_ms,
                      failure_channel=self.failure_channel)
            self._logs[tp] = log
            self._dir_of[tp] = target
            return log

    # ---- log directory failure (KIP-112) -----------------------------------------------------
    def _live_dirs(self) -> list[LogDir]:
        return [d for d in self._dirs
                if d.path not in self._offline_dirs and not self.failure_channel.has_offline_log_dir(d.path)]

    @property
    def log_dirs(self) -> list[Path]:
        return [d.path for d in self._dirs]

    @property
    def live_log_dirs(self) -> list[Path]:
        with self._lock:
            return [d.path for d in self._live_dirs()]

    def is_log_dir_online(self, log_dir: Path | str) -> bool:
        path = Path(log_dir).absolute()
        with self._lock:
            return any(d.path == path for d in self._live_dirs())

    def handle_log_dir_failure(self, log_dir: Path | str) -> list[TopicPartition]:
        """Take ``log_dir`` offline (Kafka's LogManager.handleLogDirFailure):
        its logs leave the table, their cleaning stops and they are closed;
        returns their partitions. When it was the last live directory, logs
        that and halts the process (exit code 1). Blocks while a cleaning
        pass on one of its logs stops: call it from a thread."""
        path = Path(log_dir).absolute()
        with self._lock:
            d = next((d for d in self._dirs if d.path == path), None)
            if d is None or d.path in self._offline_dirs:
                return []
            self._offline_dirs.add(d.path)
            gone = {tp: log for tp, log in self._logs.items() if self._dir_of[tp] is d}
            for tp in gone:
                del self._logs[tp]
                del self._dir_of[tp]
            live = self._live_dirs()
        if not live:
            error = self.failure_channel.error_of(path)
            logger.critical("Shutdown broker because all log dirs in %s have failed (the last, %s: %s)",
                            ", ".join(str(x.path) for x in self._dirs), path, error)
            _flush_log_handlers()
            self._halt(1)
            return sorted(gone)  # a test's halt returns
        cleaner = self.cleaner
        for tp, log in gone.items():
            if cleaner is not None:
                cleaner.forget_partition(tp)
            log.close_quietly()
        d.unlock()
        logger.warning("Logs for partitions %s are offline and logs for future partitions are moved out of "
                       "log directory %s (the live ones: %s)", ",".join(str(tp) for tp in sorted(gone)), path,
                       ", ".join(str(x.path) for x in live))
        return sorted(gone)

    def reconfigure_cleaner(self, config: LogCleanerConfig) -> bool:
        """Apply changed ``log.cleaner.*`` settings (a dynamic broker config
        change): the cleaner restarts its threads with them. Blocks while
        its threads stop. ``log.cleaner.enable`` is read at startup only."""
        with self._lock:
            self.config = dataclasses.replace(self.config, cleaner=config)
            cleaner = self.cleaner
        return cleaner.reconfigure(config) if cleaner is not None else False

    def reconfigure_recovery_threads(self, num_threads: int) -> None:
        """A live change of ``num.recovery.threads.per.data.dir``: taken at
        the next use of the per-directory pools, the clean shutdown (Kafka's
        DynamicThreadPool reconfigures LogManager the same way)."""
        if num_threads < 1:
            raise ValueError(f"num.recovery.threads.per.data.dir must be >= 1, got {num_threads}")
        with self._lock:
            self.config = dataclasses.replace(self.config, num_recovery_threads_per_data_dir=num_threads)

    def _per_dir(self, logs: dict[TopicPartition, Log], job: Callable[[TopicPartition, Log], None]) -> None:
        """``job`` for every log, on ``num.recovery.threads.per.data.dir``
        threads per directory (Kafka's LogManager.shutdown closes each
        directory's logs on such a pool)."""
        threads = self.config.num_recovery_threads_per_data_dir
        pools = {id(d): ThreadPoolExecutor(threads, f"log-shutdown-{d.path.name}") for d in self._dirs}
        try:
            futures = [pools[id(self._dir_of[tp])].submit(job, tp, log) for tp, log in logs.items()]
            for future in futures:
                future.result()
        finally:
            for pool in pools.values():
                pool.shutdown(wait=True)

    # ---- periodic work -------------------------------------------------------------------------
    def periodic_jobs(self) -> list[PeriodicJob]:
        """The periodic jobs with Kafka's names, for a scheduler that runs
        each every ``period_ms`` and never two runs of one job at once (the
        broker's ``background.threads`` pool); different jobs may run at
        once: each ``Log`` guards itself, and each checkpoint file has one
        writer at a time (``_write_checkpoint``)."""
        clock = self.clock
        config = self.config

        def every(ms: int) -> int:  # a 0 interval: at every check, as tick() does
            return ms if ms > 0 else LOG_CHECK_MS

        return [
            PeriodicJob("kafka-log-flusher", LOG_CHECK_MS, lambda: self.flush_due(clock.milliseconds())),
            PeriodicJob("PeriodicProducerExpirationCheck", every(config.producer_id_expiration_check_ms),
                        lambda: self.expire_producers(clock.milliseconds())),
            PeriodicJob("kafka-log-retention", every(config.retention_check_ms),
                        lambda: self._retention_pass(clock.milliseconds())),
            PeriodicJob("kafka-delete-logs", LOG_CHECK_MS, lambda: self.delete_expired(clock.milliseconds())),
            PeriodicJob("kafka-recovery-point-checkpoint", every(config.flush_offset_checkpoint_ms),
                        self.checkpoint_recovery_points),
            PeriodicJob("kafka-log-start-offset-checkpoint", every(config.flush_start_offset_checkpoint_ms),
                        self.checkpoint_log_start_offsets),
            PeriodicJob("highwatermark-checkpoint", every(config.high_watermark_checkpoint_ms),
                        self.checkpoint_high_watermarks),
        ]

    def tick(self, now_ms: int | None = None) -> dict[str, int]:
        """Run whatever periodic job is due, one after another; returns
        counts of what it did (for callers without a scheduler)."""
        now = self.clock.milliseconds() if now_ms is None else now_ms
        done = {"flushed": 0, "retention_deleted": 0, "files_removed": 0, "checkpoints": 0, "producers_expired": 0}
        done["flushed"] += self.flush_due(now)
        if now - self._last["producers"] >= self.config.producer_id_expiration_check_ms:
            self._last["producers"] = now
            done["producers_expired"] += self.expire_producers(now)
        if now - self._last["retention"] >= self.config.retention_check_ms:
            self._last["retention"] = now
            done["retention_deleted"] += self._retention_pass(now)
        done["files_removed"] += self.delete_expired(now)
        if now - self._last["recovery"] >= self.config.flush_offset_checkpoint_ms:
            self._last["recovery"] = now
            self.checkpoint_recovery_points()
            done["checkpoints"] += 1
        if now - self._last["start"] >= self.config.flush_start_offset_checkpoint_ms:
            self._last["start"] = now
            self.checkpoint_log_start_offsets()
            done["checkpoints"] += 1
        if now - self._last["hw"] >= self.config.high_watermark_checkpoint_ms:
            self._last["hw"] = now
            self.checkpoint_high_watermarks()
            done["checkpoints"] += 1
        return done

    def flush_due(self, now: int) -> int:
        """Flush every log whose ``flush.ms`` has passed or that rolled."""
        return sum(self._guard(tp, partial(log.maybe_flush, now), 0) for tp, log in self.all_logs().items())

    def expire_producers(self, now: int) -> int:
        """Drop idle producer ids in every log (KIP-854)."""
        return sum(self._guard(tp, partial(log.remove_expired_producers, now), 0)
                   for tp, log in self.all_logs().items())

    def delete_expired(self, now: int) -> int:
        """Remove ``.deleted`` segment files and deleted partition
        directories whose delay has passed."""
        removed = sum(self._guard(tp, partial(log.delete_expired_files, now), 0) for tp, log in self.all_logs().items())
        return removed + self._delete_expired_dirs(now)

    @staticmethod
    def _guard(tp: TopicPartition, job: Callable[[], int], default: int) -> int:
        try:
            return int(job())
        except StorageError as e:  # one bad partition must not stop the others
            logger.error("periodic job failed for %s: %s", tp, e)
            return default

    def _delete_expired_dirs(self, now: int) -> int:
        with self._lock:
            due = [p for t, p in self._pending_dir_deletes if t <= now]
            self._pending_dir_deletes = [(t, p) for t, p in self._pending_dir_deletes if t > now]
        for path in due:
            shutil.rmtree(path, ignore_errors=True)
        return len(due)

    def _write_checkpoint(self, which: str, value: Callable[[Log], int]) -> None:
        # One writer per checkpoint file at a time (the periodic job, the
        # replica manager, shutdown): they share the file's .tmp name, and
        # a later snapshot must not be overwritten by an earlier one.
        with self._checkpoint_locks[which]:
            with self._lock:
                live = self._live_dirs()
                by_dir: dict[int, dict[TopicPartition, int]] = {id(d): {} for d in live}
                for tp, log in self._logs.items():
                    if id(self._dir_of[tp]) in by_dir:
                        by_dir[id(self._dir_of[tp])][tp] = value(log)
            for d in live:
                try:
                    d.write_offsets(getattr(d, which), by_dir[id(d)])
                except KafkaStorageError as e:
                    # KIP-112: a checkpoint that cannot be written fails its directory.
                    self.failure_channel.maybe_add_offline_log_dir(
                        d.path, f"Disk error while writing the {which} checkpoint", e.__cause__ or e)

    def checkpoint_recovery_points(self) -> None:
        self._write_checkpoint("recovery_points", lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        self._write_checkpoint("log_start_offsets", lambda log: log.log_start_offset)

    def checkpoint_high_watermarks(self) -> None:
        self._write_checkpoint("replication_offsets", lambda log: log.high_watermark)

    # ---- the cleaner threads -------------------------------------------------------------------
    def startup(self) -> None:
        """Start the cleaner threads (seed 002 §5.2 startup()); the periodic
        jobs are the caller's to schedule through ``tick``."""
        if self._shut_down:
            raise RuntimeError("the log manager was shut down; open a new one")
        if self.cleaner is not None:
            self.cleaner.startup()

    def clean_once(self) -> CleanOutcome:
        """One synchronous cleaner round (compact the filthiest log, then
        retention of compacted logs) for callers that run no cleaner threads;
        safe beside running threads (a log is cleaned by one at a time)."""
        if self.cleaner is None:
            raise RuntimeError("log.cleaner.enable is false: this log manager has no cleaner")
        return self.cleaner.clean_once()

    # ---- truncation and deletion (the replication layer's entry points) ------------------------
    def truncate_to(self, tp: TopicPartition, offset: int) -> bool:
        """Truncate the partition's log to ``offset`` (follower truncation,
        KIP-101). The replication layer calls this, never ``Log.truncate_to``:
        when the cut reaches below the active segment (the only part the
        cleaner never reads), any cleaning pass on the partition is aborted
        and waited out first, and the cleaner checkpoint is pulled back to
        the new active segment's base so re-appended offsets count as dirty
        (Kafka's truncateTo). Returns whether anything was removed; False for
        a partition this manager does not have."""
        log = self.get_log(tp.topic, tp.partition)
        if log is None:
            return False
        cleaner = self.cleaner
        if cleaner is None or offset >= log.active_segment.base_offset:
            return log.truncate_to(offset)
        cleaner.abort_and_pause_cleaning(tp)
        try:
            truncated = log.truncate_to(offset)
            if truncated:
                cleaner.maybe_truncate_checkpoint(tp, log.active_segment.base_offset)
            return truncated
        finally:
            cleaner.resume_cleaning(tp)

    def truncate_fully_and_start_at(self, tp: TopicPartition, offset: int) -> bool:
        """Empty the partition's log and start it at ``offset`` (a follower
        whose leader's log starts past its end). The replication layer calls
        this, never the ``Log`` method: cleaning is aborted and waited out
        first and the cleaner checkpoint reset to ``offset``. Returns False
        for a partition this manager does not have."""
        log = self.get_log(tp.topic, tp.partition)
        if log is None:
            return False
        cleaner = self.cleaner
        if cleaner is None:
            log.truncate_fully_and_start_at(offset)
            return True
        cleaner.abort_and_pause_cleaning(tp)
        try:
            log.truncate_fully_and_start_at(offset)
            cleaner.update_checkpoint(tp, offset if log.config.compact else None)
            return True
        finally:
            cleaner.resume_cleaning(tp)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove the partition (StopReplica with delete, topic deletion: the
        replication layer calls this): stop any cleaning pass on it and wait
        for it to end, drop its cleaner checkpoint entry (a partition
        re-created later starts dirty), close it, rename its directory
        ``<topic>-<partition>.<uuid>-delete`` and remove that after
        ``log.segment.delete.delay.ms`` (or at the next startup). Returns
        False for a partition this manager does not have."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            if tp not in self._logs:
                return False
        cleaner = self.cleaner
        if cleaner is not None:
            # Paused, not idle, while it leaves the table: no thread grabs it.
            cleaner.abort_and_pause_cleaning(tp)
        try:
            with self._lock:
                log = self._logs.pop(tp, None)
                d = self._dir_of.pop(tp, None)
            if log is None or d is None:
                return False  # a concurrent delete_log won
            if cleaner is not None:
                cleaner.update_checkpoint(tp, None, d.path)
            log.close()
            renamed = d.path / delete_dir_name(tp)
            try:
                log.dir.rename(renamed)
            except OSError as e:
                raise KafkaStorageError("cannot rename the deleted log's directory", log.dir, e) from e
        finally:
            if cleaner is not None:
                cleaner.forget_partition(tp)
        due = self.clock.milliseconds() + self.config.file_delete_delay_ms
        with self._lock:
            self._pending_dir_deletes.append((due, renamed))
        return True

    # ---- retention (seed 002 §5.4.1) -----------------------------------------------------------
    def _retention_pass(self, now: int) -> int:
        """cleanupLogs with the owners of ``LogManager``'s docstring:
        non-compacted logs here with cleaning paused; compacted logs here
        only while no cleaner thread runs (marked in progress meanwhile)."""
        cleaner = self.cleaner
        if cleaner is None:
            return self._delete_old_segments(list(self.all_logs().items()), now)
        paused = cleaner.pause_cleaning_for_non_compacted()
        try:
            deleted = self._delete_old_segments(paused, now)
        finally:
            for tp, _log in paused:
                with suppress(ValueError):  # delete_log forgot the partition meanwhile
                    cleaner.resume_cleaning(tp)
        if not cleaner.running:
            compacted = cleaner.deletable_logs()
            try:
                deleted += self._delete_old_segments(compacted, now)
            finally:
                cleaner.done_deleting([tp for tp, _log in compacted])
        return deleted

    def _delete_old_segments(self, logs: list[tuple[TopicPartition, Log]], now: int) -> int:
        guard = self._guard
        return sum(guard(tp, partial(delete_old_segments, log, now), 0) for tp, log in logs)

    # ---- shutdown ------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Clean shutdown: flush and close every log, write checkpoints and,
        in every directory whose logs all closed cleanly, the marker."""
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
        if self.cleaner is not None:
            # Before the logs close: a pass ends at its next abort check.
            self.cleaner.shutdown()
        failed: set[int] = set()
        logs = self.all_logs()

        def flush(tp: TopicPartition, log: Log) -> None:
            try:
                if not log.offline:
                    log.flush()
            except StorageError as e:
                logger.error("flush of %s failed at shutdown: %s", tp, e)
            if log.offline:
                failed.add(id(self._dir_of[tp]))

        def close(tp: TopicPartition, log: Log) -> None:
            try:
                log.close()
            except (OSError, StorageError) as e:
                logger.error("close of %s failed at shutdown: %s", tp, e)
                failed.add(id(self._dir_of[tp]))

        self._per_dir(logs, flush)
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
        self._per_dir(logs, close)
        with self._lock:
            live = self._live_dirs()
        for d in self._dirs:
            if id(d) not in failed and d in live:
                try:
                    d.write_clean_shutdown()
                except KafkaStorageError as e:
                    logger.error("%s", e)
            d.unlock()
        with self._lock:
            self._logs.clear()
            self._dir_of.clear()


class LogManagerRunner:
    """Calls ``LogManager.startup`` once, then ``LogManager.tick`` every
    ``interval_ms`` on a daemon thread (standalone use; the broker calls
    ``startup`` and schedules ``tick`` on its own). ``stop`` ends the tick
    thread only; ``LogManager.shutdown`` stops the cleaner."""

    def __init__(self, manager: LogManager, interval_ms: int = 1000) -> None:
        self.manager = manager
        self.interval_s = interval_ms / 1000
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kavka-log-manager", daemon=True)

    def start(self) -> LogManagerRunner:
        """Start the manager (its cleaner threads) and the tick thread."""
        self.manager.startup()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.manager.tick()
            except Exception:  # keep the scheduler alive; the error is logged
                logger.exception("log manager tick failed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def _flush_log_handlers() -> None:
    """Before a halt: what the handlers buffered reaches its file (a halt
    skips interpreter shutdown, which would flush them)."""
    for handler in logging.getLogger().handlers:
        with suppress(Exception):
            handler.flush()
