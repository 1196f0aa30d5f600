"""The authorizer seam (Kafka's ``org.apache.kafka.server.authorizer.Authorizer``).

A broker with ``authorizer.class.name`` set builds one ``Authorizer``
(``kavka.security.acl_authorizer.AclAuthorizer``) and every request handler
asks it before acting; without one, every request is allowed (Kafka's
default). Handlers ask in batches: one ``Action`` per resource named in the
request (an ``Action`` per distinct resource, with
``resource_reference_count`` saying how often the request named it), answers
in the same order; ``request`` names the API in the audit log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kavka.security.acl import AclOperation, Action, ResourceType
from kavka.security.principal import Session


class Authorizer(Protocol):
    def authorize(self, session: Session, actions: Sequence[Action], *, request: str | None = None) -> list[bool]:
        """One boolean per action: True when allowed. Must not block the
        event loop (answers come from an in-memory cache)."""
        ...

    def authorize_by_resource_type(self, session: Session, operation: AclOperation, resource_type: ResourceType,
                                   *, request: str | None = None) -> bool:
        """True when the session may do ``operation`` on at least one
        resource of ``resource_type`` (KIP-679: an idempotent producer
        without IDEMPOTENT_WRITE on the cluster needs WRITE on some topic)."""
        ...
