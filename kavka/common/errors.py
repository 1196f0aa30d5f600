"""Kafka's error codes and Kavka's typed exceptions for them.

``ErrorCode`` is the one table of the int16 error codes every Kafka response
carries (per partition, per topic or per request). Each member knows whether
Kafka clients treat it as retriable and a one-line meaning. Codes, names and
retriability follow the Kafka protocol guide ("Error Codes"); the messages
are Kavka's own wording.

``KafkaError`` is the exception every layer raises when an operation fails
with one of these codes; request handlers catch it and put ``error.code`` in
the response (docs/ARCHITECTURE.md convention 6). Subclasses exist for the codes the
broker raises by name; ``error_for(code)`` builds the right exception for any
code (e.g. from a response decoded by Kavka's own client).

Pure data and exceptions: any layer, any thread.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar


class ErrorCode(IntEnum):
    """A Kafka error code. ``retriable``: clients may retry the same request
    (usually after refreshing metadata); ``message``: what it means."""

    retriable: bool
    message: str

    def __new__(cls, code: int, retriable: bool, message: str) -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.message = message
        return member

    UNKNOWN_SERVER_ERROR = (-1, False, "the server hit an unexpected error while handling the request")
    NONE = (0, False, "no error")
    OFFSET_OUT_OF_RANGE = (1, False, "the requested offset is outside the log's range of offsets")
    CORRUPT_MESSAGE = (2, True, "a record failed its CRC, has an invalid size or is otherwise corrupt")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "this broker does not host that topic-partition")
    INVALID_FETCH_SIZE = (4, False, "the requested fetch size is invalid")
    LEADER_NOT_AVAILABLE = (5, True, "the partition has no leader right now (election in progress)")
    NOT_LEADER_OR_FOLLOWER = (6, True, "this broker is not the leader (or a follower) of the partition")
    REQUEST_TIMED_OUT = (7, True, "the request timed out")
    BROKER_NOT_AVAILABLE = (8, False, "the broker is not available")
    REPLICA_NOT_AVAILABLE = (9, True, "the replica is not available for the partition")
    MESSAGE_TOO_LARGE = (10, False, "a batch is larger than the largest message the broker accepts")
    STALE_CONTROLLER_EPOCH = (11, False, "the request came from a controller with an old epoch")
    OFFSET_METADATA_TOO_LARGE = (12, False, "the committed offset's metadata string is too large")
    NETWORK_EXCEPTION = (13, True, "the connection closed before a response arrived")
    COORDINATOR_LOAD_IN_PROGRESS = (14, True, "the coordinator is still loading its state")
    COORDINATOR_NOT_AVAILABLE = (15, True, "the coordinator is not available")
    NOT_COORDINATOR = (16, True, "this broker is not the coordinator for that group or transaction")
    INVALID_TOPIC_EXCEPTION = (17, False, "the topic name is invalid or the topic is internal")
    RECORD_LIST_TOO_LARGE = (18, False, "the batch is larger than the segment size")
    NOT_ENOUGH_REPLICAS = (19, True, "fewer in-sync replicas than min.insync.replicas; not written")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True, "written, but to fewer in-sync replicas than required")
    INVALID_REQUIRED_ACKS = (21, False, "acks must be -1, 0 or 1")
    ILLEGAL_GENERATION = (22, False, "the group generation id is not the current one")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "the member's protocols do not match the group's")
    INVALID_GROUP_ID = (24, False, "the group id is empty or invalid")
    UNKNOWN_MEMBER_ID = (25, False, "the coordinator does not know this member id")
    INVALID_SESSION_TIMEOUT = (26, False, "the session timeout is outside the broker's allowed range")
    REBALANCE_IN_PROGRESS = (27, False, "the group is rebalancing; rejoin")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "the offset commit is too large")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "not authorized to access the topic")
    GROUP_AUTHORIZATION_FAILED = (30, False, "not authorized to access the group")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "not authorized for this cluster operation")
    INVALID_TIMESTAMP = (32, False, "a record timestamp is outside the accepted range")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "the broker does not support that SASL mechanism")
    ILLEGAL_SASL_STATE = (34, False, "the request is not valid in the current SASL state")
    UNSUPPORTED_VERSION = (35, False, "this broker does not support that API version")
    TOPIC_ALREADY_EXISTS = (36, False, "a topic with this name already exists")
    INVALID_PARTITIONS = (37, False, "the number of partitions is invalid")
    INVALID_REPLICATION_FACTOR = (38, False, "the replication factor is invalid")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "the replica assignment is invalid")
    INVALID_CONFIG = (40, False, "the configuration is invalid")
    NOT_CONTROLLER = (41, True, "this broker is not the controller")
    INVALID_REQUEST = (42, False, "the request is malformed or not valid for this broker")
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False, "the message format does not support this request")
    POLICY_VIOLATION = (44, False, "the request violates a configured policy")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "the producer sequence number is out of order")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "the producer sequence number is a duplicate")
    INVALID_PRODUCER_EPOCH = (47, False, "the producer epoch is old")
    INVALID_TXN_STATE = (48, False, "the transactional operation is invalid in the current state")
    INVALID_PRODUCER_ID_MAPPING = (49, False, "the producer id is not assigned to this transactional id")
    INVALID_TRANSACTION_TIMEOUT = (50, False, "the transaction timeout exceeds transaction.max.timeout.ms")
    CONCURRENT_TRANSACTIONS = (51, True, "another operation on this transaction is in progress")
    TRANSACTION_COORDINATOR_FENCED = (52, False, "the transaction coordinator has been replaced")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "not authorized for this transactional id")
    SECURITY_DISABLED = (54, False, "security features are disabled")
    OPERATION_NOT_ATTEMPTED = (55, False, "the broker did not attempt this operation")
    KAFKA_STORAGE_ERROR = (56, True, "a disk error happened while accessing the log")
    LOG_DIR_NOT_FOUND = (57, False, "the log directory is not in the broker's log.dirs")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL authentication failed")
    UNKNOWN_PRODUCER_ID = (59, False, "the broker has no state for this producer id")
    REASSIGNMENT_IN_PROGRESS = (60, False, "a partition reassignment is in progress")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "delegation tokens are disabled")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "the delegation token was not found")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "the principal is not the token's owner or renewer")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (64, False, "delegation token requests are not allowed on this channel")
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "delegation token authorization failed")
    DELEGATION_TOKEN_EXPIRED = (66, False, "the delegation token has expired")
    INVALID_PRINCIPAL_TYPE = (67, False, "the principal type is not supported")
    NON_EMPTY_GROUP = (68, False, "the group is not empty")
    GROUP_ID_NOT_FOUND = (69, False, "the group does not exist")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "the fetch session id was not found")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "the fetch session epoch is invalid")
    LISTENER_NOT_FOUND = (72, True, "the leader has no listener matching the one the request used")
    TOPIC_DELETION_DISABLED = (73, False, "topic deletion is disabled (delete.topic.enable=false)")
    FENCED_LEADER_EPOCH = (74, True, "the request's leader epoch is older than the broker's")
    UNKNOWN_LEADER_EPOCH = (75, True, "the request's leader epoch is newer than the broker's")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "the client does not support the partition's compression")
    STALE_BROKER_EPOCH = (77, False, "the broker epoch has changed")
    OFFSET_NOT_AVAILABLE = (78, True, "the new leader's high watermark has not caught up yet")
    MEMBER_ID_REQUIRED = (79, False, "the member must rejoin with the member id it was given")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "the preferred leader is not available")
    GROUP_MAX_SIZE_REACHED = (81, False, "the group has reached group.max.size")
    FENCED_INSTANCE_ID = (82, False, "another member registered with this group.instance.id")
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "no eligible leader is available for the partition")
    ELECTION_NOT_NEEDED = (84, True, "the partition already has its preferred leader")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "no partition reassignment is in progress")
    GROUP_SUBSCRIBED_TO_TOPIC = (86, False, "the group is still subscribed to the topic")
    INVALID_RECORD = (87, False, "a record failed broker-side validation")
    UNSTABLE_OFFSET_COMMIT = (88, True, "there are pending transactional offsets for the partition")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "the throttling quota has been exceeded")
    PRODUCER_FENCED = (90, False, "a newer producer with the same transactional id exists")
    RESOURCE_NOT_FOUND = (91, False, "the referenced resource does not exist")
    DUPLICATE_RESOURCE = (92, False, "the same resource is referenced twice")
    UNACCEPTABLE_CREDENTIAL = (93, False, "the credential does not meet the acceptance criteria")
    INCONSISTENT_VOTER_SET = (94, False, "sender or receiver is not one of the expected voters")
    INVALID_UPDATE_VERSION = (95, False, "the update version is invalid")
    FEATURE_UPDATE_FAILED = (96, False, "finalized features could not be updated")
    PRINCIPAL_DESERIALIZATION_FAILURE = (97, False, "the forwarded principal could not be deserialized")
    SNAPSHOT_NOT_FOUND = (98, False, "the requested snapshot was not found")
    POSITION_OUT_OF_RANGE = (99, False, "the snapshot position is out of range")
    UNKNOWN_TOPIC_ID = (100, True, "this broker does not host a topic with that id")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "the broker id is already registered")
    BROKER_ID_NOT_REGISTERED = (102, False, "the broker id is not registered")
    INCONSISTENT_TOPIC_ID = (103, True, "the log's topic id differs from the request's")
    INCONSISTENT_CLUSTER_ID = (104, False, "the request's cluster id differs from this cluster's")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "the transactional id was not found")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "the fetch session mixes topic ids and names inconsistently")
    INELIGIBLE_REPLICA = (107, False, "the new ISR contains an ineligible replica")
    NEW_LEADER_ELECTED = (108, False, "the partition state was updated but the leader changed")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "the offset has moved to tiered storage")
    FENCED_MEMBER_EPOCH = (110, False, "the member epoch is fenced; rejoin the group")
    UNRELEASED_INSTANCE_ID = (111, False, "the instance id is still used by another member")
    UNSUPPORTED_ASSIGNOR = (112, False, "the group does not support that assignor")
    STALE_MEMBER_EPOCH = (113, False, "the member epoch is stale")
    MISMATCHED_ENDPOINT_TYPE = (114, False, "the request went to an endpoint of the wrong type")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "this endpoint type is not supported")
    UNKNOWN_CONTROLLER_ID = (116, False, "the controller id is not known")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "the telemetry subscription id is unknown or outdated")
    TELEMETRY_TOO_LARGE = (118, False, "the telemetry push is larger than allowed")
    INVALID_REGISTRATION = (119, False, "the broker registration is invalid")
    TRANSACTION_ABORTABLE = (120, False, "the transaction failed; the client should abort it")
    INVALID_RECORD_STATE = (121, False, "the record state is invalid for this acknowledgement")
    SHARE_SESSION_NOT_FOUND = (122, True, "the share session was not found")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "the share session epoch is invalid")
    FENCED_STATE_EPOCH = (124, False, "the share state epoch is fenced")
    INVALID_VOTER_KEY = (125, False, "the voter key does not match the receiving replica")
    DUPLICATE_VOTER = (126, False, "the voter is already in the voter set")
    VOTER_NOT_FOUND = (127, False, "the voter is not in the voter set")
    INVALID_REGULAR_EXPRESSION = (128, False, "the regular expression is invalid")
    REBOOTSTRAP_REQUIRED = (129, False, "the client must rebootstrap its metadata")
    STREAMS_INVALID_TOPOLOGY = (130, False, "the streams topology is invalid")
    STREAMS_INVALID_TOPOLOGY_EPOCH = (131, False, "the streams topology epoch is invalid")
    STREAMS_TOPOLOGY_FENCED = (132, False, "the streams topology is fenced")
    SHARE_SESSION_LIMIT_REACHED = (133, True, "the broker's share session limit is reached")

    @classmethod
    def of(cls, code: int) -> ErrorCode:
        """The member for ``code``; UNKNOWN_SERVER_ERROR for a code this table
        does not know (a newer broker's), as Kafka clients do."""
        try:
            # a lookup by value (EnumMeta.__call__); mypy checks it against __new__'s signature
            return cls(code)  # type: ignore[call-arg]
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


class KafkaError(Exception):
    """An operation failed with a Kafka error code.

    ``code`` goes on the wire; ``message`` (optional detail) goes in the
    response's error_message field where the API has one. Subclasses fix
    ``code`` as a class attribute; the base class takes it as an argument.
    """

    code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str | None = None, *, code: ErrorCode | int | None = None) -> None:
        if code is not None:
            self.code = ErrorCode.of(int(code))
        self.message = message if message is not None else self.code.message
        super().__init__(f"{self.code.name} ({int(self.code)}): {self.message}")

    @property
    def retriable(self) -> bool:
        return self.code.retriable


_BY_CODE: dict[int, type[KafkaError]] = {}


_E = TypeVar("_E", bound=KafkaError)


def _typed(cls: type[_E]) -> type[_E]:
    """Register the named exception of ``cls.code`` for ``error_for``; its
    docstring is the code's name and meaning."""
    cls.__doc__ = f"{cls.code.name}: {cls.code.message}."
    _BY_CODE[int(cls.code)] = cls
    return cls


# One named exception per code the broker raises from its layers; every other
# code uses KafkaError(code=...) or error_for(code). Class statements (not
# made by a function) so that type checkers see them as classes.
@_typed
class OffsetOutOfRangeError(KafkaError):
    code = ErrorCode.OFFSET_OUT_OF_RANGE


@_typed
class CorruptMessageError(KafkaError):
    code = ErrorCode.CORRUPT_MESSAGE


@_typed
class UnknownTopicOrPartitionError(KafkaError):
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@_typed
class LeaderNotAvailableError(KafkaError):
    code = ErrorCode.LEADER_NOT_AVAILABLE


@_typed
class NotLeaderOrFollowerError(KafkaError):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER


@_typed
class RequestTimedOutError(KafkaError):
    code = ErrorCode.REQUEST_TIMED_OUT


@_typed
class ReplicaNotAvailableError(KafkaError):
    code = ErrorCode.REPLICA_NOT_AVAILABLE


@_typed
class MessageTooLargeError(KafkaError):
    code = ErrorCode.MESSAGE_TOO_LARGE


@_typed
class StaleControllerEpochError(KafkaError):
    code = ErrorCode.STALE_CONTROLLER_EPOCH


@_typed
class NotCoordinatorError(KafkaError):
    code = ErrorCode.NOT_COORDINATOR


@_typed
class CoordinatorNotAvailableError(KafkaError):
    code = ErrorCode.COORDINATOR_NOT_AVAILABLE


@_typed
class CoordinatorLoadInProgressError(KafkaError):
    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


@_typed
class InvalidTopicError(KafkaError):
    code = ErrorCode.INVALID_TOPIC_EXCEPTION


@_typed
class RecordListTooLargeError(KafkaError):
    code = ErrorCode.RECORD_LIST_TOO_LARGE


@_typed
class NotEnoughReplicasError(KafkaError):
    code = ErrorCode.NOT_ENOUGH_REPLICAS


@_typed
class NotEnoughReplicasAfterAppendError(KafkaError):
    code = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


@_typed
class InvalidRequiredAcksError(KafkaError):
    code = ErrorCode.INVALID_REQUIRED_ACKS


@_typed
class IllegalGenerationError(KafkaError):
    code = ErrorCode.ILLEGAL_GENERATION


@_typed
class UnknownMemberIdError(KafkaError):
    code = ErrorCode.UNKNOWN_MEMBER_ID


@_typed
class RebalanceInProgressError(KafkaError):
    code = ErrorCode.REBALANCE_IN_PROGRESS


@_typed
class InvalidTimestampError(KafkaError):
    code = ErrorCode.INVALID_TIMESTAMP


@_typed
class TopicAlreadyExistsError(KafkaError):
    code = ErrorCode.TOPIC_ALREADY_EXISTS


@_typed
class InvalidPartitionsError(KafkaError):
    code = ErrorCode.INVALID_PARTITIONS


@_typed
class InvalidReplicationFactorError(KafkaError):
    code = ErrorCode.INVALID_REPLICATION_FACTOR


@_typed
class InvalidReplicaAssignmentError(KafkaError):
    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


@_typed
class InvalidConfigError(KafkaError):
    code = ErrorCode.INVALID_CONFIG


@_typed
class NotControllerError(KafkaError):
    code = ErrorCode.NOT_CONTROLLER


@_typed
class InvalidRequestError(KafkaError):
    code = ErrorCode.INVALID_REQUEST


@_typed
class OutOfOrderSequenceNumberError(KafkaError):
    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


@_typed
class DuplicateSequenceNumberError(KafkaError):
    code = ErrorCode.DUPLICATE_SEQUENCE_NUMBER


@_typed
class InvalidProducerEpochError(KafkaError):
    code = ErrorCode.INVALID_PRODUCER_EPOCH


@_typed
class InvalidTxnStateError(KafkaError):
    code = ErrorCode.INVALID_TXN_STATE


@_typed
class InvalidProducerIdMappingError(KafkaError):
    code = ErrorCode.INVALID_PRODUCER_ID_MAPPING


@_typed
class ConcurrentTransactionsError(KafkaError):
    code = ErrorCode.CONCURRENT_TRANSACTIONS


@_typed
class KafkaStorageError(KafkaError):
    code = ErrorCode.KAFKA_STORAGE_ERROR


@_typed
class LogDirNotFoundError(KafkaError):
    code = ErrorCode.LOG_DIR_NOT_FOUND


@_typed
class UnknownProducerIdError(KafkaError):
    code = ErrorCode.UNKNOWN_PRODUCER_ID


@_typed
class ReassignmentInProgressError(KafkaError):
    code = ErrorCode.REASSIGNMENT_IN_PROGRESS


@_typed
class NonEmptyGroupError(KafkaError):
    code = ErrorCode.NON_EMPTY_GROUP


@_typed
class GroupIdNotFoundError(KafkaError):
    code = ErrorCode.GROUP_ID_NOT_FOUND


@_typed
class TopicDeletionDisabledError(KafkaError):
    code = ErrorCode.TOPIC_DELETION_DISABLED


@_typed
class FencedLeaderEpochError(KafkaError):
    code = ErrorCode.FENCED_LEADER_EPOCH


@_typed
class UnknownLeaderEpochError(KafkaError):
    code = ErrorCode.UNKNOWN_LEADER_EPOCH


@_typed
class StaleBrokerEpochError(KafkaError):
    code = ErrorCode.STALE_BROKER_EPOCH


@_typed
class OffsetNotAvailableError(KafkaError):
    code = ErrorCode.OFFSET_NOT_AVAILABLE


@_typed
class MemberIdRequiredError(KafkaError):
    code = ErrorCode.MEMBER_ID_REQUIRED


@_typed
class PreferredLeaderNotAvailableError(KafkaError):
    code = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE


@_typed
class EligibleLeadersNotAvailableError(KafkaError):
    code = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


@_typed
class ElectionNotNeededError(KafkaError):
    code = ErrorCode.ELECTION_NOT_NEEDED


@_typed
class NoReassignmentInProgressError(KafkaError):
    code = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


@_typed
class InvalidRecordError(KafkaError):
    code = ErrorCode.INVALID_RECORD


@_typed
class ProducerFencedError(KafkaError):
    code = ErrorCode.PRODUCER_FENCED


@_typed
class UnknownTopicIdError(KafkaError):
    code = ErrorCode.UNKNOWN_TOPIC_ID


@_typed
class InconsistentTopicIdError(KafkaError):
    code = ErrorCode.INCONSISTENT_TOPIC_ID


def error_for(code: int | ErrorCode, message: str | None = None) -> KafkaError:
    """The typed exception for ``code`` (the named subclass when there is
    one, else ``KafkaError`` carrying the code). ``code`` must not be NONE."""
    member = ErrorCode.of(int(code))
    if member is ErrorCode.NONE:
        raise ValueError("error_for(0): NONE is not an error")
    cls = _BY_CODE.get(int(member))
    if cls is not None:
        return cls(message)
    return KafkaError(message, code=member)
