"""In-memory Kafka messages: one generated slotted class per API request,
API response and nested struct, covering every version of that API.

Naming scheme (what handlers write):

* top level: ``<Api.name>Request`` / ``<Api.name>Response``, e.g.
  ``ProduceRequest``, ``FetchResponse``, ``ApiVersionsResponse``; they
  subclass ``Request[<Api.name>Response]`` and ``Response``, so a typed
  ``send(request)`` returns the API's response type;
* nested structs: the CamelCase of the field name, as an attribute of the
  enclosing class: field ``responses`` of ProduceResponse has elements of
  ``ProduceResponse.Responses``, whose field ``partition_responses`` holds
  ``ProduceResponse.Responses.PartitionResponses``;
* attributes: the schema's snake_case field names. Keyword-only
  constructors default every field from the schema (explicit ``default``,
  else 0 / False / "" / b"" / [] / zero UUID / a default struct; None for
  fields nullable in some version).

So a handler writes::

    R = ProduceResponse
    R(responses=[R.Responses(name="t", partition_responses=[
        R.Responses.PartitionResponses(index=0, base_offset=42)])])

Import the classes with ``from kavka.protocol.messages import
ProduceResponse`` (resolved lazily from the schema registry) or look them up
with ``request_class(key)`` / ``response_class(key)``.

Instances are mutable (handlers fill them in) and compare by value. A field
that does not exist in the version being encoded must keep its default
unless the schema marks it ``ignorable``. ``records`` fields hold raw bytes
(a zero-copy memoryview after decoding) and are never decoded here.
Unknown tagged fields read from the wire are kept in ``_unknown_tags`` and
written back when the message is re-encoded; known tags the peer sent are
remembered in ``_sent_tags`` and re-sent even when default-valued, so a
decoded message re-encodes to the same bytes.

The classes are built by ``kavka.protocol.message_base.build_struct`` once
per API on first use; thereafter read-only, any thread. Type checkers and
IDEs see them through ``messages.pyi``, generated from the same schema table
by ``python -m kavka.protocol.stubgen`` (a test fails when it is stale).
"""

from __future__ import annotations

from functools import cache

from kavka.protocol.message_base import (
    FRESH,
    REQUEST,
    RESPONSE,
    ZERO_UUID,
    Message,
    Request,
    Response,
    SharedStruct,
    build_struct,
    camel,
    default_of,
    merged,
)
from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import Api

__all__ = ["FRESH", "REQUEST", "RESPONSE", "ZERO_UUID", "Message", "Request", "Response", "SharedStruct", "build_struct", "camel",
           "default_of", "merged", "message_class", "request_class", "response_class"]


@cache
def _classes(api_key: int) -> tuple[type[Message], type[Message]]:
    a: Api = registry()[api_key]
    req = build_struct(f"{a.name}Request", merged(a.request),
                       {"API_KEY": a.key, "API_NAME": a.name, "SIDE": REQUEST}, Request)
    resp = build_struct(f"{a.name}Response", merged(a.response),
                        {"API_KEY": a.key, "API_NAME": a.name, "SIDE": RESPONSE}, Response)
    return req, resp


def request_class(api_key: int) -> type[Message]:
    """The request class of an API (KeyError for an unknown key)."""
    return _classes(api_key)[0]


def response_class(api_key: int) -> type[Message]:
    return _classes(api_key)[1]


def message_class(api_key: int, side: str) -> type[Message]:
    return _classes(api_key)[0 if side == REQUEST else 1]


@cache
def _by_name() -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for key, a in registry().items():
        out[f"{a.name}Request"] = (key, REQUEST)
        out[f"{a.name}Response"] = (key, RESPONSE)
    return out


def __getattr__(name: str) -> type[Message]:
    # ``from kavka.protocol.messages import ProduceRequest`` (PEP 562)
    try:
        key, side = _by_name()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no message class {name!r}") from None
    return message_class(key, side)
