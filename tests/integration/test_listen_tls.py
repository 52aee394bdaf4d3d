"""`listenTls`: clients (browsers, curl) speak https to the relay; the request is forwarded as
usual and marked `X-Forwarded-Proto: https`."""

import json
import subprocess

from http_client import curl
from processes import free_port, route


def make_certificate(directory):
    """A CA and a certificate for localhost / 127.0.0.1 signed by it, made with the openssl CLI."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
        "-subj", "/CN=listenTls test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "relay.key", "-out", "relay.csr", "-subj", "/CN=localhost")
    (directory / "ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "relay.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "relay.pem", "-days", "1", "-extfile", "ext")
    return directory / "ca.pem", directory / "relay.pem", directory / "relay.key"


def start_tls_relay(start_relay, upstream, tmp_path):
    ca, cert, key = make_certificate(tmp_path)
    tls_port = free_port()
    relay = start_relay([route(upstream)], listenTls={"address": f"127.0.0.1:{tls_port}",
                                                      "certFile": str(cert), "keyFile": str(key)})
    return relay, tls_port, ca


def test_a_request_over_the_tls_listener_is_forwarded_as_https(start_relay, upstream, tmp_path):
    relay, tls_port, ca = start_tls_relay(start_relay, upstream, tmp_path)
    resp = curl(f"https://localhost:{tls_port}/over/tls?q=1", "--cacert", str(ca))
    assert resp.status == 200, resp.stderr
    echo = json.loads(resp.body)
    assert echo["target"] == "/over/tls?q=1"
    assert ["X-Forwarded-Proto", "https"] in echo["headers"]


def test_keep_alive_works_over_the_tls_listener(start_relay, upstream, tmp_path):
    relay, tls_port, ca = start_tls_relay(start_relay, upstream, tmp_path)
    # Two URLs in one curl run share one TLS connection when the relay keeps it open.
    result = subprocess.run(["curl", "-sS", "--noproxy", "*", "--cacert", str(ca), "-o", "/dev/null", "-o", "/dev/null",
                             "-w", "%{http_code} %{num_connects}\n",
                             f"https://localhost:{tls_port}/a", f"https://localhost:{tls_port}/b"],
                            capture_output=True, text=True, timeout=20)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["200 1", "200 0"]


def test_a_client_that_does_not_trust_the_certificate_is_refused(start_relay, upstream, tmp_path):
    relay, tls_port, ca = start_tls_relay(start_relay, upstream, tmp_path)
    result = subprocess.run(["curl", "-sS", "--noproxy", "*", f"https://localhost:{tls_port}/x"],
                            capture_output=True, text=True, timeout=20)
    assert result.returncode == 60, result.stderr   # curl: peer certificate cannot be authenticated
    assert upstream.stats()["requests_started"] == 0


def test_the_plain_listener_keeps_serving_beside_the_tls_one(start_relay, upstream, tmp_path):
    relay, tls_port, ca = start_tls_relay(start_relay, upstream, tmp_path)
    echo = relay.request("GET", "/plain").json()
    assert ["X-Forwarded-Proto", "http"] in echo["headers"]
