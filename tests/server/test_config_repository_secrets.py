"""DescribeConfigs of a broker never shows a secret: PASSWORD keys
(ssl.*password*, ssl.keystore.key, sasl.jaas.config) and the per-listener
overrides of them (listener.name.<l>[.<mechanism>].<key>) are null and
flagged sensitive, as Kafka answers; other listener overrides show their
value."""

from __future__ import annotations

from kavka.common.broker_config import KafkaConfig
from kavka.server.config_repository import SOURCE_STATIC_BROKER, ConfigRepository

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret";')


class NoDynamicConfigs:
    async def get_entity_config(self, entity_type: str, entity: str) -> dict[str, str]:
        return {}


async def test_secrets_are_null_and_sensitive():
    config = KafkaConfig.from_props({
        "zookeeper.connect": "127.0.0.1:2181", "broker.id": "3",
        "listeners": "SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094", "security.inter.broker.protocol": "SSL",
        "sasl.enabled.mechanisms": "PLAIN", "ssl.keystore.location": "/etc/k.p12",
        "ssl.keystore.password": "store-secret", "ssl.key.password": "key-secret", "sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.ssl.truststore.password": "trust-secret",
        "listener.name.sasl_ssl.ssl.client.auth": "required",
    })
    entries = {e.name: e for e in await ConfigRepository(NoDynamicConfigs(), config).describe_broker("3")}
    for name in ("ssl.keystore.password", "ssl.key.password", "sasl.jaas.config", "ssl.truststore.password",
                 "ssl.keystore.key", "listener.name.sasl_ssl.plain.sasl.jaas.config",
                 "listener.name.sasl_ssl.ssl.truststore.password"):
        e = entries[name]
        assert e.sensitive and e.value is None and all(v is None for _, v, _ in e.synonyms), name
    assert entries["ssl.keystore.location"].value == "/etc/k.p12" and not entries["ssl.keystore.location"].sensitive
    override = entries["listener.name.sasl_ssl.ssl.client.auth"]
    assert (override.value, override.source, override.sensitive) == ("required", SOURCE_STATIC_BROKER, False)
    assert not any("secret" in repr(e) for e in entries.values())
