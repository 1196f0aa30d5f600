"""In-memory Kafka messages: one generated slotted class per API request,
API response and nested struct, covering every version of that API.

Naming scheme (what handlers write):

* top level: ``<Api.name>Request`` / ``<Api.name>Response``, e.g.
  ``ProduceRequest``, ``FetchResponse``, ``ApiVersionsResponse``;
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

Built once per API on first use; thereafter read-only, any thread.
"""

from __future__ import annotations

import uuid
from functools import cache

from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import MISSING, Api, Field

ZERO_UUID = uuid.UUID(int=0)
REQUEST = "request"
RESPONSE = "response"

_ZERO = {
    "bool": False, "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0,
    "uint32": 0, "float64": 0.0, "uuid": ZERO_UUID, "string": "", "bytes": b"",
    "records": None,
}


class _Fresh:
    """Marks a constructor argument whose default is a fresh mutable value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


FRESH = _Fresh()


class Message:
    """Base of every generated message and struct class.

    Class attributes set by the generator: ``FIELDS`` (slot names in schema
    order), ``SCHEMA`` (the merged Field definitions by name), and on
    top-level classes ``API_KEY``, ``API_NAME`` and ``SIDE``.
    """

    __slots__ = ("_unknown_tags", "_sent_tags")
    FIELDS: tuple[str, ...] = ()
    SCHEMA: dict[str, tuple[Field, ...]] = {}
    API_KEY: int = -1
    API_NAME: str = ""
    SIDE: str = ""

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    __hash__ = None  # mutable
    _DEFAULTS: dict = {"_unknown_tags": lambda: None, "_sent_tags": lambda: None}

    def __getattr__(self, name: str):
        # Only reached for a slot never assigned: decoders leave fields that
        # are absent in the version (or tagged and not sent) unset, and the
        # default is made here on first access — per instance, so a mutable
        # default is never shared.
        make = type(self)._DEFAULTS.get(name)
        if make is None:
            raise AttributeError(f"{type(self).__qualname__!r} has no field {name!r}")
        value = make()
        object.__setattr__(self, name, value)
        return value

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELDS)
        return f"{type(self).__qualname__}({body})"

    def to_dict(self) -> dict:
        """Plain dicts and lists, for logs and tests."""
        def plain(v):
            if isinstance(v, Message):
                return v.to_dict()
            if isinstance(v, list):
                return [plain(x) for x in v]
            if isinstance(v, memoryview):
                return bytes(v)
            return v
        return {n: plain(getattr(self, n)) for n in self.FIELDS}


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def merged(fields: tuple[Field, ...]) -> dict[str, tuple[Field, ...]]:
    """Field definitions grouped by name, in first-appearance order (a name
    may be declared twice over disjoint version ranges)."""
    out: dict[str, list[Field]] = {}
    for f in fields:
        out.setdefault(f.name, []).append(f)
    return {k: tuple(v) for k, v in out.items()}


def default_of(f: Field):
    """The value a field has when absent or not sent; FRESH for arrays and
    single structs (a new list / struct per instance)."""
    if isinstance(f.default, list):
        return FRESH  # never share one mutable list between instances
    if f.default is not MISSING:
        return f.default
    if not f.nullable.empty:
        return None
    if f.is_array or f.is_struct:
        return FRESH
    return _ZERO[f.type]


def build_struct(qualname: str, defs: dict[str, tuple[Field, ...]], attrs: dict | None = None) -> type:
    """Generate one slotted class for a struct whose fields are ``defs``."""
    names = tuple(defs)
    ns: dict[str, object] = {"FRESH": FRESH}
    nested: dict[str, type] = {}
    params, body = [], []
    defaults: dict[str, object] = {"_unknown_tags": lambda: None, "_sent_tags": lambda: None}
    for i, name in enumerate(names):
        first = defs[name][0]
        child = None
        if first.is_struct_array or first.is_struct:
            sub: list[Field] = []
            for d in defs[name]:
                sub.extend(d.struct_fields)
            child = build_struct(f"{qualname}.{camel(name)}", merged(tuple(sub)))
            nested[camel(name)] = child
        dflt = default_of(first)
        if dflt is FRESH:
            params.append(f"{name}=FRESH")
            make = "[]" if first.is_array else f"_C{i}()"
            ns[f"_C{i}"] = child
            body.append(f"    self.{name} = {make} if {name} is FRESH else {name}")
            defaults[name] = list if first.is_array else child
        else:
            defaults[name] = (lambda d: lambda: d)(dflt)
            ns[f"_D{i}"] = dflt
            params.append(f"{name}=_D{i}")
            body.append(f"    self.{name} = {name}")
    body.append("    self._unknown_tags = self._sent_tags = None")
    sig = ", ".join(["self", "*", *params]) if params else "self"
    src = f"def __init__({sig}):\n" + "\n".join(body) + "\n"
    # A straight-line __eq__: the encoder compares tagged and absent fields
    # with their defaults on every message.
    same = " and ".join(f"self.{n} == other.{n}" for n in names) or "True"
    src += ("def __eq__(self, other):\n"
            "    if type(other) is not type(self):\n        return NotImplemented\n"
            f"    return {same}\n")
    exec(compile(src, f"<kavka message {qualname}>", "exec"), ns)
    cls_attrs = {"__slots__": names, "__init__": ns["__init__"], "__eq__": ns["__eq__"],
                 "__hash__": None, "FIELDS": names, "SCHEMA": defs, "_DEFAULTS": defaults,
                 "__qualname__": qualname, "__module__": __name__}
    cls_attrs.update(nested)
    cls_attrs.update(attrs or {})
    return type(qualname.rsplit(".", 1)[-1], (Message,), cls_attrs)


@cache
def _classes(api_key: int) -> tuple[type, type]:
    a: Api = registry()[api_key]
    req = build_struct(f"{a.name}Request", merged(a.request),
                       {"API_KEY": a.key, "API_NAME": a.name, "SIDE": REQUEST})
    resp = build_struct(f"{a.name}Response", merged(a.response),
                        {"API_KEY": a.key, "API_NAME": a.name, "SIDE": RESPONSE})
    return req, resp


def request_class(api_key: int) -> type:
    """The request class of an API (KeyError for an unknown key)."""
    return _classes(api_key)[0]


def response_class(api_key: int) -> type:
    return _classes(api_key)[1]


def message_class(api_key: int, side: str) -> type:
    return _classes(api_key)[0 if side == REQUEST else 1]


@cache
def _by_name() -> dict[str, tuple[int, str]]:
    out = {}
    for key, a in registry().items():
        out[f"{a.name}Request"] = (key, REQUEST)
        out[f"{a.name}Response"] = (key, RESPONSE)
    return out


def __getattr__(name: str) -> type:
    # ``from kavka.protocol.messages import ProduceRequest`` (PEP 562)
    try:
        key, side = _by_name()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no message class {name!r}") from None
    return message_class(key, side)
