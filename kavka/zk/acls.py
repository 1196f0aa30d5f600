"""ACL znodes, where Kafka's AclAuthorizer keeps them (ZooKeeper mode).

- ``/kafka-acl/<ResourceType>/<name>``: the entries of a LITERAL pattern;
  ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``: of a PREFIXED one
  (KIP-290). ``<ResourceType>`` is Kafka's Pascal name (``Topic``,
  ``Group``, ``Cluster``, ``TransactionalId``, ``DelegationToken``,
  ``User``). See ``ResourceAclsZNode``.
- ``/kafka-acl-changes/acl_changes_<seq>`` announces a change to a LITERAL
  pattern (``LiteralAclChangeZNode``);
  ``/kafka-acl-extended-changes/acl_changes_<seq>`` to any other
  (``ExtendedAclChangeZNode``). Brokers re-read only the pattern announced;
  notifications older than 15 minutes are purged.

Resource names become znode names: ZooKeeper refuses some characters in a
path (control characters, the surrogate and private-use ranges, anything
past U+FFFF in its Java strings) and the names ``.`` and ``..``; ``path``
refuses those with ``ZnodePathError``, before anything is written.

Pure; any thread.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeVar

from kavka.security.acl import (
    CONCRETE_RESOURCE_TYPES,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_name,
    pascal_name,
)
from kavka.security.principal import KafkaPrincipal
from kavka.zk.codec import ZnodeDataError, ZnodePathError, check_version, dump_json, field, load_json

E = TypeVar("E", bound=IntEnum)

ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
PREFIXED_ACL_PATH = EXTENDED_ACL_PATH + "/prefixed"
ACL_CHANGES_PATH = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES_PATH = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"

# ZooKeeper's PathUtils.validatePath refuses these in a path (chars as Java's
# UTF-16 units: Python characters past U+FFFF are surrogate pairs there).
_ZK_BAD_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\U0010ffff]")


def store_path(pattern_type: PatternType) -> str:
    """``/kafka-acl`` (LITERAL) or ``/kafka-acl-extended/prefixed`` (PREFIXED)."""
    if pattern_type is PatternType.LITERAL:
        return ACL_PATH
    if pattern_type is PatternType.PREFIXED:
        return PREFIXED_ACL_PATH
    raise ZnodePathError(f"pattern type {pattern_type.name} is not stored; only LITERAL and PREFIXED patterns are")


def resource_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    """``/kafka-acl/Topic`` and the like: the parent of one type's patterns."""
    if resource_type not in CONCRETE_RESOURCE_TYPES:
        raise ZnodePathError(f"resource type {resource_type.name} is not stored")
    return f"{store_path(pattern_type)}/{pascal_name(resource_type)}"


def check_resource_name(name: str) -> str:
    """The name, if ZooKeeper can hold it as one znode name."""
    if not name or name in (".", "..") or "/" in name:
        raise ZnodePathError(f"resource name {name!r} cannot be a znode name (empty, '.', '..' or has '/')")
    bad = _ZK_BAD_CHARS.search(name)
    if bad is not None:
        raise ZnodePathError(f"resource name {name!r} has the character U+{ord(bad.group()):04X}, "
                             "which ZooKeeper refuses in a path")
    return name


@dataclass(frozen=True, slots=True)
class ResourceAclsZNode:
    """The entries of one resource pattern.

    Path: ``/kafka-acl/<ResourceType>/<name>`` (LITERAL) or
    ``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` (PREFIXED).

    JSON (names as Kafka's ``SecurityUtils`` writes them; read back in any
    case, with or without underscores)::

        {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                              "operation":"Read","host":"*"}]}

    An empty znode is a pattern without entries, as Kafka reads it.
    """

    pattern: ResourcePattern
    entries: frozenset[AccessControlEntry]

    @staticmethod
    def path(pattern: ResourcePattern) -> str:
        return f"{resource_type_path(pattern.pattern_type, pattern.resource_type)}/{check_resource_name(pattern.name)}"

    @staticmethod
    def pattern_of(path: str) -> ResourcePattern:
        """The pattern a path names; ZnodeDataError for any other path."""
        for pattern_type in (PatternType.PREFIXED, PatternType.LITERAL):
            root = store_path(pattern_type) + "/"
            if path.startswith(root):
                type_name, sep, name = path[len(root):].partition("/")
                resource_type = parse_name(ResourceType, type_name)
                if sep and name and "/" not in name and resource_type in CONCRETE_RESOURCE_TYPES:
                    return ResourcePattern(resource_type, name, pattern_type)
        raise ZnodeDataError(path, "is not an ACL znode (/kafka-acl/<ResourceType>/<name> or "
                                   "/kafka-acl-extended/prefixed/<ResourceType>/<name>)")

    def encode(self) -> bytes:
        acls = [{"principal": e.principal, "permissionType": pascal_name(e.permission_type),
                 "operation": pascal_name(e.operation), "host": e.host}
                for e in sorted(self.entries, key=lambda e: (e.principal, e.host, e.operation, e.permission_type))]
        return dump_json({"version": 1, "acls": acls})

    @classmethod
    def decode(cls, data: bytes, path: str) -> ResourceAclsZNode:
        pattern = cls.pattern_of(path)
        if not data:
            return cls(pattern, frozenset())
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        entries = []
        for i, item in enumerate(field(path, doc, "acls", "list")):
            where = f"acls[{i}] "
            if not isinstance(item, dict):
                raise ZnodeDataError(path, f"{where}is {json.dumps(item)[:80]}; expected an object")
            principal = field(path, item, "principal", "str", where=where)
            host = field(path, item, "host", "str", where=where)
            operation = _named(path, item, "operation", AclOperation, where)
            permission = _named(path, item, "permissionType", AclPermissionType, where)
            if operation in (AclOperation.ANY, AclOperation.UNKNOWN):
                raise ZnodeDataError(path, f"{where}operation {operation.name} is not a concrete operation")
            if permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
                raise ZnodeDataError(path, f"{where}permissionType {permission.name} is not Allow or Deny")
            try:
                KafkaPrincipal.parse(principal)
            except ValueError as e:
                raise ZnodeDataError(path, f"{where}{e}") from None
            entries.append(AccessControlEntry(principal, host, operation, permission))
        return cls(pattern, frozenset(entries))


def _named(path: str, item: dict[str, Any], key: str, enum: type[E], where: str) -> E:
    text = field(path, item, key, "str", where=where)
    value = parse_name(enum, text)
    if value is None:
        allowed = ", ".join(pascal_name(m) for m in enum if m.name not in ("UNKNOWN", "ANY"))
        raise ZnodeDataError(path, f"{where}{key} {text[:80]!r} is unknown; expected one of {allowed}")
    return value


@dataclass(frozen=True, slots=True)
class LiteralAclChangeZNode:
    """``/kafka-acl-changes/acl_changes_<seq>``: a LITERAL pattern changed.

    Data: ``<RESOURCE_TYPE>:<name>`` as plain text, the resource type as
    Kafka's Java enum prints it (``TOPIC:orders``, ``TRANSACTIONAL_ID:tx``);
    read back in any case and with Kafka 2.0's Pascal names (``Topic:orders``).
    """

    pattern: ResourcePattern

    ROOT = ACL_CHANGES_PATH
    PREFIX = ACL_CHANGES_PATH + "/" + ACL_CHANGE_PREFIX
    NAME_PREFIX = ACL_CHANGE_PREFIX

    def __post_init__(self) -> None:
        if self.pattern.pattern_type is not PatternType.LITERAL:
            raise ValueError(f"{self.pattern} is not LITERAL; its changes go to {EXTENDED_ACL_CHANGES_PATH}")

    def encode(self) -> bytes:
        return f"{self.pattern.resource_type.name}:{self.pattern.name}".encode()

    @classmethod
    def decode(cls, data: bytes, path: str) -> LiteralAclChangeZNode:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ZnodeDataError(path, f"is not UTF-8 ({e})") from None
        type_name, sep, name = text.partition(":")
        resource_type = parse_name(ResourceType, type_name)
        if not sep or not name or resource_type not in CONCRETE_RESOURCE_TYPES:
            raise ZnodeDataError(path, f"holds {text[:80]!r}; expected ResourceType:name (e.g. TOPIC:orders)")
        return cls(ResourcePattern(resource_type, name, PatternType.LITERAL))


@dataclass(frozen=True, slots=True)
class ExtendedAclChangeZNode:
    """``/kafka-acl-extended-changes/acl_changes_<seq>``: a PREFIXED pattern
    changed.

    JSON (enum names as Kafka's Java enums print them; read back in any case)::

        {"version":1,"resourceType":"TOPIC","name":"orders-","patternType":"PREFIXED"}
    """

    pattern: ResourcePattern

    ROOT = EXTENDED_ACL_CHANGES_PATH
    PREFIX = EXTENDED_ACL_CHANGES_PATH + "/" + ACL_CHANGE_PREFIX
    NAME_PREFIX = ACL_CHANGE_PREFIX

    def __post_init__(self) -> None:
        if self.pattern.pattern_type is not PatternType.PREFIXED:
            raise ValueError(f"{self.pattern} is not PREFIXED; LITERAL changes go to {ACL_CHANGES_PATH}")

    def encode(self) -> bytes:
        p = self.pattern
        return dump_json({"version": 1, "resourceType": p.resource_type.name, "name": p.name,
                          "patternType": p.pattern_type.name})

    @classmethod
    def decode(cls, data: bytes, path: str) -> ExtendedAclChangeZNode:
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        name = field(path, doc, "name", "str")
        resource_type = _named(path, doc, "resourceType", ResourceType, "")
        pattern_type = _named(path, doc, "patternType", PatternType, "")
        if resource_type not in CONCRETE_RESOURCE_TYPES or pattern_type is not PatternType.PREFIXED or not name:
            raise ZnodeDataError(path, f"names {resource_type.name} {pattern_type.name} {name[:80]!r}; expected a "
                                       "concrete resource type, PREFIXED and a name")
        return cls(ResourcePattern(resource_type, name, pattern_type))


def change_znode(pattern: ResourcePattern) -> LiteralAclChangeZNode | ExtendedAclChangeZNode:
    """The notification announcing a change to ``pattern``."""
    if pattern.pattern_type is PatternType.LITERAL:
        return LiteralAclChangeZNode(pattern)
    return ExtendedAclChangeZNode(pattern)


# Created when the ACL authorizer starts (Kafka's createAclPaths): the stores,
# one child per resource type in each, and the two change roots.
ACL_PERSISTENT_PATHS: tuple[str, ...] = (
    *(resource_type_path(pt, rt) for pt in (PatternType.LITERAL, PatternType.PREFIXED) for rt in CONCRETE_RESOURCE_TYPES),
    ACL_CHANGES_PATH,
    EXTENDED_ACL_CHANGES_PATH,
)
