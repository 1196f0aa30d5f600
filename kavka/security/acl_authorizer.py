"""``AclAuthorizer``: Kafka's ACL authorizer (``kafka.security.authorizer.
AclAuthorizer``) as an in-memory cache of ACLs and the decisions made from it.

What it decides, for one ``Action`` (an operation on a literal resource) and
the ``Session`` asking:

1. a principal named in ``super.users`` is allowed everything;
2. the ACLs that apply to the resource are those of the LITERAL pattern of
   its exact name, the LITERAL ``*`` of its type and every PREFIXED pattern
   whose name is a prefix of it (KIP-290);
3. when none applies, ``allow.everyone.if.no.acl.found`` decides (default:
   denied);
4. otherwise a DENY entry of the principal (or ``User:*``), from the host
   (or ``*``), for the operation (or ALL) denies; failing that, an ALLOW
   entry with the same matching for the operation, for ALL or for an
   operation that implies it (``granting_operations``) allows; anything
   else is denied. DENY always wins.

``authorize_by_resource_type`` answers Kafka's
``Authorizer.authorizeByResourceType``: may the session do the operation on
at least one resource of a type (KIP-679: an idempotent producer needs WRITE
on some topic)?

The cache is fed by whoever keeps the ACLs (``update_cache`` for one
pattern, ``load`` for all of them): in a broker, the ZooKeeper-backed
``kavka.server.acl_manager.AclManager``. Lookups cost a few dictionary
probes: the LITERAL patterns by name, the PREFIXED ones by the lengths of the
prefixes present (so a long name costs nothing beyond the prefixes that
exist).

The audit log (logger ``kafka.authorizer.logger``, Kafka's name, so that an
operator's logging configuration carries over): a denial of a resource the
request named explicitly (``Action.log_if_denied``) at INFO, a denial of a
resource the broker only filters out (a topic hidden from Metadata) at
DEBUG, an allowed action at DEBUG only when ``log_if_allowed``. Each
distinct operation on a resource is logged once per ``authorize`` call, with
the number of times the request referred to it.

Runs on the broker's event loop; no method blocks or awaits.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kavka.security.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourcePattern,
    ResourceType,
    granting_operations,
    pascal_name,
)
from kavka.security.principal import KafkaPrincipal, Session

AUDIT_LOGGER = "kafka.authorizer.logger"
audit_log = logging.getLogger(AUDIT_LOGGER)

# Kafka's class names for authorizer.class.name (the old SimpleAclAuthorizer
# name still selects the same ACL authorizer, as Kafka's AuthorizerWrapper did).
ACL_AUTHORIZER_CLASS = "kafka.security.authorizer.AclAuthorizer"
SIMPLE_ACL_AUTHORIZER_CLASS = "kafka.security.auth.SimpleAclAuthorizer"
ACL_AUTHORIZER_CLASSES = (ACL_AUTHORIZER_CLASS, SIMPLE_ACL_AUTHORIZER_CLASS)

Entries = frozenset[AccessControlEntry]
_NONE: Entries = frozenset()


def parse_super_users(text: str | None) -> frozenset[KafkaPrincipal]:
    """``super.users``: principals separated by ``;`` (``User:admin;User:ops``).
    Raises ValueError naming the item that is not ``Type:name``."""
    if not text:
        return frozenset()
    return frozenset(KafkaPrincipal.parse(item.strip()) for item in text.split(";") if item.strip())


class AclAuthorizer:
    """See the module docstring. ``super_users`` are always allowed;
    ``allow_everyone_if_no_acl_found`` decides for resources no ACL applies
    to. Implements ``kavka.security.authorizer.Authorizer``."""

    def __init__(self, *, super_users: Iterable[KafkaPrincipal] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        # resource type -> name -> entries, one map per pattern type; a
        # pattern with no entries is absent.
        self._literal: dict[ResourceType, dict[str, Entries]] = {}
        self._prefixed: dict[ResourceType, dict[str, Entries]] = {}
        # resource type -> lengths of its PREFIXED names, counted, so a
        # lookup probes only the prefix lengths that exist.
        self._prefix_lengths: dict[ResourceType, Counter[int]] = {}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AclAuthorizer:
        """From the broker's ``super.users`` and ``allow.everyone.if.no.acl.found``."""
        return cls(super_users=parse_super_users(config["super.users"]),
                   allow_everyone_if_no_acl_found=bool(config["allow.everyone.if.no.acl.found"]))

    # -- decisions ---------------------------------------------------------------------

    def authorize(self, session: Session, actions: Sequence[Action], *, request: str | None = None) -> list[bool]:
        """One answer per action, in order (True: allowed). ``request`` names
        the API for the audit log (e.g. ``Produce``)."""
        results = [self._decide(session, a) for a in actions]
        if audit_log.isEnabledFor(logging.INFO):
            self._audit(session, actions, results, request)
        return results

    def _decide(self, session: Session, action: Action) -> bool:
        if action.operation in (AclOperation.ANY, AclOperation.UNKNOWN) or action.resource_type in (
                ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"an action names one operation on one resource, not {action}")
        principal = session.principal
        if principal in self.super_users:
            return True
        entries = self._matching_entries(action.resource_type, action.name)
        if not entries:
            return self.allow_everyone_if_no_acl_found
        who = (str(principal), WILDCARD_PRINCIPAL)
        hosts = (session.client_host, WILDCARD_HOST)
        operation = action.operation
        granting = granting_operations(operation)
        allowed = False
        for entry in entries:
            if entry.principal not in who or entry.host not in hosts:
                continue
            if entry.permission_type is AclPermissionType.DENY:
                if entry.operation is operation or entry.operation is AclOperation.ALL:
                    return False
            elif entry.operation in granting or entry.operation is AclOperation.ALL:
                allowed = True
        return allowed

    def _matching_entries(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        out: list[AccessControlEntry] = []
        literal = self._literal.get(resource_type)
        if literal:
            out.extend(literal.get(WILDCARD_RESOURCE, _NONE))
            if name != WILDCARD_RESOURCE:
                out.extend(literal.get(name, _NONE))
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            size = len(name)
            for length in self._prefix_lengths[resource_type]:
                if length <= size:
                    out.extend(prefixed.get(name[:length], _NONE))
        return out

    def authorize_by_resource_type(self, session: Session, operation: AclOperation, resource_type: ResourceType,
                                   *, request: str | None = None) -> bool:
        """True when the session may do ``operation`` on at least one
        resource of ``resource_type`` (Kafka's ``authorizeByResourceType``):
        super users may; a DENY on the LITERAL ``*`` forbids; then
        ``allow.everyone.if.no.acl.found`` allows; otherwise an ALLOW (LITERAL
        or PREFIXED, for the operation or ALL, no implied operations) that is
        not cancelled by a DENY of the same literal name or of a prefix of it
        allows. The LITERAL ``*`` ALLOW is cancelled only by the ``*`` DENY."""
        if operation in (AclOperation.ANY, AclOperation.UNKNOWN) or resource_type in (
                ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"operation {operation.name} on resource type {resource_type.name} is not a concrete check")
        if session.principal in self.super_users:
            return True
        who = (str(session.principal), WILDCARD_PRINCIPAL)
        hosts = (session.client_host, WILDCARD_HOST)
        ops = (operation, AclOperation.ALL)

        def names(table: dict[ResourceType, dict[str, Entries]], permission: AclPermissionType) -> set[str]:
            return {name for name, entries in table.get(resource_type, {}).items()
                    if any(e.permission_type is permission and e.principal in who and e.host in hosts
                           and e.operation in ops for e in entries)}

        deny_literals = names(self._literal, AclPermissionType.DENY)
        if WILDCARD_RESOURCE in deny_literals:
            allowed = False
        elif self.allow_everyone_if_no_acl_found:
            allowed = True
        else:
            deny_prefixes = names(self._prefixed, AclPermissionType.DENY)

            def dominated(name: str) -> bool:
                return any(name[:n] in deny_prefixes for n in range(len(name) + 1))

            allowed = (any(not dominated(p) for p in names(self._prefixed, AclPermissionType.ALLOW))
                       or any(lit == WILDCARD_RESOURCE or (lit not in deny_literals and not dominated(lit))
                              for lit in names(self._literal, AclPermissionType.ALLOW)))
        if not allowed or audit_log.isEnabledFor(logging.DEBUG):
            self._log(session, operation, f"{pascal_name(resource_type)}:UNKNOWN:NONE", allowed, True, request, 0)
        return allowed

    # -- the audit log -----------------------------------------------------------------

    def _audit(self, session: Session, actions: Sequence[Action], results: list[bool], request: str | None) -> None:
        seen: dict[tuple[AclOperation, ResourceType, str, bool], list[Any]] = {}
        for action, allowed in zip(actions, results, strict=True):
            key = (action.operation, action.resource_type, action.name, allowed)
            flag = action.log_if_allowed if allowed else action.log_if_denied
            if key in seen:
                seen[key][0] += action.resource_reference_count
                seen[key][1] |= flag
            else:
                seen[key] = [action.resource_reference_count, flag]
        for (operation, rtype, name, allowed), (count, flag) in seen.items():
            self._log(session, operation, f"{pascal_name(rtype)}:LITERAL:{name}", allowed, flag, request, count)

    @staticmethod
    def _log(session: Session, operation: AclOperation, resource: str, allowed: bool, flag: bool,
             request: str | None, count: int) -> None:
        level = (logging.DEBUG if flag else logging.NOTSET) if allowed else (logging.INFO if flag else logging.DEBUG)
        if level == logging.NOTSET or not audit_log.isEnabledFor(level):
            return
        audit_log.log(level, "Principal = %s is %s Operation = %s from host = %s on resource = %s for request = %s "
                      "with resourceRefCount = %d", session.principal, "Allowed" if allowed else "Denied",
                      pascal_name(operation), session.client_host, resource, request or "unknown", count)

    # -- the cache ---------------------------------------------------------------------

    def entries(self, pattern: ResourcePattern) -> Entries:
        """The entries of one pattern (empty if it has none)."""
        return self._table(pattern.pattern_type).get(pattern.resource_type, {}).get(pattern.name, _NONE)

    def resource_patterns(self) -> list[ResourcePattern]:
        """Every pattern that has entries."""
        out: list[ResourcePattern] = []
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            for rtype, by_name in self._table(pattern_type).items():
                out.extend(ResourcePattern(rtype, name, pattern_type) for name in by_name)
        return out

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """Every binding the filter matches (DescribeAcls), sorted by pattern."""
        out: list[AclBinding] = []
        for pattern in sorted(self.resource_patterns(), key=_pattern_order):
            if binding_filter.pattern.matches(pattern):
                out.extend(AclBinding(pattern, e) for e in sorted(self.entries(pattern), key=_entry_order)
                           if binding_filter.entry.matches(e))
        return out

    def update_cache(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Replace the entries of one pattern (none: the pattern goes)."""
        if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise ValueError(f"{pattern} is not a LITERAL or PREFIXED pattern")
        new = frozenset(entries)
        by_name = self._table(pattern.pattern_type).setdefault(pattern.resource_type, {})
        existed = pattern.name in by_name
        if new:
            by_name[pattern.name] = new
        else:
            by_name.pop(pattern.name, None)
        if pattern.pattern_type is PatternType.PREFIXED and existed != bool(new):
            lengths = self._prefix_lengths.setdefault(pattern.resource_type, Counter())
            lengths[len(pattern.name)] += 1 if new else -1
            if lengths[len(pattern.name)] == 0:
                del lengths[len(pattern.name)]

    def load(self, acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]]) -> None:
        """Replace the whole cache (a full reload from the ACL store)."""
        self._literal.clear()
        self._prefixed.clear()
        self._prefix_lengths.clear()
        for pattern, entries in acls.items():
            self.update_cache(pattern, entries)

    def _table(self, pattern_type: PatternType) -> dict[ResourceType, dict[str, Entries]]:
        if pattern_type is PatternType.LITERAL:
            return self._literal
        if pattern_type is PatternType.PREFIXED:
            return self._prefixed
        raise ValueError(f"pattern type {pattern_type.name} is not LITERAL or PREFIXED")


def _pattern_order(p: ResourcePattern) -> tuple[int, int, str]:
    return (p.resource_type, p.pattern_type, p.name)


def _entry_order(e: AccessControlEntry) -> tuple[str, str, int, int]:
    return (e.principal, e.host, e.operation, e.permission_type)
