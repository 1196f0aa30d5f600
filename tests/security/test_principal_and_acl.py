from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.security.acl import AclOperation, granting_operations
from kavka.security.principal import ANONYMOUS, KafkaPrincipal, Session


@given(st.text(min_size=1).filter(lambda t: ":" not in t and t.strip() == t and t),
       st.text(min_size=1))
def test_principal_round_trips_through_its_text(ptype: str, name: str) -> None:
    p = KafkaPrincipal(ptype, name)
    assert KafkaPrincipal.parse(str(p)) == p


@pytest.mark.parametrize("text", ["alice", ":alice", "User:", ""])
def test_principal_without_type_or_name_is_refused_with_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="Type:name"):
        KafkaPrincipal.parse(text)


def test_a_session_is_anonymous_until_authenticated() -> None:
    assert not Session().authenticated
    assert Session(principal=KafkaPrincipal("User", "alice")).authenticated
    assert str(ANONYMOUS) == "User:ANONYMOUS"


def test_describe_is_granted_by_read_write_delete_alter_but_nothing_else_widens() -> None:
    assert granting_operations(AclOperation.DESCRIBE) == {
        AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    assert granting_operations(AclOperation.DESCRIBE_CONFIGS) == {
        AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    assert granting_operations(AclOperation.WRITE) == {AclOperation.WRITE}
