"""Per-field readers and writers used by the compiled codec plans.

``reader_for(field, version, flexible, child)`` returns ``fn(buf, pos) ->
(value, pos)`` and ``writer_for(...)`` returns ``fn(value, out)`` appending
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
from typing import Any, TypeAlias

from kavka.protocol import primitives as p
from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.message_base import Message
from kavka.protocol.schema.dsl import Field

# fn(buf, pos) -> (value, pos after it); the value's type is the field's
ReadFn: TypeAlias = Callable[[Buffer, int], tuple[Any, int]]
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


def _no_null_reader(read: ReadFn, what: str) -> ReadFn:
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


def _scalar_reader(t: str, nullable: bool, flexible: bool) -> ReadFn:
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


def array_len_reader(flexible: bool) -> ArrayLenReadFn:
    return p.read_compact_array_len if flexible else p.read_array_len


def reader_for(f: Field, version: int, flexible: bool, child: ReadFn | None = None, min_child: int = 1) -> ReadFn:
    nullable = version in f.nullable
    if f.is_struct_array:
        assert child is not None  # a struct's fields need its decoder
        return struct_array_reader(child, flexible, nullable, min_child)
    if f.is_struct:
        assert child is not None
        return struct_reader(child, nullable)
    if f.type_name.startswith("[]"):
        return prim_array_reader(f.type_name[2:], flexible, nullable)
    return _scalar_reader(f.type_name, nullable, flexible)


def struct_reader(child: ReadFn, nullable: bool) -> ReadFn:
    """A single struct; nullable structs carry an int8 marker (-1 = null)."""
    if not nullable:
        return child

    def r(buf: Buffer, pos: int) -> tuple[Any, int]:
        marker, pos = p.read_int8(buf, pos)
        if marker < 0:
            return None, pos
        return child(buf, pos)
    return r


def struct_array_reader(child: ReadFn, flexible: bool, nullable: bool, min_size: int) -> ReadFn:
    read_len = array_len_reader(flexible)

    def r(buf: Buffer, pos: int) -> tuple[list[Any] | None, int]:
        n, pos = read_len(buf, pos, min_size)
        if n < 0:
            if not nullable:
                raise not_null("array")
            return None, pos
        out = []
        for i in range(n):
            try:
                el, pos = child(buf, pos)
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

        def r(buf: Buffer, pos: int) -> tuple[list[Any] | None, int]:
            n, pos = read_len(buf, pos, size)
            if n < 0:
                if not nullable:
                    raise not_null("array")
                return None, pos
            return list(struct.unpack_from(f">{n}{code}", buf, pos)), pos + n * size
        return r
    one = _scalar_reader(elem, False, flexible)

    def r2(buf: Buffer, pos: int) -> tuple[list[Any] | None, int]:
        n, pos = read_len(buf, pos, size)
        if n < 0:
            if not nullable:
                raise not_null("array")
            return None, pos
        out = []
        for _ in range(n):
            v, pos = one(buf, pos)
            out.append(v)
        return out, pos
    return r2


def read_tags(o: Message, buf: Buffer, pos: int, known: dict[int, tuple[str, ReadFn]]) -> int:
    """Parse a tagged-field block into ``o``: known tags by ``known[tag] =
    (attribute, reader)``, others kept raw in ``o._unknown_tags``."""
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
            if o._unknown_tags is None:
                o._unknown_tags = {}
            o._unknown_tags[tag] = bytes(buf[pos:end])
        else:
            name, reader = entry
            try:
                value, used = reader(buf[pos:end], 0)
                if used != size:
                    raise DecodeError(f"tagged field {tag} declares {size} bytes but its value has {used}")
            except Exception as e:
                raise locate(e, name, -1) from None
            setattr(o, name, value)
            if o._sent_tags is None:
                o._sent_tags = set()
            o._sent_tags.add(tag)
        pos = end
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
