"""The fault matrix's kill -9 cases on a secured cluster (``kavka up
--secure``'s: SASL_SSL with SCRAM-SHA-512 for clients and between brokers,
the ACL authorizer on): kill -9 of the leader of a partition and of the
controller, with an idempotent acks=all producer and a live consumer over
SASL_SSL, lose nothing and leave identical replicas. Every byte between
brokers (follower fetches, LeaderAndIsr/UpdateMetadata, transaction
markers) goes over TLS after a SCRAM exchange with the brokers' own user,
so a replica that could not authenticate or a controller that could not
reach a broker would show up here as lost writes, a stuck ISR or
replicas that differ.

The cases are test_fault_matrix's own (``run_case``), on a cluster of
their own.
"""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from kavka.tools.cluster import LocalCluster

from .fault_helpers import compare_replicas
from .test_fault_matrix import CONFIG, run_case

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def secure_cluster(zk_server, tmp_path_factory):
    from kazoo.client import KazooClient

    chroot = f"/kavka-faultmatrix-secure-{uuid.uuid4().hex[:8]}"
    c = LocalCluster(3, tmp_path_factory.mktemp("faultmatrix-secure"), zookeeper=zk_server.connect_string + chroot,
                     config=CONFIG, secure=True)
    c.start()
    c.checked_topics = {}
    try:
        yield c
        assert c.secure is not None
        # kafka-replica-verification.sh over SASL_SSL, as the admin user
        verify = subprocess.run(
            [sys.executable, "-m", "kavka", "replica-verification", "--bootstrap-server", c.bootstrap,
             "--command-config", str(c.secure.admin_properties_path), "--topic-white-list", "fms-.*",
             "--time-limit-ms", "10000"], capture_output=True, text=True, timeout=120)
        assert verify.returncode == 0, f"kavka replica-verification:\n{verify.stdout}\n{verify.stderr}"
    finally:
        c.stop()
        differ = {t: r.describe() for t, a in c.checked_topics.items()
                  if not (r := compare_replicas(c, t, a, timeout=0)).identical}
        zk = KazooClient(hosts=zk_server.connect_string)
        zk.start(10)
        try:
            zk.delete(chroot, recursive=True)
        finally:
            zk.stop()
            zk.close()
        assert not differ, f"replicas differ after the clean stop: {differ}"


@pytest.mark.parametrize("target", ["leader", "controller"])
def test_kill_9_over_sasl_ssl_loses_no_acknowledged_write(secure_cluster, target):
    run_case(secure_cluster, "kill_9", target, "on", prefix="fms")
