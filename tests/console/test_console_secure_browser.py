"""The console against a secured cluster (``kavka up --secure``'s:
SASL_SSL with SCRAM-SHA-512, an ACL authorizer), connected with
``--command-config`` (the admin.properties the cluster writes), in Debian's
headless chromium: the pages work over TLS and SASL, the ACLs the cluster
was set up with are listed, one is added and removed, the SCRAM users are
listed, and a user without rights sees the broker's refusal in words.
"""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from kavka.tools.cluster import LocalCluster
from kavka.tools.secure_cluster import ADMIN_USER, CLIENT_USER

from .browser import Browser, ConsoleProcess

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def env(zookeeper, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("console-secure")
    cluster = LocalCluster(1, tmp / "cluster", zookeeper=f"{zookeeper}/kavka-console-sec-{uuid.uuid4().hex[:8]}",
                           secure=True, metrics=False)
    consoles: list[ConsoleProcess] = []
    browser = None
    try:
        cluster.start()
        assert cluster.secure is not None
        admin = ConsoleProcess(cluster.bootstrap, "--command-config", str(cluster.secure.admin_properties_path),
                               log_dir=tmp)
        consoles.append(admin)
        (tmp / "client").mkdir()
        client = ConsoleProcess(cluster.bootstrap, "--command-config", str(cluster.secure.client_properties_path),
                                log_dir=tmp / "client")
        consoles.append(client)
        browser = Browser(tmp)
        yield cluster, admin, client, browser
    finally:
        if browser is not None:
            browser.close()
        for c in consoles:
            c.stop()
        cluster.stop()


def test_pages_over_sasl_ssl_list_and_change_acls_and_users(env):
    cluster, admin, _client, browser = env
    page = browser.page
    page.goto(admin.url + "/")
    expect(page.locator("#broker-0 .state")).to_have_text("up")
    page.goto(admin.url + "/acls")
    expect(page.locator("#acls")).to_contain_text(f"User:{CLIENT_USER}")
    before = page.locator("#acls tbody tr").count()
    for name, value in {"resource_name": "audit", "principal": "User:auditor", "host": "*"}.items():
        page.locator(f"#add-acl [name={name}]").fill(value)
    page.locator("#add-acl [name=operation]").select_option("DESCRIBE")
    page.locator("#add-acl button").click()
    page.wait_for_load_state()
    expect(page.locator("#notice")).to_contain_text("Added ALLOW DESCRIBE for User:auditor on TOPIC audit")
    expect(page.locator("#acls tbody tr")).to_have_count(before + 1)
    browser.shot("secure-acls")
    page.locator("#acls tbody tr", has_text="User:auditor").locator("button").click()
    page.wait_for_load_state()
    expect(page.locator("#notice")).to_contain_text("Removed 1 ACL")
    expect(page.locator("#acls tbody tr")).to_have_count(before)
    page.goto(admin.url + "/users")
    expect(page.locator("#users")).to_contain_text(ADMIN_USER)
    expect(page.locator("#users")).to_contain_text("SCRAM-SHA-512")
    assert cluster.secure.passwords[ADMIN_USER] not in page.content()


def test_a_user_without_rights_sees_the_refusal_in_words(env):
    # kavka up --secure's client user may describe the cluster but not alter it.
    _cluster, _admin, client, browser = env
    page = browser.page
    page.goto(client.url + "/acls")
    before = page.locator("#acls tbody tr").count()
    for name, value in {"resource_name": "audit", "principal": "User:mallory"}.items():
        page.locator(f"#add-acl [name={name}]").fill(value)
    page.locator("#add-acl button").click()
    page.wait_for_load_state()
    expect(page.locator("#error")).to_contain_text("ACL not added")
    expect(page.locator("#error")).to_contain_text("CLUSTER_AUTHORIZATION_FAILED")
    expect(page.locator("#acls tbody tr")).to_have_count(before)
    page.goto(client.url + "/users")
    page.locator("#add-user [name=user]").fill("mallory")
    page.locator("#add-user [name=password]").fill("let-me-in")
    page.locator("#add-user button").click()
    page.wait_for_load_state()
    expect(page.locator("#error")).to_contain_text("User not saved")
    expect(page.locator("#error")).to_contain_text("CLUSTER_AUTHORIZATION_FAILED")
    expect(page.locator("#users")).not_to_contain_text("mallory")
    assert "let-me-in" not in page.content() and "Traceback" not in page.content()
    browser.shot("secure-refused")
