"""Schema tables of every Kafka API Kavka encodes and decodes.

``dsl`` is the compact declarative form (``Api``: fields, the versions
each exists in, nullability, defaults, tagged fields, the first flexible
version); ``kavka.protocol.schema.apis`` holds one
module per group of APIs, each exposing ``APIS: list[Api]``. ``registry()``
collects them by key.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from kavka.protocol.schema.dsl import Api


@cache
def registry() -> dict[int, Api]:
    """Every API by key, gathered from ``kavka.protocol.schema.apis``."""
    from kavka.protocol.schema import apis as package

    found: dict[int, Api] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for a in getattr(module, "APIS", ()):
            if a.key in found:
                raise RuntimeError(f"API key {a.key} defined twice ({found[a.key].name}, {a.name})")
            found[a.key] = a
    return found
