"""``Message``, the base of every message class, ``build_struct``, which
generates those classes from the schema table's fields, and
``SharedStruct``, a struct shared by many messages and encoded once.

``kavka.protocol.messages`` builds one class per API request, response and
nested struct with ``build_struct`` (naming scheme, defaults and the
round-trip bookkeeping are documented there) and re-exports these names.
Type checkers see the generated classes through ``messages.pyi``, written
from the same schema table by ``python -m kavka.protocol.stubgen``.

Pure functions and immutable module state; any thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from kavka.protocol.schema.dsl import MISSING, Field

ZERO_UUID = uuid.UUID(int=0)
REQUEST = "request"
RESPONSE = "response"

_ZERO: dict[str, object] = {
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


def _none() -> None:
    return None


class Message:
    """Base of every generated message and struct class.

    Class attributes set by the generator: ``FIELDS`` (slot names in schema
    order), ``SCHEMA`` (the merged Field definitions by name), and on
    top-level classes ``API_KEY``, ``API_NAME`` and ``SIDE``.
    ``_unknown_tags`` (tag -> raw value) and ``_sent_tags`` are the tagged
    fields read from the wire, kept so that a decoded message re-encodes to
    the same bytes (``kavka.protocol.fieldio``).
    """

    __slots__ = ("_unknown_tags", "_sent_tags")
    FIELDS: ClassVar[tuple[str, ...]] = ()
    SCHEMA: ClassVar[dict[str, tuple[Field, ...]]] = {}
    API_KEY: ClassVar[int] = -1
    API_NAME: ClassVar[str] = ""
    SIDE: ClassVar[str] = ""
    # slot name -> maker of its default value (``__getattr__``)
    _DEFAULTS: ClassVar[dict[str, Callable[[], object]]] = {"_unknown_tags": _none, "_sent_tags": _none}
    _unknown_tags: dict[int, bytes] | None
    _sent_tags: set[int] | None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable (as list does)

    if not TYPE_CHECKING:  # hidden from type checkers: a misspelt field stays an error
        def __getattr__(self, name: str) -> Any:
            # Only reached for a slot never assigned: decoders leave fields
            # that are absent in the version (or tagged and not sent) unset,
            # and the default is made here on first access — per instance,
            # so a mutable default is never shared.
            make = type(self)._DEFAULTS.get(name)
            if make is None:
                raise AttributeError(f"{type(self).__qualname__!r} has no field {name!r}")
            value = make()
            object.__setattr__(self, name, value)
            return value

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELDS)
        return f"{type(self).__qualname__}({body})"

    def to_dict(self) -> dict[str, Any]:
        """Plain dicts and lists, for logs and tests."""
        def plain(v: object) -> object:
            if isinstance(v, (Message, SharedStruct)):
                return v.to_dict()
            if isinstance(v, list):
                return [plain(x) for x in v]
            if isinstance(v, memoryview):
                return bytes(v)
            return v
        return {n: plain(getattr(self, n)) for n in self.FIELDS}


class SharedStruct:
    """A struct that many messages share and that nobody changes any more,
    encoded once per encoding plan instead of once per message: a topic's
    Metadata entry, the same for every client until the metadata cache
    changes (at 10,000 partitions its encoding was a fifth of a broker's
    event loop while clients refreshed their metadata during a failover).

    Put it where its struct would go in an array of non-leaf structs (an
    element with nested structs or tagged fields, see
    ``kavka.protocol.plan``; not itself a tagged field), where the array's
    generated encoder appends the bytes it remembers for the same plan and
    field, and encodes ``struct`` (remembering the bytes) for any other.
    Elsewhere it is encoded as its struct. Readers see ``struct``'s fields;
    it compares equal to its struct. Changing ``struct`` after its first
    encoding is a bug the encoder cannot see: share only what is final.
    """

    __slots__ = ("struct", "_memo")

    def __init__(self, struct: Message) -> None:
        self.struct = struct
        # (the generated encoder that made the bytes, the bytes): one
        # tuple, so a reader never pairs one plan's key with another's bytes
        self._memo: tuple[object, bytes] | None = None

    def encoded(self, encode: Callable[[Message, list[Any]], None]) -> bytes:
        memo = self._memo
        if memo is not None and memo[0] is encode:
            return memo[1]
        out: list[Any] = []
        encode(self.struct, out)
        data = b"".join(out)
        self._memo = (encode, data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.struct, name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedStruct):
            other = other.struct
        return self.struct == other

    __hash__ = None  # type: ignore[assignment]  # as its (mutable) struct

    def __repr__(self) -> str:
        return f"SharedStruct({self.struct!r})"

    def to_dict(self) -> dict[str, Any]:
        return self.struct.to_dict()


_R = TypeVar("_R", bound="Response")


class Request(Message, Generic[_R]):
    """Base of the top-level request classes; ``_R`` is the API's response
    class, so that a typed ``send(request) -> response`` needs no cast."""

    __slots__ = ()


class Response(Message):
    """Base of the top-level response classes."""

    __slots__ = ()


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def merged(fields: tuple[Field, ...]) -> dict[str, tuple[Field, ...]]:
    """Field definitions grouped by name, in first-appearance order (a name
    may be declared twice over disjoint version ranges)."""
    out: dict[str, list[Field]] = {}
    for f in fields:
        out.setdefault(f.name, []).append(f)
    return {k: tuple(v) for k, v in out.items()}


def default_of(f: Field) -> object:
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
    assert isinstance(f.type, str)  # a struct array is an array
    return _ZERO[f.type]


def _constant(value: object) -> Callable[[], object]:
    return lambda: value


def build_struct(qualname: str, defs: dict[str, tuple[Field, ...]],
                 attrs: dict[str, object] | None = None, base: type[Message] = Message) -> type[Message]:
    """Generate one slotted class for a struct whose fields are ``defs``
    (a subclass of ``base``: ``Request`` or ``Response`` at the top level)."""
    names = tuple(defs)
    ns: dict[str, Any] = {"FRESH": FRESH}
    nested: dict[str, type[Message]] = {}
    params, body = [], []
    defaults: dict[str, Callable[[], object]] = {"_unknown_tags": _none, "_sent_tags": _none}
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
            if first.is_array:
                defaults[name] = list
            else:
                assert child is not None  # a single struct
                defaults[name] = child
        else:
            defaults[name] = _constant(dflt)
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
    cls_attrs: dict[str, object] = {
        "__slots__": names, "__init__": ns["__init__"], "__eq__": ns["__eq__"],
        "__hash__": None, "FIELDS": names, "SCHEMA": defs, "_DEFAULTS": defaults,
        "__qualname__": qualname, "__module__": "kavka.protocol.messages"}
    cls_attrs.update(nested)
    cls_attrs.update(attrs or {})
    return type(qualname.rsplit(".", 1)[-1], (base,), cls_attrs)
