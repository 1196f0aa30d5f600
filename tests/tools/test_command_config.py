"""``--command-config`` (kavka.tools.client_cli): every client tool takes
it; security settings in librdkafka's and Java's names build the client's
security, a bad one is refused naming the file and the key before anything
is sent (exit 2), and the tools that talk through confluent-kafka get the
same settings in librdkafka's names. Against a secured cluster:
tests/cluster/test_secure_clients.py."""

from __future__ import annotations

import pytest

from kavka.tools.client_cli import CliError, load_command_config

TOOLS = [["topics", "--list"], ["console-producer", "--topic", "t"], ["console-consumer", "--topic", "t"],
         ["consumer-groups", "--list"], ["reassign-partitions", "--verify", "--reassignment-json-file", "x.json"],
         ["preferred-replica-election"], ["replica-verification"], ["acls", "--list"]]


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t[0])
def test_every_client_tool_takes_command_config_and_refuses_a_bad_one_by_key(kavka, tmp_path, tool) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=app\n"
                   "sasl.password=Pa55-secret\nssl.ca.location=/nonexistent/ca.pem\n")
    r = kavka(tool[0], "--bootstrap-server", "127.0.0.1:1", "--command-config", str(cfg), *tool[1:])
    assert r.returncode == 2 and r.stdout == "", (tool, r)
    assert str(cfg) in r.stderr and "ssl.ca.location" in r.stderr and "Pa55-secret" not in r.stderr, r.stderr
    assert "--command-config" in kavka(tool[0], "--help").stdout


def test_librdkafka_dialect(tmp_path, pki) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=app\n"
                   f"sasl.password=pw-1\nssl.ca.location={pki.ca_file()}\nclient.id=tool\n")
    config = load_command_config(str(cfg))
    assert (config.security.protocol, config.security.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    assert config.get("client.id", "x") == "tool"
    assert config.librdkafka() == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                   "sasl.username": "app", "sasl.password": "pw-1", "ssl.ca.location": str(pki.ca_file())}


def test_java_dialect_over_several_lines(tmp_path, pki) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                   "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
                   "    username=\"app\" password=\"pw-2\";\n"
                   f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_file()}\n")
    config = load_command_config(str(cfg))
    assert config.security.sasl_mechanism == "PLAIN" and config.security.ssl_context is not None
    assert config.librdkafka()["sasl.username"] == "app"


def test_keys_that_are_not_client_settings_are_refused(tmp_path) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text("linger.ms=5\n")
    with pytest.raises(CliError, match="'linger.ms' is not a client setting") as info:
        load_command_config(str(cfg))
    assert info.value.exit_code == 2


def test_no_file_is_plaintext() -> None:
    config = load_command_config(None)
    assert config.security.protocol == "PLAINTEXT" and config.librdkafka() == {}


def test_command_config_does_not_apply_with_zookeeper(kavka, tmp_path) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text("client.id=x\n")
    r = kavka("preferred-replica-election", "--zookeeper", "127.0.0.1:1", "--command-config", str(cfg))
    assert r.returncode == 2 and "with --zookeeper it does not apply" in r.stderr
