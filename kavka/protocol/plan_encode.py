"""Encoder half of the plan compiler (see ``kavka.protocol.plan``).

Emits, per struct, ``def eN(o, out): ...`` appending byte strings to
``out``. As for decoding, ``enc_fields()`` emits for a target object (``o`` or
``el`` inside an inlined array element) with its indentation and field
local (``_f`` / ``_g``). A field the version lacks must still hold its
default unless the schema marks it ignorable (then it is dropped).
"""

from __future__ import annotations

import struct

from kavka.protocol import fieldio as fio
from kavka.protocol import primitives as p
from kavka.protocol.fieldio import field_kind as kind
from kavka.protocol.message_base import FRESH, default_of
from kavka.protocol.schema.dsl import Field


class EncoderGen:
    """Mixin of ``plan.Compiler``: encoder source generation."""

    def default_value(self, cls: type, f: Field):
        d = default_of(f)
        if d is FRESH:
            return [] if f.is_array else self.child_class(cls, f)()
        return d

    def absent_lines(self, cls: type, present: set[str], obj: str, ind: str, fv: str) -> list[str]:
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

    def enc_fields(self, cls: type, body: list[Field], children: dict, obj: str, ind: str,
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
                s = struct.Struct(">" + "".join(p.STRUCT_CODE[x.type] for x in run))
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

    def enc_array(self, cls: type, f: Field, children: dict, obj: str, ind: str) -> list[str]:
        inner = ind + "        "
        if f.name in children:
            loop = [f"{inner}{children[f.name]}(el, out)"]
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

    def enc_tags(self, cls: type, tagged: list[Field], children: dict) -> list[str]:
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

    def encoder(self, cls: type, fields: tuple[Field, ...]) -> str:
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
