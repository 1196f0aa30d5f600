"""Prometheus metrics with Kafka's names (``metrics.port``).

- ``broker_metrics``: what a broker exports, read from its components at
  scrape time (replica manager, topics, logs, controller, requests,
  socket server, quotas, ZooKeeper session, consumer group lag), named as
  the Prometheus JMX exporter names Kafka's MBeans;
- ``request_metrics``: ``RequestMetrics``, the time parts of each request
  as the socket server measures them (Kafka's RequestMetrics);
- ``throttle_times``: ``ThrottleTimes``, throttle time per client;
- ``event_loop``: ``EventLoopMonitor``, the loop's idle share and lag and
  the GC's pauses;
- ``exporter``: ``MetricsExporter``, the HTTP endpoint (prometheus-client's
  server on its own thread; every scrape read on the broker's loop).

The counters the components keep themselves (``BrokerTopicStats``,
``IsrUpdates``' shrinks and expands, ``ControllerStats``, the ZooKeeper
store's request latency, ``LogFlushStats``) live with them; this package
only reads them. It sits between the server, which builds it, and the
packages it reads (the import-linter layers in pyproject.toml).
"""
