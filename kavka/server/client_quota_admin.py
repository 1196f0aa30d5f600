"""Client quotas read and changed in ZooKeeper (what Kafka's ZkAdminManager
does for DescribeClientQuotas and AlterClientQuotas, KIP-546).

Describe: a filter has at most one component per entity type (``user``,
``client-id``, or ``ip`` alone: KIP-612), each matching an exact name, the default entity, or any
name; ``strict`` leaves out entities that have a component the filter does
not mention. The entities are read from ``/config/users`` (with their
``clients`` children) and ``/config/clients`` — exactly the named one where
the filter names one, all of them otherwise — and only their quota keys
are answered (a user's SCRAM credentials are not quotas). An entity with
no quota left is not listed.

An ``ip`` entity (``/config/ips``) holds ``connection_creation_rate``
only, an int. Alter: each entity is validated (``ClientQuotaEntity.from_components``),
then each op: a quota key (``entity.QUOTA_CONFIGS``; anything else is
INVALID_REQUEST "Invalid configuration key"), once per entity, a finite
non-negative value, whole for the byte rates (Kafka's LONG check with its
1e-6 tolerance). Nothing of an entity is written unless all its ops pass;
with ``validate_only`` nothing is written at all. The write is a
conditional read-modify-write of the entity znode (keeping its other
keys) followed by a change notification, so every broker's quota managers
pick it up.

Runs on the broker's event loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kavka.common.errors import ErrorCode
from kavka.security.quota.entity import (
    CLIENT_ID,
    DEFAULT,
    INT_MAX,
    IP,
    IP_CONNECTION_RATE,
    QUOTA_CONFIGS,
    USER,
    ClientQuotaEntity,
    EntityName,
    QuotaType,
    format_quota_value,
    parse_ip_connection_rate,
)
from kavka.security.sasl.credentials import ScramMechanism
from kavka.zk.client import KavkaZkClient

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2
_EPSILON = 1e-6


class ClientQuotaError(Exception):
    """A request or entity refused with ``code`` and Kafka's message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class FilterComponent:
    """One component of a DescribeClientQuotas filter: ``name`` is the
    entity name for an exact match, ``DEFAULT`` for the default entity and
    None for any name."""

    entity_type: str
    name: EntityName | None

    @classmethod
    def from_wire(cls, entity_type: str, match_type: int, match: str | None) -> FilterComponent:
        if not entity_type:
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST, "Unexpected empty filter component entity type")
        if entity_type not in (USER, CLIENT_ID, IP):
            raise ClientQuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Custom entity type '{entity_type[:100]}' not supported")
        if match_type == MATCH_EXACT:
            if match is None:
                raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                       f"an exact match of {entity_type} needs a name (match is null)")
            return cls(entity_type, match)
        if match_type == MATCH_DEFAULT:
            return cls(entity_type, DEFAULT)
        if match_type == MATCH_ANY:
            return cls(entity_type, None)
        raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Unexpected match type: {match_type}")


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float
    remove: bool


class ClientQuotaAdmin:
    """See the module docstring."""

    def __init__(self, zk: KavkaZkClient) -> None:
        self.zk = zk

    # -- describe -----------------------------------------------------------------------------

    async def describe(self, components: Sequence[FilterComponent], strict: bool
                       ) -> list[tuple[ClientQuotaEntity, dict[str, float]]]:
        user_c: FilterComponent | None = None
        client_c: FilterComponent | None = None
        ip_c: FilterComponent | None = None
        for c in components:
            if c.entity_type == IP:
                if ip_c is not None:
                    raise ClientQuotaError(ErrorCode.INVALID_REQUEST, "Duplicate ip filter component entity type")
                ip_c = c
            elif c.entity_type == USER:
                if user_c is not None:
                    raise ClientQuotaError(ErrorCode.INVALID_REQUEST, "Duplicate user filter component entity type")
                user_c = c
            else:
                if client_c is not None:
                    raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                           "Duplicate client filter component entity type")
                client_c = c
        if ip_c is not None and (user_c is not None or client_c is not None):
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                   "Invalid entity filter component combination, IP filter component should not be "
                                   "used with user or clientId filter component.")
        # As Kafka's ZkAdminManager: user and client-id quotas unless the
        # filter names an ip, ip quotas unless it names a user or client id.
        ips = await self._describe_ips(ip_c, strict) if user_c is None and client_c is None else []
        if ip_c is not None:
            return ips
        exact_user = user_c is not None and user_c.name is not None
        exact_client = client_c is not None and client_c.name is not None
        exclude_user = strict and user_c is None
        exclude_client = strict and client_c is None

        candidates: list[ClientQuotaEntity] = []
        configs: dict[ClientQuotaEntity, dict[str, str]] = {}

        async def exact(user: EntityName | None, client_id: EntityName | None) -> None:
            try:
                entity = ClientQuotaEntity(user, client_id)
            except ValueError:
                return  # a name no entity can have: nothing matches it
            configs[entity] = await self.zk.get_entity_config(*entity.to_zk())
            candidates.append(entity)

        async def every(entity_type: str, with_client: bool) -> None:
            for name, config in (await self.zk.get_all_entity_configs(entity_type)).items():
                try:
                    entity = ClientQuotaEntity.from_zk(entity_type, name)
                except ValueError:
                    continue  # not a name Kafka or Kavka would write: no entity to answer for
                if (entity.user is not None and entity.client_id is not None) == with_client:
                    configs[entity] = config
                    candidates.append(entity)

        if exact_user and exclude_client:
            assert user_c is not None and user_c.name is not None
            await exact(user_c.name, None)
        elif not exclude_user and not exact_client:
            await every("users", with_client=False)
        if exclude_user and exact_client:
            assert client_c is not None and client_c.name is not None
            await exact(None, client_c.name)
        elif not exclude_client and not exact_user:
            await every("clients", with_client=False)
        if exact_user and exact_client:
            assert user_c is not None and client_c is not None and user_c.name is not None and client_c.name is not None
            await exact(user_c.name, client_c.name)
        elif not exclude_user and not exclude_client:
            await every("users", with_client=True)

        def matches(component: FilterComponent | None, name: EntityName | None) -> bool:
            if component is None:
                return name is None or not strict
            if component.name is None:
                return name is not None
            return name == component.name

        out: list[tuple[ClientQuotaEntity, dict[str, float]]] = []
        for entity in dict.fromkeys(candidates):
            quotas = _quota_values(configs[entity])
            if quotas and matches(user_c, entity.user) and matches(client_c, entity.client_id):
                out.append((entity, quotas))
        return out + ips

    async def _describe_ips(self, ip_c: FilterComponent | None, strict: bool
                            ) -> list[tuple[ClientQuotaEntity, dict[str, float]]]:
        """The ip entities a filter matches: its exact ip or the default,
        or every ip (a filter naming ip with any name, or an empty filter
        that is not strict)."""
        if ip_c is not None and ip_c.name is not None:
            try:
                entity = ClientQuotaEntity(ip=ip_c.name)
            except ValueError:
                return []  # not an address: no entity has it
            found = {entity.to_zk()[1]: await self.zk.get_entity_config(*entity.to_zk())}
        elif ip_c is not None or not strict:
            found = await self.zk.get_all_entity_configs("ips")
        else:
            return []
        out = []
        for name, config in found.items():
            try:
                entity = ClientQuotaEntity.from_zk("ips", name)
            except ValueError:
                continue  # not an address: no entity to answer for (the broker logs it)
            text = config.get(IP_CONNECTION_RATE)
            if text is not None:
                try:
                    out.append((entity, {IP_CONNECTION_RATE: float(parse_ip_connection_rate(text))}))
                except ValueError:
                    continue
        return out

    # -- alter --------------------------------------------------------------------------------

    async def alter(self, entity: ClientQuotaEntity, ops: Sequence[QuotaOp], validate_only: bool) -> None:
        """Raises ClientQuotaError for the entity; writes nothing then."""
        changes = validate_ip_ops(ops) if entity.is_ip else validate_ops(ops)
        if validate_only:
            return

        def update(current: dict[str, str]) -> dict[str, str]:
            for key, value in changes.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            return current

        await self.zk.update_entity_config(*entity.to_zk(), update)


def validate_ops(ops: Sequence[QuotaOp]) -> dict[str, str | None]:
    """The stored value of each key (None: removed), or ClientQuotaError."""
    changes: dict[str, str | None] = {}
    for op in ops:
        quota_type = QUOTA_CONFIGS.get(op.key)
        if quota_type is None:
            hint = (" (SCRAM credentials are set with AlterUserScramCredentials)"
                    if ScramMechanism.of(op.key) is not None else "")
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {op.key[:100]}{hint}")
        if op.key in changes:
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Configuration {op.key} is altered twice for one entity")
        if op.remove:
            changes[op.key] = None
            continue
        changes[op.key] = format_quota_value(quota_type, checked_value(quota_type, op.value))
    return changes


def validate_ip_ops(ops: Sequence[QuotaOp]) -> dict[str, str | None]:
    """An ip entity's one key, ``connection_creation_rate``: an int from 0
    (no new connection at all) to 2^31-1 (Kafka's QuotaConfigs.ipConfigs)."""
    changes: dict[str, str | None] = {}
    for op in ops:
        if op.key != IP_CONNECTION_RATE:
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {op.key[:100]} "
                                                              f"(an ip entity takes {IP_CONNECTION_RATE} only)")
        if op.key in changes:
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Configuration {op.key} is altered twice for one entity")
        if op.remove:
            changes[op.key] = None
            continue
        value = op.value
        if not math.isfinite(value) or value != int(value):
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Configuration {op.key} must be a Int value")
        if not 0 <= value <= INT_MAX:
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                   f"Configuration {op.key} must be between 0 and {INT_MAX}, got {int(value)}")
        changes[op.key] = str(int(value))
    return changes


def checked_value(quota_type: QuotaType, value: float) -> float:
    if not math.isfinite(value):
        raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Configuration {quota_type.key} must be a finite number, got {value}")
    if value < 0:
        raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                               f"Configuration {quota_type.key} must not be negative, got {value}")
    if quota_type.integral:
        whole = math.floor(value + _EPSILON)
        if abs(whole - value) > _EPSILON:
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Configuration {quota_type.key} must be a LONG value")
        if whole > 2**63 - 1:
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Configuration {quota_type.key} is larger than a LONG")
        return float(whole)
    return value


def _quota_values(config: dict[str, str]) -> dict[str, float]:
    out = {}
    for key, text in config.items():
        if key in QUOTA_CONFIGS:
            try:
                out[key] = float(text)
            except ValueError:
                continue  # written by hand and unreadable: the broker ignores it too (logged there)
    return out
