"""`oauth-relay token --config FILE NAME`: a valid access token on stdout and exit 0 (for scripts:
`curl -H "Authorization: Bearer $(oauth-relay token ...)"`), or an error on stderr and exit 1."""

import json

import pytest

from idp_processes import tricky_secret
from idp_relay import oauth_route
from processes import free_port, relay_config, run_cli

pytestmark = pytest.mark.oauth


def token_command(tmp_path, sensitive, identities: dict, name: str):
    config = relay_config(f"127.0.0.1:{free_port()}", [oauth_route("http://127.0.0.1:9", "/", name)],
                          identities=identities)
    path = tmp_path / "token-command.json"
    path.write_text(json.dumps(config, indent=2))
    result = run_cli("token", "--config", str(path), name)
    sensitive.add_output("stderr of oauth-relay token", result.stderr)
    return result


def test_token_prints_a_token_django_accepts(django_idp, tmp_path, sensitive):
    result = token_command(tmp_path, sensitive, {"orders": django_idp.identity("orders-cc")}, "orders")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 1, f"stdout has {len(lines)} lines, expected only the token"
    who = django_idp.whoami(lines[0].strip())
    assert who.status == 200, f"django refused the printed token: {who.status}"
    assert who.json()["application"] == "orders-cc"
    assert len(django_idp.token_requests()) == 1


def test_token_fails_with_exit_1_when_the_idp_refuses(django_idp, tmp_path, sensitive):
    wrong = sensitive.add("a wrong client secret", tricky_secret("wrong"))
    identity = django_idp.identity("orders-cc", clientSecret=wrong)
    result = token_command(tmp_path, sensitive, {"orders": identity}, "orders")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "invalid_client" in result.stderr


def test_token_fails_with_exit_1_when_the_idp_is_unreachable(stub_idp, tmp_path, sensitive, closed_port):
    identity = stub_idp.identity(tokenUrl=f"http://127.0.0.1:{closed_port}/o/token/")
    result = token_command(tmp_path, sensitive, {"orders": identity}, "orders")
    assert result.returncode == 1
    assert result.stdout == ""


def test_token_fails_with_exit_1_for_an_unknown_identity(stub_idp, tmp_path, sensitive):
    config = relay_config(f"127.0.0.1:{free_port()}", [oauth_route("http://127.0.0.1:9", "/", "orders")],
                          identities={"orders": stub_idp.identity()})
    path = tmp_path / "token-command.json"
    path.write_text(json.dumps(config))
    result = run_cli("token", "--config", str(path), "ordres")
    sensitive.add_output("stderr of oauth-relay token", result.stderr)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "ordres" in result.stderr
