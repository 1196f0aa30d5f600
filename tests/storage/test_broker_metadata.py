"""meta.properties: read, checked against the config, ZooKeeper's cluster id
and the other log directories, written where missing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.config import ConfigError
from kavka.storage import broker_metadata as bm
from kavka.storage.broker_metadata import BrokerMetadata, BrokerMetadataError


def write_raw(d, text: str):
    d.mkdir(parents=True, exist_ok=True)
    (d / "meta.properties").write_text(text)


def test_written_to_every_directory_and_read_back(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    meta = BrokerMetadata(1001, "2nqn6fnsQ5aISlfqxeTyHA")
    assert bm.write(dirs, meta) == [d / "meta.properties" for d in dirs]
    text = (dirs[0] / "meta.properties").read_text()
    assert "version=0\n" in text and "broker.id=1001\n" in text and "cluster.id=2nqn6fnsQ5aISlfqxeTyHA\n" in text
    assert bm.load(dirs) == meta
    assert bm.write(dirs, meta) == []  # nothing differs: nothing rewritten


def test_kafkas_own_file_is_read(tmp_path):
    write_raw(tmp_path, "#\n#Thu Nov 26 22:00:00 UTC 2026\ncluster.id=abc\nversion=0\nbroker.id=7\n")
    assert bm.read(tmp_path) == BrokerMetadata(7, "abc")
    write_raw(tmp_path, "broker.id=7\n")  # an old file: no version (0) and no cluster id
    assert bm.read(tmp_path) == BrokerMetadata(7, None)


def test_a_missing_file_is_a_new_directory(tmp_path):
    assert bm.read(tmp_path / "nothing-here") is None
    assert bm.load([tmp_path / "x", tmp_path / "y"]) is None


@pytest.mark.parametrize(("text", "why"), [
    ("version=1\nnode.id=3\ncluster.id=abc\n", "version=1"),
    ("version=0\ncluster.id=abc\n", "has no broker.id"),
    ("version=0\nbroker.id=seven\n", "broker.id='seven'"),
    ("version=0\nbroker.id=-1\n", "broker.id='-1'"),
])
def test_malformed_files_are_refused_naming_the_file(tmp_path, text, why):
    write_raw(tmp_path, text)
    with pytest.raises(BrokerMetadataError) as e:
        bm.read(tmp_path)
    assert why in str(e.value) and str(tmp_path / "meta.properties") in str(e.value)


def test_an_oversized_or_binary_file_is_refused(tmp_path):
    (tmp_path / "meta.properties").write_bytes(b"\xff\xfe" * 10)
    with pytest.raises(BrokerMetadataError, match="not UTF-8"):
        bm.read(tmp_path)
    (tmp_path / "meta.properties").write_bytes(b"#" * (bm.MAX_META_PROPERTIES_BYTES + 1))
    with pytest.raises(BrokerMetadataError, match="larger than"):
        bm.read(tmp_path)


def test_directories_that_disagree_stop_the_broker_naming_both(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_raw(a, "version=0\nbroker.id=1\ncluster.id=c\n")
    write_raw(b, "version=0\nbroker.id=2\ncluster.id=c\n")
    with pytest.raises(BrokerMetadataError, match="not consistent across log.dirs") as e:
        bm.load([a, b])
    assert str(a / "meta.properties") in str(e.value) and str(b / "meta.properties") in str(e.value)


def test_the_wrong_cluster_is_refused(tmp_path):
    write_raw(tmp_path, "version=0\nbroker.id=1\ncluster.id=old-cluster\n")
    stored = bm.load([tmp_path])
    bm.check_cluster_id(stored, "old-cluster", [tmp_path])
    bm.check_cluster_id(BrokerMetadata(1, None), "new", [tmp_path])  # no cluster recorded yet
    with pytest.raises(BrokerMetadataError, match="joining|join the wrong cluster") as e:
        bm.check_cluster_id(stored, "new-cluster", [tmp_path])
    assert "zookeeper.connect" in str(e.value) and str(tmp_path / "meta.properties") in str(e.value)


def test_broker_id_resolution_as_kafkas_get_or_generate_broker_id(tmp_path):
    write_raw(tmp_path, "version=0\nbroker.id=1001\n")
    stored = bm.load([tmp_path])
    assert bm.resolve_broker_id(1001, stored, [tmp_path], generation_enabled=True) == 1001
    assert bm.resolve_broker_id(-1, stored, [tmp_path], generation_enabled=True) == 1001  # kept across restarts
    with pytest.raises(BrokerMetadataError, match="records broker.id 1001, but broker.id is 5") as e:
        bm.resolve_broker_id(5, stored, [tmp_path], generation_enabled=True)
    assert str(tmp_path / "meta.properties") in str(e.value)
    assert bm.resolve_broker_id(5, None, [tmp_path], generation_enabled=False) == 5
    assert bm.resolve_broker_id(-1, None, [tmp_path], generation_enabled=True) is None  # generate one
    with pytest.raises(ConfigError, match="broker.id.generation.enable"):
        bm.resolve_broker_id(-1, None, [tmp_path], generation_enabled=False)


@given(st.integers(0, 2**31 - 1), st.one_of(st.none(), st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789-_",
                                                               min_size=1, max_size=22)))
def test_what_is_written_reads_back(tmp_path_factory, broker_id, cluster_id):
    d = tmp_path_factory.mktemp("meta")
    meta = BrokerMetadata(broker_id, cluster_id)
    bm.write([d], meta)
    assert bm.read(d) == meta
