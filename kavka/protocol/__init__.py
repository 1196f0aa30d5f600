"""Kavka's sans-IO Kafka wire protocol: no sockets, no asyncio.

Modules (entry points first):

* ``headers`` — ``decode_request``, ``encode_request``, ``decode_response``,
  ``encode_response``: whole messages (header + body) without size prefix;
* ``framing`` — ``frame``/``frame_parts``, ``FrameDecoder`` and
  ``FrameReader`` (size prefix, ``socket.request.max.bytes`` enforced before
  buffering; the reader receives large frames straight into their buffers);
* ``frame_buffers`` — ``FrameBuffers``: those buffers handed on from a
  closed connection's reader to the process's next one (bounded);
* ``messages`` — generated message classes (``ProduceRequest``,
  ``FetchResponse.Responses.Partitions`` ...), naming scheme documented there;
  built by ``message_base`` (``Message``, ``build_struct``); type checkers see
  them through ``messages.pyi``, written by ``stubgen``
  (``python -m kavka.protocol.stubgen``) from the same schema table;
* ``codec`` — body encode/decode for any API and version, from
  ``schema`` (the declarative tables) through compiled ``plan``s built on
  ``fieldio``, ``primitives`` and ``writers`` (fixed-size layouts in
  ``structs``, varints in ``varint``; ``buffers`` names the ``Buffer``
  types readers read from);
* ``budget`` — ``DecodeBudget``: the memory a request's decoded objects
  may take (a bound per frame byte), charged by the decoders before they
  build anything;
* ``errors`` — ``DecodeError`` (and ``FrameSizeError``, ``UnknownApiError``,
  ``UnsupportedVersionError``) and ``EncodeError``;
* ``records`` — record batch v2 (walked, not decoded, on the hot path).
"""
