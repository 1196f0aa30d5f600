"""Typed errors of the wire codec.

``DecodeError`` is the only kind of exception decoding untrusted bytes may
raise: it names where it happened (``context`` such as "Produce v9
request", and a field ``path`` such as ``topic_data[0].partition_data[3].
records``) and why. The broker answers or closes the connection on it and
keeps serving everyone else. ``EncodeError`` is a programming error on our
side (a value that does not fit the field, or a field the version lacks).

Raised by ``kavka.protocol``; caught by the server's connection layer.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode, KafkaError


class DecodeError(KafkaError):
    """Bytes that are not a valid encoding. ``path`` is built innermost
    first while the error propagates out of nested structs."""

    code = ErrorCode.INVALID_REQUEST

    def __init__(self, reason: str, path: list[str] | None = None, context: str = "") -> None:
        self.reason = reason
        self.path = path if path is not None else []
        self.context = context
        super().__init__(reason)

    def __str__(self) -> str:
        parts = [p for p in (self.context, ".".join(self.path).replace(".[", "[")) if p]
        parts.append(self.reason)
        return ": ".join(parts)


class FrameSizeError(DecodeError):
    """A frame's int32 size prefix is negative or above the maximum frame
    size (``socket.request.max.bytes``); raised before buffering the body."""


class UnknownApiError(DecodeError):
    """A request for an API key Kavka has no schema for. ``header`` holds
    what could be parsed (api key, version, correlation id, client id)."""

    def __init__(self, reason: str, header: object) -> None:
        super().__init__(reason)
        self.header = header


class UnsupportedVersionError(DecodeError):
    """A request for a known API at a version outside the supported range.
    ``header`` is the parsed request header, so the broker can answer (for
    ApiVersions: UNSUPPORTED_VERSION with its version list, encoded at v0,
    as KIP-511 requires)."""

    code = ErrorCode.UNSUPPORTED_VERSION

    def __init__(self, reason: str, header: object) -> None:
        super().__init__(reason)
        self.header = header


class EncodeError(ValueError):
    """A message value that cannot be encoded at the requested version."""

    def __init__(self, reason: str, path: list[str] | None = None, context: str = "") -> None:
        self.reason = reason
        self.path = path if path is not None else []
        self.context = context
        super().__init__(reason)

    def __str__(self) -> str:
        parts = [p for p in (self.context, ".".join(self.path).replace(".[", "[")) if p]
        parts.append(self.reason)
        return ": ".join(parts)
