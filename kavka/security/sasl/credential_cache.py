"""The broker's SCRAM credentials, as the SASL servers look them up
(Kafka's CredentialCache and CredentialProvider).

Every broker keeps the credentials of every user in memory, fed from
``/config/users/<user>`` (the ``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` keys, in
the stored form ``ScramCredential.parse`` reads) when the broker starts and
on every ``/config/changes`` notification for a user. The cache is the
``ScramCredentialLookup`` a ``SaslServerFactory`` takes: called with a
mechanism name and a user name, it answers the stored credential or None.

A stored value that does not parse is logged (by user and mechanism, never
the value) and leaves that user without a credential for that mechanism:
a login fails rather than matching something half-read.

Event loop only: updated by the dynamic config handlers and read by the
SASL servers on the same loop.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kavka.security.sasl.credentials import ScramCredential, ScramMechanism

log = logging.getLogger("kavka.security.scram")


class ScramCredentialCache:
    """See the module docstring. Users are real (desanitized) user names."""

    def __init__(self) -> None:
        self._by_mechanism: dict[ScramMechanism, dict[str, ScramCredential]] = {m: {} for m in ScramMechanism}

    def __call__(self, mechanism: str, user: str) -> ScramCredential | None:
        scram = ScramMechanism.of(mechanism)
        if scram is None:
            return None
        return self._by_mechanism[scram].get(user)

    def update_user(self, user: str, config: Mapping[str, str]) -> None:
        """Replace ``user``'s credentials with the SCRAM keys of its entity
        config (other keys, such as quotas, are not this cache's)."""
        for mechanism, users in self._by_mechanism.items():
            stored = config.get(mechanism.mechanism_name)
            if stored is None:
                users.pop(user, None)
                continue
            try:
                users[user] = ScramCredential.parse(stored, mechanism)
            except ValueError as e:
                users.pop(user, None)
                log.error("ignoring the %s credential of user %r in ZooKeeper: %s",
                          mechanism.mechanism_name, user, e)

    def mechanisms_of(self, user: str) -> list[str]:
        """The mechanisms ``user`` has a credential for (tests, diagnostics)."""
        return [m.mechanism_name for m, users in self._by_mechanism.items() if user in users]
