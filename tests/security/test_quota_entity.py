"""Client quota entities: KIP-55's precedence table, the wire and ZooKeeper
forms, stored values."""

from __future__ import annotations

import pytest

from kavka.security.quota.entity import (
    DEFAULT,
    ClientQuotaEntity,
    QuotaType,
    format_quota_value,
    parse_quota_value,
    quota_levels,
)
from kavka.security.quota.manager import QuotaOverrides

# KIP-55's table: the path of each level for user alice, client id app, and
# the measurement its quota is shared over.
LEVELS = [
    ("/config/users/alice/clients/app", ("alice", "app")),
    ("/config/users/alice/clients/<default>", ("alice", "app")),
    ("/config/users/alice", ("alice", "")),
    ("/config/users/<default>/clients/app", ("alice", "app")),
    ("/config/users/<default>/clients/<default>", ("alice", "app")),
    ("/config/users/<default>", ("alice", "")),
    ("/config/clients/app", ("", "app")),
    ("/config/clients/<default>", ("", "app")),
]


def test_levels_are_kip55s_order():
    got = [("/config/{}/{}".format(*entity.to_zk()), key) for entity, key in quota_levels("alice", "app")]
    assert got == LEVELS


@pytest.mark.parametrize("present_from", range(len(LEVELS)))
def test_the_most_specific_level_wins(present_from):
    """Quotas at every level from ``present_from`` down: that level answers."""
    overrides = QuotaOverrides()
    for i, (path, _) in enumerate(LEVELS[present_from:], start=present_from):
        entity_type, _, name = path.removeprefix("/config/").partition("/")
        overrides.update(ClientQuotaEntity.from_zk(entity_type, name), float(100 + i))
    assert overrides.resolve("alice", "app") == (float(100 + present_from), LEVELS[present_from][1])


def test_no_quota_anywhere():
    overrides = QuotaOverrides()
    assert overrides.resolve("alice", "app") is None
    overrides.update(ClientQuotaEntity("bob"), 5.0)
    assert overrides.resolve("alice", "app") is None
    overrides.update(ClientQuotaEntity("bob"), None)
    assert not overrides


def test_entity_forms():
    e = ClientQuotaEntity("CN=a b", DEFAULT)
    assert e.to_zk() == ("users", "CN%3Da%20b/clients/<default>")
    assert ClientQuotaEntity.from_zk(*e.to_zk()) == e
    assert e.components() == [("user", "CN=a b"), ("client-id", None)]
    assert ClientQuotaEntity.from_components(e.components()) == e
    assert str(e) == "user 'CN=a b', client-id <default>"
    assert ClientQuotaEntity(None, "app").to_zk() == ("clients", "app")


@pytest.mark.parametrize("components, message", [
    ([], "Invalid empty client quota entity"),
    ([("user", "a"), ("user", "b")], "Duplicate user"),
    ([("user", "")], "Empty user not supported"),
    ([("client-id", "..")], "cannot be kept in ZooKeeper"),
    ([("group", "x")], "Unhandled client quota entity type: group"),
    ([("ip", "1.2.3.4"), ("user", "a")], "IP entity should not be used with user/client ID entity"),
    ([("ip", "broker.example.com")], "is not a valid IP address"),
    ([("ip", "1.2.3.4"), ("ip", None)], "Duplicate ip"),
])
def test_bad_entities(components, message):
    with pytest.raises(ValueError, match=message):
        ClientQuotaEntity.from_components(components)


def test_values():
    assert parse_quota_value("producer_byte_rate", "1024") == 1024.0
    assert parse_quota_value("request_percentage", "12.5") == 12.5
    assert format_quota_value(QuotaType.PRODUCE, 1024.0) == "1024"
    assert format_quota_value(QuotaType.REQUEST, 200.0) == "200.0"
    for key, text, message in [("producer_byte_rate", "1.5", "whole number"), ("request_percentage", "-1", "non-negative"),
                               ("request_percentage", "nan", "non-negative"), ("x", "1", "not a client quota key")]:
        with pytest.raises(ValueError, match=message):
            parse_quota_value(key, text)


def test_ip_entities():
    """KIP-612: an address or the default, alone, kept in /config/ips."""
    e = ClientQuotaEntity.from_components([("ip", "::ffff:10.0.0.7")])
    assert e.ip == "10.0.0.7" and e.is_ip and str(e) == "ip '10.0.0.7'"
    assert e.components() == [("ip", "10.0.0.7")] and e.to_zk() == ("ips", "10.0.0.7")
    assert ClientQuotaEntity.from_zk("ips", "10.0.0.7") == e
    d = ClientQuotaEntity.from_components([("ip", None)])
    assert d.to_zk() == ("ips", "<default>") and ClientQuotaEntity.from_zk("ips", "<default>") == d
    assert ClientQuotaEntity(ip="2001:db8::1").to_zk() == ("ips", "2001:db8::1")
