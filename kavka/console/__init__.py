"""The web console (``kavka console``): a separate process that is a Kafka
client of the cluster, on Starlette with server-rendered Jinja2 pages and
one small script for live refresh, served by uvicorn.

It sits above ``kavka.tools`` (it reuses the reassignment planner of
``kavka.tools.reassign_plan`` and the ``--command-config`` handling of
``kavka.tools.client_cli``) and talks to the cluster only through
``kavka.client``.

Modules:
    ``main``        the command: options, the listening socket, uvicorn.
    ``app``         the composition root: ``Cluster``, ``ConsoleService``,
                    ``MetricsSampler``, the routes of every page.
    ``service``     ``ConsoleService``: what the pages ask of the cluster,
                    as view values (overview, topics, browse, groups, lag,
                    reassignment, throttle, election).
    ``web``         templates, rendering, redirects with a notice, and
                    every failure turned into words.
    ``forms``       checking form fields and URL parameters (``FormError``).
    ``browse``      the message browser's query, start positions, paging,
                    filters and decoding.
    ``reassignment`` plans from the console's form and KIP-73's throttle.
    ``metrics``     Prometheus text parsing, scrape history, chart series.
    ``metrics_sampler`` scraping the ``--metrics-url`` endpoints.
    ``pages/``      one module of routes per area: overview, topics,
                    messages, groups, reassign (and election), security
                    (ACLs and SCRAM users), metrics_page.
    ``templates/``, ``static/``  the Jinja2 pages, the CSS and the script.
"""
