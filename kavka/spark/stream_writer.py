"""Streaming write (``df.writeStream.format("kavka")``): each micro-batch
exactly once, keyed by (query id, batch id), with Kavka's transactions
(KIP-98).

Each sink task (one Spark partition of one micro-batch) does, with a
librdkafka transactional producer whose ``transactional.id`` is
``kavka-spark-<queryId>-<task partition id>``:

1. ``init_transactions``: fences every earlier attempt of the same task
   (same transactional id, older epoch: its later produce or commit is
   refused) and completes whatever transaction it left: an unfinished one
   is aborted, a commit already decided is finished first;
2. reads the task's last committed batch id from the commit topic
   (``kavka.spark.commit_log``, read_committed); if it is >= this batch id
   the task writes nothing (a replayed batch);
3. otherwise, in ONE transaction: every row, then the commit record
   ``(queryId, task) -> batchId``; ``commit_transaction``. Any failure before
   the commit aborts the transaction (explicitly, else by the next attempt's
   step 1 or the coordinator's ``transaction.timeout.ms``).

Guarantee, for readers with ``isolation.level=read_committed`` (the
``kavka`` source's default): every row of a micro-batch appears exactly
once, even when Spark replays the batch after a crash (its checkpoint's
``commits/`` entry missing) or re-runs a failed task; a failed attempt's
rows are never visible. Conditions: the query is deterministic over a
replayable source, so a replay gives each task partition id the same rows
(Spark's own requirement for exactly-once), and the query id is kept (same
checkpoint). Visibility is per task, not per micro-batch: a reader may see
one task's rows of a batch before another task's. Readers with
read_uncommitted also see aborted attempts' rows.

``commit``/``abort`` on the driver side have nothing left to do: tasks
committed or aborted their own transactions. Runs: ``__init__`` in the
planning process (creates the commit topic), ``write`` on executors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from kavka.spark import commit_log
from kavka.spark.options import SinkOptions
from kavka.spark.writer_rows import DeliveryErrors, drain, produce_batches, producer_config


@dataclass
class TaskCommit(WriterCommitMessage):
    """What one task did: ``rows`` written, or ``replayed`` (nothing written
    because this batch was already committed for this task)."""

    batch_id: int
    task: int
    rows: int
    replayed: bool


def _task_identity() -> tuple[str, int, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("the kavka stream writer must run inside a Spark task")
    query_id = ctx.getLocalProperty("sql.streaming.queryId")
    batch_id = ctx.getLocalProperty("streaming.sql.batchId")
    if not query_id or batch_id is None:
        raise RuntimeError("the kavka stream writer found no streaming query id / batch id in the task context")
    return query_id, int(batch_id), ctx.partitionId()


class KavkaStreamWriter(DataSourceStreamArrowWriter):
    """See the module docstring."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        commit_log.ensure_topic(options.bootstrap_servers, options.commit_topic, options.security)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        from confluent_kafka import Producer

        query_id, batch_id, task = _task_identity()
        settings = dict(self.options.producer)
        timeout_s = int(settings.get("transaction.timeout.ms", 60_000)) / 1000
        producer = Producer(producer_config(self.options, **{
            "transactional.id": f"kavka-spark-{query_id}-{task}",
            "transaction.timeout.ms": str(int(timeout_s * 1000))}))
        producer.init_transactions(timeout_s)
        # Another task's commit record may sit in an open transaction for up to its timeout.
        last = commit_log.last_committed_batch(self.options.bootstrap_servers, self.options.commit_topic,
                                               query_id, task, self.options.security, timeout_ms=int(timeout_s * 1000) + 30_000)
        if last is not None and last >= batch_id:
            drain(iterator)
            return TaskCommit(batch_id, task, 0, True)
        errors = DeliveryErrors()
        producer.begin_transaction()
        try:
            rows = produce_batches(producer, iterator, self.options, errors)
            producer.produce(self.options.commit_topic, commit_log.commit_value(query_id, task, batch_id, rows),
                             commit_log.commit_key(query_id, task), partition=commit_log.COMMIT_PARTITION,
                             on_delivery=errors)
            producer.flush(timeout_s)
            errors.raise_first()  # a failed delivery names its record's error; then the transaction aborts
            producer.commit_transaction(timeout_s)
        except BaseException:
            with contextlib.suppress(Exception):  # the original failure is the one to report
                producer.abort_transaction(timeout_s)
            raise
        return TaskCommit(batch_id, task, rows, False)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing left: each task committed its own transaction."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing left: failed tasks aborted (or will be fenced and aborted)."""
