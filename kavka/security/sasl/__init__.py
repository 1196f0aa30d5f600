"""SASL authentication (Kafka's org.apache.kafka.common.security.{plain,
scram, oauthbearer}), sans-IO: the network layer feeds tokens in and sends
what comes out.

Modules:

- ``mechanism``: the ``SaslServer`` and ``SaslClient`` seams, mechanism
  names, KIP-368's ``negotiated_session_lifetime_ms``.
- ``errors``: SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM and
  ILLEGAL_SASL_STATE as exceptions, Kafka's generic failure message.
- ``plain``: PLAIN (RFC 4616), both sides.
- ``scram``: SCRAM-SHA-256/512 (RFC 5802, RFC 7677), messages and both sides.
- ``credentials``: ``ScramMechanism``, the stored ``ScramCredential``
  (``/config/users/<user>``'s format) and ``ScramFormatter``.
- ``oauthbearer``: OAUTHBEARER (RFC 7628) with Kafka's unsecured JWT
  validator and login token.
- ``jaas``: ``sasl.jaas.config`` values parsed.
- ``factory``: ``SaslServerFactory`` (per listener) and the client-side
  ``sasl_client_for``.
- ``credential_cache``: ``ScramCredentialCache``, the broker's in-memory
  copy of every user's SCRAM credentials, which the SCRAM servers read.
"""
