"""``kavka acls``: add, remove and list ACLs with kafka-acls.sh's options and
output, through the admin API (CreateAcls, DeleteAcls, DescribeAcls), so it
works against any Kafka-compatible cluster with an authorizer.

Options (kafka-acls.sh's): exactly one of ``--add``, ``--remove``,
``--list``; resources ``--topic``, ``--group``, ``--transactional-id``,
``--delegation-token``, ``--user-principal`` (each repeatable) and
``--cluster``; ``--resource-pattern-type`` literal (default) or prefixed,
and for ``--list``/``--remove`` also any (the name exactly, any pattern
type) or match (every pattern that applies to the name); entries from
``--allow-principal``/``--deny-principal`` (repeatable, ``User:alice``),
``--allow-host``/``--deny-host`` (default ``*`` for the principals given)
and ``--operation`` (repeatable, Kafka's names: Read, Write, Create,
Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs,
IdempotentWrite, CreateTokens, DescribeTokens, All; default All).

Shortcuts, Kafka's exact expansions: ``--producer`` allows WRITE, DESCRIBE
and CREATE on each ``--topic``, WRITE and DESCRIBE on each
``--transactional-id``, and with ``--idempotent`` IDEMPOTENT_WRITE on the
cluster; ``--consumer`` allows READ and DESCRIBE on each ``--topic`` and
READ on each ``--group``.

Output, as kafka-acls.sh prints it: ``--add`` prints ``Adding ACLs for
resource `ResourcePattern(...)`:`` and the entries, then the resulting ACLs
of the resources named; ``--list`` prints ``Current ACLs for resource
`ResourcePattern(...)`:`` followed by one tab-indented
``(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)``
per entry (``--principal`` keeps those of one principal). ``--remove`` asks
for confirmation (y) unless ``--force``. Failures: one ``Error: ...`` line
on stderr, exit code 1 (2 for bad command-line input).

Runs in a command-line process (``kavka acls ...``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from kavka.client.admin import KafkaAdmin
from kavka.security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    parse_name,
    pascal_name,
)
from kavka.security.principal import KafkaPrincipal
from kavka.tools.client_cli import (
    add_bootstrap_argument,
    add_command_config_argument,
    load_command_config,
    open_cluster,
    run_main,
    usage,
)

DESCRIPTION = "Add, remove and list ACLs (the options and output of kafka-acls.sh)."

Op = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
_RESOURCE_OPTIONS = (("topic", ResourceType.TOPIC), ("group", ResourceType.GROUP),
                     ("transactional_id", ResourceType.TRANSACTIONAL_ID),
                     ("delegation_token", ResourceType.DELEGATION_TOKEN),
                     ("user_principal", ResourceType.USER))
_OPERATION_NAMES = ", ".join(pascal_name(o) for o in AclOperation if o not in (Op.ANY, Op.UNKNOWN))


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument("--list", action="store_true", help="list ACLs (of the resources given, else all)")
    p.add_argument("--topic", action="append", default=[], help="a topic (repeatable); * for every topic")
    p.add_argument("--group", action="append", default=[], help="a consumer group (repeatable); * for every group")
    p.add_argument("--cluster", action="store_true", help="the cluster resource (kafka-cluster)")
    p.add_argument("--transactional-id", action="append", default=[], help="a transactional id (repeatable)")
    p.add_argument("--delegation-token", action="append", default=[], help="a delegation token id (repeatable)")
    p.add_argument("--user-principal", action="append", default=[],
                   help="a user resource, for the token operations (repeatable)")
    p.add_argument("--resource-pattern-type", default="literal", type=str.lower,
                   choices=["literal", "prefixed", "any", "match"],
                   help="literal (default) or prefixed when adding; when listing or removing also any (the name "
                        "exactly, any pattern type) or match (every pattern that applies to the name: the literal "
                        "name, the * wildcard and prefixes); with --remove, match is broad: use it with care")
    p.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                   help="a principal allowed, as Type:name (User:alice; User:* for everyone); repeatable")
    p.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                   help="a principal denied (repeatable); DENY wins over ALLOW")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                   help="an address the allowed principals may connect from (default * with --allow-principal)")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST",
                   help="an address the denied principals are denied from (default * with --deny-principal)")
    p.add_argument("--operation", action="append", default=[], metavar="OPERATION",
                   help=f"an operation (repeatable, default All): {_OPERATION_NAMES}")
    p.add_argument("--principal", action="append", default=[], metavar="PRINCIPAL",
                   help="list: only the ACLs of this principal (repeatable)")
    p.add_argument("--producer", action="store_true",
                   help="shortcut: WRITE, DESCRIBE, CREATE on the topics; WRITE, DESCRIBE on the transactional ids")
    p.add_argument("--idempotent", action="store_true",
                   help="with --producer: IDEMPOTENT_WRITE on the cluster as well")
    p.add_argument("--consumer", action="store_true",
                   help="shortcut: READ, DESCRIBE on the topics and READ on the groups")
    p.add_argument("--force", action="store_true", help="remove without asking for confirmation")


def _check(args: argparse.Namespace) -> None:
    """kafka-acls.sh's option rules (AclCommand's checkArgs), before anything is sent."""
    shortcut = args.producer or args.consumer
    if args.list:
        for opt in ("producer", "consumer", "allow_host", "allow_principal", "deny_host", "deny_principal"):
            if getattr(args, opt):
                raise usage(f"--{opt.replace('_', '-')} cannot be used with --list")
    if args.principal and not args.list:
        raise usage("The --principal option is only available if --list is set")
    if shortcut and (args.operation or args.deny_principal or args.deny_host):
        raise usage("--producer and --consumer infer the operations: --operation, --deny-principal and "
                    "--deny-host cannot be used with them")
    if args.producer and not args.topic:
        raise usage("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise usage("The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group
                          or (not args.producer and (args.cluster or args.transactional_id))):
        raise usage("With --consumer you must specify a --topic and a --group and no --cluster or "
                    "--transactional-id option should be specified.")
    if args.producer and not args.consumer and args.group:
        raise usage("--producer gives no ACL on a --group (add --consumer for that)")
    if shortcut and (args.delegation_token or args.user_principal or (args.cluster and not args.idempotent)):
        raise usage("--producer and --consumer give ACLs on topics, groups, transactional ids and (with "
                    "--idempotent) the cluster only")
    if args.add and args.resource_pattern_type not in ("literal", "prefixed"):
        raise usage(f"A '--resource-pattern-type' value of '{args.resource_pattern_type}' is not valid when "
                    "adding acls.")
    if args.cluster and args.resource_pattern_type == "prefixed":
        raise usage("--cluster names the one cluster resource, kafka-cluster: it takes no prefixed pattern")


def _principals(items: Iterable[str], option: str) -> list[str]:
    out = []
    for item in items:
        try:
            out.append(str(KafkaPrincipal.parse(item.strip())))
        except ValueError as e:
            raise usage(f"{option}: {e}") from None
    return list(dict.fromkeys(out))


def _operations(items: list[str]) -> list[AclOperation]:
    out = []
    for item in items or ["All"]:
        op = parse_name(AclOperation, item)
        if op is None or op in (Op.ANY, Op.UNKNOWN):
            raise usage(f"--operation {item!r} is not an operation; use one of {_OPERATION_NAMES}")
        out.append(op)
    return list(dict.fromkeys(out))


def _pattern_filters(args: argparse.Namespace) -> list[ResourcePatternFilter]:
    """The resources named on the command line, as filters (getResourceFilter)."""
    pattern_type = PatternType[args.resource_pattern_type.upper()]
    filters: list[ResourcePatternFilter] = []
    for option, rtype in _RESOURCE_OPTIONS:
        for name in getattr(args, option):
            name = name if rtype is ResourceType.TRANSACTIONAL_ID else name.strip()
            if not name:
                raise usage(f"--{option.replace('_', '-')} needs a name")
            filters.append(ResourcePatternFilter(rtype, name, pattern_type))
    if args.cluster or args.idempotent:
        filters.append(ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, pattern_type))
    return list(dict.fromkeys(filters))


def _entries(args: argparse.Namespace, operations: list[AclOperation]) -> set[AccessControlEntry]:
    """Every principal x operation x host of the allow and deny options (getAcl)."""
    out: set[AccessControlEntry] = set()
    for principals, hosts, permission in (
            (_principals(args.allow_principal, "--allow-principal"), args.allow_host, ALLOW),
            (_principals(args.deny_principal, "--deny-principal"), args.deny_host, DENY)):
        for host in [h.strip() for h in hosts] or ["*"]:
            if not host:
                raise usage("--allow-host/--deny-host needs an address (or * for any)")
            out.update(AccessControlEntry(p, host, op, permission) for p in principals for op in operations)
    return out


def _filter_to_entries(args: argparse.Namespace) -> dict[ResourcePatternFilter, set[AccessControlEntry]]:
    """Each resource filter with the entries to add or remove there
    (getResourceFilterToAcls), shortcuts expanded, operations checked."""
    filters = _pattern_filters(args)
    if not filters and not args.list:
        raise usage("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
                    "--delegation-token <Delegation Token ID>")
    out: dict[ResourcePatternFilter, set[AccessControlEntry]] = {}
    if not args.producer and not args.consumer:
        entries = _entries(args, _operations(args.operation))
        out = {f: set(entries) for f in filters}
    if args.producer:
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                out.setdefault(f, set()).update(_entries(args, [Op.WRITE, Op.DESCRIBE, Op.CREATE]))
            elif f.resource_type is ResourceType.TRANSACTIONAL_ID:
                out.setdefault(f, set()).update(_entries(args, [Op.WRITE, Op.DESCRIBE]))
            elif f.resource_type is ResourceType.CLUSTER and args.idempotent:
                out.setdefault(f, set()).update(_entries(args, [Op.IDEMPOTENT_WRITE]))
    if args.consumer:
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                out.setdefault(f, set()).update(_entries(args, [Op.READ, Op.DESCRIBE]))
            elif f.resource_type is ResourceType.GROUP:
                out.setdefault(f, set()).update(_entries(args, [Op.READ]))
    for f, entries in out.items():
        valid = SUPPORTED_OPERATIONS[f.resource_type] | {Op.ALL}
        wrong = {e.operation for e in entries} - valid
        if wrong:
            raise usage(f"ResourceType {f.resource_type.name} only supports operations "
                        f"{','.join(o.name for o in sorted(valid))}")
    return out


def _block(heading: str, entries: Iterable[object]) -> str:
    """kafka-acls.sh's layout: heading, newline, a space, the tab-indented
    entries one per line, a space, newline (println adds the last one)."""
    return f"{heading} \n {chr(10).join(chr(9) + str(e) for e in entries)} \n"


def _sorted_entries(entries: Iterable[AccessControlEntry]) -> list[AccessControlEntry]:
    return sorted(entries, key=lambda e: (e.principal, e.host, e.operation, e.permission_type))


async def _list(admin: KafkaAdmin, args: argparse.Namespace) -> None:
    filters = _pattern_filters(args)
    bindings: list[AclBinding] = []
    if not filters:
        bindings = await admin.describe_acls(AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None,
                                                                                    PatternType.ANY)))
    for f in filters:
        bindings.extend(await admin.describe_acls(AclBindingFilter(f)))
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for b in bindings:
        by_pattern.setdefault(b.pattern, set()).add(b.entry)
    patterns = sorted(by_pattern, key=lambda p: (p.resource_type, p.pattern_type, p.name))
    wanted = _principals(args.principal, "--principal")
    if not wanted:
        for p in patterns:
            print(_block(f"Current ACLs for resource `{p}`:", _sorted_entries(by_pattern[p])))
        return
    for principal in wanted:
        print(f"ACLs for principal `{principal}`")
        for p in patterns:
            mine = [e for e in _sorted_entries(by_pattern[p]) if e.principal == principal]
            if mine:
                print(_block(f"Current ACLs for resource `{p}`:", mine))


def _additions(args: argparse.Namespace) -> dict[ResourcePatternFilter, set[AccessControlEntry]]:
    to_add = _filter_to_entries(args)
    if any(not entries for entries in to_add.values()):
        raise usage("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return to_add


async def _add(admin: KafkaAdmin, args: argparse.Namespace,
               to_add: dict[ResourcePatternFilter, set[AccessControlEntry]]) -> None:
    for f, entries in to_add.items():
        assert f.name is not None  # a command-line resource always has its name
        pattern = ResourcePattern(f.resource_type, f.name, f.pattern_type)
        print(_block(f"Adding ACLs for resource `{pattern}`:", _sorted_entries(entries)))
        await admin.create_acls([AclBinding(pattern, e) for e in _sorted_entries(entries)])
    await _list(admin, args)


def _confirm(args: argparse.Namespace, question: str) -> bool:
    if args.force:
        return True
    print(question, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() == "y"


async def _remove(admin: KafkaAdmin, args: argparse.Namespace,
                  to_remove: dict[ResourcePatternFilter, set[AccessControlEntry]]) -> None:
    for f, entries in to_remove.items():
        if not entries:
            if _confirm(args, f"Are you sure you want to delete all ACLs for resource filter `{f}`? (y/n)"):
                await admin.delete_acls([AclBindingFilter(f)])
        elif _confirm(args, f"Are you sure you want to remove ACLs: \n "
                            f"{chr(10).join(chr(9) + str(e) for e in _sorted_entries(entries))} \n"
                            f" from resource filter `{f}`? (y/n)"):
            await admin.delete_acls([AclBindingFilter(f, AccessControlEntryFilter(e.principal, e.host, e.operation,
                                                                                   e.permission_type))
                                     for e in _sorted_entries(entries)])
    await _list(admin, args)


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        _check(args)
        properties = load_command_config(args.command_config)
        # Bad input is refused before anything is sent.
        plan = _additions(args) if args.add else _filter_to_entries(args) if args.remove else {}
        _principals(args.principal, "--principal")
        cluster = await open_cluster(args.bootstrap_server, client_id="kavka-acls", properties=properties)
        try:
            admin = KafkaAdmin(cluster)
            if args.add:
                await _add(admin, args, plan)
            elif args.remove:
                await _remove(admin, args, plan)
            else:
                await _list(admin, args)
        finally:
            await cluster.close()
        return 0

    return run_main(main)
