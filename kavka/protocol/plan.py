"""Compile a schema table into fast decode/encode functions per version.

For one (API, side, version) the ``Compiler`` walks the fields present in
that version and emits Python source for one decoder and one encoder per
struct, then ``exec``s it once. The generated code unpacks each run of
consecutive fixed-size fields with a single precompiled ``struct.Struct``
and loops over arrays of structs inline — the Produce/Fetch path is a few
``unpack_from`` calls per partition. Everything else (strings, bytes,
records, arrays of primitives, tagged fields) goes through the readers and
writers of ``kavka.protocol.fieldio``, which check every length against the
remaining bytes before allocating.

Generated decoder: ``d(buf, pos) -> (message, pos)``; encoder: ``e(msg,
out)`` appends byte strings to the list ``out``. Each keeps the current
field name and array index in locals so any failure becomes a typed error
with the full field path (``topic_data[0].partition_data[3].records``).

Flexible versions (KIP-482): compact lengths, and a tagged-field block
after every struct. A tagged field is written only when it differs from
its default (librdkafka < 2.2 misreads default-valued tags); unknown tags
are kept on decode and written back on encode.

Plans are built on first use and cached by the codec; read-only after.
"""

from __future__ import annotations

import struct

from kavka.protocol import fieldio as fio
from kavka.protocol import primitives as p
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.messages import FRESH, default_of
from kavka.protocol.schema.dsl import Field


class SchemaError(ValueError):
    """A schema table that cannot be compiled (e.g. two definitions of one
    field name present in the same version)."""


_SLICE = {  # value expression for a string/bytes/records of n bytes at pos
    "string": "str(buf[pos:pos + n], 'utf-8')",
    "bytes": "bytes(buf[pos:pos + n])",
    "records": "buf[pos:pos + n]",  # zero-copy: batches stay opaque
}


def _kind(f: Field) -> str:
    if f.is_struct_array:
        return "structs"
    if f.is_struct:
        return "struct"
    if f.type.startswith("[]"):
        return "prims"
    if f.type in p.STRUCT_CODE:
        return "fixed"
    return "scalar"


class Compiler:
    """Generates the decoder and encoder of one (api, side, version)."""

    def __init__(self, version: int, flexible: bool) -> None:
        self.v = version
        self.flex = flexible
        self.ns: dict[str, object] = {
            "_new": object.__new__, "_locate": fio.locate, "_elocate": fio.elocate,
            "_read_tags": fio.read_tags, "_write_tags": fio.write_tags,
            "_not_null": fio.not_null, "DecodeError": DecodeError, "EncodeError": EncodeError,
            "_alen": fio.array_len_reader(flexible), "_walen": fio.array_len_writer(flexible),
            "_int8": p.read_int8, "_uvarint": p.read_uvarint, "_length_error": p.length_error,
            "_I16": p.INT16.unpack_from, "_I32": p.INT32.unpack_from,
            "_P32": p.INT32.pack, "_wuvarint": p.write_uvarint,
        }
        self.src: list[str] = []
        self.late: list[tuple[str, object]] = []
        self.n = 0
        self.min_sizes: dict[str, int] = {}

    def _name(self, prefix: str, value: object) -> str:
        self.n += 1
        name = f"{prefix}{self.n}"
        self.ns[name] = value
        return name

    def present(self, cls: type, fields: tuple[Field, ...]) -> list[Field]:
        out, seen = [], set()
        for f in fields:
            if self.v in f.versions:
                if f.name in seen:
                    raise SchemaError(f"{cls.__qualname__}.{f.name} defined twice for v{self.v}")
                seen.add(f.name)
                out.append(f)
        return out

    def _late(self, prefix: str, factory) -> str:
        """A global whose value needs the generated functions (children):
        ``factory(ns)`` runs right after the source is executed."""
        name = self._name(prefix, None)
        self.late.append((name, factory))
        return name

    def tagged(self, f: Field) -> bool:
        return self.flex and f.tag is not None and self.v in f.tagged

    def length_lines(self, what: str, width: int, min_each: int) -> list[str]:
        """Inline code reading a length into ``n`` (-1 = null) and checking
        ``n * min_each`` against the bytes that remain, before any use."""
        if self.flex:
            L = ["        n = buf[pos]",
                 "        if n < 128: pos += 1",
                 "        else: n, pos = _uvarint(buf, pos)",
                 "        n -= 1"]
        else:
            L = [f"        n, = {'_I16' if width == 2 else '_I32'}(buf, pos); pos += {width}",
                 f"        if n < -1: raise DecodeError(f'negative {what} {{n}}')"]
        need = "n" if min_each == 1 else f"n * {min_each}"
        L.append(f"        if {need} > len(buf) - pos: raise _length_error({what!r}, n, len(buf) - pos)")
        return L

    def min_size(self, f: Field) -> int:
        if _kind(f) in ("fixed", "scalar"):
            return fio.elem_size(f.type, self.flex)
        return 1 if self.flex else 4  # an array length

    # ------------------------------------------------------------ decoder

    def decoder(self, cls: type, fields: tuple[Field, ...]) -> str:
        present = self.present(cls, fields)
        body = [f for f in present if not self.tagged(f)]
        tagged = [f for f in present if self.tagged(f)]
        fname = self._name("d", None)
        cname = self._name("C", cls)
        children = {}
        for f in present:
            if f.is_struct_array or f.is_struct:
                children[f.name] = self.decoder(getattr(cls, _camel(f.name)), f.struct_fields)
        L = [f"def {fname}(buf, pos):", "    _f = ''; _i = -1", "    try:",
             f"        o = _new({cname})"]
        # Fields absent in this version, tagged fields not sent and
        # _unknown_tags stay unset: Message.__getattr__ makes their default
        # on first access, which keeps decoding free of default structs.
        size = 0
        i = 0
        while i < len(body):
            f = body[i]
            k = _kind(f)
            if k == "fixed":
                run = [f]
                while i + 1 < len(body) and _kind(body[i + 1]) == "fixed":
                    i += 1
                    run.append(body[i])
                s = struct.Struct(">" + "".join(p.STRUCT_CODE[x.type] for x in run))
                un = self._name("U", s.unpack_from)
                targets = ", ".join(f"o.{x.name}" for x in run)
                L.append(f"        _f = {f.name!r}")
                L.append(f"        {targets}, = {un}(buf, pos); pos += {s.size}")
                size += s.size
            elif k == "structs":
                nullable = self.v in f.nullable
                child = children[f.name]
                mn = max(1, self.min_sizes[child])
                L.append(f"        _f = {f.name!r}")
                L += self.length_lines("array length", 4, mn)
                L += ["        if n < 0:",
                      f"            o.{f.name} = None" if nullable else "            raise _not_null('array')",
                      "        else:",
                      "            lst = []; ap = lst.append",
                      "            for _i in range(n):",
                      f"                el, pos = {child}(buf, pos)",
                      "                ap(el)",
                      "            _i = -1",
                      f"            o.{f.name} = lst"]
                size += 1 if self.flex else 4
            elif k == "scalar" and f.type in ("string", "bytes", "records"):
                L.append(f"        _f = {f.name!r}")
                L += self.length_lines(f"{'string ' if f.type == 'string' else ''}length",
                                       2 if f.type == "string" else 4, 1)
                L += ["        if n < 0:",
                      f"            o.{f.name} = None" if self.v in f.nullable else
                      f"            raise _not_null({f.type!r})",
                      "        else:",
                      f"            o.{f.name} = {_SLICE[f.type]}; pos += n"]
                size += self.min_size(f)
            else:
                if k == "struct":
                    cn, nl = children[f.name], self.v in f.nullable
                    r = self._late("R", lambda ns, cn=cn, nl=nl: fio.struct_reader(ns[cn], nl))
                    size += 1 if nl else self.min_sizes[cn]
                else:
                    r = self._name("R", fio.reader_for(f, self.v, self.flex))
                    size += self.min_size(f)
                L.append(f"        _f = {f.name!r}")
                L.append(f"        o.{f.name}, pos = {r}(buf, pos)")
            i += 1
        if self.flex:
            specs = []
            for f in tagged:
                cn = children.get(f.name)
                mn = max(1, self.min_sizes[cn]) if f.is_struct_array else 1
                specs.append((f, cn, mn))
            v = self.v
            kn = self._late("T", lambda ns, specs=specs: {
                f.tag: (f.name, fio.reader_for(f, v, True, ns[cn] if cn else None, mn))
                for f, cn, mn in specs})
            L += ["        _f = '_tagged_fields'",
                  "        if buf[pos] == 0: pos += 1",
                  f"        else: pos = _read_tags(o, buf, pos, {kn})"]
            size += 1
        L += ["        return o, pos", "    except Exception as e:",
              "        raise _locate(e, _f, _i) from None"]
        self.src.append("\n".join(L))
        self.min_sizes[fname] = size
        return fname

    # ------------------------------------------------------------ encoder

    def encoder(self, cls: type, fields: tuple[Field, ...]) -> str:
        present = self.present(cls, fields)
        body = [f for f in present if not self.tagged(f)]
        tagged = [f for f in present if self.tagged(f)]
        fname = self._name("e", None)
        children = {}
        for f in present:
            if f.is_struct_array or f.is_struct:
                children[f.name] = self.encoder(getattr(cls, _camel(f.name)), f.struct_fields)
        L = [f"def {fname}(o, out):", "    _f = ''; _i = -1", "    try:", "        a = out.append"]
        names_present = {f.name for f in present}
        for name in cls.FIELDS:
            if name in names_present:
                continue
            first = cls.SCHEMA[name][0]
            if any(d.ignorable for d in cls.SCHEMA[name]):
                continue
            d = default_of(first)
            dexpr = self._name("K", [] if d is FRESH and first.is_array else
                               getattr(cls, _camel(name))() if d is FRESH else d)
            msg = f"not in v{self.v} and not ignorable: must keep its default {self.ns[dexpr]!r}"
            L += [f"        _f = {name!r}", f"        if o.{name} != {dexpr}: raise EncodeError({msg!r})"]
        i = 0
        while i < len(body):
            f = body[i]
            k = _kind(f)
            L.append(f"        _f = {f.name!r}")
            if k == "fixed":
                run = [f]
                while i + 1 < len(body) and _kind(body[i + 1]) == "fixed":
                    i += 1
                    run.append(body[i])
                s = struct.Struct(">" + "".join(p.STRUCT_CODE[x.type] for x in run))
                pk = self._name("P", s.pack)
                L.append(f"        a({pk}({', '.join(f'o.{x.name}' for x in run)}))")
            elif k == "structs":
                child = children[f.name]
                L += [f"        v = o.{f.name}", "        if v is None:",
                      "            a(_walen(None))" if self.v in f.nullable else
                      "            raise EncodeError('null array where this version does not allow null')",
                      "        else:", "            a(_walen(len(v)))",
                      "            for _i, el in enumerate(v):", f"                {child}(el, out)",
                      "            _i = -1"]
            elif f.type == "records":
                # appended as is: the batch bytes are copied once, by the join
                null = self._name("K", b"\x00" if self.flex else p.INT32.pack(-1))
                L += [f"        v = o.{f.name}", "        if v is None:",
                      f"            a({null})" if self.v in f.nullable
                      else "            raise EncodeError('null records where this version does not allow null')",
                      "        else:",
                      "            a(_wuvarint(len(v) + 1))" if self.flex else "            a(_P32(len(v)))",
                      "            a(v)"]
            else:
                w = self._writer(f, children.get(f.name))
                L.append(f"        {w}(o.{f.name}, out)")
            i += 1
        if self.flex and not tagged:
            L += ["        _f = '_tagged_fields'",
                  "        if o._unknown_tags is None: a(b'\\x00')",
                  "        else: _write_tags(out, None, o._unknown_tags)"]
        elif self.flex:
            L += ["        _f = '_tagged_fields'", "        t = None"]
            for f in tagged:
                w = self._writer(f, children.get(f.name))
                d = default_of(f)
                dv = [] if d is FRESH and f.is_array else (
                    getattr(cls, _camel(f.name))() if d is FRESH else d)
                dn = self._name("K", dv)
                L += [f"        if not o.{f.name} == {dn}:",
                      "            if t is None: t = []",
                      f"            _f = {f.name!r}; sub = []; {w}(o.{f.name}, sub)",
                      f"            t.append(({f.tag}, b''.join(sub))); _f = '_tagged_fields'"]
            L += ["        if t is None and o._unknown_tags is None: a(b'\\x00')",
                  "        else: _write_tags(out, t, o._unknown_tags)"]
        L += ["    except Exception as e:", "        raise _elocate(e, _f, _i) from None"]
        self.src.append("\n".join(L))
        return fname

    def _writer(self, f: Field, child: str | None) -> str:
        if child is None:
            return self._name("W", fio.writer_for(f, self.v, self.flex))
        v, flex = self.v, self.flex
        return self._late("W", lambda ns: fio.writer_for(f, v, flex, ns[child]))

    def build(self, label: str) -> None:
        code = "\n\n".join(self.src) + "\n"
        exec(compile(code, f"<kavka plan {label}>", "exec"), self.ns)
        for name, factory in self.late:
            self.ns[name] = factory(self.ns)
        self.source = code


def _camel(name: str) -> str:
    return "".join(x[:1].upper() + x[1:] for x in name.split("_"))


def compile_plan(cls: type, fields: tuple[Field, ...], version: int, flexible: bool, label: str):
    """``(decode, encode)`` for a top-level message class at ``version``."""
    c = Compiler(version, flexible)
    d = c.decoder(cls, fields)
    e = c.encoder(cls, fields)
    c.build(label)
    return c.ns[d], c.ns[e], c.source
