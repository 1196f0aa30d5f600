"""Kavka's compact, declarative form for Kafka message schemas.

Each API is one ``Api`` value listing its request and response fields, the
versions each field exists in, nullability, defaults and tagged fields, and
the first flexible version. The tables under ``kavka.protocol.schema.apis``
are written from the Kafka protocol guide and KIPs (facts), in this form;
one generic codec (``kavka.protocol.codec``) encodes and decodes every API
and version from them.

Field types (``Field.type``):
    "bool" "int8" "int16" "int32" "int64" "uint16" "uint32" "float64"
    "uuid" "string" "bytes" "records"
    "[]int32" ... — an array of a primitive type ("[]" + any name above)
    a tuple of Fields — an array of structs (the common case)
    a ``Struct`` — a single nested struct (e.g. tagged sub-structures)

Versions are written as strings: "0+" (0 and later), "3-7" (inclusive),
"5" (just 5), "none". Names are snake_case (Kafka's field names, lowered).

Pure data; imported by the codec and by tests that generate round trips.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_OPEN = 1 << 15  # larger than any version


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``hi`` is ``_OPEN`` for "and later"."""

    lo: int
    hi: int

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == _OPEN:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(1, 0)
ALL = Versions(0, _OPEN)


def V(spec: str | Versions | None) -> Versions:
    """Parse "0+", "3-7", "5" or "none"."""
    if spec is None:
        return NONE
    if isinstance(spec, Versions):
        return spec
    spec = spec.strip()
    if spec == "none":
        return NONE
    if spec.endswith("+"):
        return Versions(int(spec[:-1]), _OPEN)
    if "-" in spec:
        lo, hi = spec.split("-", 1)
        return Versions(int(lo), int(hi))
    return Versions(int(spec), int(spec))


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64",
     "uuid", "string", "bytes", "records"}
)


@dataclass(frozen=True, slots=True)
class Struct:
    """A single (non-array) nested struct."""

    fields: tuple[Field, ...]


FieldType = str | tuple["Field", ...] | Struct


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message or struct.

    ``versions``: where the field is present (in the body or, for tagged
    fields, possibly in the tagged block). ``nullable``: versions where null
    is allowed. ``tag``/``tagged``: the tag number and the versions in which
    the field is carried as a tagged field (only flexible versions).
    ``default``: the value when the field is absent in a version, or when a
    tagged field is not sent; MISSING means the type's zero value (0, False,
    "", empty array, the zero UUID; None for nullable fields).
    ``ignorable``: encoding a non-default value in a version without the
    field is silently dropped rather than an error.
    """

    name: str
    type: FieldType
    versions: Versions
    nullable: Versions = NONE
    default: object = MISSING
    tag: int | None = None
    tagged: Versions = NONE
    ignorable: bool = False

    @property
    def is_struct_array(self) -> bool:
        return isinstance(self.type, tuple)

    @property
    def is_struct(self) -> bool:
        return isinstance(self.type, Struct)

    @property
    def struct_fields(self) -> tuple[Field, ...]:
        if isinstance(self.type, tuple):
            return self.type
        if isinstance(self.type, Struct):
            return self.type.fields
        raise TypeError(f"field {self.name} is not a struct")

    @property
    def type_name(self) -> str:
        """The type of a non-struct field ("int32", "[]string" ...)."""
        if isinstance(self.type, str):
            return self.type
        raise TypeError(f"field {self.name} is a struct")

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, tuple) or (isinstance(self.type, str) and self.type.startswith("[]"))


def F(
    name: str,
    type: FieldType | list[Field],
    versions: str = "0+",
    *,
    nullable: str | None = None,
    default: object = MISSING,
    tag: int | None = None,
    tagged: str | None = None,
    ignorable: bool = False,
) -> Field:
    """Shorthand constructor: ``F("acks", "int16", "0+")``,
    ``F("topics", [F(...), ...], "0+")`` for an array of structs,
    ``F("x", Struct((...)), "12+", tag=0, tagged="12+")`` for one struct."""
    if isinstance(type, list):
        type = tuple(type)
    if isinstance(type, str) and type.removeprefix("[]") not in PRIMITIVES:
        raise ValueError(f"field {name}: unknown type {type!r}")
    return Field(name, type, V(versions), V(nullable), default, tag, V(tagged), ignorable)


def S(*fields: Field) -> Struct:
    """A single nested struct: ``F("x", S(F(...), ...), ...)``."""
    return Struct(tuple(fields))


@dataclass(frozen=True, slots=True)
class Api:
    """One Kafka API: key, name, the versions Kavka can encode and decode,
    the first flexible version (None when no version is flexible), and the
    request and response fields."""

    key: int
    name: str
    min_version: int
    max_version: int
    flexible_from: int | None
    request: tuple[Field, ...]
    response: tuple[Field, ...]
    # Versions that exist on the wire but are not served (e.g. Fetch and
    # Metadata past the topic-id cut-over until topic ids are supported).
    notes: str = field(default="", compare=False)

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def request_header_version(self, version: int) -> int:
        """Request header v2 for flexible versions, v1 otherwise.
        (v0 — no client id — is only used by ControlledShutdown v0.)"""
        if self.key == 7 and version == 0:
            return 0
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        """Response header v1 (tagged fields) for flexible versions, except
        ApiVersions, whose response header is always v0 (KIP-511)."""
        if self.key == 18:
            return 0
        return 1 if self.is_flexible(version) else 0


def api(
    key: int,
    name: str,
    versions: str,
    flexible: str | None,
    request: list[Field],
    response: list[Field],
    notes: str = "",
) -> Api:
    """Shorthand: ``api(0, "Produce", "0-11", "9+", [...], [...])``."""
    v = V(versions)
    flex = None if flexible in (None, "none") else V(flexible).lo
    return Api(key, name, v.lo, v.hi, flex, tuple(request), tuple(response), notes)
