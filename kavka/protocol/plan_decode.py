"""Decoder half of the plan compiler (see ``kavka.protocol.plan``).

Emits, per struct, ``def dN(buf, pos): ... return o, pos``. Field code is
emitted by ``dec_fields()`` for a target object (``o``, or ``el`` inside an
inlined array element), an indentation, the local naming the current field
(``_f``, or ``_g`` inside an element) and the local holding lengths
(``n`` / ``m``), so the same emission serves both levels.

Fields absent in the version, tagged fields not sent and ``_unknown_tags``
are left unset: ``Message.__getattr__`` makes their default on first
access, which keeps decoding free of default structs.
"""

from __future__ import annotations

import struct

from kavka.protocol import fieldio as fio
from kavka.protocol import primitives as p
from kavka.protocol.fieldio import field_kind as kind
from kavka.protocol.schema.dsl import Field

SLICE = {  # the value of a string/bytes/records of {n} bytes at pos
    "string": "str(buf[pos:pos + {n}], 'utf-8')",
    "bytes": "bytes(buf[pos:pos + {n}])",
    "records": "buf[pos:pos + {n}]",  # zero-copy: batches stay opaque
}


class DecoderGen:
    """Mixin of ``plan.Compiler``: decoder source generation."""

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

    def dec_tags(self, ind: str, obj: str, fv: str, tagged: list[Field], children: dict) -> list[str]:
        specs = []
        for f in tagged:
            cn = children.get(f.name)
            mn = max(1, self.min_sizes[cn]) if f.is_struct_array else 1
            specs.append((f, cn, mn))
        v = self.v
        kn = self.late_name("T", lambda ns: {
            f.tag: (f.name, fio.reader_for(f, v, True, ns[cn] if cn else None, mn))
            for f, cn, mn in specs})
        return [f"{ind}{fv} = '_tagged_fields'",
                f"{ind}if buf[pos] == 0: pos += 1",
                f"{ind}else: pos = _read_tags({obj}, buf, pos, {kn})"]

    def dec_fields(self, cls: type, body: list[Field], children: dict, obj: str, ind: str,
               fv: str, nv: str) -> tuple[list[str], int]:
        """Code decoding ``body`` into ``obj``; returns (lines, min size)."""
        L: list[str] = []
        size = 0
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
                s = struct.Struct(">" + "".join(p.STRUCT_CODE[x.type] for x in run))
                un = self.name("U", s.unpack_from)
                L.append(f"{ind}{', '.join(f'{obj}.{x.name}' for x in run)}, = {un}(buf, pos); pos += {s.size}")
                size += s.size
            elif k == "structs":
                L += self.dec_array(cls, f, children, obj, ind, nv)
                size += 1 if self.flex else 4
            elif k == "scalar" and f.type in SLICE:
                L += self.length_lines(ind, nv, f"{'string ' if f.type == 'string' else ''}length",
                                       2 if f.type == "string" else 4, 1)
                L += [f"{ind}if {nv} < 0:",
                      f"{ind}    {obj}.{f.name} = None" if self.v in f.nullable else
                      f"{ind}    raise _not_null({f.type!r})",
                      f"{ind}else:",
                      f"{ind}    {obj}.{f.name} = {SLICE[f.type].format(n=nv)}; pos += {nv}"]
                size += fio.elem_size(f.type, self.flex)
            else:
                if k == "struct":
                    cn, nl = children[f.name], self.v in f.nullable
                    r = self.late_name("R", lambda ns, cn=cn, nl=nl: fio.struct_reader(ns[cn], nl))
                    size += 1 if nl else self.min_sizes[cn]
                else:
                    r = self.name("R", fio.reader_for(f, self.v, self.flex))
                    size += fio.elem_size(f.type, self.flex) if k == "scalar" else (1 if self.flex else 4)
                L.append(f"{ind}{obj}.{f.name}, pos = {r}(buf, pos)")
            i += 1
        return L, size

    def dec_array(self, cls: type, f: Field, children: dict, obj: str, ind: str, nv: str) -> list[str]:
        """An array of structs: the element decoder called in a loop, or for
        a leaf element its code inlined in the loop."""
        inner = ind + "        "
        if f.name in children:
            mn = max(1, self.min_sizes[children[f.name]])
            loop = [f"{inner}el, pos = {children[f.name]}(buf, pos)"]
        else:
            ccls = self.child_class(cls, f)
            body, _ = self.split(ccls, f.struct_fields)
            lines, mn = self.dec_fields(ccls, body, {}, "el", inner, "_g", "m")
            loop = [f"{inner}el = _new({self.name('C', ccls)})", *lines]
            if self.flex:
                loop += self.dec_tags(inner, "el", "_g", [], {})
                mn += 1
            mn = max(1, mn)
        return [*self.length_lines(ind, nv, "array length", 4, mn),
                f"{ind}if {nv} < 0:",
                f"{ind}    {obj}.{f.name} = None" if self.v in f.nullable else
                f"{ind}    raise _not_null('array')",
                f"{ind}else:",
                f"{ind}    lst = []; ap = lst.append",
                f"{ind}    for _i in range({nv}):",
                *loop,
                f"{inner}ap(el)",
                f"{ind}    _i = -1; _g = ''",
                f"{ind}    {obj}.{f.name} = lst"]

    def decoder(self, cls: type, fields: tuple[Field, ...]) -> str:
        body, tagged = self.split(cls, fields)
        fname = self.name("d", None)
        children = {}
        for f in body + tagged:
            if (f.is_struct_array and not self.is_leaf(f)) or f.is_struct or (f.is_struct_array and f in tagged):
                children[f.name] = self.decoder(self.child_class(cls, f), f.struct_fields)
        lines, size = self.dec_fields(cls, body, children, "o", "        ", "_f", "n")
        L = [f"def {fname}(buf, pos):", "    _f = ''; _i = -1; _g = ''", "    try:",
             f"        o = _new({self.name('C', cls)})", *lines]
        if self.flex:
            L += self.dec_tags("        ", "o", "_f", tagged, children)
            size += 1
        L += ["        return o, pos", "    except Exception as e:",
              "        raise _locate(e, _f, _i, _g) from None"]
        self.src.append("\n".join(L))
        self.min_sizes[fname] = size
        return fname
