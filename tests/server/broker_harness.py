"""One real broker (``KafkaServer``) in the test's process, on a real
ZooKeeper chroot, with the ACL authorizer on: its handlers — built by the
composition root with every real collaborator — called directly with a
``RequestContext`` whose session carries whichever principal the test
plays (a plain listener would only ever give ``User:ANONYMOUS``).

Requests and responses go through the codec at the version asked for, as
the network would carry them. ``grant`` replaces the authorizer's ACLs;
``User:ANONYMOUS`` (the broker's own inter-broker traffic on PLAINTEXT) and
``User:admin`` are super users.

Used as a fixture value (``on_test_loop``): started and stopped on the
test's event loop.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kavka.common.broker_config import KafkaConfig
from kavka.protocol.headers import RequestHeader, decode_request, decode_response, encode_request, encode_response
from kavka.protocol.messages import Message
from kavka.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.security.principal import KafkaPrincipal, Session
from kavka.server.broker import KafkaServer
from kavka.server.network import RequestContext
from kavka.tools.ports import free_port

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ADMIN = KafkaPrincipal("User", "admin")


Grant = tuple[ResourceType, str, AclOperation]


class InProcessBroker:
    on_test_loop = True

    def __init__(self, zk_connect: str, data_dir: Path, **config: str) -> None:
        props = {
            "broker.id": "0",
            "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
            "log.dirs": str(data_dir / "logs"),
            "zookeeper.connect": zk_connect,
            "zookeeper.session.timeout.ms": "6000",
            "controlled.shutdown.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.num.partitions": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "authorizer.class.name": ACL_AUTHORIZER,
            "super.users": f"User:ANONYMOUS;{ADMIN}",
        }
        props.update(config)
        self.server = KafkaServer(KafkaConfig.from_props(props, source="test"))
        self._correlation = 0

    async def __aenter__(self) -> InProcessBroker:
        await self.server.start()
        await self.server.metadata_cache.wait_until(lambda c: c.alive_broker(0) is not None, 30)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.shutdown()

    @property
    def authorizer(self) -> AclAuthorizer:
        assert self.server.authorizer is not None
        return self.server.authorizer

    def grant(self, principal: KafkaPrincipal, grants: Iterable[Grant], *, host: str = "*",
              pattern_type: PatternType = PatternType.LITERAL,
              permission: AclPermissionType = AclPermissionType.ALLOW,
              also: Iterable[tuple[ResourcePattern, AccessControlEntry]] = ()) -> None:
        """Replace every ACL by ``grants`` to ``principal`` (and ``also``)."""
        acls: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for rtype, name, op in grants:
            pattern = ResourcePattern(rtype, name, pattern_type)
            acls.setdefault(pattern, set()).add(AccessControlEntry(str(principal), host, op, permission))
        for pattern, entry in also:
            acls.setdefault(pattern, set()).add(entry)
        self.authorizer.load(acls)

    async def call(self, session: Session, body: Message, version: int) -> Message:
        """``body`` through the codec at ``version``, to the broker's handler,
        and the answer back through the codec."""
        self._correlation += 1
        header = RequestHeader(body.API_KEY, version, self._correlation, "authz-test")
        header, decoded = decode_request(encode_request(header, body))
        entry = self.server.socket_servers[0].dispatcher.lookup(body.API_KEY)
        assert entry is not None and entry[1] <= version <= entry[2], (body.API_NAME, version)
        ctx = RequestContext(header, "c-test", session.client_host, 40000, "PLAINTEXT", 0, session=session)
        result: Any = await entry[0](ctx, decoded)
        if inspect.isawaitable(result):
            result = await result
        assert result is not None
        _, answer = decode_response(body.API_KEY, version, encode_response(body.API_KEY, version, header.correlation_id,
                                                                           result))
        return answer


def error_codes(message: Any) -> list[int]:
    """Every error code a response carries, at any depth (a topic's config
    error in CreateTopics aside: it is about the configs, not the topic)."""
    out: list[int] = []
    if isinstance(message, list):
        for item in message:
            out.extend(error_codes(item))
    elif isinstance(message, Message):
        for name in message.FIELDS:
            value = getattr(message, name)
            if name.endswith("error_code") and name != "topic_config_error_code":
                out.append(value)
            elif isinstance(value, (Message, list)):
                out.extend(error_codes(value))
    return out
