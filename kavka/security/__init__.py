"""Security below both the broker and the client (brokers are clients of
each other): who a connection is, what it may do.

Modules:

- ``principal``: ``KafkaPrincipal`` (``User:alice``) and the connection's
  ``Session`` (principal, peer address, listener, security protocol, SASL
  mechanism, whether it is the cluster's inter-broker principal), which
  every request's context carries.
- ``acl``: Kafka's ACL vocabulary as on the wire (KIP-290 pattern types,
  operations, permission types, resource types), ``ResourcePattern``,
  ``AccessControlEntry``, ``AclBinding`` and the ``Action`` an API asks for.
- ``authorizer``: the ``Authorizer`` seam a broker consults when
  ``authorizer.class.name`` is set.
- ``acl_authorizer``: ``AclAuthorizer``, Kafka's ACL authorizer as an
  in-memory cache and the decisions made from it (super users, LITERAL,
  wildcard and PREFIXED patterns, DENY over ALLOW, implied operations,
  ``allow.everyone.if.no.acl.found``) with Kafka's audit log; fed by the
  broker's ZooKeeper-backed ``kavka.server.acl_manager``.
- ``sasl``: SASL authentication, sans-IO: PLAIN, SCRAM-SHA-256/512 and
  OAUTHBEARER (unsecured JWTs) on both sides, SCRAM credentials as stored
  under ``/config/users``, ``sasl.jaas.config`` values, and the per-listener
  ``SaslServerFactory`` the network layer asks for one server per exchange,
  and the ``ScramCredentialCache`` every broker keeps.
- ``tls``: ``ssl.SSLContext`` for a listener (server) or a client from
  Kafka's ``ssl.*`` keys: PEM, PKCS12 and JKS-typed PKCS12 keystores and
  truststores, client authentication, protocol versions, IANA cipher suite
  names, endpoint identification.
- ``x500``: a certificate's subject DN in Java's RFC 2253 form.
- ``ssl_principal_mapper``: ``ssl.principal.mapping.rules`` (KIP-371),
  DN -> principal name.
- ``client_security``: ``ClientSecurity``, how a client secures its
  connections (protocol, TLS context, SASL mechanism and a fresh
  ``SaslClient`` per exchange), shared by Kavka's client and the brokers'
  own inter-broker clients; ``client_properties``: it from client.properties
  in librdkafka's or Java's keys, and those keys for librdkafka.
- ``quota``: client quotas (KIP-13/55/124/219/599): entities and their
  precedence, sampled rates, the quota managers and throttle times.
"""
