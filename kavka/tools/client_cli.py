"""What the client-side commands (``kavka topics``, ``console-producer``,
``console-consumer``, ``acls``) share: the ``--bootstrap-server`` option,
``--command-config`` (a client.properties file), ``--property key=value``
parsing, and running an asyncio main that turns every expected failure into
one ``Error: ...`` line on stderr and a non-zero exit code.

``--command-config FILE``: Java-properties client settings, as Kafka's
tools take them (and as ``kavka up --secure`` writes them). The keys
honoured are ``client.id``, ``request.timeout.ms`` and the security
settings of ``kavka.security.client_properties`` in either librdkafka's
names (``security.protocol``, ``sasl.mechanism``, ``sasl.username``,
``sasl.password``, ``ssl.ca.location``, ``ssl.certificate.location``,
``ssl.key.location``, ``ssl.key.password``, ...) or the Java client's
(``sasl.jaas.config``, ``ssl.truststore.*``, ``ssl.keystore.*``, ...); so
one file serves Kavka's tools, confluent-kafka and kcat (``-F``). Any other
key is refused naming the file and the key rather than ignored. Tools that
talk through confluent-kafka get the same settings in librdkafka's names
(``CommandConfig.librdkafka``).

Exit codes: 0 success, 1 the operation failed (a broker error, no broker
reachable, a record not delivered), 2 bad command-line input. A traceback
means a bug in Kavka, never bad input.

Called from the main thread of a command-line process.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kavka.client.cluster import Cluster, parse_bootstrap
from kavka.client.errors import AuthenticationFailed, ClientConnectionError
from kavka.common.config import ConfigError, load_properties
from kavka.common.errors import KafkaError
from kavka.security.client_properties import (
    SECURITY_KEYS,
    client_security_from_properties,
    librdkafka_security_config,
)
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity

EXIT_FAILED = 1
EXIT_USAGE = 2
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\", "0": "\0"}


class CliError(Exception):
    """A failure to report as one line; ``exit_code`` is 1 (failed) or 2
    (bad command-line input)."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def usage(message: str) -> CliError:
    return CliError(message, EXIT_USAGE)


def add_bootstrap_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT...]",
                   help="one or more brokers to bootstrap from, e.g. 127.0.0.1:9092")


def add_command_config_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--command-config", metavar="FILE",
                   help="client settings as Java properties: client.id, request.timeout.ms, and security "
                        "(security.protocol, sasl.*, ssl.* in librdkafka's or Java's names), e.g. the "
                        "client.properties `kavka up --secure` writes")


# Client settings a --command-config file may give (see the module docstring).
COMMAND_CONFIG_KEYS: tuple[str, ...] = ("client.id", "request.timeout.ms", *SECURITY_KEYS)


@dataclass(frozen=True)
class CommandConfig:
    """A --command-config file, checked: its ``properties``, and the
    ``security`` built from them (PLAINTEXT without a file)."""

    path: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    security: ClientSecurity = PLAINTEXT_SECURITY

    def get(self, key: str, default: str) -> str:
        return self.properties.get(key, default)

    def librdkafka(self) -> dict[str, str]:
        """The security settings in librdkafka's names, for confluent-kafka."""
        if self.path is None:
            return {}
        try:
            return librdkafka_security_config(self.properties, f"--command-config {self.path}")
        except ValueError as e:
            raise usage(str(e)) from None


def load_command_config(path: str | None) -> CommandConfig:
    """The settings of a --command-config file (none without one); a key
    the client cannot honour, or a bad value, is refused naming both."""
    if path is None:
        return CommandConfig()
    try:
        with open(path, encoding="utf-8") as f:
            props = load_properties(f.read(), path)
    except OSError as e:
        raise usage(f"--command-config {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise usage(f"--command-config {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except ConfigError as e:
        raise usage(f"--command-config {path}: {e}") from None
    for key, value in props.items():
        if key not in COMMAND_CONFIG_KEYS:
            raise usage(f"--command-config {path}: {key!r} is not a client setting Kavka's tools honour; "
                        f"known: {', '.join(COMMAND_CONFIG_KEYS)}")
        if key == "request.timeout.ms" and (not value.isdigit() or int(value) <= 0):
            raise usage(f"--command-config {path}: request.timeout.ms={value!r} is not a positive integer")
    try:
        security = client_security_from_properties(props, f"--command-config {path}")
    except ValueError as e:
        raise usage(str(e)) from None
    return CommandConfig(path, props, security)


def unescape(text: str) -> str:
    r"""``\t``, ``\n``, ``\r``, ``\0`` and ``\\`` in a property value become the
    characters they name, so ``--property key.separator=\t`` works without a
    shell's ``$'\t'``. Any other backslash is kept as it is."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPES:
            out.append(_ESCAPES[text[i + 1]])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_key_values(items: Iterable[str], what: str) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{k: v}`` (split at the first ``=``)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise usage(f"{what} {item!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def parse_properties(items: Iterable[str], defaults: Mapping[str, str]) -> dict[str, str]:
    """``--property`` values over ``defaults``; a name not in ``defaults`` is
    refused with the list of known names (a typo must not be ignored)."""
    given = parse_key_values(items, "--property")
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise usage(f"unknown --property {', '.join(unknown)}; known: {', '.join(sorted(defaults))}")
    return {**defaults, **{k: unescape(v) for k, v in given.items()}}


def check_bootstrap(text: str) -> str:
    try:
        parse_bootstrap(text)
    except ValueError as e:
        raise usage(f"--bootstrap-server: {e}") from None
    return text


async def open_cluster(bootstrap: str, *, request_timeout_ms: int = 30_000,
                       client_id: str = "kavka-cli", properties: CommandConfig | None = None) -> Cluster:
    """A started Cluster; a cluster nobody answers for raises
    ``NoBrokersAvailable`` within the connect timeout (at most 10 s).
    ``properties`` (from ``load_command_config``) override the defaults and
    give the security settings."""
    config = properties or CommandConfig()
    client_id = config.get("client.id", client_id)
    request_timeout_ms = int(config.get("request.timeout.ms", str(request_timeout_ms)))
    cluster = Cluster(check_bootstrap(bootstrap), client_id=client_id, request_timeout_ms=request_timeout_ms,
                      connect_timeout_ms=min(10_000, request_timeout_ms), security=config.security)
    try:
        await cluster.start()
    except BaseException:
        await cluster.close()
        raise
    return cluster


def run_main(main: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run ``main()`` on a new event loop; report expected failures as one
    ``Error:`` line and return the exit code."""
    try:
        return asyncio.run(main())
    except CliError as e:
        print(f"Error: {e}", file=sys.stderr)
        return e.exit_code
    except (ClientConnectionError, AuthenticationFailed) as e:  # the message says it all; the code adds nothing
        print(f"Error: {e.message}", file=sys.stderr)
        return EXIT_FAILED
    except KafkaError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except (ValueError, OSError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_FAILED
