"""Security below both the broker and the client (brokers are clients of
each other): who a connection is, what it may do.

Modules:

- ``principal``: ``KafkaPrincipal`` (``User:alice``) and the connection's
  ``Session`` (principal, peer address, listener, security protocol), which
  every request's context carries.
- ``acl``: Kafka's ACL vocabulary as on the wire (KIP-290 pattern types,
  operations, permission types, resource types), ``ResourcePattern``,
  ``AccessControlEntry``, ``AclBinding`` and the ``Action`` an API asks for.
- ``authorizer``: the ``Authorizer`` seam a broker consults when
  ``authorizer.class.name`` is set.
"""
