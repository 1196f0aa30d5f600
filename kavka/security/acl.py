"""Kafka's ACL vocabulary, with the wire codes of DescribeAcls/CreateAcls/
DeleteAcls (KIP-140, KIP-290 for pattern types).

- ``ResourcePattern``: a resource type, a name and a pattern type (LITERAL,
  PREFIXED; a LITERAL ``*`` matches every name of its type).
- ``AccessControlEntry``: principal, host (``*`` for any), operation, ALLOW
  or DENY.
- ``AclBinding``: a pattern and an entry, one row of ``kafka-acls.sh --list``.
- ``ResourcePatternFilter``, ``AccessControlEntryFilter``,
  ``AclBindingFilter``: what DescribeAcls and DeleteAcls select, with
  Kafka's matching rules (null name, principal or host and the ANY values
  match everything; pattern type MATCH selects every pattern that would
  match a literal name: the name itself, the LITERAL ``*`` and every
  PREFIXED prefix of it).
- ``Action``: what an API asks the authorizer for (an operation on one
  literal resource).
- ``granting_operations``: Kafka's implication rules (READ, WRITE, DELETE or
  ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL implies
  everything).
- Names as Kafka writes them (``SecurityUtils``): ``pascal_name`` gives
  ``Topic``, ``TransactionalId``, ``IdempotentWrite``, ``Allow`` (the
  ZooKeeper ACL znodes and kafka-acls.sh's ``--operation`` use them);
  ``parse_name`` reads them back, case-insensitively, with or without
  underscores.
- ``binding_problem``: why an ACL cannot be created (UNKNOWN or ANY values,
  a principal that is not ``Type:name``, an empty name, a CLUSTER not named
  ``kafka-cluster``, a ``/`` in the name, a PREFIXED ``*``), or None.
- ``SUPPORTED_OPERATIONS``: the operations that mean something on each
  resource type (kafka-acls.sh refuses others).

Pure values; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from kavka.security.principal import KafkaPrincipal

E = TypeVar("E", bound=IntEnum)

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name, as Kafka's


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, patternType={self.pattern_type.name})"


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str  # "User:alice" or "User:*"
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
                f"permissionType={self.permission_type.name})")


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """Selects resource patterns. ``resource_type`` ANY and a None ``name``
    match everything; ``pattern_type`` ANY matches LITERAL and PREFIXED
    patterns of exactly ``name``, MATCH every pattern that applies to the
    literal resource ``name`` (Kafka's ``ResourcePatternFilter.matches``)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        # MATCH (the only case left): patterns that would grant on the literal name.
        if pattern.pattern_type is PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        return pattern.pattern_type is PatternType.PREFIXED and self.name.startswith(pattern.name)

    def indefinite_field(self) -> str | None:
        """Why this filter may match more than one pattern, or None when it
        names exactly one (or two, for ANY: the LITERAL and the PREFIXED
        pattern of that name) that can be looked up directly."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return f"Resource type is {self.resource_type.name}."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type in (PatternType.MATCH, PatternType.UNKNOWN):
            return f"Resource pattern type is {self.pattern_type.name}."
        return None

    def patterns(self) -> tuple[ResourcePattern, ...]:
        """The patterns a definite filter names (``indefinite_field`` is None)."""
        if self.indefinite_field() is not None or self.name is None:
            raise ValueError(f"filter {self} does not name its patterns: {self.indefinite_field()}")
        if self.pattern_type is PatternType.ANY:
            return (ResourcePattern(self.resource_type, self.name, PatternType.LITERAL),
                    ResourcePattern(self.resource_type, self.name, PatternType.PREFIXED))
        return (ResourcePattern(self.resource_type, self.name, self.pattern_type),)

    def __str__(self) -> str:
        name = "<any>" if self.name is None else self.name
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={name}, patternType={self.pattern_type.name})"


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    """Selects entries: a None principal or host, operation ANY and
    permission type ANY match everything; the others compare exactly (a
    filter for ``User:*`` selects the wildcard entries, not every entry)."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation is AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type is AclPermissionType.ANY or self.permission_type == entry.permission_type))

    def __str__(self) -> str:
        principal = "<any>" if self.principal is None else self.principal
        host = "<any>" if self.host is None else self.host
        return (f"(principal={principal}, host={host}, operation={self.operation.name}, "
                f"permissionType={self.permission_type.name})")


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern: ResourcePatternFilter
    entry: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)

    def unknown_element(self) -> str | None:
        """A message naming an UNKNOWN value (an enum code Kafka does not
        define, or UNKNOWN itself), which makes the filter invalid."""
        for what, value in (("resource type", self.pattern.resource_type), ("pattern type", self.pattern.pattern_type),
                            ("operation", self.entry.operation), ("permission type", self.entry.permission_type)):
            if value.name == "UNKNOWN":
                return f"the filter's {what} is UNKNOWN"
        return None

    def __str__(self) -> str:
        return f"(patternFilter={self.pattern}, entryFilter={self.entry})"


ANY_BINDING = AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY))


@dataclass(frozen=True, slots=True)
class Action:
    """One check: may the session do ``operation`` on the literal resource
    ``resource_type``/``name``? ``log_if_allowed``/``log_if_denied`` say
    whether the authorizer's audit log records the outcome (Kafka logs
    denials of explicitly named resources, not those filtered from a list)."""

    operation: AclOperation
    resource_type: ResourceType
    name: str
    log_if_allowed: bool = False
    log_if_denied: bool = True
    # How many times the request names this resource (e.g. partitions of one
    # topic in a Produce): one Action stands for all of them in the audit log.
    resource_reference_count: int = 1


_IMPLIED: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                                      AclOperation.DELETE, AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
}


def granting_operations(operation: AclOperation) -> frozenset[AclOperation]:
    """The operations whose ALLOW grants ``operation`` (besides ALL): an
    ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and
    ALTER_CONFIGS allows DESCRIBE_CONFIGS. A DENY is never widened: only a
    DENY of the operation itself (or ALL) denies it."""
    return _IMPLIED.get(operation, frozenset({operation}))


def principal_of(entry: AccessControlEntry) -> KafkaPrincipal:
    return KafkaPrincipal.parse(entry.principal)


def enum_code(enum: type[E], code: int) -> E:
    """The member with wire code ``code``; UNKNOWN for a code Kafka does not
    define (as Kafka's ``fromCode``), so that a filter or binding carrying it
    is refused by name rather than failing to convert."""
    try:
        return enum(code)
    except ValueError:
        return enum["UNKNOWN"]


def pascal_name(value: IntEnum) -> str:
    """Kafka's ``SecurityUtils`` spelling: TRANSACTIONAL_ID -> TransactionalId,
    IDEMPOTENT_WRITE -> IdempotentWrite, ALLOW -> Allow."""
    return "".join(part.capitalize() for part in value.name.split("_"))


def parse_name(enum: type[E], text: str) -> E | None:
    """``Topic``, ``TOPIC``, ``topic``, ``TRANSACTIONAL_ID``, ``TransactionalId``
    all read as the same member (Kafka accepts the Pascal name and its upper
    case; the enum constant's name is accepted too); None when no member has
    that name."""
    key = text.strip().replace("_", "").replace("-", "").upper()
    for member in enum:
        if member.name.replace("_", "") == key:
            return member
    return None


# Operations that mean something on each resource type, besides ALL
# (Kafka's AclEntry.supportedOperations; kafka-acls.sh refuses the others).
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                                   AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                                   AclOperation.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}),
    ResourceType.CLUSTER: frozenset({AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                                     AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                                     AclOperation.DESCRIBE}),
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.DESCRIBE, AclOperation.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({AclOperation.DESCRIBE}),
    ResourceType.USER: frozenset({AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS}),
}

CONCRETE_RESOURCE_TYPES = tuple(SUPPORTED_OPERATIONS)


def binding_problem(binding: AclBinding) -> str | None:
    """Why ``binding`` cannot be stored as an ACL, or None. The rules of
    Kafka's CreateAcls path: every value concrete (no UNKNOWN, no ANY or
    MATCH), a ``Type:name`` principal, a non-empty name without ``/`` (it
    becomes a znode name), the CLUSTER named ``kafka-cluster``. A PREFIXED
    ``*`` is refused too: it would match only names that start with a
    star, never the wildcard it looks like (that is LITERAL ``*``)."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type not in SUPPORTED_OPERATIONS:
        return f"resource type {pattern.resource_type.name} is not a resource an ACL can name"
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"pattern type {pattern.pattern_type.name} is a filter, not a pattern; use LITERAL or PREFIXED"
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"operation {entry.operation.name} is not an operation an ACL can grant or deny"
    if entry.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"permission type {entry.permission_type.name} is not ALLOW or DENY"
    try:
        KafkaPrincipal.parse(entry.principal)
    except ValueError as e:
        return str(e)
    if not pattern.name:
        return "Invalid empty resource name"
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if "/" in pattern.name:
        return f"ACL binding contains invalid resource name: {pattern.name}"
    if pattern.pattern_type is PatternType.PREFIXED and pattern.name == WILDCARD_RESOURCE:
        return "a PREFIXED pattern '*' matches only names starting with '*'; the wildcard is LITERAL '*'"
    if not entry.host:
        return "the host is empty; use '*' for any host"
    return None
