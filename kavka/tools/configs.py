"""``kavka configs``: describe and alter the dynamic configs of topics,
brokers, users, client ids and ips with kafka-configs.sh's options and output
(its ``--bootstrap-server`` mode), through the admin API, so it works
against any Kafka-compatible cluster.

Entities: ``--entity-type topics|brokers|users|clients|ips`` with
``--entity-name NAME`` or ``--entity-default``, paired in the order given
(``users`` and ``clients`` may be combined: a user's client id); the
shortcuts ``--topic``, ``--broker``, ``--user``, ``--client``, ``--ip``,
``--broker-defaults``, ``--user-defaults``, ``--client-defaults``,
``--ip-defaults``. An ip (an IP address, or the default) holds KIP-612's
``connection_creation_rate``, through AlterClientQuotas and
DescribeClientQuotas as the user and client-id quotas:
``Quota configs for ip '10.0.0.7' are connection_creation_rate=10.0``.

``--describe``: topics and brokers through DescribeConfigs with synonyms —
``Dynamic configs for topic t are:`` then ``  key=value sensitive=false
synonyms={SOURCE:key=value, ...}`` per dynamic key (``--all``: every key);
without a name, every topic (or every broker and the broker default).
Users and client ids through DescribeClientQuotas with the entities given
(strict): ``Quota configs for user-principal 'alice', client-id 'app' are
producer_byte_rate=1024.0`` (values printed as Java prints a double); for
users, also DescribeUserScramCredentials: ``SCRAM credential configs for
user-principal 'alice' are SCRAM-SHA-512=iterations=4096`` — never a salt
or key.

``--alter`` with ``--add-config 'k=v,k2=[a,b]'`` (commas inside ``[]``
belong to the value; the brackets are dropped), ``--add-config-file FILE``
and ``--delete-config k,k2``: topics and brokers through
IncrementalAlterConfigs (a deleted key must be set now: ``Invalid
config(s)``); users and client ids through AlterClientQuotas for the quota
keys; a user's ``SCRAM-SHA-256``/``SCRAM-SHA-512`` through
AlterUserScramCredentials, each given as ``[iterations=8192,password=...]``
(iterations default 4096, at least the mechanism's minimum) — the client
salts the password, which never travels. Quotas and credentials are not
altered in one command, credentials never for the default user: Kafka's
rules. Then ``Completed updating config for user alice.``

Failures: one ``Error: ...`` line on stderr, exit code 1 (2 for bad
command-line input).

Runs in a command-line process (``kavka configs ...``).
"""

from __future__ import annotations

import argparse
import decimal
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kavka.client.admin import KafkaAdmin
from kavka.client.admin_types import AlterOp, ConfigEntry, ResourceType
from kavka.common.config import ConfigError, load_properties
from kavka.common.errors import KafkaError
from kavka.security.quota.entity import (
    CLIENT_ID,
    DEFAULT,
    IP,
    IP_CONNECTION_RATE,
    QUOTA_CONFIGS,
    USER,
    ClientQuotaEntity,
    EntityName,
)
from kavka.security.sasl.credentials import DEFAULT_ITERATIONS, ScramMechanism
from kavka.tools.client_cli import (
    CliError,
    add_bootstrap_argument,
    add_command_config_argument,
    load_command_config,
    open_cluster,
    run_main,
    usage,
)

DESCRIPTION = ("Describe and alter the dynamic configs of topics, brokers, users, client ids and ips, "
               "quotas and SCRAM credentials included (the options and output of kafka-configs.sh).")

TOPICS, BROKERS, USERS, CLIENTS, IPS = "topics", "brokers", "users", "clients", "ips"
ENTITY_TYPES = (TOPICS, BROKERS, USERS, CLIENTS, IPS)
QUOTA_TYPES = {USERS: USER, CLIENTS: CLIENT_ID, IPS: IP}
# Kafka's other entity types, refused by name rather than misread.
UNSUPPORTED_TYPES = {"broker-loggers": "broker loggers"}
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                6: "DYNAMIC_BROKER_LOGGER_CONFIG"}
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2
# kafka-configs.sh's shortcut flags, in the order it reads them.
_NAME_SHORTCUTS = (("topic", TOPICS), ("client", CLIENTS), ("user", USERS), ("broker", BROKERS), ("ip", IPS))
_DEFAULT_SHORTCUTS = (("client_defaults", CLIENTS), ("user_defaults", USERS), ("broker_defaults", BROKERS),
                      ("ip_defaults", IPS))
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.DOTALL)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list the configs of the given entities")
    action.add_argument("--alter", action="store_true", help="change the configs of the given entity")
    p.add_argument("--entity-type", action="append", default=[], metavar="TYPE",
                   help=f"one of {', '.join(ENTITY_TYPES)} (users and clients may be combined)")
    p.add_argument("--entity-name", action=_NameAction, metavar="NAME",
                   help="the entity: a topic, a broker id, a user principal's name or a client id")
    p.add_argument("--entity-default", action=_NameAction, nargs=0,
                   help="the default entity (every broker, or every user / client id without its own quota)")
    p.add_argument("--topic", metavar="TOPIC", help="shortcut for --entity-type topics --entity-name TOPIC")
    p.add_argument("--broker", metavar="ID", help="shortcut for --entity-type brokers --entity-name ID")
    p.add_argument("--user", metavar="USER", help="shortcut for --entity-type users --entity-name USER")
    p.add_argument("--client", metavar="CLIENT_ID", help="shortcut for --entity-type clients --entity-name CLIENT_ID")
    p.add_argument("--ip", metavar="IP", help="shortcut for --entity-type ips --entity-name IP")
    p.add_argument("--broker-defaults", action="store_true", help="shortcut for --entity-type brokers --entity-default")
    p.add_argument("--user-defaults", action="store_true", help="shortcut for --entity-type users --entity-default")
    p.add_argument("--client-defaults", action="store_true",
                   help="shortcut for --entity-type clients --entity-default")
    p.add_argument("--ip-defaults", action="store_true", help="shortcut for --entity-type ips --entity-default")
    p.add_argument("--add-config", metavar="K=V,...",
                   help="configs to set: 'k1=v1,k2=[v1,v2,v2],k3=v3'; for a user's SCRAM credentials "
                        "'SCRAM-SHA-512=[password=secret],SCRAM-SHA-256=[iterations=8192,password=secret]'")
    p.add_argument("--add-config-file", metavar="FILE", help="configs to set, as a properties file")
    p.add_argument("--delete-config", action="append", default=[], metavar="K,...",
                   help="configs to remove (comma-separated, repeatable)")
    p.add_argument("--all", action="store_true",
                   help="with --describe of topics or brokers: every config, not only the dynamic ones")


class _NameAction(argparse.Action):
    """--entity-name and --entity-default share one list, in command-line order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[object] | None, option_string: str | None = None) -> None:
        names = list(getattr(namespace, "entity_names", None) or [])
        names.append(values if isinstance(values, str) else "")
        namespace.entity_names = names


@dataclass(frozen=True, slots=True)
class Entities:
    """The entity types and names given, paired in order ("" = the default)."""

    types: list[str]
    names: list[str]


def entities_of(args: argparse.Namespace) -> Entities:
    """kafka-configs.sh's pairing: --entity-type values then the shortcut
    flags; --entity-name/--entity-default in order then the shortcut values."""
    types = list(args.entity_type)
    names = list(getattr(args, "entity_names", None) or [])
    for attr, entity_type in _NAME_SHORTCUTS:
        if getattr(args, attr) is not None:
            types.append(entity_type)
    for attr, entity_type in _DEFAULT_SHORTCUTS:
        if getattr(args, attr):
            types.append(entity_type)
    names += [getattr(args, attr) for attr, _ in _NAME_SHORTCUTS if getattr(args, attr) is not None]
    names += ["" for attr, _ in _DEFAULT_SHORTCUTS if getattr(args, attr)]
    return Entities(types, names)


def check(args: argparse.Namespace, entities: Entities) -> None:
    types, names = entities.types, entities.names
    if not types:
        raise usage("an entity type is needed: --entity-type (topics, brokers, users, clients, ips) or a shortcut "
                    "such as --topic or --user")
    for t in types:
        if t in UNSUPPORTED_TYPES:
            raise usage(f"--entity-type {t}: {UNSUPPORTED_TYPES[t]} are not supported by Kavka")
        if t not in ENTITY_TYPES:
            raise usage(f"--entity-type {t!r} is not one of {', '.join(ENTITY_TYPES)}")
    if len(set(types)) != len(types):
        raise usage(f"Duplicate entity type(s) specified: {', '.join(sorted({t for t in types if types.count(t) > 1}))}")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise usage("Only 'users' and 'clients' entity types may be specified together")
    if len(names) > len(types):
        raise usage("More entity names specified than entity types")
    if args.alter and len(names) != len(types):
        raise usage("--entity-name or --entity-default must be specified with each --entity-type for --alter")
    if types[0] == TOPICS and names and names[0] == "":
        raise usage("--entity-default is not supported for topics")
    if types[0] == BROKERS and names and names[0] and not names[0].isdigit():
        raise usage(f"The entity name for brokers must be a valid integer broker id, but it is: {names[0]}")
    if types[0] == IPS and names and names[0]:
        try:
            ClientQuotaEntity(ip=names[0])
        except ValueError:
            raise usage(f"The entity name for ips must be a valid IP address, but it is: {names[0]}") from None
    has_changes = args.add_config is not None or args.add_config_file is not None or args.delete_config
    if args.alter and not has_changes:
        raise usage("At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter")
    if args.describe and has_changes:
        raise usage("--add-config, --add-config-file and --delete-config go with --alter, not --describe")
    if args.all and (args.alter or types[0] not in (TOPICS, BROKERS)):
        raise usage("--all goes with --describe of topics or brokers")


# -- parsing --------------------------------------------------------------------------------

def parse_add_config(text: str) -> dict[str, str]:
    """kafka-configs.sh's --add-config: pairs split at commas outside
    ``[...]``, each at its first ``=`` outside ``[...]``; brackets dropped
    from values, keys and values trimmed."""
    pairs: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            pairs.append(text[start:i])
            start = i + 1
    pairs.append(text[start:])
    out: dict[str, str] = {}
    for pair in pairs:
        cut = _top_level_equals(pair)
        if cut is None:
            raise usage(f"--add-config: {pair.strip()!r} is not key=value "
                        "(all configs to be added must be in the format \"key=val\")")
        key = pair[:cut].strip()
        if not key:
            raise usage(f"--add-config: {pair.strip()!r} has no key")
        out[key] = pair[cut + 1:].replace("[", "").replace("]", "").strip()
    return out


def _top_level_equals(pair: str) -> int | None:
    depth = 0
    found = None
    for i, ch in enumerate(pair):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == "=" and depth == 0:
            if found is not None:
                return None  # a second top-level '=': not one key=value
            found = i
    return found


def configs_to_add(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    if args.add_config_file is not None:
        path = args.add_config_file
        try:
            with open(path, encoding="utf-8") as f:
                out.update(load_properties(f.read(), path))
        except OSError as e:
            raise usage(f"--add-config-file {path}: {e.strerror or e}") from None
        except ConfigError as e:
            raise usage(f"--add-config-file {path}: {e}") from None
    if args.add_config is not None:
        out.update(parse_add_config(args.add_config))
    return out


def configs_to_delete(args: argparse.Namespace) -> list[str]:
    return [k.strip() for item in args.delete_config for k in item.split(",") if k.strip()]


def scram_credential(mechanism: ScramMechanism, value: str) -> tuple[int, str]:
    """``[iterations=N,]password=P`` (brackets already dropped) ->
    (iterations, password). Never echoes the password."""
    m = _CREDENTIAL.fullmatch(value)
    if m is None:
        raise usage(f"Invalid credential property {mechanism.mechanism_name}: give "
                    "[iterations=N,password=...] or [password=...]")
    iterations = DEFAULT_ITERATIONS if m.group(1) in (None, "", "-1") else int(m.group(1))
    if iterations < mechanism.min_iterations:
        raise usage(f"Iterations {iterations} is less than the minimum {mechanism.min_iterations} required "
                    f"for {mechanism.mechanism_name}")
    if not m.group(2):
        raise usage(f"{mechanism.mechanism_name}: the password is empty")
    return iterations, m.group(2)


def java_double(value: float) -> str:
    """``value`` as Java's Double.toString prints it (1024.0, 1.0E7, 1.5E-4),
    which is how kafka-configs.sh shows a quota."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(float(value))
        return text if "e" not in text else format(decimal.Decimal(text), "f")
    sign, digits, exponent = decimal.Decimal(repr(abs(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    scale = len(digits) - 1 + exponent
    mantissa = "".join(map(str, digits))
    fraction = mantissa[1:] or "0"
    return f"{'-' if value < 0 else ''}{mantissa[0]}.{fraction}E{scale}"


# -- describe ---------------------------------------------------------------------------------

def _show(entry: ConfigEntry) -> str:
    synonyms = ", ".join(f"{SOURCE_NAMES.get(source, 'UNKNOWN')}:{name}={'null' if value is None else value}"
                         for name, value, source in entry.synonyms)
    value = "null" if entry.value is None else entry.value
    return f"  {entry.name}={value} sensitive={str(entry.is_sensitive).lower()} synonyms={{{synonyms}}}"


async def describe_resources(admin: KafkaAdmin, entity_type: str, names: list[str], describe_all: bool) -> None:
    if names:
        targets = names
    elif entity_type == TOPICS:
        targets = await admin.list_topics(include_internal=True)
    else:
        cluster = await admin.describe_cluster()
        targets = [str(b[0]) for b in cluster.brokers] + [""]
    rtype = ResourceType.TOPIC if entity_type == TOPICS else ResourceType.BROKER
    for name in targets:
        entries = await admin.describe_configs(rtype, name, include_synonyms=True)
        if entity_type == BROKERS and name == "":
            print("Default configs for brokers in the cluster are:")
            dynamic = 3
        else:
            print(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {name} are:")
            dynamic = 1 if entity_type == TOPICS else 2
        for entry in sorted(entries.values(), key=lambda e: e.name):
            if describe_all or entry.source == dynamic:
                print(_show(entry))


def _component(entity_type: str, name: str | None) -> tuple[str, int, str | None]:
    quota_type = QUOTA_TYPES[entity_type]
    if name is None:
        return quota_type, MATCH_ANY, None
    if name == "":
        return quota_type, MATCH_DEFAULT, None
    return quota_type, MATCH_EXACT, name


def _entity_text(entity: ClientQuotaEntity) -> str:
    def part(label: str, name: EntityName | None) -> list[str]:
        if name is None:
            return []
        return [f"the default {label}" if name is DEFAULT else f"{label} '{name}'"]
    return ", ".join(part("user-principal", entity.user) + part("client-id", entity.client_id)
                     + part("ip", entity.ip))


def _sort_key(entity: ClientQuotaEntity) -> tuple[str, str, str]:
    def key(name: EntityName | None) -> str:
        return "" if name is None else "\0" if name is DEFAULT else f"\1{name}"
    return key(entity.user), key(entity.client_id), key(entity.ip)


async def describe_quota_entities(admin: KafkaAdmin, entities: Entities) -> None:
    names: list[str | None] = list(entities.names)
    components = [_component(t, names[i] if i < len(names) else None) for i, t in enumerate(entities.types)]
    found = await admin.describe_client_quotas(components, strict=True)
    for entity, values in sorted(found, key=lambda item: _sort_key(item[0])):
        shown = ", ".join(f"{k}={java_double(v)}" for k, v in sorted(values.items()))
        print(f"Quota configs for {_entity_text(entity)} are {shown}")
    # As kafka-configs.sh: credentials only for users alone, never for the default user.
    if entities.types[0] != USERS or CLIENTS in entities.types or "" in entities.names:
        return
    described = await admin.describe_user_scram_credentials(entities.names or None)
    for user, result in described.items():
        if isinstance(result, KafkaError):
            print(f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                  f"{_exception_name(result)}: {result.message}")
            continue
        text = ", ".join(f"{m.mechanism_name}=iterations={i}" for m, i in sorted(result, key=lambda r: r[0].value))
        print(f"SCRAM credential configs for user-principal '{user}' are {text}")


def _exception_name(error: KafkaError) -> str:
    """Kafka's exception class for an error code (RESOURCE_NOT_FOUND ->
    ResourceNotFoundException), as kafka-configs.sh names it."""
    return "".join(w.capitalize() for w in error.code.name.split("_")) + "Exception"


# -- alter ------------------------------------------------------------------------------------

async def alter_resource(admin: KafkaAdmin, entity_type: str, name: str, add: dict[str, str],
                         delete: list[str]) -> None:
    rtype = ResourceType.TOPIC if entity_type == TOPICS else ResourceType.BROKER
    current = await admin.describe_configs(rtype, name)
    dynamic = 1 if entity_type == TOPICS else 3 if name == "" else 2
    present = {e.name for e in current.values() if e.source == dynamic}
    invalid = [k for k in delete if k not in present]
    if invalid:
        raise CliError(f"Invalid config(s): {','.join(invalid)}")
    ops = [(k, AlterOp.SET, v) for k, v in add.items()] + [(k, AlterOp.DELETE, None) for k in delete]
    await admin.incremental_alter_configs(rtype, name, ops)


def _quota_entity(entities: Entities) -> ClientQuotaEntity:
    names = dict(zip(entities.types, entities.names, strict=True))

    def name_of(entity_type: str) -> EntityName | None:
        if entity_type not in names:
            return None
        return DEFAULT if names[entity_type] == "" else names[entity_type]
    return ClientQuotaEntity(name_of(USERS), name_of(CLIENTS), name_of(IPS))


async def alter_quota_entity(admin: KafkaAdmin, entities: Entities, add: dict[str, str], delete: list[str]) -> None:
    scram_add = {k: v for k, v in add.items() if ScramMechanism.of(k) is not None}
    scram_delete = [k for k in delete if ScramMechanism.of(k) is not None]
    unknown_add = [k for k in add if k not in QUOTA_CONFIGS and k not in scram_add]
    unknown_delete = [k for k in delete if k not in QUOTA_CONFIGS and k not in scram_delete]
    if entities.types[0] == IPS:
        unexpected = [k for k in [*add, *delete] if k != IP_CONNECTION_RATE]
        if unexpected:
            raise usage(f"Only connection quota configs can be added for 'ips' using --bootstrap-server. "
                        f"Unexpected config names: {', '.join(unexpected)}")
    quota_changes = any(k in QUOTA_CONFIGS or (entities.types[0] == IPS and k == IP_CONNECTION_RATE)
                        for k in [*add, *delete])
    if entities.types[0] == IPS:
        pass
    elif entities.types[0] == CLIENTS or len(entities.types) == 2:
        if unknown_add or scram_add:
            raise usage(f"Only quota configs can be added for 'clients' using --bootstrap-server. "
                        f"Unexpected config names: {', '.join([*unknown_add, *scram_add])}")
        if unknown_delete or scram_delete:
            raise usage(f"Only quota configs can be deleted for 'clients' using --bootstrap-server. "
                        f"Unexpected config names: {', '.join([*unknown_delete, *scram_delete])}")
    else:
        if unknown_add:
            raise usage(f"Only quota and SCRAM credential configs can be added for 'users' using "
                        f"--bootstrap-server. Unexpected config names: {', '.join(unknown_add)}")
        if unknown_delete:
            raise usage(f"Only quota and SCRAM credential configs can be deleted for 'users' using "
                        f"--bootstrap-server. Unexpected config names: {', '.join(unknown_delete)}")
        if scram_add or scram_delete:
            if "" in entities.names:
                raise usage("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                            "Credentials using --bootstrap-server.")
            if quota_changes:
                raise usage("Cannot alter both quota and SCRAM credential configs simultaneously for 'users' "
                            "using --bootstrap-server.")
    if quota_changes:
        entity = _quota_entity(entities)
        values: dict[str, float | None] = {}
        for key, text in add.items():
            try:
                values[key] = float(text)
            except ValueError:
                raise usage(f"Cannot parse quota configuration value for {key}: {text}") from None
        current = await admin.describe_client_quotas(
            [_component(t, n) for t, n in zip(entities.types, entities.names, strict=True)], strict=True)
        present = {k for e, vals in current if e == entity for k in vals}
        invalid = [k for k in delete if k not in present]
        if invalid:
            raise CliError(f"Invalid config(s): {','.join(invalid)}")
        values.update({k: None for k in delete})
        await admin.alter_client_quotas({entity: values})
        return
    user = entities.names[0]
    upsertions = []
    for key, value in scram_add.items():
        mechanism = ScramMechanism.of(key)
        assert mechanism is not None
        iterations, password = scram_credential(mechanism, value)
        upsertions.append((user, mechanism, iterations, password))
    deletions = []
    for key in scram_delete:
        mechanism = ScramMechanism.of(key)
        assert mechanism is not None
        deletions.append((user, mechanism))
    await admin.alter_user_scram_credentials(upsertions, deletions)


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        entities = entities_of(args)
        check(args, entities)
        properties = load_command_config(args.command_config)
        add, delete = (configs_to_add(args), configs_to_delete(args)) if args.alter else ({}, [])
        cluster = await open_cluster(args.bootstrap_server, client_id="kavka-configs", properties=properties)
        try:
            admin = KafkaAdmin(cluster)
            head_type = entities.types[0]
            if args.describe:
                if head_type in (TOPICS, BROKERS):
                    await describe_resources(admin, head_type, entities.names, args.all)
                else:
                    await describe_quota_entities(admin, entities)
                return 0
            head_name = entities.names[0]
            if head_type in (TOPICS, BROKERS):
                await alter_resource(admin, head_type, head_name, add, delete)
            else:
                await alter_quota_entity(admin, entities, add, delete)
            if head_name:
                print(f"Completed updating config for {head_type[:-1]} {head_name}.")
            else:
                print(f"Completed updating default config for {head_type} in the cluster.")
        finally:
            await cluster.close()
        return 0

    return run_main(main)
