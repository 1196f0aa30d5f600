"""``offsets.topic.compression.codec``: every batch the group coordinator
writes to __consumer_offsets (group metadata, offset commits, transactional
offset commits) carries the codec, and a new coordinator reads the state
back from those batches."""

from __future__ import annotations

import dataclasses

import pytest

from kavka.common.broker_config import KafkaConfig
from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupConfig
from kavka.protocol.records.batch import Compression, iter_batches
from kavka.server.internal_topic import InternalTopicSettings

from .test_coordinator import CONFIG, MemoryGroupLog, first_generation, owned


def codecs(store: MemoryGroupLog) -> list[Compression]:
    return [h.compression for batch in store.batches[0] for _, h in iter_batches(batch)]


@pytest.mark.parametrize("codec", list(Compression))
async def test_every_coordinator_write_uses_the_codec_and_reloads(codec):
    config = dataclasses.replace(CONFIG, offsets_topic_compression=codec)
    store = MemoryGroupLog()
    c = await owned(store, config)
    a = await first_generation(c)  # group metadata
    code, _ = await c.commit_offsets("g", 1, a, None, {("t", 0): (42, 3, "meta")})
    assert code is ErrorCode.NONE
    txn = await c.commit_txn_offsets("g", 9, 0, -1, "", None, {("u", 0): (7, -1, None)})
    assert txn == {("u", 0): ErrorCode.NONE}
    assert len(codecs(store)) == 3 and set(codecs(store)) == {codec}

    again = await owned(store, config)
    _, found = again.fetch_offsets("g", None)
    assert found[("t", 0)].offset == 42 and again.groups["g"].generation == 1


def test_the_codec_comes_from_the_broker_config_and_the_topic_keeps_it():
    config = KafkaConfig.from_props({"zookeeper.connect": "localhost:2181", "offsets.topic.compression.codec": "4",
                                     "compression.type": "gzip"})
    assert GroupConfig.from_broker(config).offsets_topic_compression is Compression.ZSTD
    # __consumer_offsets is created with compression.type=producer (as Kafka
    # does), so a broker-wide compression.type does not recompress its batches
    assert InternalTopicSettings.consumer_offsets(config).configs["compression.type"] == "producer"
