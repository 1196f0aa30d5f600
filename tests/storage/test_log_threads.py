"""The log under concurrent appends, reads, flushes and retention from
several threads: every append lands whole, reads only ever see valid
batches, offsets stay dense."""

from __future__ import annotations

import threading
from itertools import pairwise

from kavka.protocol.records.batch import iter_batches
from kavka.storage.errors import OffsetOutOfRangeError
from kavka.storage.log import Log
from kavka.storage.retention import delete_old_segments

from .conftest import make_batch, read_all, small_config


def test_concurrent_appends_reads_flushes_and_retention(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.bytes": 2000, "retention.bytes": 20_000}), clock=clock)
    per_thread, writers = 150, 3
    errors: list[BaseException] = []
    done = threading.Event()

    def writer(tag: int) -> None:
        try:
            for i in range(per_thread):
                log.append_as_leader(make_batch(1 + i % 3, key=b"w%d-" % tag), 1)
                log.update_high_watermark(log.log_end_offset)
        except BaseException as e:
            errors.append(e)

    def reader() -> None:
        try:
            while not done.is_set():
                start = log.log_start_offset
                try:
                    info = log.read(start, 5000)
                except OffsetOutOfRangeError:
                    continue  # retention moved the start meanwhile
                for _pos, header in iter_batches(info.records):  # CRC-checked
                    assert header.last_offset >= start
        except BaseException as e:
            errors.append(e)

    def housekeeper() -> None:
        try:
            while not done.is_set():
                log.flush()
                delete_old_segments(log, clock.now_ms)
                log.delete_expired_files(clock.now_ms)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(writers)]
    helpers = [threading.Thread(target=reader), threading.Thread(target=housekeeper)]
    for t in threads + helpers:
        t.start()
    for t in threads:
        t.join(timeout=120)
    done.set()
    for t in helpers:
        t.join(timeout=120)
    assert not errors, errors
    total = sum(1 + i % 3 for i in range(per_thread)) * writers
    assert log.log_end_offset == total
    served = read_all(log)
    offsets = [h.base_offset for h, _ in served]
    assert offsets == sorted(offsets) and served[-1][0].next_offset == total
    for (a, _), (b, _) in pairwise(served):
        assert a.next_offset == b.base_offset
    log.close()
