"""`oauth-relay check` on `tls` blocks: missing files, half an mTLS pair, malformed pins and a tls
block on a plain-http URL are errors (exit 1) naming their JSON path; a complete block passes;
`insecureSkipVerify` passes with a warning."""

import json

import pytest

from processes import free_port, relay_config, route, run_cli

pytestmark = pytest.mark.tls


def write(tmp_path, config) -> str:
    path = tmp_path / "relay.json"
    path.write_text(json.dumps(config, indent=2))
    return str(path)


def https_config(tls: dict | None = None, identity_tls: dict | None = None) -> dict:
    routes = [route("https://127.0.0.1:8443", "/", name="secure", **({"tls": tls} if tls is not None else {}))]
    top = {}
    if identity_tls is not None:
        top["identities"] = {"orders": {"tokenUrl": "https://127.0.0.1:8444/oauth2/token",
                                        "grant": "client_credentials", "clientId": "orders-relay",
                                        "clientSecret": "check-test-secret-value", "tls": identity_tls}}
    return relay_config(f"127.0.0.1:{free_port()}", routes, **top)


def check(tmp_path, config):
    result = run_cli("check", "--config", write(tmp_path, config))
    return result.returncode, result.stdout + result.stderr


def naming(output: str, path: str) -> list[str]:
    return [line for line in output.splitlines() if path in line]


def test_tls_check_accepts_a_complete_tls_block(tmp_path, tls_pki):
    code, out = check(tmp_path, https_config(
        tls={"caFile": str(tls_pki.ca.cert), "serverName": "localhost", "pins": [tls_pki.pin("server")],
             "clientCert": str(tls_pki.client.cert), "clientKey": str(tls_pki.client.key)},
        identity_tls={"caFile": str(tls_pki.ca.cert)}))
    assert code == 0, out


def test_tls_check_rejects_a_missing_ca_file_naming_its_path(tmp_path):
    code, out = check(tmp_path, https_config(tls={"caFile": str(tmp_path / "no-such-ca.pem")}))
    assert code == 1, out
    assert naming(out, "$.routes[0].tls.caFile"), out


def test_tls_check_rejects_a_missing_identity_ca_file_naming_its_path(tmp_path):
    code, out = check(tmp_path, https_config(identity_tls={"caFile": str(tmp_path / "no-such-idp-ca.pem")}))
    assert code == 1, out
    assert naming(out, "$.identities.orders.tls.caFile"), out


def test_tls_check_rejects_missing_client_certificate_files(tmp_path):
    code, out = check(tmp_path, https_config(tls={"clientCert": str(tmp_path / "no-cert.pem"),
                                                  "clientKey": str(tmp_path / "no-key.pem")}))
    assert code == 1, out
    assert naming(out, "$.routes[0].tls.clientCert") and naming(out, "$.routes[0].tls.clientKey"), out


def test_tls_check_rejects_a_client_certificate_without_its_key(tmp_path, tls_pki):
    code, out = check(tmp_path, https_config(tls={"clientCert": str(tls_pki.client.cert)}))
    assert code == 1, out
    assert naming(out, "$.routes[0].tls.clientKey"), out


def test_tls_check_rejects_a_malformed_pin(tmp_path):
    code, out = check(tmp_path, https_config(tls={"pins": ["sha1/AAAA"]}))
    assert code == 1, out
    assert naming(out, "$.routes[0].tls.pins[0]"), out


def test_tls_check_rejects_a_tls_block_on_an_http_upstream(tmp_path, tls_pki):
    config = https_config()
    config["routes"][0]["upstream"] = "http://127.0.0.1:8080"
    config["routes"][0]["tls"] = {"caFile": str(tls_pki.ca.cert)}
    code, out = check(tmp_path, config)
    assert code == 1, out
    assert naming(out, "$.routes[0].tls"), out


def test_tls_check_rejects_an_unknown_tls_key(tmp_path, tls_pki):
    code, out = check(tmp_path, https_config(tls={"caFle": str(tls_pki.ca.cert)}))
    assert code == 1, out
    assert naming(out, "$.routes[0].tls.caFle"), out


def test_tls_check_accepts_insecure_skip_verify_with_a_warning(tmp_path):
    code, out = check(tmp_path, https_config(tls={"insecureSkipVerify": True}))
    assert code == 0, out
    warnings = [line for line in out.splitlines()
                if "warn" in line.lower() and ("insecure" in line.lower() or "verif" in line.lower())]
    assert warnings, f"check does not warn that verification is off:\n{out}"
