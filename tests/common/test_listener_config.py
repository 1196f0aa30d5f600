"""Listeners of every security protocol, per-listener overrides
(``listener.name.<listener>[.<mechanism>].<key>``, Kafka's ListenerName
prefixes), secret values that never print, and Java-properties parsing of
the JAAS configs that carry them."""

from __future__ import annotations

import pytest

from kavka.common.broker_config import ConfigError, KafkaConfig, from_properties_file
from kavka.common.config import Password, load_properties
from kavka.common.listeners import parse_listener_key

ZK = {"zookeeper.connect": "127.0.0.1:2181/kavka"}
FOUR = {
    "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,SASL_PLAINTEXT://127.0.0.1:9094,"
                 "SASL_SSL://127.0.0.1:9095",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret";')


def cfg(**props: str) -> KafkaConfig:
    return KafkaConfig.from_props({**ZK, **props}, source="/x/server.properties")


def test_all_four_security_protocols_listen_at_once():
    c = cfg(**FOUR)
    assert [(e.listener_name, e.security_protocol) for e in c.listeners] == [
        ("PLAINTEXT", "PLAINTEXT"), ("SSL", "SSL"), ("SASL_PLAINTEXT", "SASL_PLAINTEXT"), ("SASL_SSL", "SASL_SSL")]


def test_listener_overrides_win_over_the_broker_value_for_their_listener_only():
    c = cfg(**FOUR, **{
        "ssl.keystore.location": "/etc/broker.p12",
        "listener.name.sasl_ssl.ssl.keystore.location": "/etc/sasl.p12",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "60000",
    })
    ssl_l, sasl_ssl = c.listener_config("SSL"), c.listener_config("SASL_SSL")
    assert ssl_l["ssl.keystore.location"] == "/etc/broker.p12"
    assert ssl_l.source("ssl.keystore.location") == "ssl.keystore.location"
    assert sasl_ssl["ssl.keystore.location"] == "/etc/sasl.p12"
    assert sasl_ssl.source("ssl.keystore.location") == "listener.name.sasl_ssl.ssl.keystore.location"
    assert sasl_ssl["sasl.enabled.mechanisms"] == ["SCRAM-SHA-512"]
    sp = c.listener_config("SASL_PLAINTEXT")
    assert sp["sasl.enabled.mechanisms"] == ["PLAIN", "SCRAM-SHA-512"]
    jaas = sp.mechanism_value("PLAIN", "sasl.jaas.config")
    assert isinstance(jaas, Password) and jaas.value == JAAS
    assert sp.mechanism_source("PLAIN", "sasl.jaas.config") == "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    assert sp.mechanism_value("PLAIN", "connections.max.reauth.ms") == 60000
    assert sp.mechanism_value("SCRAM-SHA-512", "connections.max.reauth.ms") == 0
    assert sp.mechanism_value("SCRAM-SHA-512", "sasl.jaas.config") is None


def test_parse_listener_key_forms():
    keys, mech = frozenset({"ssl.keystore.location"}), frozenset({"sasl.jaas.config"})
    assert parse_listener_key("ssl.keystore.location", keys, mech) is None
    k = parse_listener_key("listener.name.internal_tls.ssl.keystore.location", keys, mech)
    assert (k.listener, k.mechanism, k.key, k.scoped_key) == ("INTERNAL_TLS", None, "ssl.keystore.location",
                                                             "ssl.keystore.location")
    k = parse_listener_key("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", keys, mech)
    assert (k.listener, k.mechanism, k.scoped_key) == ("SASL_SSL", "SCRAM-SHA-256", "scram-sha-256.sasl.jaas.config")


@pytest.mark.parametrize("props, message", [
    ({"listener.name.SASL_SSL.ssl.keystore.location": "/k"}, r"lower-case, as in Kafka: listener.name.sasl_ssl.ssl"),
    ({"listener.name.sasl_ssl.PLAIN.sasl.jaas.config": JAAS}, r"mechanism .* is lower-case"),
    ({"listener.name.sasl_ssl.log.dirs": "/x"}, r"'log.dirs' cannot be set per listener"),
    ({"listener.name.sasl_ssl.sasl.jaas.config": JAAS}, r"cannot be set per listener.*per SASL mechanism"),
    ({"listener.name.nope.ssl.keystore.location": "/k"}, r"there is no listener NOPE in listeners"),
    ({"listener.name.plaintext.ssl.keystore.location": "/k"}, r"PLAINTEXT, which does not use TLS"),
    ({"listener.name.ssl.sasl.enabled.mechanisms": "PLAIN"}, r"SSL, which does not use SASL"),
    ({"listener.name.ssl.plain.sasl.jaas.config": JAAS}, r"SSL, which does not use SASL"),
    ({"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": JAAS},
     r"SCRAM-SHA-256 is not among the SASL mechanisms of listener SASL_SSL \(PLAIN, SCRAM-SHA-512"),
    ({"listener.name.sasl_ssl.ssl.client.auth": "maybe"}, r"'maybe' is not allowed; allowed values: required"),
    ({"listener.name.ssl.ssl.enabled.protocols": "TLSv1"}, r"'TLSv1' is not allowed; allowed values: TLSv1.2, TLSv1.3"),
])
def test_listener_override_mistakes_are_refused_naming_the_key(props, message):
    with pytest.raises(ConfigError, match=message) as e:
        cfg(**FOUR, **props)
    assert "/x/server.properties" in str(e.value)


def test_inter_broker_sasl_mechanism_must_be_enabled_on_that_listener_override():
    props = {**FOUR, "security.inter.broker.protocol": "SASL_SSL", "sasl.mechanism.inter.broker.protocol": "PLAIN"}
    assert cfg(**props).inter_broker_listener_name == "SASL_SSL"
    with pytest.raises(ConfigError, match=r"'sasl.mechanism.inter.broker.protocol'.*PLAIN is not among .* SASL_SSL"):
        cfg(**props, **{"listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512"})


def test_secrets_never_print():
    c = cfg(**FOUR, **{"ssl.keystore.password": "s3cr3t-store", "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
                       "sasl.jaas.config": JAAS})
    assert c["ssl.keystore.password"].value == "s3cr3t-store"
    for text in (str(c), repr(c), str(c["ssl.keystore.password"]), repr(c["sasl.jaas.config"]),
                 repr(c.listener_config("SASL_SSL")), str(dict(c.listener_config("SASL_SSL").overrides))):
        assert "s3cr3t" not in text and "admin-secret" not in text, text
    assert str(c["ssl.keystore.password"]) == "[hidden]"
    assert c["ssl.key.password"] is None


def test_properties_file_with_a_multi_line_jaas_config_and_space_separators(tmp_path):
    p = tmp_path / "server.properties"
    p.write_text(
        "zookeeper.connect 127.0.0.1:2181\n"
        "listeners=SASL_PLAINTEXT://127.0.0.1:9094\n"
        "security.inter.broker.protocol=SASL_PLAINTEXT\n"
        "sasl.enabled.mechanisms=PLAIN\n"
        "sasl.mechanism.inter.broker.protocol=PLAIN\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
        "required \\\n"
        '    username="admin" \\\n'
        '    password="admin-secret" \\\n'
        '    user_alice="alice-secret";\n'
        "ssl.truststore.password : trust-me\n")
    c = from_properties_file(str(p))
    jaas = c.listener_config("SASL_PLAINTEXT").mechanism_value("PLAIN", "sasl.jaas.config").value
    assert jaas == ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                    'password="admin-secret" user_alice="alice-secret";')
    assert c["ssl.truststore.password"].value == "trust-me"


def test_a_line_without_separator_is_refused_without_echoing_it():
    with pytest.raises(ConfigError) as e:
        load_properties("a=b\nsecretvaluealone\n", source="/x/s.properties")
    assert "line 2" in str(e.value) and "secretvaluealone" not in str(e.value)


def test_listener_keys_cannot_change_dynamically():
    c = cfg(**FOUR)
    with pytest.raises(ConfigError, match="cannot be changed while the broker runs"):
        c.with_dynamic({}, {"listener.name.ssl.ssl.keystore.location": "/k"})
