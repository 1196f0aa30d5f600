"""``kavka configs``'s pure parts: kafka-configs.sh's --add-config syntax,
entity pairing, option checks, credentials, Java's double format."""

from __future__ import annotations

import argparse

import pytest

from kavka.security.sasl.credentials import ScramMechanism
from kavka.tools import configs
from kavka.tools.client_cli import CliError


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    configs.add_arguments(p)
    return p.parse_args(["--bootstrap-server", "127.0.0.1:1", *argv])


@pytest.mark.parametrize("text, expected", [
    ("producer_byte_rate=1024", {"producer_byte_rate": "1024"}),
    ("k=v, k2 = [a,b,c] ,k3=", {"k": "v", "k2": "a,b,c", "k3": ""}),
    ("SCRAM-SHA-512=[password=secret],SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
     {"SCRAM-SHA-512": "password=secret", "SCRAM-SHA-256": "iterations=8192,password=alice-secret"}),
    ("follower.replication.throttled.replicas=[0:1,1:2]", {"follower.replication.throttled.replicas": "0:1,1:2"}),
])
def test_add_config(text, expected):
    assert configs.parse_add_config(text) == expected


@pytest.mark.parametrize("text", ["novalue", "a=b=c", "=v"])
def test_bad_add_config(text):
    with pytest.raises(CliError) as e:
        configs.parse_add_config(text)
    assert e.value.exit_code == 2


def test_entity_pairing_follows_kafka_configs():
    e = configs.entities_of(parse("--describe", "--entity-type", "users", "--entity-name", "alice",
                                  "--entity-type", "clients", "--entity-default"))
    assert (e.types, e.names) == (["users", "clients"], ["alice", ""])
    e = configs.entities_of(parse("--alter", "--user", "alice", "--client", "app", "--add-config", "x=1"))
    assert (e.types, e.names) == (["clients", "users"], ["app", "alice"])  # kafka-configs.sh's flag order
    e = configs.entities_of(parse("--describe", "--user-defaults"))
    assert (e.types, e.names) == (["users"], [""])


@pytest.mark.parametrize("argv, words", [
    (["--describe"], "an entity type is needed"),
    (["--describe", "--entity-type", "broker-loggers"], "not supported by Kavka"),
    (["--describe", "--ip", "my-laptop"], "The entity name for ips must be a valid IP address"),
    (["--describe", "--ip", "10.0.0.1", "--user", "u"], "Only 'users' and 'clients'"),
    (["--describe", "--entity-type", "groups"], "not one of"),
    (["--describe", "--topic", "t", "--user", "u"], "Only 'users' and 'clients'"),
    (["--describe", "--entity-type", "users", "--entity-type", "users"], "Duplicate entity type"),
    (["--describe", "--entity-type", "users", "--entity-name", "a", "--entity-name", "b"], "More entity names"),
    (["--alter", "--entity-type", "users", "--add-config", "x=1"], "must be specified with each --entity-type"),
    (["--alter", "--user", "u"], "At least one of --add-config"),
    (["--describe", "--user", "u", "--add-config", "x=1"], "go with --alter"),
    (["--describe", "--entity-type", "topics", "--entity-default"], "not supported for topics"),
    (["--describe", "--broker", "x"], "valid integer broker id"),
    (["--describe", "--user", "u", "--all"], "--all goes with --describe of topics or brokers"),
])
def test_bad_options(argv, words):
    args = parse(*argv)
    with pytest.raises(CliError) as e:
        configs.check(args, configs.entities_of(args))
    assert e.value.exit_code == 2 and words in str(e.value)


def test_scram_credential_values():
    sha512 = ScramMechanism.SCRAM_SHA_512
    assert configs.scram_credential(sha512, "password=s3cret") == (4096, "s3cret")
    assert configs.scram_credential(sha512, "iterations=8192,password=a,b=c") == (8192, "a,b=c")
    for bad, words in [("iterations=100,password=hunter2", "less than the minimum 4096"),
                       ("pw=hunter2", "Invalid credential"), ("password=", "empty")]:
        with pytest.raises(CliError) as e:
            configs.scram_credential(sha512, bad)
        assert words in str(e.value) and "hunter2" not in str(e.value)


@pytest.mark.parametrize("value, text", [
    (1024.0, "1024.0"), (0.5, "0.5"), (12.25, "12.25"), (1e7, "1.0E7"), (123456789.0, "1.23456789E8"),
    (0.0001, "1.0E-4"), (0.0, "0.0"), (2.5e-5, "2.5E-5"), (9999999.0, "9999999.0"),
])
def test_java_double(value, text):
    assert configs.java_double(value) == text
