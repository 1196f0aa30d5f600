"""SCRAM credential APIs (KIP-554): DescribeUserScramCredentials (50) and
AlterUserScramCredentials (51).

Describe answers, per user, the mechanisms it has a credential for and
their iteration counts — never the salt or keys. Alter deletes a user's
credential for a mechanism or upserts one from a salt and a salted
password computed by the client (the password itself never travels).
Mechanisms are int8 type ids: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512 (0 is
unknown).

Version history: only v0, flexible (KIP-482 era).

Pure data, imported by the registry and the codec.
"""

from __future__ import annotations

from kavka.protocol.schema.dsl import F, api

DESCRIBE_USER_SCRAM_CREDENTIALS = api(
    50, "DescribeUserScramCredentials", "0", "0+",
    request=[
        # null or empty: every user with a credential.
        F("users", [
            F("name", "string"),
        ], nullable="0+"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("results", [
            F("user", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("credential_infos", [
                F("mechanism", "int8"),
                F("iterations", "int32"),
            ]),
        ]),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS = api(
    51, "AlterUserScramCredentials", "0", "0+",
    request=[
        F("deletions", [
            F("name", "string"),
            F("mechanism", "int8"),
        ]),
        F("upsertions", [
            F("name", "string"),
            F("mechanism", "int8"),
            F("iterations", "int32"),
            F("salt", "bytes"),
            F("salted_password", "bytes"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", [
            F("user", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ]),
    ],
)

APIS = [DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS]
