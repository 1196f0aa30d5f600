"""Per-field readers and writers used by the compiled codec plans.

``reader_for(field, version, flexible, child)`` returns ``fn(buf, pos,
budget) -> (value, pos)``, which charges the objects it builds to the
``DecodeBudget`` before building them (``kavka.protocol.budget``), and ``writer_for(...)`` returns ``fn(value, out)`` appending
the encoding to the list ``out``; ``child`` is the compiled decoder or
encoder of the field's struct (arrays of structs, single structs). The
codec (``kavka.protocol.plan``) inlines the hot cases (runs of fixed-size
fields, arrays of structs) and calls these for the rest and for tagged
fields. ``locate``/``elocate`` turn any exception raised inside a struct
into a ``DecodeError``/``EncodeError`` carrying the field path.

Pure functions; any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import partial
from typing import Any, TypeAlias

from kavka.protocol import budget as B
from kavka.protocol import primitives as p
from kavka.protocol.budget import DecodeBudget
from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.message_base import Message
from kavka.protocol.schema.dsl import Field

# fn(buf, pos, budget) -> (value, pos after it); the value's type is the
# field's; the objects it builds are charged to the budget first
ReadFn: TypeAlias = Callable[[Buffer, int, DecodeBudget], tuple[Any, int]]
# fn(value, out) appends the value's encoding to out
WriteFn: TypeAlias = Callable[[Any, list[Buffer]], None]
# fn(buf, pos, min_element_size) -> (count or -1, pos after it)
ArrayLenReadFn: TypeAlias = Callable[[Buffer, int, int], tuple[int, int]]

_NULL32 = p.INT32.pack(-1)


def field_kind(f: Field) -> str:
    """How the plan generator treats a field: "fixed" (packed with
    struct), "scalar" (string, bytes, records, uuid), "prims" (array of a
    primitive), "struct" or "structs" (array of structs)."""
    if f.is_struct_array:
        return "structs"
    if f.is_struct:
        return "struct"
    if f.type_name.startswith("[]"):
        return "prims"
    if f.type_name in p.STRUCT_CODE:
        return "fixed"
    return "scalar"


def locate(e: BaseException, seg: str, i: int, sub: str = "") -> DecodeError:
    """Prepend ``seg`` (``seg[i]`` inside an array), then ``sub`` (the
    field inside an inlined array element), to the error's path."""
    if isinstance(e, DecodeError):
        err = e
    elif isinstance(e, (struct.error, IndexError)):
        err = DecodeError(f"truncated ({e})")
    elif isinstance(e, UnicodeDecodeError):
        err = DecodeError(f"string is not valid UTF-8 ({e.reason} at byte {e.start})")
    else:
        err = DecodeError(f"{type(e).__name__}: {e}")
    if sub:
        err.path.insert(0, sub)
    if seg:
        err.path.insert(0, f"{seg}[{i}]" if i >= 0 else seg)
    return err


def elocate(e: BaseException, seg: str, i: int, sub: str = "") -> EncodeError:
    err = e if isinstance(e, EncodeError) else EncodeError(f"{type(e).__name__}: {e}")
    if sub:
        err.path.insert(0, sub)
    if seg:
        err.path.insert(0, f"{seg}[{i}]" if i >= 0 else seg)
    return err


def not_null(what: str) -> DecodeError:
    return DecodeError(f"null {what} where this version does not allow null")


def _no_null_reader(read: p.ReadFn, what: str) -> p.ReadFn:
    def r(buf: Buffer, pos: int) -> tuple[Any, int]:
        v, pos = read(buf, pos)
        if v is None:
            raise not_null(what)
        return v, pos
    return r


def elem_size(type_name: str, flexible: bool) -> int:
    """Smallest encoding of one value of a primitive type."""
    if type_name in p.FIXED_SIZE:
        return p.FIXED_SIZE[type_name]
    if type_name == "string":
        return 1 if flexible else 2
    return 1 if flexible else 4  # bytes, records


def elem_cost(type_name: str) -> int:
    """Memory of the object one primitive value decodes to, besides the
    content of strings and bytes (``kavka.protocol.budget``)."""
    if type_name in B.INT:
        return B.INT[type_name]
    return {"uuid": B.UUID, "string": B.STR_BASE, "bytes": B.BYTES_BASE, "records": B.SLICE}[type_name]


def _scalar_reader(t: str, nullable: bool, flexible: bool) -> p.ReadFn:
    if t in p.STRUCT_CODE:
        s = struct.Struct(">" + p.STRUCT_CODE[t])
        return p._fixed_reader(s, t)
    if t == "uuid":
        return p.read_uuid
    if t == "string":
        if flexible:
            return p.read_compact_nullable_string if nullable else p.read_compact_string
        return p.read_nullable_string if nullable else p.read_string
    if t == "bytes":
        if flexible:
            return p.read_compact_nullable_bytes if nullable else p.read_compact_bytes
        return p.read_nullable_bytes if nullable else p.read_bytes
    if t == "records":
        r = p.read_compact_records if flexible else p.read_records
        return r if nullable else _no_null_reader(r, "records")
    raise ValueError(f"unknown primitive type {t!r}")


def scalar_reader(t: str, nullable: bool, flexible: bool) -> ReadFn:
    """One primitive value, its object and content charged to the budget
    before it is built (strings at four bytes a byte, refunded to one when
    the text is ASCII: see ``kavka.protocol.budget``)."""
    read = _scalar_reader(t, nullable, flexible)
    cost = elem_cost(t)
    if t in ("string", "bytes"):
        read_len = (partial(p.read_compact_len, what=f"compact {t} length") if flexible else
                    p.read_string_len if t == "string" else p.read_bytes_len)
        wide = 4 if t == "string" else 1

        def r(buf: Buffer, pos: int, b: DecodeBudget) -> tuple[Any, int]:
            n, _ = read_len(buf, pos)
            b.left -= cost + wide * max(n, 0) + (B.WIDE_STR_EXTRA if wide > 1 else 0)
            if b.left < 0:
                raise b.exceeded(t)
            v, end = read(buf, pos)
            if wide > 1 and v is not None and len(v) == n:
                b.left += (wide - 1) * n + B.WIDE_STR_EXTRA  # ASCII: one byte a character
            return v, end
        return r

    def r2(buf: Buffer, pos: int, b: DecodeBudget) -> tuple[Any, int]:
        b.left -= cost
        if b.left < 0:
            raise b.exceeded(t)
        return read(buf, pos)
    return r2


def array_len_reader(flexible: bool) -> ArrayLenReadFn:
    return p.read_compact_array_len if flexible else p.read_array_len


def reader_for(f: Field, version: int, flexible: bool, child: ReadFn | None = None, min_child: int = 1,
               child_cost: int = 0) -> ReadFn:
    """A budgeted reader of field ``f``; ``child`` decodes its struct, whose
    smallest encoding is ``min_child`` bytes and fixed cost ``child_cost``."""
    nullable = version in f.nullable
    if f.is_struct_array:
        assert child is not None  # a struct's fields need its decoder
        return struct_array_reader(child, flexible, nullable, min_child, child_cost)
    if f.is_struct:
        assert child is not None
        return struct_reader(child, nullable, child_cost)
    if f.type_name.startswith("[]"):
        return prim_array_reader(f.type_name[2:], flexible, nullable)
    return scalar_reader(f.type_name, nullable, flexible)


def struct_reader(child: ReadFn, nullable: bool, cost: int = 0) -> ReadFn:
    """A single struct; nullable structs carry an int8 marker (-1 = null).
    ``cost``: charged here when the parent did not count it (a tagged
    field may be absent, so its struct is charged only when present)."""
    if not nullable and not cost:
        return child

    def r(buf: Buffer, pos: int, b: DecodeBudget) -> tuple[Any, int]:
        if nullable:
            marker, pos = p.read_int8(buf, pos)
            if marker < 0:
                return None, pos
        if cost:
            b.left -= cost
            if b.left < 0:
                raise b.exceeded("struct")
        return child(buf, pos, b)
    return r


def struct_array_reader(child: ReadFn, flexible: bool, nullable: bool, min_size: int, cost: int) -> ReadFn:
    read_len = array_len_reader(flexible)

    def r(buf: Buffer, pos: int, b: DecodeBudget) -> tuple[list[Any] | None, int]:
        n, pos = read_len(buf, pos, min_size)
        if n < 0:
            if not nullable:
                raise not_null("array")
            return None, pos
        b.left -= B.LIST_BASE + n * (B.LIST_SLOT + cost)
        if b.left < 0:
            raise b.exceeded(f"an array of {n} structs")
        out = []
        for i in range(n):
            try:
                el, pos = child(buf, pos, b)
            except Exception as e:
                raise locate(e, f"[{i}]", -1) from None
            out.append(el)
        return out, pos
    return r


def prim_array_reader(elem: str, flexible: bool, nullable: bool) -> ReadFn:
    read_len = array_len_reader(flexible)
    size = elem_size(elem, flexible)
    if elem in p.STRUCT_CODE:
        code = p.STRUCT_CODE[elem]
        # the list, the tuple unpack_from builds on the way, an int object each
        each = B.LIST_SLOT + B.POINTER + B.INT[elem]

        def r(buf: Buffer, pos: int, b: DecodeBudget) -> tuple[list[Any] | None, int]:
            n, pos = read_len(buf, pos, size)
            if n < 0:
                if not nullable:
                    raise not_null("array")
                return None, pos
            b.left -= 2 * B.LIST_BASE + n * each
            if b.left < 0:
                raise b.exceeded(f"an array of {n} {elem}")
            return list(struct.unpack_from(f">{n}{code}", buf, pos)), pos + n * size
        return r
    one = scalar_reader(elem, False, flexible)  # charges each element's object and content

    def r2(buf: Buffer, pos: int, b: DecodeBudget) -> tuple[list[Any] | None, int]:
        n, pos = read_len(buf, pos, size)
        if n < 0:
            if not nullable:
                raise not_null("array")
            return None, pos
        b.left -= B.LIST_BASE + n * B.LIST_SLOT
        if b.left < 0:
            raise b.exceeded(f"an array of {n} {elem}")
        out = []
        for _ in range(n):
            v, pos = one(buf, pos, b)
            out.append(v)
        return out, pos
    return r2


def read_tags(o: Message, buf: Buffer, pos: int, known: dict[int, tuple[str, ReadFn]], b: DecodeBudget) -> int:
    """Parse a tagged-field block into ``o``: known tags by ``known[tag] =
    (attribute, reader)``, others kept raw in ``o._unknown_tags``. Each
    tag is charged (its table entry, key and value) before it is kept."""
    count, pos = p.read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise p.length_error("tagged field count", count, len(buf) - pos)
    last = -1
    for _ in range(count):
        tag, pos = p.read_uvarint(buf, pos)
        if tag <= last:
            raise DecodeError(f"tagged field {tag} out of order or repeated (after {last})")
        last = tag
        size, pos = p.read_uvarint(buf, pos)
        if size > len(buf) - pos:
            raise p.length_error(f"tagged field {tag} size", size, len(buf) - pos)
        end = pos + size
        entry = known.get(tag)
        if entry is None:
            b.left -= B.TAGGED_FIELD_COST + size
            if b.left < 0:
                raise b.exceeded(f"tagged field {tag}")
            if o._unknown_tags is None:
                b.left -= B.DICT_BASE
                o._unknown_tags = {}
            o._unknown_tags[tag] = bytes(buf[pos:end])
        else:
            name, reader = entry
            b.left -= B.TABLE_ENTRY + B.INT["uint32"]
            try:
                value, used = reader(buf[pos:end], 0, b)
                if used != size:
                    raise DecodeError(f"tagged field {tag} declares {size} bytes but its value has {used}")
            except Exception as e:
                raise locate(e, name, -1) from None
            setattr(o, name, value)
            if o._sent_tags is None:
                b.left -= B.SET_BASE
                o._sent_tags = set()
            o._sent_tags.add(tag)
        pos = end
    if b.left < 0:
        raise b.exceeded("the tagged fields")
    return pos


# ---------------------------------------------------------------- writers


def _no_null_writer(write: WriteFn, what: str) -> WriteFn:
    def w(v: Any, out: list[Buffer]) -> None:
        if v is None:
            raise EncodeError(f"null {what} where this version does not allow null")
        write(v, out)
    return w


def _scalar_writer(t: str, nullable: bool, flexible: bool) -> WriteFn:
    w: WriteFn
    if t in p.STRUCT_CODE:
        pack = struct.Struct(">" + p.STRUCT_CODE[t]).pack
        w = lambda v, out: out.append(pack(v))  # noqa: E731
    elif t == "uuid":
        w = lambda v, out: out.append(v.bytes)  # noqa: E731
    elif t == "string":
        enc = p.write_compact_nullable_string if flexible else p.write_nullable_string
        w = lambda v, out: out.append(enc(v))  # noqa: E731
    elif t == "bytes":
        enc_bytes = p.write_compact_nullable_bytes if flexible else p.write_nullable_bytes
        w = lambda v, out: out.append(enc_bytes(v))  # noqa: E731
    elif t == "records":
        w = records_writer(flexible)
    else:
        raise ValueError(f"unknown primitive type {t!r}")
    if t in ("string", "bytes", "records") and not nullable:
        return _no_null_writer(w, t)
    return w


def records_writer(flexible: bool) -> WriteFn:
    """Records are appended as given (no copy until the final join)."""
    if flexible:
        def w(v: Any, out: list[Buffer]) -> None:
            if v is None:
                out.append(b"\x00")
            else:
                out.append(p.write_uvarint(len(v) + 1))
                out.append(v)
    else:
        pack = p.INT32.pack

        def w(v: Any, out: list[Buffer]) -> None:
            if v is None:
                out.append(_NULL32)
            else:
                out.append(pack(len(v)))
                out.append(v)
    return w


def array_len_writer(flexible: bool) -> Callable[[int | None], bytes]:
    return p.write_compact_array_len if flexible else p.write_array_len


def writer_for(f: Field, version: int, flexible: bool, child: WriteFn | None = None) -> WriteFn:
    nullable = version in f.nullable
    if f.is_struct_array:
        assert child is not None  # a struct's fields need its encoder
        return struct_array_writer(child, flexible, nullable)
    if f.is_struct:
        assert child is not None
        return struct_writer(child, nullable)
    if f.type_name.startswith("[]"):
        return prim_array_writer(f.type_name[2:], flexible, nullable)
    return _scalar_writer(f.type_name, nullable, flexible)


def struct_writer(child: WriteFn, nullable: bool) -> WriteFn:
    if not nullable:
        return child

    def w(v: Any, out: list[Buffer]) -> None:
        if v is None:
            out.append(b"\xff")
        else:
            out.append(b"\x01")
            child(v, out)
    return w


def struct_array_writer(child: WriteFn, flexible: bool, nullable: bool) -> WriteFn:
    alen = array_len_writer(flexible)

    def w(v: Any, out: list[Buffer]) -> None:
        if v is None:
            if not nullable:
                raise EncodeError("null array where this version does not allow null")
            out.append(alen(None))
            return
        out.append(alen(len(v)))
        for i, el in enumerate(v):
            try:
                child(el, out)
            except Exception as e:
                raise elocate(e, f"[{i}]", -1) from None
    return w


def prim_array_writer(elem: str, flexible: bool, nullable: bool) -> WriteFn:
    alen = array_len_writer(flexible)
    if elem in p.STRUCT_CODE:
        code = p.STRUCT_CODE[elem]

        def w(v: Any, out: list[Buffer]) -> None:
            if v is None:
                if not nullable:
                    raise EncodeError("null array where this version does not allow null")
                out.append(alen(None))
                return
            out.append(alen(len(v)))
            out.append(struct.pack(f">{len(v)}{code}", *v))
        return w
    one = _scalar_writer(elem, False, flexible)

    def w2(v: list[Any] | None, out: list[Buffer]) -> None:
        if v is None:
            if not nullable:
                raise EncodeError("null array where this version does not allow null")
            out.append(alen(None))
            return
        out.append(alen(len(v)))
        for x in v:
            one(x, out)
    return w2


def write_tags(out: list[Buffer], known: list[tuple[int, Buffer]] | None, unknown: dict[int, bytes] | None) -> None:
    """Emit a tagged-field block from known ``(tag, payload)`` pairs and
    unknown tags kept from decoding (known tags win on a clash)."""
    items: dict[int, Buffer] = dict(unknown or {})
    for tag, payload in known or ():
        items[tag] = payload
    out.append(p.write_tagged_fields(sorted(items.items())))
