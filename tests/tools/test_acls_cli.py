"""``kavka acls``'s command-line rules (kafka-acls.sh's checkArgs and its
usage messages), each refused before anything is sent: exit code 2, one
``Error:`` line, nothing on stdout; and --command-config files refused by
key (security settings: tests/tools/test_command_config.py). The same
command against real clusters: tests/cluster/test_acls_cluster.py."""

from __future__ import annotations


def test_bad_input_is_refused_before_connecting(kavka) -> None:
    b = "127.0.0.1:1"  # nothing listens: every refusal comes before connecting
    for args, message in [
        (["--add", "--topic", "t"], "You must specify one of: --allow-principal, --deny-principal"),
        (["--add", "--allow-principal", "User:a"], "You must provide at least one resource"),
        (["--add", "--allow-principal", "alice", "--topic", "t"], "Type:name"),
        (["--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"], "'Fly' is not an operation"),
        (["--add", "--allow-principal", "User:a", "--group", "g", "--operation", "Write"],
         "ResourceType GROUP only supports operations"),
        (["--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
         "'match' is not valid when adding acls"),
        (["--list", "--allow-principal", "User:a"], "--allow-principal cannot be used with --list"),
        (["--add", "--producer", "--allow-principal", "User:a"], "With --producer you must specify a --topic"),
        (["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"], "With --consumer you must specify"),
        (["--add", "--producer", "--topic", "t", "--operation", "Read", "--allow-principal", "User:a"],
         "infer the operations"),
        (["--remove", "--principal", "User:a", "--topic", "t"], "only available if --list is set"),
    ]:
        r = kavka("acls", "--bootstrap-server", b, *args)
        assert (r.returncode, r.stdout) == (2, ""), (args, r)
        assert r.stderr.startswith("Error: ") and message in r.stderr, (args, r.stderr)


def test_command_config_keys_the_client_cannot_honour_are_refused(kavka, tmp_path) -> None:
    cfg = tmp_path / "client.properties"
    for text, message in [("security.protocol=SASL_SSL\n", "sasl.mechanism is not set"),
                          ("security.protocol=TLS\n", "security.protocol='TLS' is not one of"),
                          ("sasl.mechanism=PLAIN\n", "security.protocol is PLAINTEXT, which does not use SASL"),
                          ("linger.ms=5\n", "'linger.ms' is not a client setting"),
                          ("request.timeout.ms=soon\n", "not a positive integer"),
                          ("no-separator-here\n", "line 1 has no '='")]:
        cfg.write_text(text)
        r = kavka("acls", "--bootstrap-server", "127.0.0.1:1", "--list", "--command-config", str(cfg))
        assert r.returncode == 2 and str(cfg) in r.stderr and message in r.stderr, (text, r.stderr)
    r = kavka("acls", "--bootstrap-server", "127.0.0.1:1", "--list", "--command-config", str(tmp_path / "none"))
    assert r.returncode == 2 and "No such file" in r.stderr
    cfg.write_text("client.id=acl-tool\nsecurity.protocol=plaintext\nrequest.timeout.ms=2000\n")
    r = kavka("acls", "--bootstrap-server", "127.0.0.1:1", "--list", "--command-config", str(cfg))
    assert r.returncode == 1 and "cannot connect to 127.0.0.1:1" in r.stderr  # accepted, then no broker
