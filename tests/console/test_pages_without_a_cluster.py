"""The console's pages when nobody answers at the bootstrap address, and
hostile requests that never reach a cluster: every answer is a page that
says what is wrong in words, never a stack trace. Starlette's TestClient
runs the app in this process (its lifespan included)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from kavka.console.app import ConsoleSettings, build_app
from kavka.console.main import add_arguments, settings_from

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def client():
    # Port 1: nothing listens; each page gives up after the 1 s deadline.
    app = build_app(ConsoleSettings("127.0.0.1:1", request_timeout_ms=1000, metrics_urls=("http://127.0.0.1:1/m",),
                                    metrics_interval_s=0.5))
    with TestClient(app) as c:
        yield c


def _words(resp) -> str:
    assert "Traceback" not in resp.text and 'File "' not in resp.text
    return resp.text


@pytest.mark.parametrize("path", ["/", "/topics", "/groups", "/reassign", "/elect", "/acls", "/users"])
def test_every_page_says_the_cluster_does_not_answer(client, path):
    resp = client.get(path)
    assert resp.status_code in (200, 502)
    assert "no broker reachable" in _words(resp) or "does not answer" in resp.text


def test_the_overview_keeps_serving_and_the_static_script_is_there(client):
    assert "The cluster does not answer" in _words(client.get("/"))
    assert "setInterval" in client.get("/static/console.js").text
    assert client.get("/healthz").text == "ok\n"


def test_hostile_input_is_refused_before_the_cluster_is_asked(client):
    resp = client.get("/topics/bad%20name")
    assert resp.status_code == 400 and "characters Kafka does not allow" in _words(resp)
    resp = client.post("/topics", data={"name": "x" * 300, "partitions": "1"})
    assert resp.status_code == 400 and "at most 249" in _words(resp)
    resp = client.post("/topics", data={"name": "ok", "partitions": "-3"})
    assert resp.status_code == 400 and "partitions must be between 1" in _words(resp)
    resp = client.post("/topics", content=b"x" * 10, headers={"content-length": "999999999",
                                                                "content-type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 400 and "larger than" in _words(resp)
    resp = client.post("/topics", files={"name": ("n.txt", b"orders")})
    assert resp.status_code == 400 and "fields must be text" in _words(resp)
    resp = client.post("/acls/add", data={"resource_type": "WIDGET", "resource_name": "t", "pattern_type": "LITERAL",
                                          "principal": "User:a", "operation": "READ", "permission": "ALLOW"})
    assert resp.status_code == 400 and "WIDGET" in _words(resp) and "is not one of Kafka" in resp.text
    resp = client.post("/users/add", data={"user": "a", "mechanism": "SCRAM-SHA-1", "password": "p"})
    assert resp.status_code == 400 and "is not SCRAM-SHA-256 or SCRAM-SHA-512" in _words(resp)
    assert 'value="p"' not in resp.text  # a password is never echoed back
    assert client.get("/no/such/page").status_code == 404
    # Another site's page cannot make a visitor's browser change the cluster.
    resp = client.post("/topics/orders/delete", data={"confirm": "orders"}, headers={"origin": "http://evil.example"})
    assert resp.status_code == 400 and "evil.example" in _words(resp) and "is refused" in resp.text
    resp = client.post("/topics/orders/delete", data={"confirm": "orders"},
                       headers={"referer": "http://evil.example/page"})
    assert resp.status_code == 400 and "is refused" in _words(resp)


def test_the_metrics_page_names_the_url_that_does_not_answer(client):
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = _words(client.get("/broker-metrics"))
        if "http://127.0.0.1:1/m:" in text:
            break
        time.sleep(0.5)
    assert "http://127.0.0.1:1/m:" in text


def test_command_line_checks(tmp_path):
    import argparse

    from kavka.tools.client_cli import CliError

    p = argparse.ArgumentParser()
    add_arguments(p)
    conf = tmp_path / "client.properties"
    conf.write_text("client.id=ops-console\nrequest.timeout.ms=5000\n")
    s = settings_from(p.parse_args(["--bootstrap-server", "h:9092", "--command-config", str(conf),
                                    "--metrics-url", "http://h:9404/metrics"]))
    assert (s.client_id, s.request_timeout_ms, s.metrics_urls) == ("ops-console", 5000, ("http://h:9404/metrics",))
    for argv, words in [(["--metrics-url", "ftp://x"], "is not an http"),
                        (["--port", "70000"], "is not a TCP port"),
                        (["--metrics-interval", "0"], "between 0.5 and 3600")]:
        with pytest.raises(CliError, match=words):
            settings_from(p.parse_args(["--bootstrap-server", "h:9092", *argv]))
    conf.write_text("bogus.key=1\n")
    with pytest.raises(CliError, match="bogus.key"):
        settings_from(p.parse_args(["--bootstrap-server", "h:9092", "--command-config", str(conf)]))
