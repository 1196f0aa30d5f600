"""AclAuthorizer: Kafka's decisions (super users, LITERAL/wildcard/PREFIXED
matching, principal and host wildcards, DENY over ALLOW, ALL, implied
operations, allow.everyone.if.no.acl.found), authorizeByResourceType, the
cache's filters and the audit log; with hypothesis, against a reference
that scans every binding, and the properties Kafka's rules promise."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.security.acl import (
    ANY_BINDING,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    granting_operations,
)
from kavka.security.acl_authorizer import AUDIT_LOGGER, AclAuthorizer, parse_super_users
from kavka.security.principal import KafkaPrincipal, Session

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
Op = AclOperation

ALICE = Session(principal=KafkaPrincipal("User", "alice"), client_host="10.0.0.1")
BOB = Session(principal=KafkaPrincipal("User", "bob"), client_host="10.0.0.2")


def ace(principal: str = "User:alice", op: AclOperation = Op.READ, perm: AclPermissionType = ALLOW,
        host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, perm)


def authz(acls: dict[ResourcePattern, list[AccessControlEntry]], **kw) -> AclAuthorizer:
    a = AclAuthorizer(**kw)
    a.load(acls)
    return a


def allowed(a: AclAuthorizer, session: Session, op: AclOperation, rtype: ResourceType, name: str) -> bool:
    return a.authorize(session, [Action(op, rtype, name)])[0]


# -- Kafka's rules, case by case ---------------------------------------------------------


def test_no_acl_denies_unless_allow_everyone_if_no_acl_found() -> None:
    assert not allowed(authz({}), ALICE, Op.READ, TOPIC, "t")
    assert allowed(authz({}, allow_everyone_if_no_acl_found=True), ALICE, Op.READ, TOPIC, "t")


def test_allow_everyone_applies_only_where_no_acl_matches_the_resource() -> None:
    a = authz({ResourcePattern(TOPIC, "t"): [ace("User:bob")]}, allow_everyone_if_no_acl_found=True)
    assert not allowed(a, ALICE, Op.READ, TOPIC, "t")  # an ACL exists for t, none for alice
    assert allowed(a, ALICE, Op.READ, TOPIC, "u")  # nothing about u


def test_literal_wildcard_and_prefixed_patterns_match_as_kafka() -> None:
    a = authz({ResourcePattern(TOPIC, "orders"): [ace(op=Op.READ)],
               ResourcePattern(TOPIC, "*"): [ace(op=Op.WRITE)],
               ResourcePattern(TOPIC, "pay", PRE): [ace(op=Op.CREATE)]})
    assert allowed(a, ALICE, Op.READ, TOPIC, "orders")
    assert not allowed(a, ALICE, Op.READ, TOPIC, "orders2")
    assert allowed(a, ALICE, Op.WRITE, TOPIC, "anything")
    assert allowed(a, ALICE, Op.CREATE, TOPIC, "payments")
    assert allowed(a, ALICE, Op.CREATE, TOPIC, "pay")
    assert not allowed(a, ALICE, Op.CREATE, TOPIC, "pa")
    assert not allowed(a, ALICE, Op.READ, GROUP, "orders")  # another resource type


def test_principal_and_host_match_exactly_or_by_wildcard() -> None:
    a = authz({ResourcePattern(TOPIC, "t"): [ace("User:alice", host="10.0.0.1")],
               ResourcePattern(TOPIC, "u"): [ace("User:*")]})
    assert allowed(a, ALICE, Op.READ, TOPIC, "t")
    assert not allowed(a, Session(principal=ALICE.principal, client_host="10.0.0.9"), Op.READ, TOPIC, "t")
    assert not allowed(a, BOB, Op.READ, TOPIC, "t")
    assert allowed(a, BOB, Op.READ, TOPIC, "u")
    assert allowed(a, Session(principal=KafkaPrincipal("Group", "x")), Op.READ, TOPIC, "u")


def test_deny_beats_allow_from_any_matching_pattern() -> None:
    a = authz({ResourcePattern(TOPIC, "orders"): [ace(op=Op.ALL)],
               ResourcePattern(TOPIC, "ord", PRE): [ace(op=Op.READ, perm=DENY, host="10.0.0.1")]})
    assert not allowed(a, ALICE, Op.READ, TOPIC, "orders")
    assert allowed(a, ALICE, Op.WRITE, TOPIC, "orders")
    assert allowed(a, Session(principal=ALICE.principal, client_host="10.0.0.7"), Op.READ, TOPIC, "orders")


def test_all_allows_and_denies_every_operation() -> None:
    a = authz({ResourcePattern(TOPIC, "t"): [ace(op=Op.ALL)],
               ResourcePattern(TOPIC, "u"): [ace(op=Op.ALL), ace(op=Op.ALL, perm=DENY, principal="User:*")]})
    for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DELETE):
        assert allowed(a, ALICE, op, TOPIC, "t")
        assert not allowed(a, ALICE, op, TOPIC, "u")


def test_implied_operations_widen_allow_never_deny() -> None:
    a = authz({ResourcePattern(TOPIC, "t"): [ace(op=Op.WRITE)],
               ResourcePattern(TOPIC, "c"): [ace(op=Op.ALTER_CONFIGS)],
               ResourcePattern(TOPIC, "d"): [ace(op=Op.ALL), ace(op=Op.READ, perm=DENY)]})
    assert allowed(a, ALICE, Op.DESCRIBE, TOPIC, "t")
    assert not allowed(a, ALICE, Op.READ, TOPIC, "t")
    assert allowed(a, ALICE, Op.DESCRIBE_CONFIGS, TOPIC, "c")
    assert not allowed(a, ALICE, Op.DESCRIBE, TOPIC, "c")
    assert allowed(a, ALICE, Op.DESCRIBE, TOPIC, "d")  # DENY READ does not deny DESCRIBE
    assert not allowed(a, ALICE, Op.READ, TOPIC, "d")


def test_super_users_are_allowed_everything_even_against_deny() -> None:
    a = authz({ResourcePattern(TOPIC, "*"): [ace("User:*", op=Op.ALL, perm=DENY)]},
              super_users=parse_super_users("User:admin; User:alice"))
    assert allowed(a, ALICE, Op.WRITE, TOPIC, "t")
    assert allowed(a, ALICE, Op.CLUSTER_ACTION, CLUSTER, "kafka-cluster")
    assert not allowed(a, BOB, Op.WRITE, TOPIC, "t")


def test_super_users_parse_kafka_syntax() -> None:
    assert parse_super_users("") == frozenset()
    assert parse_super_users(None) == frozenset()
    assert parse_super_users("User:a;User:b;") == {KafkaPrincipal("User", "a"), KafkaPrincipal("User", "b")}
    assert parse_super_users("User:CN=x,O=y") == {KafkaPrincipal("User", "CN=x,O=y")}
    with pytest.raises(ValueError, match="'admin'"):
        parse_super_users("User:a;admin")


def test_an_action_must_be_concrete() -> None:
    a = authz({})
    with pytest.raises(ValueError):
        a.authorize(ALICE, [Action(Op.ANY, TOPIC, "t")])
    with pytest.raises(ValueError):
        a.authorize(ALICE, [Action(Op.READ, ResourceType.ANY, "t")])


def test_a_long_name_costs_only_the_prefix_lengths_present() -> None:
    a = authz({ResourcePattern(GROUP, "g-", PRE): [ace()]})
    assert allowed(a, ALICE, Op.READ, GROUP, "g-" + "x" * 1_000_000)
    assert not allowed(a, ALICE, Op.READ, GROUP, "h" * 1_000_000)


def test_update_cache_adds_replaces_and_removes_patterns() -> None:
    a = AclAuthorizer()
    p = ResourcePattern(TOPIC, "x", PRE)
    a.update_cache(p, [ace()])
    assert allowed(a, ALICE, Op.READ, TOPIC, "xy")
    a.update_cache(p, [ace(op=Op.WRITE)])
    assert not allowed(a, ALICE, Op.READ, TOPIC, "xy") and allowed(a, ALICE, Op.WRITE, TOPIC, "xy")
    a.update_cache(p, [])
    assert a.resource_patterns() == [] and not allowed(a, ALICE, Op.WRITE, TOPIC, "xy")
    with pytest.raises(ValueError):
        a.update_cache(ResourcePattern(TOPIC, "x", PatternType.MATCH), [ace()])


# -- authorizeByResourceType (Kafka's AuthorizerInterfaceDefaultTest cases) ----------------


def by_type(acls, session=ALICE, op=Op.WRITE, **kw) -> bool:
    return authz(acls, **kw).authorize_by_resource_type(session, op, TOPIC)


def test_by_resource_type_needs_one_allowed_resource() -> None:
    assert not by_type({})
    assert by_type({}, allow_everyone_if_no_acl_found=True)
    assert by_type({ResourcePattern(TOPIC, "t"): [ace(op=Op.WRITE)]})
    assert by_type({ResourcePattern(TOPIC, "t", PRE): [ace(op=Op.ALL)]})
    assert not by_type({ResourcePattern(TOPIC, "t"): [ace(op=Op.READ)]})  # no implied operations
    assert not by_type({ResourcePattern(GROUP, "t"): [ace(op=Op.WRITE)]})
    assert by_type({}, super_users={ALICE.principal})


def test_by_resource_type_deny_cancels_only_what_it_covers() -> None:
    w = Op.WRITE
    # A literal allow cancelled by the same literal deny, or by a deny of a prefix of it.
    assert not by_type({ResourcePattern(TOPIC, "ab"): [ace(op=w), ace(op=w, perm=DENY)]})
    assert not by_type({ResourcePattern(TOPIC, "ab"): [ace(op=w)], ResourcePattern(TOPIC, "a", PRE): [ace(op=w, perm=DENY)]})
    # A literal deny does not cancel a prefixed allow, nor another literal.
    assert by_type({ResourcePattern(TOPIC, "a", PRE): [ace(op=w)], ResourcePattern(TOPIC, "a"): [ace(op=w, perm=DENY)]})
    assert by_type({ResourcePattern(TOPIC, "ab"): [ace(op=w)], ResourcePattern(TOPIC, "abc"): [ace(op=w, perm=DENY)]})
    # A prefixed deny of a longer prefix leaves the shorter prefixed allow.
    assert by_type({ResourcePattern(TOPIC, "a", PRE): [ace(op=w)], ResourcePattern(TOPIC, "ab", PRE): [ace(op=w, perm=DENY)]})
    # The LITERAL * deny forbids everything, even with allow.everyone.
    assert not by_type({ResourcePattern(TOPIC, "*"): [ace("User:*", op=Op.ALL, perm=DENY)],
                        ResourcePattern(TOPIC, "t"): [ace(op=w)]}, allow_everyone_if_no_acl_found=True)
    # The LITERAL * allow survives other denies.
    assert by_type({ResourcePattern(TOPIC, "*"): [ace(op=w)], ResourcePattern(TOPIC, "t", PRE): [ace(op=w, perm=DENY)]})
    # Another principal's or host's entries do not count.
    assert not by_type({ResourcePattern(TOPIC, "t"): [ace("User:bob", op=w), ace(op=w, host="1.2.3.4")]})


# -- filters and the cache ------------------------------------------------------------------


def test_filters_select_as_describe_acls_does() -> None:
    p_lit, p_star, p_pre, p_g = (ResourcePattern(TOPIC, "foo"), ResourcePattern(TOPIC, "*"),
                                 ResourcePattern(TOPIC, "fo", PRE), ResourcePattern(GROUP, "foo"))
    a = authz({p_lit: [ace()], p_star: [ace(op=Op.WRITE)], p_pre: [ace("User:bob", perm=DENY)], p_g: [ace()]})

    def pats(rtype, name, ptype, **entry) -> set[ResourcePattern]:
        f = AclBindingFilter(ResourcePatternFilter(rtype, name, ptype), AccessControlEntryFilter(**entry))
        return {b.pattern for b in a.acls(f)}

    assert pats(TOPIC, "foo", PatternType.MATCH) == {p_lit, p_star, p_pre}
    assert pats(TOPIC, "food", PatternType.MATCH) == {p_star, p_pre}
    assert pats(TOPIC, "fo", PatternType.ANY) == {p_pre}
    assert pats(TOPIC, "foo", LIT) == {p_lit}
    assert pats(TOPIC, None, PRE) == {p_pre}
    assert pats(ResourceType.ANY, "foo", PatternType.ANY) == {p_lit, p_g}
    assert pats(ResourceType.ANY, None, PatternType.ANY) == {p_lit, p_star, p_pre, p_g}
    assert pats(ResourceType.ANY, None, PatternType.ANY, principal="User:bob") == {p_pre}
    assert pats(ResourceType.ANY, None, PatternType.ANY, operation=Op.WRITE) == {p_star}
    assert pats(ResourceType.ANY, None, PatternType.ANY, permission_type=DENY) == {p_pre}
    assert pats(ResourceType.ANY, None, PatternType.ANY, host="10.0.0.1") == set()


def test_definite_filters_name_their_patterns() -> None:
    f = ResourcePatternFilter(TOPIC, "x", PatternType.ANY)
    assert f.indefinite_field() is None
    assert f.patterns() == (ResourcePattern(TOPIC, "x", LIT), ResourcePattern(TOPIC, "x", PRE))
    assert ResourcePatternFilter(TOPIC, "x", PatternType.MATCH).indefinite_field() == "Resource pattern type is MATCH."
    assert ResourcePatternFilter(TOPIC, None, LIT).indefinite_field() == "Resource name is NULL."
    with pytest.raises(ValueError):
        ResourcePatternFilter(ResourceType.ANY, "x", LIT).patterns()


# -- the audit log ----------------------------------------------------------------------------


def test_denials_are_logged_once_per_request_with_the_reference_count(caplog) -> None:
    a = authz({ResourcePattern(TOPIC, "ok"): [ace(op=Op.WRITE)]})
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)
    actions = [Action(Op.WRITE, TOPIC, "secret", resource_reference_count=3), Action(Op.WRITE, TOPIC, "ok"),
               Action(Op.WRITE, TOPIC, "secret", resource_reference_count=2),
               Action(Op.DESCRIBE, TOPIC, "hidden", log_if_denied=False)]
    assert a.authorize(ALICE, actions, request="Produce") == [False, True, False, False]
    lines = [r.getMessage() for r in caplog.records if r.name == AUDIT_LOGGER]
    assert lines == ["Principal = User:alice is Denied Operation = Write from host = 10.0.0.1 on resource = "
                     "Topic:LITERAL:secret for request = Produce with resourceRefCount = 5"]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == AUDIT_LOGGER)


def test_filtered_denials_and_explicit_allows_log_at_debug(caplog) -> None:
    a = authz({ResourcePattern(TOPIC, "ok"): [ace(op=Op.WRITE)]})
    caplog.set_level(logging.DEBUG, logger=AUDIT_LOGGER)
    a.authorize(ALICE, [Action(Op.DESCRIBE, TOPIC, "hidden", log_if_denied=False),
                        Action(Op.WRITE, TOPIC, "ok", log_if_allowed=True),
                        Action(Op.DESCRIBE, TOPIC, "ok")], request="Metadata")
    got = [(r.levelno, r.getMessage().split(" on resource = ")[1].split(" ")[0]) for r in caplog.records
           if r.name == AUDIT_LOGGER]
    assert got == [(logging.DEBUG, "Topic:LITERAL:hidden"), (logging.DEBUG, "Topic:LITERAL:ok")]


# -- properties ------------------------------------------------------------------------------

NAMES = st.text(alphabet="ab*", min_size=1, max_size=3)
PRINCIPALS = st.sampled_from(["User:alice", "User:bob", "User:*"])
HOSTS = st.sampled_from(["10.0.0.1", "10.0.0.2", "*"])
OPS = st.sampled_from([Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS])
ACTION_OPS = st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS])
RTYPES = st.sampled_from([TOPIC, GROUP])
PATTERNS = st.builds(ResourcePattern, RTYPES, NAMES, st.sampled_from([LIT, PRE]))
ENTRIES = st.builds(AccessControlEntry, PRINCIPALS, HOSTS, OPS, st.sampled_from([ALLOW, DENY]))
BINDINGS = st.lists(st.builds(AclBinding, PATTERNS, ENTRIES), max_size=12)
SESSIONS = st.builds(Session, principal=st.sampled_from([KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob")]),
                     client_host=st.sampled_from(["10.0.0.1", "10.0.0.2"]))
ACTIONS = st.builds(Action, ACTION_OPS, RTYPES, NAMES)


def cache_of(bindings: list[AclBinding], **kw) -> AclAuthorizer:
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for b in bindings:
        by_pattern.setdefault(b.pattern, set()).add(b.entry)
    return authz(by_pattern, **kw)  # type: ignore[arg-type]


def reference(bindings: list[AclBinding], session: Session, action: Action, allow_everyone: bool) -> bool:
    """Kafka's rule written as a scan: the entries of every pattern a MATCH
    filter on the name selects; none -> allow_everyone; a matching DENY of
    the operation or ALL -> denied; a matching ALLOW of an operation that
    grants it or ALL -> allowed."""
    match = ResourcePatternFilter(action.resource_type, action.name, PatternType.MATCH)
    entries = [b.entry for b in bindings if match.matches(b.pattern)]
    if not entries:
        return allow_everyone
    mine = [e for e in entries if e.principal in (str(session.principal), "User:*")
            and e.host in (session.client_host, "*")]
    if any(e.permission_type == DENY and e.operation in (action.operation, Op.ALL) for e in mine):
        return False
    return any(e.permission_type == ALLOW and (e.operation in granting_operations(action.operation)
                                               or e.operation == Op.ALL) for e in mine)


@settings(max_examples=300)
@given(BINDINGS, SESSIONS, ACTIONS, st.booleans())
def test_decisions_equal_a_scan_of_every_binding(bindings, session, action, allow_everyone) -> None:
    a = cache_of(bindings, allow_everyone_if_no_acl_found=allow_everyone)
    assert a.authorize(session, [action]) == [reference(bindings, session, action, allow_everyone)]


@given(BINDINGS, SESSIONS, ACTIONS, st.sampled_from([Op.ALL, None]), st.booleans())
def test_a_matching_deny_always_wins(bindings, session, action, op, via_prefix) -> None:
    pattern = (ResourcePattern(action.resource_type, action.name[:1], PRE) if via_prefix
               else ResourcePattern(action.resource_type, action.name))
    deny = AccessControlEntry("User:*", session.client_host, op or action.operation, DENY)
    allow_all = AccessControlEntry(str(session.principal), "*", Op.ALL, ALLOW)
    a = cache_of([*bindings, AclBinding(pattern, deny), AclBinding(ResourcePattern(action.resource_type, "*"), allow_all)],
                 allow_everyone_if_no_acl_found=True)
    assert a.authorize(session, [action]) == [False]
    assert AclAuthorizer(super_users={session.principal}).authorize(session, [action]) == [True]


@given(BINDINGS, SESSIONS, ACTIONS, PATTERNS, ENTRIES, st.booleans())
def test_an_acl_on_an_unrelated_pattern_changes_no_answer(bindings, session, action, pattern, entry, everyone) -> None:
    if ResourcePatternFilter(action.resource_type, action.name, PatternType.MATCH).matches(pattern):
        pattern = ResourcePattern(ResourceType.CLUSTER if pattern.resource_type is not ResourceType.CLUSTER
                                  else TOPIC, pattern.name, pattern.pattern_type)
        if pattern.resource_type is action.resource_type:
            return
    before = cache_of(bindings, allow_everyone_if_no_acl_found=everyone).authorize(session, [action])
    after = cache_of([*bindings, AclBinding(pattern, entry)], allow_everyone_if_no_acl_found=everyone)
    assert after.authorize(session, [action]) == before


@given(st.lists(ENTRIES, min_size=1, max_size=6), SESSIONS, ACTION_OPS, RTYPES, NAMES, st.data())
def test_a_prefix_of_the_name_acts_as_the_literal_name(entries, session, op, rtype, name, data) -> None:
    cut = data.draw(st.integers(1, len(name)))
    literal = authz({ResourcePattern(rtype, name, LIT): entries})
    prefixed = authz({ResourcePattern(rtype, name[:cut], PRE): entries})
    action = Action(op, rtype, name)
    assert literal.authorize(session, [action]) == prefixed.authorize(session, [action])


@given(st.lists(ENTRIES, min_size=1, max_size=6), SESSIONS, ACTION_OPS, RTYPES, NAMES, NAMES)
def test_the_literal_wildcard_acts_as_every_literal_name(entries, session, op, rtype, name, other) -> None:
    star = authz({ResourcePattern(rtype, "*"): entries})
    exact = authz({ResourcePattern(rtype, name): entries})
    action = Action(op, rtype, name)
    assert star.authorize(session, [action]) == exact.authorize(session, [action])


@given(BINDINGS)
def test_the_cache_lists_what_it_was_given(bindings) -> None:
    a = cache_of(bindings)
    assert set(a.acls(ANY_BINDING)) == set(bindings)
    for b in bindings:
        a.update_cache(b.pattern, [])
    assert a.acls(ANY_BINDING) == [] and a.resource_patterns() == []
