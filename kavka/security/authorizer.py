"""The authorizer seam (Kafka's ``org.apache.kafka.server.authorizer.Authorizer``).

A broker with ``authorizer.class.name`` set builds one ``Authorizer`` and
every request handler asks it before acting; without one, every request is
allowed (Kafka's default). Handlers ask in batches: one ``Action`` per
resource named in the request, answers in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kavka.security.acl import Action
from kavka.security.principal import Session


class Authorizer(Protocol):
    def authorize(self, session: Session, actions: Sequence[Action]) -> list[bool]:
        """One boolean per action: True when allowed. Must not block the
        event loop (answers come from an in-memory cache)."""
        ...
