"""Keys Kafka accepts that have no effect in Kavka: validated, accepted,
and a value other than the default logged once as ignored, saying why."""

from __future__ import annotations

import logging

import pytest

from kavka.common.broker_config import ConfigError, KafkaConfig
from kavka.common.broker_config_keys import before_3_0
from kavka.server.ignored_configs import IGNORED_KEYS, IgnoredConfigs

ZK = {"zookeeper.connect": "127.0.0.1:2181"}


def config(**props: str) -> KafkaConfig:
    return KafkaConfig.from_props({**ZK, **{k.replace("__", "."): v for k, v in props.items()}})


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_defaults_say_nothing(caplog):
    IgnoredConfigs().check(config())
    assert warnings(caplog) == []


def test_each_ignored_value_is_said_once_with_why(caplog):
    ignored = IgnoredConfigs()
    c = config(num__network__threads="3", sasl__kerberos__min__time__before__relogin="58000",
               sasl__kerberos__principal__to__local__rules="RULE:[1:$1]/L,DEFAULT",
               log__message__format__version="2.8")
    ignored.check(c)  # num.network.threads=3 is the default: nothing to say
    ignored.check(c)
    said = warnings(caplog)
    assert len(said) == 3, said
    assert any(m.startswith("sasl.kerberos.min.time.before.relogin=58000 is ignored") and "GSSAPI" in m for m in said)
    assert any(m.startswith("sasl.kerberos.principal.to.local.rules=RULE:[1:$1]/L,DEFAULT is ignored") for m in said)
    assert any(m.startswith("log.message.format.version=2.8 is ignored") and "KIP-724" in m for m in said)
    caplog.clear()
    ignored.check(config(num__network__threads="8", log__message__format__version="3.5"))
    assert warnings(caplog) == ["num.network.threads=8 is ignored: Kavka serves every connection on one event loop "
                                "(TLS included), so there are no network threads to size"]


@pytest.mark.parametrize(("key", "value", "why"), [
    ("num.network.threads", "0", "out of range"),
    ("sasl.kerberos.ticket.renew.window.factor", "1.5", "1.5"),
    ("sasl.kerberos.ticket.renew.jitter", "-0.1", "-0.1"),
    ("sasl.kerberos.min.time.before.relogin", "-1", "-1"),
    ("sasl.kerberos.principal.to.local.rules", "RULE:nonsense", "is not a Kerberos name rule"),
    ("sasl.kerberos.principal.to.local.rules", "RULE:[1:$1](()s/a/b/", "does not compile"),
    ("sasl.kerberos.principal.to.local.rules", "RULE:[:$1]/L", "no number of components"),
    ("log.message.format.version", "banana", "is not a Kafka version"),
])
def test_bad_values_are_refused_naming_the_key(key, value, why):
    with pytest.raises(ConfigError) as e:
        KafkaConfig.from_props({**ZK, key: value})
    assert key in str(e.value) and why in str(e.value)


def test_kerberos_rules_kafka_takes_are_taken():
    for rules in ("DEFAULT", "RULE:[1:$1]/L,DEFAULT", "RULE:[2:$1@$0](.*@EXAMPLE.COM)s/@.*//",
                  "RULE:[1:$1@$0](.*@EXAMPLE\\.COM)s/@.*//U,DEFAULT"):
        assert config(sasl__kerberos__principal__to__local__rules=rules)


def test_versions_before_3_0():
    assert [v for v in ("0.10.0", "0.11.0.3", "1.1", "2.8-IV1", "3.0", "3.0-IV1", "3.7") if before_3_0(v)] == [
        "0.10.0", "0.11.0.3", "1.1", "2.8-IV1"]


def test_the_table_names_only_accepted_keys():
    c = config()
    for key in IGNORED_KEYS:
        c[key]  # noqa: B018 - raises for a key Kavka does not accept
