"""The name-constraint check of issue 26, shared by the standalone proof (a CA made here like the
relay's) and the real test (the relay's own `ca.pem`/`ca.key`): with the CA's key, sign a leaf
for a name outside the constraint (`evil.test`), one for an address (127.0.0.1) and one for the
permitted host (`api.test`); serve each from its own loopback TLS server; and ask every client
users trust the CA in whether it accepts each leaf.

    verdicts = client_verdicts(ca, workdir, start_site, nss_home, nss_chromium)
    verdicts["evil.test"]["curl"] -> None (accepted) or the client's reason for the refusal

The permitted leaf, signed the same way and served the same way, must be accepted by every
client: that shows each refusal of the others is the constraint's, not a broken fixture's.
"""

from __future__ import annotations

from pathlib import Path

from forward_clients import direct_curl, python_requests, s_client
from forward_pki import API_HOST, EVIL_HOST, sign_leaf
from forward_relay import tls_handshake_refused
from nss_browser import load
from processes import LOOPBACK
from tls_pki import CertKey, verify

ADDRESS = "127.0.0.1"
LEAF_NAMES = (EVIL_HOST, ADDRESS, API_HOST)
CLIENTS = ("openssl verify", "openssl s_client", "curl", "python ssl", "python requests", "chromium")


def _url(name: str, port: int) -> str:
    return f"https://{name}:{port}/constraint-check"


def client_verdicts(ca: CertKey, workdir: Path, start_site, nss_home, nss_chromium) -> dict[str, dict[str, str | None]]:
    """{leaf name: {client: None when accepted, else why it refused}} for LEAF_NAMES x CLIENTS.
    `ca` is trusted in the NSS database of `nss_home` here."""
    sites = {}
    leaves = {}
    for name in LEAF_NAMES:
        leaves[name] = sign_leaf(workdir, name, ca.cert, ca.key)
        sites[name] = start_site(leaves[name], ca)
    nss_home.trust(ca.cert, "CA under test")
    driver = nss_chromium(resolve={EVIL_HOST: LOOPBACK, API_HOST: LOOPBACK})
    verdicts: dict[str, dict[str, str | None]] = {}
    for name in LEAF_NAMES:
        port = sites[name].port
        is_address = name == ADDRESS
        v: dict[str, str | None] = {}
        ok, output = verify(leaves[name].cert, ca.cert, **({"ip": name} if is_address else {"name": name}))
        v["openssl verify"] = None if ok else output.strip()
        ok, output = s_client(f"{LOOPBACK}:{port}", name, ca.cert)
        v["openssl s_client"] = None if ok else _verify_lines(output)
        resolve = {} if is_address else {f"{name}:{port}": LOOPBACK}
        resp = direct_curl(_url(name, port), ca.cert, resolve)
        v["curl"] = None if resp.returncode == 0 and resp.status == 200 else f"exit {resp.returncode}: {resp.stderr.strip()}"
        v["python ssl"] = tls_handshake_refused(LOOPBACK, port, ca.cert, name)
        answer = python_requests(_url(name, port), {"REQUESTS_CA_BUNDLE": str(ca.cert)},
                                 resolve=None if is_address else {name: LOOPBACK})
        v["python requests"] = None if answer.get("status") == 200 else f"{answer.get('error')}: {answer.get('detail')}"
        error, _ = load(driver, _url(name, port))
        v["chromium"] = error
        verdicts[name] = v
    return verdicts


def _verify_lines(output: str) -> str:
    lines = [line for line in output.splitlines() if "verif" in line.lower() or "error" in line.lower()]
    return " | ".join(lines[:6]) or output[-300:]


def assert_constraint_holds(verdicts: dict[str, dict[str, str | None]]) -> None:
    """Every client refuses the evil.test and 127.0.0.1 leaves, for a name-constraint reason
    where the client names one, and accepts the api.test leaf."""
    accepted_wrongly = [f"{client} accepted the leaf for {name}" for name in (EVIL_HOST, ADDRESS)
                        for client, why in verdicts[name].items() if why is None]
    refused_wrongly = [f"{client} refused the leaf for {API_HOST}: {why}" for client, why in verdicts[API_HOST].items()
                       if why is not None]
    assert not accepted_wrongly and not refused_wrongly, "\n".join(accepted_wrongly + refused_wrongly)
    # The clients that say why name the constraint (OpenSSL: "permitted subtree violation" for a
    # name outside it, "excluded subtree violation" for an excluded address); Chromium's
    # verifier calls every such chain ERR_CERT_INVALID (not AUTHORITY_INVALID: the CA is trusted).
    for client in ("openssl verify", "openssl s_client", "curl", "python ssl", "python requests"):
        assert "permitted subtree violation" in verdicts[EVIL_HOST][client], (client, verdicts[EVIL_HOST][client])
        assert "excluded subtree violation" in verdicts[ADDRESS][client], (client, verdicts[ADDRESS][client])
    for name in (EVIL_HOST, ADDRESS):
        assert verdicts[name]["chromium"] == "ERR_CERT_INVALID", (name, verdicts[name]["chromium"])
