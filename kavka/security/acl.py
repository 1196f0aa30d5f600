"""Kafka's ACL vocabulary, with the wire codes of DescribeAcls/CreateAcls/
DeleteAcls (KIP-140, KIP-290 for pattern types).

- ``ResourcePattern``: a resource type, a name and a pattern type (LITERAL,
  PREFIXED; a LITERAL ``*`` matches every name of its type).
- ``AccessControlEntry``: principal, host (``*`` for any), operation, ALLOW
  or DENY.
- ``AclBinding``: a pattern and an entry, one row of ``kafka-acls.sh --list``.
- ``Action``: what an API asks the authorizer for (an operation on one
  literal resource).
- ``implied_operations``: Kafka's implication rules (READ, WRITE, DELETE or
  ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL implies
  everything).

Pure values; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from kavka.security.principal import KafkaPrincipal

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


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


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
