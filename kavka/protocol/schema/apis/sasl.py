"""SaslAuthenticate (36): one round of a SASL exchange, framed as a Kafka request.

After SaslHandshake has chosen the mechanism, the client wraps each SASL token
in a SaslAuthenticate request and the broker answers with its challenge or an
error (KIP-152), instead of the raw, unframed tokens of earlier brokers.

Version history:
- v1 adds ``session_lifetime_ms`` (KIP-368): when non-zero, the client must
  re-authenticate before the session expires; 0 means no limit.
- v2 is the first flexible version (KIP-482).

Pure data, imported by the registry and the codec.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

SASL_AUTHENTICATE = api(
    36, "SaslAuthenticate", "0-2", "2+",
    request=[
        F("auth_bytes", "bytes"),
    ],
    response=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("auth_bytes", "bytes"),
        F("session_lifetime_ms", "int64", "1+", ignorable=True),
    ],
)

APIS = [SASL_AUTHENTICATE]
