"""The ``kavka`` command line: each sub-command of ``kavka.cli`` is one
module here with ``DESCRIPTION``, ``add_arguments(parser)`` and
``run(args) -> int``. Tools are Kafka clients of the cluster (and, on
their ``--zookeeper`` path, ZooKeeper clients); none imports the server.

Commands:

* ``up`` — ``kavka up``: a local cluster in the foreground (``--secure``:
  ``secure_cluster``'s users, SASL_SSL and ACLs, with ``local_pki``'s
  certificates).
* ``topics`` — ``kavka topics``: create, list, describe, alter, delete
  topics; its pure text functions (``--replica-assignment``, topic
  selection, ``--describe`` output) in ``topics_format``.
* ``console_producer`` — ``kavka console-producer``: stdin lines to records.
* ``console_consumer`` — ``kavka console-consumer``: records to stdout;
  with ``--group``, ``console_group`` consumes as a group member through
  librdkafka. Both share the line/record formats of ``console_format``.
* ``consumer_groups`` — ``kavka consumer-groups``: list, describe, delete
  groups, reset their offsets.
* ``transactions`` — ``kavka transactions``: list and describe
  transactions and producers, find hanging transactions and abort them
  (kafka-transactions.sh, KIP-664).
* ``configs`` — ``kavka configs``: describe and alter topic, broker, user
  and client-id configs — client quotas and SCRAM credentials included —
  with kafka-configs.sh's options and output.
* ``acls`` — ``kavka acls``: add, remove and list ACLs (kafka-acls.sh's
  options, ``--producer``/``--consumer`` shortcuts and output).
* ``dump_log`` — ``kavka dump-log``: segments, indexes, checkpoint and
  leader-epoch files.
* ``reassign_partitions`` — ``kavka reassign-partitions`` (seed 000); its
  JSON plans and the pure steps on them in ``reassign_plan``.
* ``preferred_election`` — ``kavka preferred-replica-election`` (seed 000).
* ``replica_verification`` — ``kavka replica-verification`` (seed 000); the
  batch-by-batch comparison core in ``replica_compare``.
* ``state_change_log_merge`` — ``kavka state-change-log-merge`` (seed 000).

Shared pieces:

* ``client_cli`` — ``--bootstrap-server``, ``--command-config``,
  ``--property`` parsing, and the asyncio main that turns expected failures
  into one ``Error:`` line.
* ``controller_calls`` — one request to the active controller with Kafka's
  retry rule, the present assignment, result tables (reassignment and
  preferred election).
* ``zk_admin`` — the ZooKeeper-era ``--zookeeper`` path of those tools:
  ``/admin`` request znodes the controller watches.
* ``cluster`` — ``LocalCluster``: a ZooKeeper and N broker processes on
  loopback (``kavka up``, tests, benchmarks), secured with ``secure_cluster``
  and ``local_pki`` when asked; ``zookeeper`` — a standalone
  ZooKeeper server from Debian's package.
* ``compat`` — ``python -m kavka.tools.compat`` (``make compat``):
  librdkafka's integration suite against a local cluster, its test runner
  built by ``compat_build``.
* ``demo`` — ``python -m kavka.tools.demo``: a cluster, 200,000 records
  through a real Kafka client, stop.
"""
