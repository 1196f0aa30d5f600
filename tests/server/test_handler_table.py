"""The dispatcher table: every API module's key is served, with the
versions its module declares, and a wiring mistake (a handler missing or
for an unknown key) is refused at startup."""

from __future__ import annotations

import pytest

from kavka.server import handler_table
from kavka.server.handlers import api_versions, produce
from kavka.server.network import Dispatcher


async def _handler(ctx, request):
    return None


def test_every_api_module_is_registered_with_its_versions():
    d = Dispatcher()
    handler_table.register_all(d, {m.API_KEY: _handler for m in handler_table.API_MODULES})
    served = {k: (lo, hi) for k, lo, hi in d.supported()}
    assert served[api_versions.API_KEY] == (api_versions.MIN_VERSION, api_versions.MAX_VERSION)
    for m in handler_table.API_MODULES:
        assert served[m.API_KEY] == (m.MIN_VERSION, m.MAX_VERSION)
        assert d.lookup(m.API_KEY)[0] is _handler
    assert len(served) == len(handler_table.API_MODULES) + 1


def test_missing_or_unknown_handlers_are_refused():
    handlers = {m.API_KEY: _handler for m in handler_table.API_MODULES}
    del handlers[produce.API_KEY]
    with pytest.raises(ValueError, match=r"missing for API keys \[0\]"):
        handler_table.register_all(Dispatcher(), handlers)
    handlers[produce.API_KEY] = _handler
    handlers[999] = _handler
    with pytest.raises(ValueError, match=r"unknown API keys \[999\]"):
        handler_table.register_all(Dispatcher(), handlers)
