"""Certificates and keys rotated on disk under a running relay, with no SIGHUP: the relay looks at
the files its configuration names every `limits.credentialFilePollSeconds` (1 s here) and, when
one changed, re-applies the configuration in force with the files read anew.

- The TLS listener's certificate (`listenTls`), in each of the three ways files rotate
  (file_rotation.py: kubelet's `..data` symlink swap, an in-place rewrite, a delete-then-create)
  while a client opens a new TLS connection per request: every request succeeds, new connections
  get the renewed certificate (its DER, read with Python's ssl), and a keep-alive connection
  opened before the renewal keeps working.
- A route's upstream client certificate (mTLS to nginx, which requires one): new connections
  present the renewed certificate (`$ssl_client_fingerprint`), the pooled one is recycled.
- An identity's certificate for RFC 8705 certificate-bound tokens: renewed, it is presented to the
  token endpoint for a new token, and that token goes upstream with the renewed certificate.
"""

from __future__ import annotations

import hashlib
import http.client
import ssl
import threading

import pytest

from admin_client import log_records, start_with_admin, wait_for_log
from deadlines import scaled, wait_until
from file_rotation import STYLES, CredentialFiles
from processes import LOOPBACK, free_port, route
from tls_relay import nginx_saw, tls_route

pytestmark = pytest.mark.tls

POLL = {"credentialFilePollSeconds": 1}
RELOADED = "configuration reloaded"
OUTAGE = "a changed credential file could not be applied; the configuration in force stays, and it is tried again at every poll until it applies"
OUTAGE_OVER = "changed credential files applied; the earlier failure is over"


def der(cert_path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert_path.read_text())


def sha1_hex(cert_path) -> str:
    return hashlib.sha1(der(cert_path)).hexdigest()


def pair(cert_key, cert_name: str = "tls.crt", key_name: str = "tls.key") -> dict[str, bytes]:
    return {cert_name: cert_key.cert.read_bytes(), key_name: cert_key.key.read_bytes()}


def file_triggers(relay) -> list[str]:
    return [r["trigger"] for r in log_records(relay, RELOADED) if r.get("trigger", "").startswith("file changed: ")]


class Traffic:
    """Requests one after the other on a thread until stopped; `request()` makes one and returns
    what to record of it. Every failure (an exception, a status other than 200) is kept."""

    def __init__(self, request):
        self._request = request
        self.results: list = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Traffic":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=scaled(20))
        assert not self._thread.is_alive(), "the traffic thread did not stop"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.results.append(self._request())
            except Exception as e:  # noqa: BLE001 - every failure counts, whatever it is
                self.failures.append(f"{type(e).__name__}: {e}")

    def wait_for(self, predicate, what: str, timeout: float = 15):
        return wait_until(lambda: predicate(list(self.results)), timeout, what)

    def wait_for_more(self, count: int = 5) -> None:
        seen = len(self.results)
        self.wait_for(lambda results: len(results) >= seen + count, f"{count} more requests")


# ---------------------------------------------------------------------------------------------
# The listener's certificate

def https_get(connection: http.client.HTTPSConnection, path: str) -> bytes:
    """GET `path` on `connection`; its certificate's DER. Fails on any status but 200."""
    connection.request("GET", path)
    response = connection.getresponse()
    response.read()
    assert response.status == 200, f"{path}: {response.status}"
    return connection.sock.getpeercert(binary_form=True)


def certificate_of_a_new_connection(tls_port: int, context: ssl.SSLContext, path: str = "/x") -> bytes:
    """GET `path` on a new TLS connection to the listener, closed after; its certificate's DER."""
    fresh = http.client.HTTPSConnection(LOOPBACK, tls_port, context=context, timeout=scaled(10))
    try:
        return https_get(fresh, path)
    finally:
        fresh.close()


@pytest.mark.parametrize("style", STYLES)
def test_a_renewed_listener_certificate_reaches_new_connections_and_no_request_fails(style, tls_pki, start_relay, upstream,
                                                                                     tmp_path):
    first, renewed = tls_pki.server, tls_pki.renewal("server")
    files = CredentialFiles(tmp_path / "listener-tls", style, pair(first))
    tls_port = free_port()
    relay = start_relay([route(upstream)], limits=POLL, listenTls={
        "address": f"{LOOPBACK}:{tls_port}", "certFile": files.paths["tls.crt"], "keyFile": files.paths["tls.key"]})
    context = ssl.create_default_context(cafile=str(tls_pki.ca.cert))

    def connection() -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(LOOPBACK, tls_port, context=context, timeout=scaled(10))

    kept = connection()
    assert https_get(kept, "/kept/before") == der(first.cert)

    def one_new_connection() -> bytes:
        return certificate_of_a_new_connection(tls_port, context, "/fresh")

    outage_seen = []
    with Traffic(one_new_connection) as traffic:
        traffic.wait_for_more()

        def while_missing() -> None:
            # The files are gone: the re-apply that notices fails, and says so once.
            outage_seen.append(wait_for_log(relay, OUTAGE, 1, timeout=10))
            traffic.wait_for_more()

        files.rotate(pair(renewed), between=while_missing)
        traffic.wait_for(lambda certificates: certificates and certificates[-1] == der(renewed.cert),
                         "a new connection that gets the renewed certificate")
        traffic.wait_for_more()
    assert traffic.failures == [], traffic.failures[:5]
    certificates = traffic.results
    assert set(certificates) == {der(first.cert), der(renewed.cert)}
    switched = certificates.index(der(renewed.cert))
    assert set(certificates[switched:]) == {der(renewed.cert)}, "a connection after the renewal got the old certificate"
    # The keep-alive connection opened before goes on, with the certificate of its own handshake.
    assert https_get(kept, "/kept/after") == der(first.cert)
    kept.close()
    assert any("$.listenTls." in trigger for trigger in file_triggers(relay)), file_triggers(relay)
    outages = log_records(relay, OUTAGE)
    if style == "recreate":
        assert len(outages) == 1, "one warning per outage, not one per failed attempt"
        warning = outage_seen[0]
        assert any("$.listenTls.certFile" in f or "$.listenTls.keyFile" in f for f in warning["files"]), warning
        assert any(files.paths["tls.crt"] in e or files.paths["tls.key"] in e for e in warning["errors"]), warning
        wait_for_log(relay, OUTAGE_OVER, 1)


def test_a_half_written_certificate_changes_nothing_and_warns_once_until_the_file_is_whole(tls_pki, start_relay, upstream,
                                                                                          tmp_path):
    first, renewed = tls_pki.server, tls_pki.renewal("server")
    files = CredentialFiles(tmp_path / "listener-tls", "in_place", pair(first))
    tls_port = free_port()
    relay, admin = start_with_admin(start_relay, [route(upstream)], limits=POLL, listenTls={
        "address": f"{LOOPBACK}:{tls_port}", "certFile": files.paths["tls.crt"], "keyFile": files.paths["tls.key"]})
    context = ssl.create_default_context(cafile=str(tls_pki.ca.cert))

    def served() -> bytes:
        return certificate_of_a_new_connection(tls_port, context)

    def rejected() -> float:
        return admin.scrape().total("oauth_relay_config_reloads_total", outcome="rejected")

    whole = renewed.cert.read_bytes()
    certificate = tmp_path / "listener-tls" / "tls.crt"
    certificate.write_bytes(whole[: len(whole) // 2])
    warning = wait_for_log(relay, OUTAGE, 1, timeout=10)
    assert warning["files"] == [f"$.listenTls.certFile {files.paths['tls.crt']}"], warning
    assert [e.split(":")[0] for e in warning["errors"]] == ["$.listenTls.certFile"], warning
    assert served() == der(first.cert), "the certificate in force stays while the new one is half-written"
    # More of the file, still not whole: another failed attempt, and no second warning.
    failed = rejected()
    certificate.write_bytes(whole[: len(whole) * 3 // 4])
    wait_until(lambda: rejected() > failed, 10, "another failed attempt")
    assert len(log_records(relay, OUTAGE)) == 1, "one warning per outage"
    files.rotate(pair(renewed))
    wait_until(lambda: served() == der(renewed.cert), 10, "the renewed certificate once both files are whole")
    wait_for_log(relay, OUTAGE_OVER, 1)
    assert len(log_records(relay, OUTAGE)) == 1


def test_a_reapply_that_failed_on_an_unwatched_file_is_retried_until_the_renewed_certificate_is_in_force(
        tls_pki, start_relay, upstream, tmp_path):
    """The listener certificate is renewed while an identity's `clientSecretFile` (read by the
    re-apply, but not among the files it watches) is empty mid delete-then-create: the re-apply
    fails, one warning. The secret file is then written, and nothing watched changes again: the
    relay tries again at every poll, and the renewed certificate is put in force. No re-apply
    repeats the start-up's "TLS verification disabled" warning."""
    first, renewed = tls_pki.server, tls_pki.renewal("server")
    files = CredentialFiles(tmp_path / "listener-tls", "in_place", pair(first))
    secret = tmp_path / "client-secret"
    secret.write_text("s3cret")
    tls_port = free_port()
    relay, _ = start_with_admin(
        start_relay, [route(upstream), tls_route(f"https://{LOOPBACK}:{free_port()}", "/unverified", insecureSkipVerify=True)],
        limits=POLL,
        listenTls={"address": f"{LOOPBACK}:{tls_port}", "certFile": files.paths["tls.crt"], "keyFile": files.paths["tls.key"]},
        identities={"svc": {"tokenUrl": f"http://{LOOPBACK}:{free_port()}/token", "clientId": "relay",
                            "clientSecretFile": str(secret)}})
    context = ssl.create_default_context(cafile=str(tls_pki.ca.cert))

    def served() -> bytes:
        return certificate_of_a_new_connection(tls_port, context)

    unverified = len(log_records(relay, "TLS verification disabled"))
    assert unverified == 1, "the start-up warns once"
    secret.write_text("")
    files.rotate(pair(renewed))
    warning = wait_for_log(relay, OUTAGE, 1, timeout=10)
    assert any(str(secret) in e for e in warning["errors"]), warning
    assert served() == der(first.cert), "the certificate in force stays while the re-apply fails"
    secret.write_text("s3cret")
    wait_until(lambda: served() == der(renewed.cert), 10, "the renewed certificate, with no further change of a watched file")
    wait_for_log(relay, OUTAGE_OVER, 1)
    assert len(log_records(relay, OUTAGE)) == 1, "one warning per outage"
    assert len(log_records(relay, "TLS verification disabled")) == unverified, "a re-apply does not repeat start-up warnings"


# ---------------------------------------------------------------------------------------------
# A route's upstream client certificate (mTLS)

def test_a_renewed_upstream_client_certificate_is_presented_on_new_connections(tls_pki, start_nginx_tls, start_relay, tmp_path):
    nginx = start_nginx_tls(verify_client="on")
    first, renewed = tls_pki.client, tls_pki.renewal("client")
    files = CredentialFiles(tmp_path / "client-tls", "kubernetes", pair(first, "client.crt", "client.key"))
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert, clientCert=files.paths["client.crt"],
                                   clientKey=files.paths["client.key"])], limits=POLL)

    def seen() -> tuple[str, int]:
        saw = nginx_saw(relay.request("GET", "/mtls", timeout=scaled(10)))
        assert saw["ssl_client_verify"] == "SUCCESS", saw
        return saw["ssl_client_fingerprint"], saw["connection"]

    before = seen()
    assert before[0] == sha1_hex(first.cert)
    assert seen()[1] == before[1], "the upstream connection is pooled"
    with Traffic(seen) as traffic:
        traffic.wait_for_more()
        files.rotate(pair(renewed, "client.crt", "client.key"))
        traffic.wait_for(lambda results: results and results[-1][0] == sha1_hex(renewed.cert),
                         "nginx seeing the renewed client certificate")
        traffic.wait_for_more()
    assert traffic.failures == [], traffic.failures[:5]
    switched = [fingerprint for fingerprint, _ in traffic.results].index(sha1_hex(renewed.cert))
    assert {fingerprint for fingerprint, _ in traffic.results[switched:]} == {sha1_hex(renewed.cert)}
    assert {connection for _, connection in traffic.results[switched:]}.isdisjoint(
        {connection for _, connection in traffic.results[:switched]}), "a connection of the old certificate was reused"
    assert any("$.routes[0].tls.client" in trigger for trigger in file_triggers(relay)), file_triggers(relay)


# ---------------------------------------------------------------------------------------------
# RFC 8705: the identity's certificate, its tokens, and the bound upstream

def x5t_s256(cert_path) -> str:
    import base64
    return base64.urlsafe_b64encode(hashlib.sha256(der(cert_path)).digest()).rstrip(b"=").decode()


def test_a_renewed_identity_certificate_gets_a_new_bound_token_presented_with_it(start_tls_stub_idp, start_nginx_tls, tls_pki,
                                                                                start_relay, tmp_path):
    idp = start_tls_stub_idp(ask_client_cert=True)
    nginx = start_nginx_tls(verify_client="on")
    first, renewed = tls_pki.client, tls_pki.renewal("client", 2)
    files = CredentialFiles(tmp_path / "identity-tls", "kubernetes", pair(first, "client.crt", "client.key"))
    identity = idp.identity(tls={"caFile": str(tls_pki.ca.cert), "clientCert": files.paths["client.crt"],
                                 "clientKey": files.paths["client.key"]})
    relay = start_relay([{**tls_route(nginx, caFile=tls_pki.ca.cert), "identity": "svc", "certificateBoundUpstream": True}],
                        identities={"svc": identity}, limits=POLL)

    def seen() -> tuple[str, str]:
        saw = nginx_saw(relay.request("GET", "/bound", timeout=scaled(10)))
        return saw["ssl_client_fingerprint"], saw["authorization"]

    first_seen = seen()
    assert first_seen[0] == sha1_hex(first.cert)
    with Traffic(seen) as traffic:
        traffic.wait_for_more()
        files.rotate(pair(renewed, "client.crt", "client.key"))
        traffic.wait_for(lambda results: results and results[-1][0] == sha1_hex(renewed.cert),
                         "the bound upstream seeing the renewed certificate")
        traffic.wait_for_more()
    assert traffic.failures == [], traffic.failures[:5]
    requests = idp.token_requests()
    assert [r["client_cert_sha256"] for r in requests] == [x5t_s256(first.cert), x5t_s256(renewed.cert)], \
        "one new token request, with the renewed certificate"
    by_certificate: dict[str, set[str]] = {}
    for fingerprint, authorization in [first_seen, *traffic.results]:
        by_certificate.setdefault(fingerprint, set()).add(authorization)
    assert set(by_certificate) == {sha1_hex(first.cert), sha1_hex(renewed.cert)}
    assert len(by_certificate[sha1_hex(renewed.cert)]) == 1
    assert by_certificate[sha1_hex(renewed.cert)].isdisjoint(by_certificate[sha1_hex(first.cert)]), \
        "a token bound to the old certificate went upstream with the renewed one"
