"""SCRAM credentials read and changed in ZooKeeper (what Kafka's
ZkAdminManager does for DescribeUserScramCredentials and
AlterUserScramCredentials, KIP-554).

Credentials live under ``/config/users/<sanitized user>`` beside the user's
quotas, one key per mechanism (``ScramCredential.to_config_value``'s
form). Describe answers the mechanisms and iteration counts only, never
a salt or a key.

Describe (``users`` None or empty: every user that has a credential, in
name order): a user asked for that has none is RESOURCE_NOT_FOUND, an
empty name too, and a name asked for twice is DUPLICATE_RESOURCE (once).

Alter, checked in Kafka's order, each failure answered once per user and
that user's changes all left out: an empty name (UNACCEPTABLE_CREDENTIAL),
an unknown mechanism (UNSUPPORTED_SASL_MECHANISM), iterations outside
[4096, 16384] (UNACCEPTABLE_CREDENTIAL) — plus, against hostile input, a
salt outside 1..1024 bytes or a salted password that is not the
mechanism's hash length (UNACCEPTABLE_CREDENTIAL); the same (user,
mechanism) twice in one request (DUPLICATE_RESOURCE); deleting a credential
the user does not have (RESOURCE_NOT_FOUND). The remaining users' changes
are applied by a conditional read-modify-write of their znode (quotas
kept) and announced, so every broker's credential cache follows.

Runs on the broker's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from kavka.common.errors import ErrorCode
from kavka.common.sanitizer import desanitize, sanitize
from kavka.security.quota.entity import UNSTORABLE_NAMES
from kavka.security.sasl.credentials import MAX_ITERATIONS, ScramCredential, ScramFormatter, ScramMechanism
from kavka.zk.client import KavkaZkClient
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import ZkError

log = logging.getLogger("kavka.server.scram")

MAX_SALT_BYTES = 1024
USERNAME_EMPTY = "Username must not be empty"
TOO_FEW_ITERATIONS = "Too few iterations"
TOO_MANY_ITERATIONS = "Too many iterations"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"


@dataclass(frozen=True, slots=True)
class UserResult:
    user: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    # (mechanism type id, iterations), for describe
    credentials: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Deletion:
    user: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class Upsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)


class ScramCredentialAdmin:
    """See the module docstring."""

    def __init__(self, zk: KavkaZkClient) -> None:
        self.zk = zk

    # -- describe -----------------------------------------------------------------------------

    async def describe(self, users: Sequence[str] | None) -> list[UserResult]:
        """Raises ZkError (or ZnodeDataError) only when listing every user fails."""
        if not users:
            out = []
            for name, config in (await self.zk.get_all_entity_configs("users")).items():
                if "/" in name or name == "<default>":
                    continue
                try:
                    user = desanitize(name)
                except ValueError:
                    continue
                result = _describe_one(user, config, explicit=False)
                if result is not None:
                    out.append(result)
            return sorted(out, key=lambda r: r.user)
        counts: dict[str, int] = {}
        for u in users:
            counts[u] = counts.get(u, 0) + 1
        results: dict[str, UserResult] = {}
        for user, n in counts.items():
            if not user:
                results[user] = UserResult(user, ErrorCode.RESOURCE_NOT_FOUND,
                                           f"Attempt to describe a user credential that does not exist: {user}")
            elif n > 1:
                results[user] = UserResult(user, ErrorCode.DUPLICATE_RESOURCE,
                                           f"Cannot describe SCRAM credentials for the same user twice in a single "
                                           f"request: {user}")
            elif user in UNSTORABLE_NAMES:
                results[user] = UserResult(user, ErrorCode.RESOURCE_NOT_FOUND,
                                           f"Attempt to describe a user credential that does not exist: {user}")
            else:
                try:
                    config = await self.zk.get_entity_config("users", sanitize(user))
                except (ZkError, ZnodeDataError) as e:
                    results[user] = UserResult(user, ErrorCode.UNKNOWN_SERVER_ERROR,
                                               f"Error retrieving credentials for user {user}: {e}")
                    continue
                found = _describe_one(user, config, explicit=True)
                assert found is not None
                results[user] = found
        return list(results.values())

    # -- alter --------------------------------------------------------------------------------

    async def alter(self, upsertions: Sequence[Upsertion], deletions: Sequence[Deletion]) -> list[UserResult]:
        results: list[UserResult] = []
        invalid: dict[str, tuple[ErrorCode, str]] = {}
        for u in upsertions:
            problem = _check_upsertion(u)
            if problem is not None:
                invalid.setdefault(u.user, problem)
        for d in deletions:
            if not d.user:
                invalid.setdefault(d.user, (ErrorCode.UNACCEPTABLE_CREDENTIAL, USERNAME_EMPTY))
            elif d.user in UNSTORABLE_NAMES:
                invalid.setdefault(d.user, (ErrorCode.UNACCEPTABLE_CREDENTIAL, _unstorable(d.user)))
            elif ScramMechanism.of_type_id(d.mechanism) is None:
                invalid.setdefault(d.user, (ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM))
        results += [UserResult(user, code, message) for user, (code, message) in invalid.items()]

        pairs = [(u.user, u.mechanism) for u in upsertions if u.user not in invalid]
        pairs += [(d.user, d.mechanism) for d in deletions if d.user not in invalid]
        duplicated = list(dict.fromkeys(user for user, mechanism in pairs if pairs.count((user, mechanism)) > 1))
        results += [UserResult(user, ErrorCode.DUPLICATE_RESOURCE,
                               "A user credential cannot be altered twice in the same request") for user in duplicated]
        to_alter = [user for user in dict.fromkeys(user for user, _ in pairs) if user not in duplicated]

        for user in to_alter:
            mine_up = [u for u in upsertions if u.user == user]
            mine_del = [d for d in deletions if d.user == user]
            credentials = {_mechanism(u.mechanism).mechanism_name: _credential(u) for u in mine_up}

            def update(current: dict[str, str], mine_del: list[Deletion] = mine_del,
                       credentials: dict[str, str] = credentials) -> dict[str, str]:
                for d in mine_del:
                    name = _mechanism(d.mechanism).mechanism_name
                    if name not in current:
                        raise _NothingToDelete()
                    del current[name]
                current.update(credentials)
                return current

            try:
                await self.zk.update_entity_config("users", sanitize(user), update)
            except _NothingToDelete:
                results.append(UserResult(user, ErrorCode.RESOURCE_NOT_FOUND,
                                          "Attempt to delete a user credential that does not exist"))
                continue
            except (ZkError, ZnodeDataError) as e:
                log.warning("altering the SCRAM credentials of user %r failed: %s", user, e)
                results.append(UserResult(user, ErrorCode.UNKNOWN_SERVER_ERROR, f"could not update ZooKeeper: {e}"))
                continue
            log.info("SCRAM credentials of user %r altered: %s", user,
                     ", ".join([f"{m} set" for m in credentials] + [f"{_mechanism(d.mechanism).mechanism_name} deleted"
                                                                   for d in mine_del]))
            results.append(UserResult(user))
        return results


class _NothingToDelete(Exception):
    pass


def _mechanism(type_id: int) -> ScramMechanism:
    m = ScramMechanism.of_type_id(type_id)
    assert m is not None  # checked before
    return m


def _check_upsertion(u: Upsertion) -> tuple[ErrorCode, str] | None:
    if not u.user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, USERNAME_EMPTY
    if u.user in UNSTORABLE_NAMES:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, _unstorable(u.user)
    mechanism = ScramMechanism.of_type_id(u.mechanism)
    if mechanism is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM
    if u.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_ITERATIONS
    if u.iterations < mechanism.min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS
    if not 0 < len(u.salt) <= MAX_SALT_BYTES:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Salt must hold 1 to {MAX_SALT_BYTES} bytes"
    if len(u.salted_password) != mechanism.digest_size:
        return (ErrorCode.UNACCEPTABLE_CREDENTIAL,
                f"A {mechanism.mechanism_name} salted password has {mechanism.digest_size} bytes")
    return None


def _unstorable(user: str) -> str:
    return f"User {user!r} cannot be kept in ZooKeeper (a znode cannot be named . or ..)"


def _credential(u: Upsertion) -> str:
    formatter = ScramFormatter(_mechanism(u.mechanism))
    return formatter.credential_from_salted_password(u.salted_password, u.salt, u.iterations).to_config_value()


def _describe_one(user: str, config: dict[str, str], explicit: bool) -> UserResult | None:
    present = [m for m in ScramMechanism if m.mechanism_name in config]
    if not present:
        if not explicit:
            return None
        return UserResult(user, ErrorCode.RESOURCE_NOT_FOUND,
                          f"Attempt to describe a user credential that does not exist: {user}")
    infos = []
    for m in present:
        try:
            infos.append((m.type_id, ScramCredential.parse(config[m.mechanism_name], m).iterations))
        except ValueError as e:
            return UserResult(user, ErrorCode.UNKNOWN_SERVER_ERROR, f"Error retrieving credentials: {e}")
    return UserResult(user, credentials=infos)
