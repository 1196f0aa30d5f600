"""What every console page shares: the Jinja2 templates, rendering a page
with its navigation and messages, the redirect after a successful change
(with a one-line notice), and turning every failure into words.

``Web.page`` wraps a route: a ``FormError`` (bad input) answers 400, an
error of the cluster (``KafkaError``, which includes every client
connection error) 502, each rendered on the page as one sentence; anything
else is a bug in the console, logged with its stack on the console's side
and shown as one line. No stack trace ever reaches the browser. Runs on
the console's event loop.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlparse

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from kavka.common.errors import ErrorCode, KafkaError
from kavka.console import forms
from kavka.console.forms import FormError
from kavka.console.service import ConsoleService, describe_error

log = logging.getLogger("kavka.console")
TEMPLATES = Path(__file__).with_name("templates")
NAV = (("/", "Overview"), ("/topics", "Topics"), ("/groups", "Consumer groups"), ("/reassign", "Reassignment"),
       ("/elect", "Leader election"), ("/acls", "ACLs"), ("/users", "SCRAM users"), ("/broker-metrics", "Metrics"))
MAX_FORM_BYTES = 2 << 20
_NOT_FOUND = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.GROUP_ID_NOT_FOUND})


class Web:
    """Templates and the service, handed to every page module."""

    def __init__(self, service: ConsoleService, bootstrap: str) -> None:
        self.service = service
        self.bootstrap = bootstrap
        self.env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
        self.env.globals.update(nav=NAV, fmt_bytes=forms.format_bytes, fmt_ms=forms.format_ms, quote=quote)

    def render(self, request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        notice = request.query_params.get("notice", "")[:500]
        body = self.env.get_template(template).render(request=request, path=request.url.path,
                                                      bootstrap=self.bootstrap, notice=notice, **ctx)
        return HTMLResponse(body, status_code=status)

    @staticmethod
    def done(path: str, notice: str) -> RedirectResponse:
        """After a change: back to a page (303 so a reload does not repeat it)."""
        sep = "&" if "?" in path else "?"
        return RedirectResponse(f"{path}{sep}{urlencode({'notice': notice})}", status_code=303)

    def failure(self, request: Request, e: BaseException, title: str) -> HTMLResponse:
        if isinstance(e, FormError):
            return self.render(request, "error.html", 400, title=title, error=str(e))
        if isinstance(e, KafkaError):
            status = 404 if e.code in _NOT_FOUND else 502
            return self.render(request, "error.html", status, title=title, error=describe_error(e))
        log.exception("console bug while serving %s", request.url.path)
        return self.render(request, "error.html", 500, title=title,
                           error=f"the console failed ({type(e).__name__}: {e}); see the console's log")

    def page(self, title: str) -> Callable[[Callable[[Request], Awaitable[Response]]],
                                           Callable[[Request], Awaitable[Response]]]:
        def wrap(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
            @functools.wraps(handler)
            async def run(request: Request) -> Response:
                try:
                    return await handler(request)
                except Exception as e:  # noqa: BLE001 - every failure becomes words on the page
                    return self.failure(request, e, title)
            return run
        return wrap


async def form_of(request: Request) -> dict[str, str]:
    """The posted form as text fields, refused when too large or sent
    from another site's page (the console has no login of its own, so a
    page elsewhere must not make a visitor's browser delete a topic: the
    browser's Origin, or failing that Referer, must be the console)."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is not None and urlparse(source).netloc != request.headers.get("host", ""):
        raise FormError(f"a form posted from {urlparse(source).netloc or source[:80]!r} is refused; "
                        "use the console's own pages")
    size = request.headers.get("content-length")
    if size is not None and (not size.isdigit() or int(size) > MAX_FORM_BYTES):
        raise FormError(f"the form is larger than {MAX_FORM_BYTES} bytes")
    try:
        form = await request.form(max_files=0, max_fields=2000, max_part_size=MAX_FORM_BYTES)
    except HTTPException as e:  # Starlette's parser refused the body (a file, too many fields, malformed)
        raise FormError(f"the form cannot be read: {e.detail}; fields must be text") from None
    out: dict[str, str] = {}
    for k, v in form.multi_items():
        if not isinstance(v, str):
            raise FormError(f"field {k} must be text, not a file")
        out[k] = v
    return out
