"""``ConnectionQuotas``: each limit refuses the connection over it and
counts it by its config key, connections closing make room, the
inter-broker listener is exempt from the broker-wide limits (KIP-402,
KIP-612), per-address overrides (names resolved), creation rates as token
buckets on a manual clock, live updates that keep open connections, and
refusal logging that does not flood."""

from __future__ import annotations

import logging
from types import MappingProxyType

import pytest

from kavka.common.broker_config import KafkaConfig
from kavka.common.broker_config_keys import parse_ip_overrides
from kavka.common.clock import ManualClock
from kavka.common.config import ConfigError
from kavka.security.quota.rate import QuotaWindow
from kavka.server.connection_quotas import ConnectionQuotaConfig, ConnectionQuotas, resolve_overrides

ONE_SECOND = QuotaWindow(samples=1, window_ms=1000)  # a burst of one second's worth


def quotas(clock: ManualClock | None = None, **limits) -> ConnectionQuotas:
    for key in ("per_ip_overrides", "listener_max_connections", "listener_max_connection_creation_rate"):
        if key in limits:
            limits[key] = MappingProxyType(limits[key])
    return ConnectionQuotas(ConnectionQuotaConfig(rate_window=ONE_SECOND, **limits), clock or ManualClock())


def accept_many(q: ConnectionQuotas, n: int, listener: str = "PLAINTEXT", ip: str = "10.0.0.1") -> int:
    return sum(q.accept(listener, ip) for _ in range(n))


def test_max_connections_per_ip_refuses_the_next_and_a_close_makes_room():
    q = quotas(max_connections_per_ip=3)
    assert accept_many(q, 5) == 3
    assert q.refused == {"max.connections.per.ip": 2}
    assert q.accept("PLAINTEXT", "10.0.0.2")  # another address has its own count
    q.release("PLAINTEXT", "10.0.0.1")
    assert q.accept("PLAINTEXT", "10.0.0.1")
    assert q.per_ip["10.0.0.1"] == 3 and q.connections == 4


def test_overrides_set_other_limits_for_some_addresses():
    q = quotas(max_connections_per_ip=2, per_ip_overrides={"10.0.0.9": 5, "10.0.0.8": 0})
    assert accept_many(q, 10, ip="10.0.0.9") == 5
    assert accept_many(q, 3, ip="10.0.0.8") == 0
    assert accept_many(q, 3, ip="10.0.0.1") == 2
    assert q.refused == {"max.connections.per.ip.overrides": 8, "max.connections.per.ip": 1}


def test_ipv4_mapped_addresses_count_as_their_ipv4_address():
    q = quotas(max_connections_per_ip=1)
    assert q.accept("PLAINTEXT", "::ffff:10.0.0.1")
    assert not q.accept("PLAINTEXT", "10.0.0.1")


def test_max_connections_spares_the_inter_broker_listener_which_still_counts():
    q = quotas(max_connections=3, inter_broker_listener="REPLICATION")
    assert accept_many(q, 2, "CLIENTS", "10.0.0.1") == 2
    assert accept_many(q, 3, "REPLICATION", "10.0.0.2") == 3  # over the broker-wide limit: protected
    assert q.connections == 5
    assert not q.accept("CLIENTS", "10.0.0.3")  # the others are refused (5 >= 3)
    assert q.refused == {"max.connections": 1}


def test_a_listener_limit_applies_to_its_listener_only_including_the_inter_broker_one():
    q = quotas(listener_max_connections={"CLIENTS": 2, "REPLICATION": 1}, inter_broker_listener="REPLICATION")
    assert accept_many(q, 4, "CLIENTS") == 2
    assert accept_many(q, 2, "REPLICATION") == 1
    assert accept_many(q, 4, "OTHER") == 4
    assert q.refused == {"listener.name.clients.max.connections": 2, "listener.name.replication.max.connections": 1}


def test_creation_rate_is_a_token_bucket_on_the_clock():
    clock = ManualClock()
    q = quotas(clock, max_connection_creation_rate=10)
    assert accept_many(q, 15) == 10  # a burst of one window's worth
    assert q.refused == {"max.connection.creation.rate": 5}
    clock.advance(100)  # a tenth of a second: one more token
    assert accept_many(q, 3) == 1
    clock.advance(10_000)  # refilled, but never beyond the burst
    assert accept_many(q, 20) == 10


def test_refused_connections_take_no_token_and_the_inter_broker_listener_has_no_broker_rate():
    clock = ManualClock()
    q = quotas(clock, max_connection_creation_rate=2, max_connections_per_ip=1, inter_broker_listener="REPLICATION")
    assert q.accept("CLIENTS", "10.0.0.1")
    assert accept_many(q, 5, "CLIENTS", "10.0.0.1") == 0  # refused per address first: no token taken
    assert q.accept("CLIENTS", "10.0.0.2")
    assert not q.accept("CLIENTS", "10.0.0.3")  # now the rate
    assert all(q.accept("REPLICATION", f"10.0.1.{i}") for i in range(10))


def test_a_listener_rate_applies_to_that_listener_inter_broker_included():
    clock = ManualClock()
    q = quotas(clock, listener_max_connection_creation_rate={"REPLICATION": 2}, inter_broker_listener="REPLICATION")
    assert sum(q.accept("REPLICATION", f"10.0.0.{i}") for i in range(5)) == 2
    assert sum(q.accept("CLIENTS", f"10.0.0.{i}") for i in range(5)) == 5
    assert q.refused == {"listener.name.replication.max.connection.creation.rate": 3}


def test_an_update_keeps_open_connections_and_applies_to_new_ones():
    clock = ManualClock()
    q = quotas(clock, max_connections_per_ip=10, max_connection_creation_rate=5)
    assert accept_many(q, 4) == 4  # one token left
    q.update(ConnectionQuotaConfig(max_connections_per_ip=2, max_connection_creation_rate=5, rate_window=ONE_SECOND))
    assert q.per_ip["10.0.0.1"] == 4  # nobody is closed
    assert not q.accept("PLAINTEXT", "10.0.0.1")  # over the new per-address limit (no token taken)
    assert accept_many(q, 3, ip="10.0.0.2") == 1  # the bucket was kept: its last token
    assert q.refused == {"max.connections.per.ip": 1, "max.connection.creation.rate": 2}
    q.update(ConnectionQuotaConfig(rate_window=ONE_SECOND))  # limits removed
    assert accept_many(q, 50) == 50


def test_an_unchanged_rate_keeps_its_bucket_and_a_changed_one_starts_full():
    clock = ManualClock()
    q = quotas(clock, max_connection_creation_rate=3)
    assert accept_many(q, 3) == 3
    q.update(ConnectionQuotaConfig(max_connection_creation_rate=3, max_connections=100, rate_window=ONE_SECOND))
    assert not q.accept("PLAINTEXT", "10.0.0.2")  # same rate: still empty
    q.update(ConnectionQuotaConfig(max_connection_creation_rate=4, rate_window=ONE_SECOND))
    assert accept_many(q, 6, ip="10.0.0.3") == 4


def test_refusals_are_logged_once_per_interval_with_the_count(caplog):
    clock = ManualClock()
    q = quotas(clock, max_connections_per_ip=0, per_ip_overrides={"10.0.0.5": 1})
    with caplog.at_level(logging.INFO, logger="kavka.network"):
        assert accept_many(q, 1000) == 0
        clock.advance(10_000)
        assert not q.accept("PLAINTEXT", "10.0.0.1")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "max.connections.per.ip reached" in lines[0] and "10.0.0.1" in lines[0]
    assert "(999 more refused by it since the last such line)" in lines[1]
    assert q.refused_total == 1001


def test_overrides_parse_hosts_ipv6_and_refuse_bad_entries():
    assert parse_ip_overrides("") == {}
    assert parse_ip_overrides("localhost:5, 10.0.0.1:0,[::1]:7,fe80::1:3") == {
        "localhost": 5, "10.0.0.1": 0, "::1": 7, "fe80::1": 3}
    for bad in ("localhost", "localhost:x", "host:-1", ":5"):
        with pytest.raises(ValueError, match="host:count"):
            parse_ip_overrides(bad)
    resolved = resolve_overrides({"localhost": 4, "10.0.0.1": 2, "::ffff:10.0.0.7": 1})
    assert resolved["127.0.0.1"] == 4 and resolved["10.0.0.1"] == 2 and resolved["10.0.0.7"] == 1
    assert set(resolved) <= {"127.0.0.1", "::1", "10.0.0.1", "10.0.0.7"}


def _config(**extra: str) -> KafkaConfig:
    return KafkaConfig.from_props({"zookeeper.connect": "127.0.0.1:2181", "listeners": "PLAINTEXT://127.0.0.1:9092",
                                   **extra})


def test_the_broker_config_gives_the_limits_and_refuses_bad_ones():
    cfg = _config(**{"max.connections": "100", "max.connections.per.ip": "7",
                     "max.connections.per.ip.overrides": "127.0.0.1:50", "max.connection.creation.rate": "20",
                     "quota.window.num": "2", "quota.window.size.seconds": "3"})
    c = ConnectionQuotaConfig.from_broker(cfg, inter_broker_listener=cfg.inter_broker_listener_name)
    assert (c.max_connections, c.max_connections_per_ip, dict(c.per_ip_overrides), c.max_connection_creation_rate,
            c.inter_broker_listener, c.rate_window) == (100, 7, {"127.0.0.1": 50}, 20, "PLAINTEXT", QuotaWindow(2, 3000))
    with pytest.raises(ConfigError, match="max.connections.per.ip.overrides.*'nonsense' is not host:count"):
        _config(**{"max.connections.per.ip.overrides": "nonsense"})
    with pytest.raises(ConfigError, match="max.connections.per.ip'.*only with max.connections.per.ip.overrides"):
        _config(**{"max.connections.per.ip": "0"})
    assert _config(**{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.0.0.1:2"})


def test_listener_limits_come_from_listener_name_keys_and_may_change_live():
    cfg = KafkaConfig.from_props({
        "zookeeper.connect": "127.0.0.1:2181",
        "listeners": "CLIENTS://127.0.0.1:9092,REPLICATION://127.0.0.1:9093",
        "listener.security.protocol.map": "CLIENTS:PLAINTEXT,REPLICATION:PLAINTEXT",
        "inter.broker.listener.name": "REPLICATION",
        "listener.name.clients.max.connections": "10",
        "listener.name.replication.max.connection.creation.rate": "5"})
    c = ConnectionQuotaConfig.from_broker(cfg, cfg.listener_overrides, cfg.inter_broker_listener_name)
    assert dict(c.listener_max_connections) == {"CLIENTS": 10}
    assert dict(c.listener_max_connection_creation_rate) == {"REPLICATION": 5}
    assert c.inter_broker_listener == "REPLICATION"
    live = cfg.with_dynamic({"max.connections.per.ip": "3"}, {"listener.name.clients.max.connections": "20",
                                                               "max.connection.creation.rate": "100"})
    c = ConnectionQuotaConfig.from_broker(live, live.listener_overrides, live.inter_broker_listener_name)
    assert (dict(c.listener_max_connections), c.max_connections_per_ip, c.max_connection_creation_rate) == \
        ({"CLIENTS": 20}, 3, 100)
    with pytest.raises(ConfigError, match="cannot be changed while the broker runs"):
        cfg.with_dynamic({}, {"socket.listen.backlog.size": "10"})
    with pytest.raises(ConfigError, match="no listener OTHER"):
        cfg.with_dynamic({}, {"listener.name.other.max.connections": "1"})


def test_an_ip_connection_rate_quota_applies_to_its_address_and_the_default_to_the_others():
    """KIP-612: connection_creation_rate of /config/ips/<ip>, else of
    /config/ips/<default>, on every listener (the inter-broker one too, as
    in Kafka)."""
    clock = ManualClock()
    q = quotas(clock)
    q.update_ip_connection_rate("10.0.0.1", 2)
    assert accept_many(q, 5) == 2
    assert q.refused == {"connection_creation_rate": 3}
    assert accept_many(q, 5, ip="10.0.0.2") == 5  # no default yet: no quota
    assert accept_many(q, 3, listener="OTHER", ip="10.0.0.1") == 0  # every listener of the address, together
    q2 = quotas(clock, inter_broker_listener="REPLICATION")
    q2.update_ip_connection_rate(None, 1)
    assert accept_many(q2, 3, listener="REPLICATION", ip="10.0.0.9") == 1
    assert accept_many(q2, 3, ip="10.0.0.9") == 0  # the same address's rate on another listener
    assert accept_many(q2, 3, ip="::ffff:10.0.0.8") + accept_many(q2, 3, ip="10.0.0.8") == 1  # one address
    clock.advance(1000)
    assert accept_many(q2, 3, ip="10.0.0.9") == 1  # one a second
    q2.update_ip_connection_rate("10.0.0.9", 3)  # its own quota beats the default, measured afresh
    assert accept_many(q2, 5, ip="10.0.0.9") == 3
    q2.update_ip_connection_rate("10.0.0.9", None)  # removed: the default again
    clock.advance(1000)
    assert accept_many(q2, 5, ip="10.0.0.9") == 1
    q2.update_ip_connection_rate(None, None)
    assert accept_many(q2, 50, ip="10.0.0.9") == 50
    q2.update_ip_connection_rate("10.0.0.7", 0)  # 0: no new connection at all
    assert accept_many(q2, 2, ip="10.0.0.7") == 0
    assert q2.ip_connection_rate("10.0.0.7") == 0 and q2.ip_connection_rate("10.0.0.6") is None


def test_refused_by_an_ip_rate_takes_no_other_token_and_open_connections_stay():
    clock = ManualClock()
    q = quotas(clock, max_connection_creation_rate=3)
    q.update_ip_connection_rate("10.0.0.1", 1)
    assert accept_many(q, 3) == 1  # two refused by the ip rate took no broker token
    assert accept_many(q, 3, ip="10.0.0.2") == 2
    assert q.refused == {"connection_creation_rate": 2, "max.connection.creation.rate": 1}
    assert q.per_ip["10.0.0.1"] == 1  # the accepted one stays open


def test_the_measured_addresses_are_bounded(monkeypatch):
    from kavka.server import connection_quotas

    monkeypatch.setattr(connection_quotas, "MAX_IP_RATES", 100)
    q = quotas()
    q.update_ip_connection_rate(None, 1)
    for i in range(1000):
        assert q.accept("PLAINTEXT", f"10.1.{i // 250}.{i % 250}")
    assert len(q._ip_buckets) <= 100
