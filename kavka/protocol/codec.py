"""The generic Kafka message codec: one encoder and one decoder for every
API and version, driven by the schema tables (``kavka.protocol.schema``).

Bodies only — headers and framing are ``kavka.protocol.headers`` and
``kavka.protocol.framing``; most callers want those (``decode_request``,
``encode_response``...). Messages are the generated classes of
``kavka.protocol.messages`` (naming scheme documented there).

    body = decode_body(0, REQUEST, 9, buf)          # a ProduceRequest
    data = encode_body(ProduceResponse(...), 9)     # bytes

Each (api key, side, version) is compiled once into a plan
(``kavka.protocol.plan``) and cached. Decoding untrusted bytes raises only
``DecodeError`` (naming API, version, side and field path); encoding a
value that does not fit raises ``EncodeError``.

Sans-IO, synchronous, no global mutable state besides the plan cache
(filled idempotently; safe from any thread).
"""

from __future__ import annotations

from kavka.protocol.budget import DecodeBudget
from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.messages import REQUEST, RESPONSE, Message, message_class
from kavka.protocol.plan import Plan, compile_plan
from kavka.protocol.schema import registry

__all__ = ["REQUEST", "RESPONSE", "decode_body", "encode_body", "encode_body_parts", "plan_for", "label"]

_PLANS: dict[tuple[int, str, int], Plan] = {}
# Shared by every unbudgeted decode: its count only goes down, from 2**62.
_UNLIMITED = DecodeBudget.unlimited()


def label(api_key: int, side: str, version: int) -> str:
    """"Produce v9 request" — the context of codec errors."""
    a = registry().get(api_key)
    name = a.name if a is not None else f"api key {api_key}"
    return f"{name} v{version} {side}"


def plan_for(api_key: int, side: str, version: int) -> Plan:
    """``(decode, encode, source)`` for one API side and version."""
    key = (api_key, side, version)
    plan = _PLANS.get(key)
    if plan is None:
        a = registry().get(api_key)
        if a is None:
            raise KeyError(f"unknown API key {api_key}")
        if not a.min_version <= version <= a.max_version:
            raise KeyError(f"{a.name} v{version} outside supported {a.min_version}-{a.max_version}")
        fields = a.request if side == REQUEST else a.response
        plan = compile_plan(message_class(api_key, side), fields, version,
                            a.is_flexible(version), label(api_key, side, version), charged=side == REQUEST)
        _PLANS[key] = plan
    return plan


def decode_body(api_key: int, side: str, version: int, buf: Buffer, pos: int = 0,
                *, allow_trailing: bool = False, budget: DecodeBudget | None = None) -> Message:
    """Decode a whole request or response body from ``buf[pos:]``; every
    byte must be consumed unless ``allow_trailing``. ``records`` fields
    come back as slices of ``buf`` (zero-copy when ``buf`` is a memoryview).
    ``budget`` bounds the memory of the objects built (``DecodeBudgetError``
    past it; ``kavka.protocol.budget``); None decodes without a bound."""
    try:
        decode = plan_for(api_key, side, version)[0]
    except KeyError as e:
        raise DecodeError(str(e.args[0]), context=label(api_key, side, version)) from None
    if budget is None:
        budget = _UNLIMITED
    elif not isinstance(buf, memoryview):
        buf = memoryview(buf)  # the cost model counts records as slices, not copies
    try:
        msg, end = decode(buf, pos, budget)
        if end != len(buf) and not allow_trailing:
            raise DecodeError(f"{len(buf) - end} bytes left over after the body")
    except DecodeError as e:
        e.context = label(api_key, side, version)
        raise
    return msg


def encode_body_parts(msg: Message, version: int, out: list[Buffer]) -> None:
    """Append the encoding of ``msg`` at ``version`` to ``out`` (a list of
    bytes-like parts; records are appended without copying)."""
    try:
        encode = plan_for(msg.API_KEY, msg.SIDE, version)[1]
    except (KeyError, AttributeError) as e:
        raise EncodeError(f"cannot encode {type(msg).__name__} at v{version}: {e}") from None
    try:
        encode(msg, out)
    except EncodeError as e:
        e.context = label(msg.API_KEY, msg.SIDE, version)
        raise


def encode_body(msg: Message, version: int) -> bytes:
    out: list[Buffer] = []
    encode_body_parts(msg, version, out)
    return b"".join(out)
