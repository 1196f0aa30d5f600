"""Every broker's user and client-id configs, kept current from ZooKeeper
(a real server): the dynamic config manager applies what exists at start
(users' client-id children included), then follows /config/changes, and
the quota config handler feeds the SCRAM credential cache and the quota
managers — as written by the admin services another broker runs."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kavka.common.clock import ManualClock
from kavka.security.quota.entity import DEFAULT, ClientQuotaEntity
from kavka.security.quota.manager import QuotaManagers
from kavka.security.quota.rate import QuotaWindow
from kavka.security.sasl.credential_cache import ScramCredentialCache
from kavka.security.sasl.credentials import ScramFormatter, ScramMechanism
from kavka.server.client_quota_admin import ClientQuotaAdmin, QuotaOp
from kavka.server.dynamic_config import DynamicConfigManager
from kavka.server.quota_config_handler import QuotaConfigHandler
from kavka.server.scram_admin import ScramCredentialAdmin, Upsertion
from kavka.zk.client import KavkaZkClient
from kavka.zk.store import KazooZkStore

SHA512 = ScramMechanism.SCRAM_SHA_512
SALT = b"salt"


def upsertion(user: str, password: str) -> Upsertion:
    salted = ScramFormatter(SHA512).salted_password(password, SALT, 4096)
    return Upsertion(user, SHA512.type_id, 4096, SALT, salted)


async def until(predicate, what: str) -> None:
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the broker did not apply the {what} within 10 s")


@pytest.mark.async_timeout(60)
async def test_broker_follows_user_and_client_configs(zk_chroot, caplog):
    writer_store, broker_store = KazooZkStore(zk_chroot), KazooZkStore(zk_chroot)
    await writer_store.start()
    await broker_store.start()
    try:
        writer = KavkaZkClient(writer_store)
        await writer.create_top_level_paths()
        quotas_admin, scram_admin = ClientQuotaAdmin(writer), ScramCredentialAdmin(writer)
        # Present before the broker starts: a nested entity and a credential.
        await quotas_admin.alter(ClientQuotaEntity("alice", "app"), [QuotaOp("producer_byte_rate", 100.0, False)], False)
        await scram_admin.alter([upsertion("alice", "first")], [])

        quotas = QuotaManagers(QuotaWindow(), QuotaWindow(), ManualClock())
        credentials = ScramCredentialCache()
        manager = DynamicConfigManager(KavkaZkClient(broker_store), QuotaConfigHandler(quotas, credentials).handlers())
        with caplog.at_level(logging.INFO, logger="kavka.dynamic_config"):
            await manager.start()
            assert quotas.produce.quota("alice", "app") == 100.0
            assert credentials("SCRAM-SHA-512", "alice") == ScramFormatter(SHA512).generate_credential("first", 4096, SALT)

            # Changes made while it runs: a new password, the KIP-55 defaults, a removal.
            await scram_admin.alter([upsertion("alice", "second")], [])
            await until(lambda: credentials("SCRAM-SHA-512", "alice")
                        == ScramFormatter(SHA512).generate_credential("second", 4096, SALT), "new password")
            await quotas_admin.alter(ClientQuotaEntity(DEFAULT), [QuotaOp("consumer_byte_rate", 5000.0, False),
                                                                  QuotaOp("request_percentage", 25.0, False)], False)
            await quotas_admin.alter(ClientQuotaEntity(None, DEFAULT), [QuotaOp("controller_mutation_rate", 2.0, False)],
                                     False)
            await until(lambda: quotas.fetch.quota("bob", "x") == 5000.0 and quotas.request.quota("bob", "x") == 25.0,
                        "default user quotas")
            await until(lambda: quotas.controller_mutation.overrides.get(ClientQuotaEntity(None, DEFAULT)) == 2.0,
                        "default client quota")
            await quotas_admin.alter(ClientQuotaEntity("alice", "app"), [QuotaOp("producer_byte_rate", 0, True)], False)
            await until(lambda: quotas.produce.quota("alice", "app") is None, "removed quota")
            assert credentials("SCRAM-SHA-512", "alice") is not None  # a quota change leaves the credential
        manager.stop()
        assert "[hidden]" in caplog.text
        stored_key = (await writer.get_entity_config("users", "alice"))["SCRAM-SHA-512"].split("stored_key=")[1][:20]
        assert stored_key not in caplog.text
    finally:
        await writer_store.close()
        await broker_store.close()
