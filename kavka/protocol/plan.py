"""Compile a schema table into fast decode/encode functions per version.

For one (API, side, version) the ``Compiler`` walks the fields present in
that version and emits Python source for one decoder and one encoder per
struct, then ``exec``s it once. The generated code unpacks each run of
consecutive fixed-size fields with a single precompiled ``struct.Struct``,
reads lengths inline (checked against the remaining bytes before any
slice or loop), and loops over arrays of structs inline; arrays of "leaf"
structs (only scalar fields, no tagged ones) get the element code itself
inlined in the loop — the Produce/Fetch partitions cost one ``unpack_from``
and one object each. An element of an array of non-leaf structs may be a
``SharedStruct``: its bytes are encoded once per plan and appended as they are. Everything else (arrays of primitives, uuids, single
structs, tagged fields) goes through ``kavka.protocol.fieldio``.

Generated decoder: ``d(buf, pos, budget) -> (message, pos)``, charging
the memory of what it builds to the ``DecodeBudget`` before building it
(``kavka.protocol.budget``; request decoders only); encoder: ``e(msg,
out)`` appends byte strings to the list ``out``. Each keeps the current
field name and array index in locals (``_f``, ``_i``, and ``_g`` for the
field inside an inlined element) so any failure becomes a typed error with
the full field path (``topic_data[0].partition_data[3].records``).

Flexible versions (KIP-482): compact lengths, and a tagged-field block
after every struct. A tagged field is written only when it differs from
its default (librdkafka < 2.2 misreads default-valued tags); unknown tags
are kept on decode and written back on encode.

Plans are built on first use and cached by the codec; read-only after.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from typing import Any, TypeAlias, cast

from kavka.protocol import budget as B
from kavka.protocol import fieldio as fio
from kavka.protocol import primitives as p
from kavka.protocol.budget import DecodeBudget
from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.fieldio import field_kind as kind
from kavka.protocol.message_base import FRESH, Message, SharedStruct, camel, default_of
from kavka.protocol.schema.dsl import Field

# The compiled functions of one (API, side, version); see the module docstring.
DecodeFn: TypeAlias = Callable[[Buffer, int, DecodeBudget], tuple[Message, int]]
EncodeFn: TypeAlias = Callable[[Message, list[Buffer]], None]
Plan: TypeAlias = tuple[DecodeFn, EncodeFn, str]
# Field name -> the generated function (by its global name) of that field's struct
Children: TypeAlias = dict[str, str]

SLICE = {  # the value of a string/bytes/records of {n} bytes at pos
    "string": "str(buf[pos:pos + {n}], 'utf-8')",
    "bytes": "bytes(buf[pos:pos + {n}])",
    "records": "buf[pos:pos + {n}]",  # zero-copy: batches stay opaque
}


def instance_size(cls: type[Message]) -> int:
    """Memory of one instance of a message class (its slots, object and
    GC headers), as ``tracemalloc`` counts it."""
    return sys.getsizeof(object.__new__(cls))


class SchemaError(ValueError):
    """A schema table that cannot be compiled (e.g. two definitions of one
    field name present in the same version)."""


class Compiler:
    """Generates the decoder and encoder of one (api, side, version)."""

    def __init__(self, version: int, flexible: bool, charged: bool = True) -> None:
        self.v = version
        self.flex = flexible
        self.charged = charged  # emit the budget's charges (requests; see decoders)
        # globals of the generated module: helpers, then everything name() binds
        self.ns: dict[str, Any] = {
            "_new": object.__new__, "_locate": fio.locate, "_elocate": fio.elocate,
            "_read_tags": fio.read_tags, "_write_tags": fio.write_tags,
            "_not_null": fio.not_null, "DecodeError": DecodeError, "EncodeError": EncodeError,
            "_walen": fio.array_len_writer(flexible),
            "_uvarint": p.read_uvarint, "_length_error": p.length_error,
            "_I16": p.INT16.unpack_from, "_I32": p.INT32.unpack_from,
            "_P32": p.INT32.pack, "_wuvarint": p.write_uvarint, "_Shared": SharedStruct,
        }
        self.src: list[str] = []
        self.late: list[tuple[str, Callable[[dict[str, Any]], object]]] = []
        self.n = 0
        self.min_sizes: dict[str, int] = {}
        self.costs: dict[str, int] = {}  # decoder name -> fixed cost of its struct (see decoders)
        self.source = ""

    def name(self, prefix: str, value: object) -> str:
        """A fresh global of the generated module bound to ``value``."""
        self.n += 1
        name = f"{prefix}{self.n}"
        self.ns[name] = value
        return name

    def late_name(self, prefix: str, factory: Callable[[dict[str, Any]], object]) -> str:
        """A global whose value needs the generated functions (children):
        ``factory(ns)`` runs right after the source is executed."""
        name = self.name(prefix, None)
        self.late.append((name, factory))
        return name

    def present(self, cls: type[Message], fields: tuple[Field, ...]) -> list[Field]:
        out: list[Field] = []
        seen: set[str] = set()
        for f in fields:
            if self.v in f.versions:
                if f.name in seen:
                    raise SchemaError(f"{cls.__qualname__}.{f.name} defined twice for v{self.v}")
                seen.add(f.name)
                out.append(f)
        return out

    def tagged(self, f: Field) -> bool:
        return self.flex and f.tag is not None and self.v in f.tagged

    def split(self, cls: type[Message], fields: tuple[Field, ...]) -> tuple[list[Field], list[Field]]:
        """(body fields, tagged fields) present in this version."""
        present = self.present(cls, fields)
        return [f for f in present if not self.tagged(f)], [f for f in present if self.tagged(f)]

    def is_leaf(self, f: Field) -> bool:
        """An array of structs whose element code can be inlined: the
        element has no structs and no tagged fields in this version."""
        if not f.is_struct_array:
            return False
        present = [g for g in f.struct_fields if self.v in g.versions]
        return all(kind(g) in ("fixed", "scalar", "prims") and not self.tagged(g) for g in present)

    def child_class(self, cls: type[Message], f: Field) -> type[Message]:
        child: type[Message] = getattr(cls, camel(f.name))
        return child

    def build(self, label: str) -> None:
        code = "\n\n".join(self.src) + "\n"
        exec(compile(code, f"<kavka plan {label}>", "exec"), self.ns)
        for name, factory in self.late:
            self.ns[name] = factory(self.ns)
        self.source = code

    # -- decoders. Per struct ``def dN(buf, pos, b): ... return o, pos``
    # (``b``: the ``DecodeBudget``). Field code is emitted by
    # ``dec_fields()`` for a target object (``o``, or ``el`` inside an
    # inlined array element), an indentation, the local naming the current
    # field (``_f``, or ``_g`` inside an element) and the local holding
    # lengths (``n`` / ``m``), so the same emission serves both levels.
    # Fields absent in the version, tagged fields not sent and
    # ``_unknown_tags`` are left unset: ``Message.__getattr__`` makes their
    # default on first access, which keeps decoding free of default structs.
    #
    # Memory (``kavka.protocol.budget``): each struct has a fixed cost (its
    # instance, an int object per integer field, the base of each string,
    # bytes, uuid and records field, its non-null nested structs). An array
    # charges its elements' fixed costs when its length is read, before the
    # loop; strings and bytes charge their content as read; tagged fields and
    # arrays of primitives charge in ``fieldio``. The top-level struct
    # charges its own fixed cost on entry. Response decoders (``charged``
    # false) emit no charges: responses are decoded without a budget.

    def length_lines(self, ind: str, nv: str, what: str, width: int, min_each: int) -> list[str]:
        """Read a length into ``nv`` (-1 = null) and check ``nv * min_each``
        against the bytes that remain, before anything uses it."""
        if self.flex:
            L = [f"{ind}{nv} = buf[pos]",  # unsigned varint N+1, 1-byte case inline
                 f"{ind}if {nv} < 128: pos += 1",
                 f"{ind}else: {nv}, pos = _uvarint(buf, pos)",
                 f"{ind}{nv} -= 1"]
        else:
            L = [f"{ind}{nv}, = {'_I16' if width == 2 else '_I32'}(buf, pos); pos += {width}",
                 f"{ind}if {nv} < -1: raise DecodeError(f'negative {what} {{{nv}}}')"]
        need = nv if min_each == 1 else f"{nv} * {min_each}"
        L.append(f"{ind}if {need} > len(buf) - pos: raise _length_error({what!r}, {nv}, len(buf) - pos)")
        return L

    def charge_lines(self, ind: str, amount: str, what: str) -> list[str]:
        if not self.charged:
            return []
        return [f"{ind}b.left -= {amount}",
                f"{ind}if b.left < 0: raise b.exceeded({what})"]

    def dec_tags(self, ind: str, obj: str, fv: str, tagged: list[Field], children: Children) -> list[str]:
        specs = []
        for f in tagged:
            cn = children.get(f.name)
            mn = max(1, self.min_sizes[cn]) if cn is not None and f.is_struct_array else 1
            specs.append((f, cn, mn, self.costs[cn] if cn is not None else 0))
        v = self.v
        kn = self.late_name("T", lambda ns: {
            f.tag: (f.name, fio.reader_for(f, v, True, ns[cn] if cn else None, mn, cost))
            for f, cn, mn, cost in specs})
        return [f"{ind}{fv} = '_tagged_fields'",
                f"{ind}if buf[pos] == 0: pos += 1",
                f"{ind}else: pos = _read_tags({obj}, buf, pos, {kn}, b)"]

    def dec_fields(self, cls: type[Message], body: list[Field], children: Children, obj: str, ind: str,
               fv: str, nv: str) -> tuple[list[str], int, int]:
        """Code decoding ``body`` into ``obj``; returns (lines, min size,
        fixed cost of the objects the fields hold)."""
        L: list[str] = []
        size = cost = 0
        i = 0
        while i < len(body):
            f = body[i]
            k = kind(f)
            L.append(f"{ind}{fv} = {f.name!r}")
            if k == "fixed":
                run = [f]
                while i + 1 < len(body) and kind(body[i + 1]) == "fixed":
                    i += 1
                    run.append(body[i])
                s = struct.Struct(">" + "".join(p.STRUCT_CODE[x.type_name] for x in run))
                un = self.name("U", s.unpack_from)
                L.append(f"{ind}{', '.join(f'{obj}.{x.name}' for x in run)}, = {un}(buf, pos); pos += {s.size}")
                size += s.size
                cost += sum(B.INT[x.type_name] for x in run)
            elif k == "structs":
                L += self.dec_array(cls, f, children, obj, ind, nv)
                size += 1 if self.flex else 4
                cost += B.LIST_BASE
            elif k == "scalar" and f.type_name in SLICE:
                t = f.type_name
                L += self.length_lines(ind, nv, f"{'string ' if t == 'string' else ''}length",
                                       2 if t == "string" else 4, 1)
                L += [f"{ind}if {nv} < 0:",
                      f"{ind}    {obj}.{f.name} = None" if self.v in f.nullable else
                      f"{ind}    raise _not_null({t!r})",
                      f"{ind}else:"]
                if t == "string" and self.charged:
                    # charged as four bytes a byte (the widest str) until
                    # the text turns out ASCII
                    L += [*self.charge_lines(ind + "    ", f"4 * {nv} + {B.WIDE_STR_EXTRA}", "'string'"),
                          f"{ind}    {obj}.{f.name} = _s = {SLICE[t].format(n=nv)}; pos += {nv}",
                          f"{ind}    if len(_s) == {nv}: b.left += 3 * {nv} + {B.WIDE_STR_EXTRA}"]
                elif t == "bytes" and self.charged:
                    L += [*self.charge_lines(ind + "    ", nv, "'bytes'"),
                          f"{ind}    {obj}.{f.name} = {SLICE[t].format(n=nv)}; pos += {nv}"]
                else:
                    L.append(f"{ind}    {obj}.{f.name} = {SLICE[t].format(n=nv)}; pos += {nv}")
                size += fio.elem_size(t, self.flex)
                cost += fio.elem_cost(t)
            elif k == "scalar":  # uuid: fixed size, fixed cost
                r = self.name("R", fio._scalar_reader(f.type_name, False, self.flex))
                L.append(f"{ind}{obj}.{f.name}, pos = {r}(buf, pos)")
                size += fio.elem_size(f.type_name, self.flex)
                cost += fio.elem_cost(f.type_name)
            else:
                if k == "struct":
                    cn, nl = children[f.name], self.v in f.nullable
                    # a nullable struct is charged when present, by its reader
                    ccost = self.costs[cn] if nl else 0

                    def struct_reader(ns: dict[str, Any], cn: str = cn, nl: bool = nl, cc: int = ccost) -> fio.ReadFn:
                        return fio.struct_reader(ns[cn], nl, cc)
                    r = self.late_name("R", struct_reader)
                    size += 1 if nl else self.min_sizes[cn]
                    cost += 0 if nl else self.costs[cn]
                else:  # an array of primitives charges itself
                    r = self.name("R", fio.reader_for(f, self.v, self.flex))
                    size += 1 if self.flex else 4
                L.append(f"{ind}{obj}.{f.name}, pos = {r}(buf, pos, b)")
            i += 1
        return L, size, cost

    def dec_array(self, cls: type[Message], f: Field, children: Children, obj: str, ind: str, nv: str) -> list[str]:
        """An array of structs: the element decoder called in a loop, or for
        a leaf element its code inlined in the loop. The elements' fixed
        costs are charged once the length is known."""
        inner = ind + "        "
        if f.name in children:
            mn = max(1, self.min_sizes[children[f.name]])
            each = self.costs[children[f.name]]
            loop = [f"{inner}el, pos = {children[f.name]}(buf, pos, b)"]
        else:
            ccls = self.child_class(cls, f)
            body, _ = self.split(ccls, f.struct_fields)
            lines, mn, each = self.dec_fields(ccls, body, {}, "el", inner, "_g", "m")
            each += instance_size(ccls)
            loop = [f"{inner}el = _new({self.name('C', ccls)})", *lines]
            if self.flex:
                loop += self.dec_tags(inner, "el", "_g", [], {})
                mn += 1
            mn = max(1, mn)
        each += B.LIST_SLOT
        return [*self.length_lines(ind, nv, "array length", 4, mn),
                f"{ind}if {nv} < 0:",
                f"{ind}    {obj}.{f.name} = None" if self.v in f.nullable else
                f"{ind}    raise _not_null('array')",
                f"{ind}else:",
                *self.charge_lines(ind + "    ", f"{nv} * {each}", f"f'an array of {{{nv}}} structs'"),
                f"{ind}    lst = []; ap = lst.append",
                f"{ind}    for _i in range({nv}):",
                *loop,
                f"{inner}ap(el)",
                f"{ind}    _i = -1; _g = ''",
                f"{ind}    {obj}.{f.name} = lst"]

    def decoder(self, cls: type[Message], fields: tuple[Field, ...], root: bool = False) -> str:
        body, tagged = self.split(cls, fields)
        fname = self.name("d", None)
        children = {}
        for f in body + tagged:
            if (f.is_struct_array and not self.is_leaf(f)) or f.is_struct or (f.is_struct_array and f in tagged):
                children[f.name] = self.decoder(self.child_class(cls, f), f.struct_fields)
        lines, size, cost = self.dec_fields(cls, body, children, "o", "        ", "_f", "n")
        cost += instance_size(cls)
        L = [f"def {fname}(buf, pos, b):", "    _f = ''; _i = -1; _g = ''", "    try:",
             *(self.charge_lines("        ", str(cost), repr(cls.__qualname__)) if root else ()),
             f"        o = _new({self.name('C', cls)})", *lines]
        if self.flex:
            L += self.dec_tags("        ", "o", "_f", tagged, children)
            size += 1
        L += ["        return o, pos", "    except Exception as e:",
              "        raise _locate(e, _f, _i, _g) from None"]
        self.src.append("\n".join(L))
        self.min_sizes[fname] = size
        self.costs[fname] = cost
        return fname

    # -- encoders. Per struct ``def eN(o, out): ...`` appending byte strings
    # to ``out``. As for decoding, ``enc_fields()`` emits for a target object
    # (``o`` or ``el`` inside an inlined array element) with its indentation
    # and field local (``_f`` / ``_g``). A field the version lacks must still
    # hold its default unless the schema marks it ignorable (then it is
    # dropped).

    def default_value(self, cls: type[Message], f: Field) -> object:
        d = default_of(f)
        if d is FRESH:
            return [] if f.is_array else self.child_class(cls, f)()
        return d

    def absent_lines(self, cls: type[Message], present: set[str], obj: str, ind: str, fv: str) -> list[str]:
        L = []
        for name in cls.FIELDS:
            defs = cls.SCHEMA[name]
            if name in present or any(d.ignorable for d in defs):
                continue
            dn = self.name("K", self.default_value(cls, defs[0]))
            msg = f"not in v{self.v} and not ignorable: must keep its default {self.ns[dn]!r}"
            L += [f"{ind}{fv} = {name!r}", f"{ind}if not {obj}.{name} == {dn}: raise EncodeError({msg!r})"]
        return L

    def writer(self, f: Field, child: str | None) -> str:
        if child is None:
            return self.name("W", fio.writer_for(f, self.v, self.flex))
        v, flex = self.v, self.flex
        return self.late_name("W", lambda ns: fio.writer_for(f, v, flex, ns[child]))

    def enc_fields(self, cls: type[Message], body: list[Field], children: Children, obj: str, ind: str,
               fv: str, nv: str = "") -> list[str]:
        L: list[str] = []
        i = 0
        while i < len(body):
            f = body[i]
            k = kind(f)
            L.append(f"{ind}{fv} = {f.name!r}")
            if k == "fixed":
                run = [f]
                while i + 1 < len(body) and kind(body[i + 1]) == "fixed":
                    i += 1
                    run.append(body[i])
                s = struct.Struct(">" + "".join(p.STRUCT_CODE[x.type_name] for x in run))
                L.append(f"{ind}a({self.name('P', s.pack)}({', '.join(f'{obj}.{x.name}' for x in run)}))")
            elif k == "structs":
                L += self.enc_array(cls, f, children, obj, ind)
            elif f.type == "records":
                # appended as is: the batch bytes are copied once, by the join
                null = self.name("K", b"\x00" if self.flex else p.INT32.pack(-1))
                L += [f"{ind}v = {obj}.{f.name}", f"{ind}if v is None:",
                      f"{ind}    a({null})" if self.v in f.nullable else
                      f"{ind}    raise EncodeError('null records where this version does not allow null')",
                      f"{ind}else:",
                      f"{ind}    a(_wuvarint(len(v) + 1))" if self.flex else f"{ind}    a(_P32(len(v)))",
                      f"{ind}    a(v)"]
            else:
                L.append(f"{ind}{self.writer(f, children.get(f.name))}({obj}.{f.name}, out)")
            i += 1
        return L

    def enc_array(self, cls: type[Message], f: Field, children: Children, obj: str, ind: str) -> list[str]:
        inner = ind + "        "
        if f.name in children:  # a SharedStruct element: its remembered bytes
            loop = [f"{inner}if el.__class__ is _Shared: a(el.encoded({children[f.name]}))",
                    f"{inner}else: {children[f.name]}(el, out)"]
        else:  # a leaf element: its code inlined
            ccls = self.child_class(cls, f)
            body, _ = self.split(ccls, f.struct_fields)
            loop = self.absent_lines(ccls, {g.name for g in body}, "el", inner, "_g")
            loop += self.enc_fields(ccls, body, {}, "el", inner, "_g")
            if self.flex:
                loop += [f"{inner}_g = '_tagged_fields'",
                         f"{inner}if el._unknown_tags is None: a(b'\\x00')",
                         f"{inner}else: _write_tags(out, None, el._unknown_tags)"]
        return [f"{ind}v = {obj}.{f.name}", f"{ind}if v is None:",
                f"{ind}    a(_walen(None))" if self.v in f.nullable else
                f"{ind}    raise EncodeError('null array where this version does not allow null')",
                f"{ind}else:", f"{ind}    a(_walen(len(v)))",
                f"{ind}    for _i, el in enumerate(v):", *loop,
                f"{ind}    _i = -1; _g = ''"]

    def enc_tags(self, cls: type[Message], tagged: list[Field], children: Children) -> list[str]:
        ind = "        "
        if not tagged:
            return [f"{ind}_f = '_tagged_fields'",
                    f"{ind}if o._unknown_tags is None: a(b'\\x00')",
                    f"{ind}else: _write_tags(out, None, o._unknown_tags)"]
        # Only tags that differ from their default are sent (librdkafka < 2.2
        # misreads default-valued ones), plus those a decoded peer sent.
        L = [f"{ind}_f = '_tagged_fields'", f"{ind}t = None", f"{ind}sent = o._sent_tags or ()"]
        for f in tagged:
            w = self.writer(f, children.get(f.name))
            dn = self.name("K", self.default_value(cls, f))
            L += [f"{ind}if not o.{f.name} == {dn} or {f.tag} in sent:",
                  f"{ind}    if t is None: t = []",
                  f"{ind}    _f = {f.name!r}; sub = []; {w}(o.{f.name}, sub)",
                  f"{ind}    t.append(({f.tag}, b''.join(sub))); _f = '_tagged_fields'"]
        return L + [f"{ind}if t is None and o._unknown_tags is None: a(b'\\x00')",
                    f"{ind}else: _write_tags(out, t, o._unknown_tags)"]

    def encoder(self, cls: type[Message], fields: tuple[Field, ...]) -> str:
        body, tagged = self.split(cls, fields)
        fname = self.name("e", None)
        children = {}
        for f in body + tagged:
            if (f.is_struct_array and not self.is_leaf(f)) or f.is_struct or (f.is_struct_array and f in tagged):
                children[f.name] = self.encoder(self.child_class(cls, f), f.struct_fields)
        L = [f"def {fname}(o, out):", "    _f = ''; _i = -1; _g = ''", "    try:", "        a = out.append",
             *self.absent_lines(cls, {f.name for f in body + tagged}, "o", "        ", "_f"),
             *self.enc_fields(cls, body, children, "o", "        ", "_f")]
        if self.flex:
            L += self.enc_tags(cls, tagged, children)
        L += ["    except Exception as e:", "        raise _elocate(e, _f, _i, _g) from None"]
        self.src.append("\n".join(L))
        return fname


def compile_plan(cls: type[Message], fields: tuple[Field, ...], version: int, flexible: bool, label: str,
                 charged: bool = True) -> Plan:
    """``(decode, encode, source)`` for a top-level message class at
    ``version``; ``charged``: the decoder charges its budget (requests: a
    response decoder leaves that to the readers it shares, charging an
    unlimited budget, and so stays as fast as before budgets)."""
    c = Compiler(version, flexible, charged)
    d = c.decoder(cls, fields, root=True)
    e = c.encoder(cls, fields)
    c.build(label)
    return cast(DecodeFn, c.ns[d]), cast(EncodeFn, c.ns[e]), c.source
