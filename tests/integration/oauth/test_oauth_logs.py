"""Never a token, secret, password or refresh token in a log line, `check` output or problem body.

(Every OAuth test also checks its own relay logs, in conftest.py; this one drives every path that
might log one, at the most verbose level, and checks the whole output.)"""

import json

import pytest

from deadlines import wait_until
from idp_processes import tricky_secret
from idp_relay import bearer, find_leaks, oauth_route, relay_logs
from processes import run_cli

pytestmark = pytest.mark.oauth

TRACE = ("--log-level", "trace")


def test_a_full_run_at_trace_level_logs_no_secret_and_no_token(start_django_idp, start_stub_idp, upstream,
                                                                start_relay, tmp_path, sensitive, closed_port):
    idp = start_django_idp(access_token_seconds=2)
    stub, refusing = start_stub_idp(), start_stub_idp()
    rotating = {"kind": "token", "expires_in": 2, "refresh_token": "new"}
    stub.script(by_grant={"password": rotating, "refresh_token": rotating})
    refusing.script(default={"kind": "oauth_error", "status": 401, "error": "invalid_client",
                             "error_description": "unknown client"})
    stub_password = sensitive.add("password sent to the stub", tricky_secret("spw"))
    identities = {
        "orders": idp.identity("orders-cc", clientAuth="basic"),
        "billing": idp.identity("billing-cc", clientAuth="post", secret_files=True),
        "legacy": idp.identity("legacy-pw"),
        "scripted": stub.identity(grant="password", username="svc", password=stub_password),
        "refused": refusing.identity(),
        "down": stub.identity(tokenUrl=f"http://127.0.0.1:{closed_port}/o/token/"),
    }
    relay = start_relay([oauth_route(upstream, "/orders/", "orders"), oauth_route(upstream, "/status/", "orders"),
                         oauth_route(upstream, "/billing/", "billing", inject={"query": "access_token"}),
                         oauth_route(idp, "/api/", "legacy"),
                         oauth_route(upstream, "/scripted/", "scripted"),
                         oauth_route(upstream, "/refused/", "refused"),
                         oauth_route(upstream, "/down/", "down"),
                         oauth_route(upstream, "/public/")],
                        identities=identities, args=TRACE)

    client_token = sensitive.add("a client's own bearer token", tricky_secret("client").replace(" ", "_"))
    bearer(relay.request("GET", "/orders/1", headers=[("Authorization", f"Bearer {client_token}")]))
    assert relay.request("GET", "/status/401").status == 401  # invalidation and replay
    assert relay.request("GET", "/billing/1?x=1").status == 200
    assert relay.request("GET", "/scripted/1").status == 200
    assert relay.request("GET", "/public/1").status == 200
    for target, status in [("/refused/1", 502), ("/down/1", 503)]:
        resp = relay.request("GET", target)
        sensitive.add_output(f"problem body of {target}", resp.body)
        assert resp.status == status
    assert relay.request("GET", "/api/whoami").status == 200
    wait_until(lambda: idp.token_requests(grant_type="refresh_token"), 8, "a refresh_token grant at django")
    wait_until(lambda: stub.token_requests(grant_type="refresh_token"), 8, "a refresh_token grant at the stub")
    assert relay.request("GET", "/api/whoami").status == 200
    assert relay.stop() == 0

    check = run_cli("check", "--config", str(relay.config_path))
    sensitive.add_output("oauth-relay check output", check.stdout + check.stderr)
    assert check.returncode == 0, check.stdout + check.stderr
    broken = json.loads(relay.config_path.read_text())
    broken["identities"]["orders"]["clientAuth"] = "bassic"
    broken_path = tmp_path / "broken.json"
    broken_path.write_text(json.dumps(broken))
    check = run_cli("check", "--config", str(broken_path))
    sensitive.add_output("oauth-relay check output (invalid config)", check.stdout + check.stderr)
    assert check.returncode == 1
    token = run_cli("token", "--config", str(relay.config_path), *TRACE, "legacy")
    sensitive.add_output("stderr of oauth-relay token", token.stderr)
    assert token.returncode == 0, token.stderr[-2000:]
    sensitive.add("the token printed by oauth-relay token", token.stdout.strip())

    logs = relay_logs(tmp_path)
    [log] = logs.values()
    assert "legacy" in log and "orders" in log, "the trace log does not even name the identities"
    leaks = find_leaks({**logs, **sensitive.outputs}, sensitive.collect())
    assert not leaks, "secrets or tokens in the relay's output:\n  " + "\n  ".join(leaks)
