"""``producer.id.expiration.ms`` (KIP-854): the log manager's periodic
check (every ``producer.id.expiration.check.interval.ms``) forgets the
producers whose last batch is older than the expiration and that hold no
open transaction, on a running broker and not only at a snapshot or a
restart; a producer forgotten starts afresh with its next batch (KIP-360)."""

from __future__ import annotations

from kavka.common.broker_config import KafkaConfig
from kavka.common.clock import ManualClock
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig

from .conftest import T0, make_batch, small_config

EXPIRE_MS = 60_000
CHECK_MS = 30_000


def idem(pid: int, seq: int, ts: int, transactional: bool = False) -> bytes:
    return make_batch(1, ts=ts, producer_id=pid, producer_epoch=0, base_sequence=seq,
                      is_transactional=transactional)


def test_the_periodic_check_forgets_idle_producers_but_not_open_transactions(tmp_path):
    clock = ManualClock(T0)
    config = LogManagerConfig(log_dirs=(str(tmp_path / "data"),), producer_id_expiration_ms=EXPIRE_MS,
                              producer_id_expiration_check_ms=CHECK_MS)
    manager = LogManager(config, small_config(), clock=clock)

    def at(ms: int) -> int:
        clock.advance(T0 + ms - clock.milliseconds())
        return manager.tick()["producers_expired"]

    try:
        log = manager.get_or_create_log("t", 0)
        log.append_as_leader(idem(1, 0, T0), 0)
        log.append_as_leader(idem(2, 0, T0, transactional=True), 0)  # stays open
        clock.advance(25_000)
        log.append_as_leader(idem(3, 0, clock.milliseconds()), 0)
        assert at(30_000) == 0  # a check: nobody is 60 s idle
        assert at(60_000) == 1  # a check: producer 1 is
        assert set(log.producer_state.producers) == {2, 3}

        # producer 1 starts afresh: any sequence is accepted for an unknown producer (KIP-360)
        log.append_as_leader(idem(1, 7, clock.milliseconds()), 0)
        assert log.producer_state.producers[1].last_seq == 7

        assert at(85_000) == 0  # producer 3 is 60 s idle, but no check is due
        assert 3 in log.producer_state.producers
        assert at(90_000) == 1  # the check
        assert at(120_000) == 1  # producer 1 again
        assert set(log.producer_state.producers) == {2}  # its open transaction holds the LSO
        assert at(10 * EXPIRE_MS) == 0
    finally:
        manager.shutdown()


def test_the_settings_come_from_the_broker_config(tmp_path):
    props = {"zookeeper.connect": "localhost:2181", "log.dirs": str(tmp_path),
             "producer.id.expiration.ms": "120000", "producer.id.expiration.check.interval.ms": "5000"}
    config = LogManagerConfig.from_broker(KafkaConfig.from_props(props).values)
    assert (config.producer_id_expiration_ms, config.producer_id_expiration_check_ms) == (120_000, 5_000)
    manager = LogManager(config, small_config(), clock=ManualClock(T0))
    try:
        assert manager.get_or_create_log("t", 0).producer_state.expiration_ms == 120_000
    finally:
        manager.shutdown()
