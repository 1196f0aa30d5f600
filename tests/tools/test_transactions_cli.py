"""``kavka transactions`` without a cluster: Kafka's table layout and the
option rules checked before anything is sent (exit code 2, one line naming
the option)."""

from __future__ import annotations

import pytest

from kavka import cli
from kavka.tools.transactions import table


def test_table_pads_columns_and_ends_cells_with_tabs():
    assert table(("A", "Longer"), [("wide value", "x")]) == ["A         \tLonger\t", "wide value\tx     \t"]
    assert table(("Only",), []) == ["Only\t"]


@pytest.mark.parametrize("args,message", [
    (["find-hanging"], "needs --topic or --broker-id"),
    (["find-hanging", "--broker-id", "0", "--partition", "1"], "--partition needs --topic"),
    (["find-hanging", "--topic", "t", "--max-transaction-timeout", "-1"], "--max-transaction-timeout"),
    (["abort", "--topic", "t", "--partition", "0"], "either by --start-offset or by --producer-id"),
    (["abort", "--topic", "t", "--partition", "0", "--start-offset", "1", "--producer-id", "2"], "give one"),
    (["abort", "--topic", "t", "--partition", "0", "--producer-id", "2", "--producer-epoch", "0"],
     "--producer-id needs --coordinator-epoch"),
    (["list", "--duration-filter", "-5"], "--duration-filter"),
])
def test_option_rules(args, message, capsys):
    assert cli.main(["transactions", "--bootstrap-server", "127.0.0.1:1", *args]) == 2
    assert message in capsys.readouterr().err


def test_every_command_has_help(capsys):
    for command in ("list", "describe", "describe-producers", "find-hanging", "abort"):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["transactions", "--bootstrap-server", "127.0.0.1:1", command, "--help"])
        assert exit_info.value.code == 0
        assert "usage: kavka transactions" in capsys.readouterr().out
