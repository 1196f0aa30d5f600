"""Compile a schema table into fast decode/encode functions per version.

For one (API, side, version) the ``Compiler`` walks the fields present in
that version and emits Python source for one decoder and one encoder per
struct, then ``exec``s it once. The generated code unpacks each run of
consecutive fixed-size fields with a single precompiled ``struct.Struct``,
reads lengths inline (checked against the remaining bytes before any
slice or loop), and loops over arrays of structs inline; arrays of "leaf"
structs (only scalar fields, no tagged ones) get the element code itself
inlined in the loop — the Produce/Fetch partitions cost one ``unpack_from``
and one object each. Everything else (arrays of primitives, uuids, single
structs, tagged fields) goes through ``kavka.protocol.fieldio``.

Generated decoder: ``d(buf, pos) -> (message, pos)``; encoder: ``e(msg,
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

from kavka.protocol import fieldio as fio
from kavka.protocol import primitives as p
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.fieldio import field_kind as kind
from kavka.protocol.message_base import camel
from kavka.protocol.plan_decode import DecoderGen
from kavka.protocol.plan_encode import EncoderGen
from kavka.protocol.schema.dsl import Field


class SchemaError(ValueError):
    """A schema table that cannot be compiled (e.g. two definitions of one
    field name present in the same version)."""


class Compiler(DecoderGen, EncoderGen):
    """Generates the decoder and encoder of one (api, side, version)."""

    def __init__(self, version: int, flexible: bool) -> None:
        self.v = version
        self.flex = flexible
        self.ns: dict[str, object] = {
            "_new": object.__new__, "_locate": fio.locate, "_elocate": fio.elocate,
            "_read_tags": fio.read_tags, "_write_tags": fio.write_tags,
            "_not_null": fio.not_null, "DecodeError": DecodeError, "EncodeError": EncodeError,
            "_walen": fio.array_len_writer(flexible),
            "_uvarint": p.read_uvarint, "_length_error": p.length_error,
            "_I16": p.INT16.unpack_from, "_I32": p.INT32.unpack_from,
            "_P32": p.INT32.pack, "_wuvarint": p.write_uvarint,
        }
        self.src: list[str] = []
        self.late: list[tuple[str, object]] = []
        self.n = 0
        self.min_sizes: dict[str, int] = {}
        self.source = ""

    def name(self, prefix: str, value: object) -> str:
        """A fresh global of the generated module bound to ``value``."""
        self.n += 1
        name = f"{prefix}{self.n}"
        self.ns[name] = value
        return name

    def late_name(self, prefix: str, factory) -> str:
        """A global whose value needs the generated functions (children):
        ``factory(ns)`` runs right after the source is executed."""
        name = self.name(prefix, None)
        self.late.append((name, factory))
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

    def tagged(self, f: Field) -> bool:
        return self.flex and f.tag is not None and self.v in f.tagged

    def split(self, cls: type, fields: tuple[Field, ...]) -> tuple[list[Field], list[Field]]:
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

    def child_class(self, cls: type, f: Field) -> type:
        return getattr(cls, camel(f.name))

    def build(self, label: str) -> None:
        code = "\n\n".join(self.src) + "\n"
        exec(compile(code, f"<kavka plan {label}>", "exec"), self.ns)
        for name, factory in self.late:
            self.ns[name] = factory(self.ns)
        self.source = code


def compile_plan(cls: type, fields: tuple[Field, ...], version: int, flexible: bool, label: str):
    """``(decode, encode, source)`` for a top-level message class at ``version``."""
    c = Compiler(version, flexible)
    d = c.decoder(cls, fields)
    e = c.encoder(cls, fields)
    c.build(label)
    return c.ns[d], c.ns[e], c.source
