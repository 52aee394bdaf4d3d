"""`oauth-relay ca --config FILE` (issue 26): creates the forward proxy's CA on first use, prints
where its certificate is, its SHA-256 fingerprint (as `openssl x509 -fingerprint -sha256` prints
it) and the lines that make tools trust it for one process; keeps the key to itself (0600 in a
0700 directory, never printed); prints the same CA again on a second run; and issues a new one
when the routes' hosts change, saying so."""

from __future__ import annotations

import re
from pathlib import Path


from forward_pki import sha256_fingerprint
from forward_relay import mode_of, printed_fingerprint, run_ca_command
from processes import LOOPBACK, free_port, relay_config, write_config


# The tools the issue names, each of which the output tells how to trust the CA.
TRUST_WORDS = ["--cacert", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "keytool",
               "certutil"]

# How the output says the CA is not the one trusted before.
NEW_CA = re.compile(r"\bnew\b|re-?issued|re-?trust", re.IGNORECASE)


def ca_config(path: Path, hosts: list[str], ca_directory: Path | None) -> Path:
    routes = [{"match": {"host": h}, "upstream": "https://127.0.0.1:1", "name": f"r{i}"} for i, h in enumerate(hosts)]
    forward = {"listen": f"{LOOPBACK}:{free_port()}"}
    if ca_directory is not None:
        forward["caDirectory"] = str(ca_directory)
    return write_config(path, relay_config(f"{LOOPBACK}:{free_port()}", routes, forward=forward))


def run_ok(config: Path) -> str:
    result = run_ca_command(config)
    assert result.returncode == 0, f"oauth-relay ca exited {result.returncode}: {result.stderr[-2000:]}"
    output = result.stdout + result.stderr
    assert "PRIVATE KEY" not in output
    return output


def test_first_run_creates_the_ca_and_prints_path_fingerprint_and_trust_lines(tmp_path, ca_directory):
    output = run_ok(ca_config(tmp_path / "relay.json", ["api.test"], ca_directory))
    ca_pem, ca_key = ca_directory / "ca.pem", ca_directory / "ca.key"
    assert str(ca_pem) in output
    assert printed_fingerprint(output) == sha256_fingerprint(ca_pem)
    missing = [w for w in TRUST_WORDS if w not in output]
    assert not missing, f"no trust line with {missing} in:\n{output}"
    assert mode_of(ca_directory) == 0o700
    assert mode_of(ca_key) == 0o600
    assert mode_of(ca_pem) == 0o644
    key_lines = [line for line in ca_key.read_text().splitlines() if line and not line.startswith("-----")]
    assert key_lines and not any(line in output for line in key_lines)


def test_a_second_run_prints_the_same_ca_and_leaves_its_files_alone(tmp_path, ca_directory):
    config = ca_config(tmp_path / "relay.json", ["api.test"], ca_directory)
    first = printed_fingerprint(run_ok(config))
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in ca_directory.iterdir()}
    second = run_ok(config)
    assert printed_fingerprint(second) == first
    assert not NEW_CA.search(second), f"the second run says the CA is new:\n{second}"
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in ca_directory.iterdir()} == before


def test_adding_a_route_host_issues_a_new_ca_and_says_so(tmp_path, ca_directory):
    first = printed_fingerprint(run_ok(ca_config(tmp_path / "one.json", ["api.test"], ca_directory)))
    output = run_ok(ca_config(tmp_path / "two.json", ["api.test", "*.corp.test"], ca_directory))
    second = printed_fingerprint(output)
    assert second != first and second == sha256_fingerprint(ca_directory / "ca.pem")
    assert NEW_CA.search(output), \
        f"the output does not say that the CA is a new one (to be trusted again):\n{output}"
    from cryptography import x509
    ca = x509.load_pem_x509_certificate((ca_directory / "ca.pem").read_bytes())
    permitted = ca.extensions.get_extension_for_class(x509.NameConstraints).value.permitted_subtrees
    # `*.corp.test` is every name under corp.test: OpenSSL's form `.corp.test`.
    assert sorted(n.value for n in permitted if isinstance(n, x509.DNSName)) == [".corp.test", "api.test"]


def test_without_ca_directory_the_ca_lives_in_the_state_directory(tmp_path, monkeypatch):
    state = tmp_path / "state-home"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    output = run_ok(ca_config(tmp_path / "relay.json", ["api.test"], None))
    directory = state / "oauth-relay" / "forward-ca"
    assert str(directory / "ca.pem") in output
    assert mode_of(directory) == 0o700 and mode_of(directory / "ca.key") == 0o600
    assert printed_fingerprint(output) == sha256_fingerprint(directory / "ca.pem")

