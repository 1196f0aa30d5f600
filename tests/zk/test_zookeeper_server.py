"""The standalone ZooKeeper launcher used by tests, tools and `kavka up`."""

from __future__ import annotations

import socket

import pytest

from kavka.tools.zookeeper import ZooKeeperServer, ZooKeeperStartError, four_letter_word


def test_start_serve_and_stop_cleans_up(tmp_path):
    server = ZooKeeperServer(fsync=False)
    server.start()
    data_dir = server.data_dir
    try:
        assert server.running and data_dir is not None and (data_dir / "zoo.cfg").is_file()
        cfg = (data_dir / "zoo.cfg").read_text()
        assert "clientPortAddress=127.0.0.1" in cfg and "admin.enableServer=false" in cfg
        assert four_letter_word("127.0.0.1", server.port, "ruok") == "imok"
        assert "Mode: standalone" in four_letter_word("127.0.0.1", server.port, "srvr")
    finally:
        server.stop()
    assert not server.running and not data_dir.exists()


def test_given_data_dir_is_kept(tmp_path):
    with ZooKeeperServer(data_dir=tmp_path / "zk", fsync=False) as server:
        assert server.log_path.parent == tmp_path / "zk"
    assert (tmp_path / "zk" / "zoo.cfg").is_file() and (tmp_path / "zk" / "zookeeper.log").is_file()


def test_taken_port_fails_with_the_log(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        server = ZooKeeperServer(port=port, data_dir=tmp_path / "zk", fsync=False)
        with pytest.raises(ZooKeeperStartError) as e:
            server.start(timeout=30)
        server.stop()
    assert "exited with status" in str(e.value) and "Address already in use" in str(e.value)
