"""routes[].inbound: the relay checks the caller's bearer JWT before anything reaches the upstream
(the real binary in front of the echo upstream).

- Tokens Glewlwyd issues (idp_glewlwyd.py: RS256 `at+jwt` access tokens; their `aud` is the scope
  granted, `api.read`), their keys found by discovery from Glewlwyd's issuer: admitted, and the
  caller passed on as headers.
- Tokens this test signs with its own keys, whose JWKS `TestIssuer` serves (a scripted issuer: it
  answers only a GET of its JWKS or discovery document asking for JSON, and records anything else
  as a failure), for what no IdP issues: forged tokens of every kind (each 401, the upstream sees
  nothing), a storm of made-up `kid`s (a bounded number of JWKS fetches, counted at the issuer),
  missing scopes (403), an unreadable JWKS (503), and one token sent 1,000 times (one signature
  check, counted in the metrics).
Every token is registered as sensitive: none may show in a relay log (conftest.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from admin_client import start_with_admin
from http_client import RawConnection, assert_problem
from idp_glewlwyd import PASSWORD, SCOPE, USERNAME
from processes import LOOPBACK, route

pytestmark = pytest.mark.oauth

AUDIENCE = "orders"
CLAIM_HEADERS = {"sub": "X-Forwarded-User", "email": "X-Forwarded-Email", "groups": "X-Forwarded-Groups"}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def segment(document: dict) -> str:
    return b64url(json.dumps(document, separators=(",", ":")).encode())


class TestIssuer:
    """An issuer this test plays: RSA keys, its discovery document and JWKS on a free loopback port,
    and tokens signed (or forged) here."""

    __test__ = False  # not a test class

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwks_status = 200
        self.jwks_fetches = 0
        self.unexpected: list[str] = []
        self.lock = threading.Lock()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                issuer.answer(self)

            def do_POST(self) -> None:  # noqa: N802
                issuer.unexpected.append(f"POST {self.path}")
                self.send_error(405)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.url = f"http://{LOOPBACK}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        if request.headers.get("Accept") != "application/json":
            self.unexpected.append(f"GET {request.path} with Accept {request.headers.get('Accept')!r}")
        if request.path == "/.well-known/openid-configuration":
            status, body = 200, {"issuer": self.url, "jwks_uri": f"{self.url}/jwks", "token_endpoint": f"{self.url}/token"}
        elif request.path == "/jwks":
            with self.lock:
                self.jwks_fetches += 1
            status, body = self.jwks_status, {"keys": [self.jwk(self.key, "k1")]} if self.jwks_status == 200 else {"error": "down"}
        else:
            self.unexpected.append(f"GET {request.path}")
            status, body = 404, {"error": "not_found"}
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    @staticmethod
    def jwk(key, kid: str) -> dict:
        numbers = key.public_key().public_numbers()
        def integer(value: int) -> str:
            return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))
        return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": integer(numbers.n), "e": integer(numbers.e)}

    def claims(self, **changes) -> dict:
        now = int(time.time())
        claims = {"iss": self.url, "sub": "alice", "aud": AUDIENCE, "iat": now, "exp": now + 600, "scope": "openid orders.read",
                  "email": "alice@example.test", "groups": ["admins", "dev"], "jti": secrets.token_hex(8)}
        for name, value in changes.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        return claims

    def sign(self, claims: dict | None = None, key=None, kid: str | None = "k1") -> str:
        header = {"alg": "RS256", "typ": "at+jwt", **({"kid": kid} if kid else {})}
        signing_input = f"{segment(header)}.{segment(claims or self.claims())}".encode()
        signature = (key or self.key).sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input.decode()}.{b64url(signature)}"

    def hs256(self, secret: bytes, claims: dict | None = None) -> str:
        """HMAC-SHA256 keyed with `secret`: the algorithm-confusion forgery when it is the public key."""
        signing_input = f"{segment({'alg': 'HS256', 'kid': 'k1'})}.{segment(claims or self.claims())}".encode()
        return f"{signing_input.decode()}.{b64url(hmac.new(secret, signing_input, hashlib.sha256).digest())}"

    def unsigned(self, claims: dict | None = None) -> str:
        return f"{segment({'alg': 'none', 'kid': 'k1'})}.{segment(claims or self.claims())}."

    def public_pem(self) -> bytes:
        return self.key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def public_der(self) -> bytes:
        return self.key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def issuer():
    server = TestIssuer()
    yield server
    server.close()
    assert not server.unexpected, f"the issuer got requests it does not serve: {server.unexpected}"


def inbound_route(upstream, issuer_url: str, name: str = "inbound", prefix: str = "/", **options) -> dict:
    inbound = {"issuer": issuer_url, "audiences": [AUDIENCE], "jwksUrl": f"{issuer_url}/jwks", "requiredScopes": ["orders.read"],
               "claimHeaders": CLAIM_HEADERS, **options}
    return route(upstream, prefix, name=name, inbound=inbound)


def requests_seen(upstream) -> int:
    return upstream.stats()["requests_started"]


def send(conn: RawConnection, token: str | None, *headers) -> object:
    auth = [("Authorization", f"Bearer {token}")] if token is not None else []
    return conn.request("GET", "/orders", headers=[*auth, *headers])


def challenge(resp) -> str:
    values = resp.header_all("www-authenticate")
    assert len(values) == 1, resp.headers
    return values[0]


def test_forged_tokens_are_refused_before_the_upstream_sees_anything(issuer, upstream, start_relay, sensitive):
    relay = start_relay([inbound_route(upstream, issuer.url)])
    valid = sensitive.add("a valid token", issuer.sign())
    head, payload, signature = valid.split(".")
    forged = {
        "signed with another key under the issuer's kid": issuer.sign(key=issuer.other_key),
        "alg none": issuer.unsigned(),
        "HS256 keyed with the issuer's public key (PEM)": issuer.hs256(issuer.public_pem()),
        "HS256 keyed with the issuer's public key (DER)": issuer.hs256(issuer.public_der()),
        "expired": issuer.sign(issuer.claims(exp=int(time.time()) - 120)),
        "not valid before a minute from now": issuer.sign(issuer.claims(nbf=int(time.time()) + 120)),
        "another issuer": issuer.sign(issuer.claims(iss="https://evil.example.test")),
        "another audience": issuer.sign(issuer.claims(aud="billing")),
        "no expiry": issuer.sign(issuer.claims(exp=None)),
        "claims changed after signing": f"{head}.{segment(issuer.claims(sub='root'))}.{signature}",
        "not a JWT": "opaque-" + secrets.token_hex(16),
    }
    expected = {
        "alg none": "the token's signature algorithm is not accepted",
        "HS256 keyed with the issuer's public key (PEM)": "the token's signature algorithm is not accepted",
        "HS256 keyed with the issuer's public key (DER)": "the token's signature algorithm is not accepted",
        "expired": "the token has expired",
        "not valid before a minute from now": "the token is not valid yet",
        "another issuer": "the token is not from the accepted issuer",
        "another audience": "the token is not meant for this service (aud)",
        "no expiry": "the token has no expiry (exp)",
        "not a JWT": "the token is not a well-formed signed JWT",
    }
    with RawConnection(relay.host, relay.port) as conn:
        # The keys are read once, by the first token that needs them.
        assert send(conn, valid).status == 200
        seen = requests_seen(upstream)
        for label, token in forged.items():
            sensitive.add(f"forged: {label}", token)
            resp = send(conn, token)
            doc = assert_problem(resp, 401, route="inbound")
            description = expected.get(label, "the token's signature does not verify")
            assert doc["detail"] == description, (label, doc)
            assert challenge(resp) == (f'Bearer realm="oauth-relay", error="invalid_token", error_description="{description}"'), label
            assert token not in resp.body.decode() and token not in challenge(resp)
        assert requests_seen(upstream) == seen, "a forged token reached the upstream"
    assert issuer.jwks_fetches == 1


def test_a_storm_of_made_up_kids_fetches_the_jwks_a_bounded_number_of_times(issuer, upstream, start_relay, sensitive):
    relay = start_relay([inbound_route(upstream, issuer.url)])
    started = time.monotonic()
    statuses = []
    with RawConnection(relay.host, relay.port) as conn:
        for _ in range(200):
            token = sensitive.add("a token naming a made-up kid", issuer.sign(kid=secrets.token_hex(8)))
            resp = send(conn, token)
            statuses.append(resp.status)
            assert resp.status != 401 or "no key of the issuer matches the token" in challenge(resp)
    elapsed = time.monotonic() - started
    assert statuses == [401] * 200
    # One fetch at the first need, then at most one per 10 s however many kids are made up.
    assert 1 <= issuer.jwks_fetches <= 1 + int(elapsed // 10), (issuer.jwks_fetches, elapsed)
    assert requests_seen(upstream) == 0


def test_a_valid_caller_is_passed_on_and_client_sent_claim_headers_are_gone(issuer, upstream, start_relay, sensitive):
    relay = start_relay([inbound_route(upstream, issuer.url, name="keeps", prefix="/keeps/"),
                         inbound_route(upstream, issuer.url, name="strips", prefix="/strips/", stripAuthorization=True)])
    token = sensitive.add("a valid token", issuer.sign(issuer.claims(email="evil\r\nX-Admin: true")))
    forged_headers = [("X-Forwarded-User", "root"), ("x-forwarded-email", "root@example.test"), ("X-Forwarded-Groups", "wheel")]
    with RawConnection(relay.host, relay.port) as conn:
        resp = conn.request("GET", "/keeps/a", headers=[("Authorization", f"Bearer {token}"), *forged_headers])
        assert resp.status == 200, resp.body
        assert resp.echo_headers("X-Forwarded-User") == ["alice"]
        assert resp.echo_headers("X-Forwarded-Groups") == ["admins, dev"]
        assert resp.echo_headers("X-Forwarded-Email") == [], "a claim with CR LF is not sent, and the client's copy is gone"
        assert resp.echo_headers("X-Admin") == []
        assert resp.echo_headers("Authorization") == [f"Bearer {token}"]
        resp = conn.request("GET", "/strips/a", headers=[("Authorization", f"Bearer {token}"), *forged_headers])
        assert resp.status == 200, resp.body
        assert resp.echo_headers("Authorization") == []
        assert resp.echo_headers("X-Forwarded-User") == ["alice"]
    assert '"claim":"email"' in relay.log() and "X-Admin" not in relay.log()


def test_missing_scopes_absent_and_malformed_credentials(issuer, upstream, start_relay, sensitive):
    relay = start_relay([inbound_route(upstream, issuer.url, requiredScopes=["orders.read", "orders.write"])])
    token = sensitive.add("a token without orders.write", issuer.sign())
    with RawConnection(relay.host, relay.port) as conn:
        resp = send(conn, token)
        assert assert_problem(resp, 403, route="inbound")["detail"] == "the token lacks the scope orders.write"
        assert challenge(resp) == ('Bearer realm="oauth-relay", error="insufficient_scope", '
                                   'error_description="the token lacks the scope orders.write", scope="orders.read orders.write"')
        # No error code when no token came (RFC 6750 §3.1); both schemes of `dpop: "allowed"` offered.
        offered = ['Bearer realm="oauth-relay"', 'DPoP algs="ES256 RS256 PS256 EdDSA"']
        resp = send(conn, None)
        assert_problem(resp, 401, route="inbound")
        assert resp.header_all("www-authenticate") == offered
        resp = conn.request("GET", "/orders", headers=[("Authorization", "Basic dXNlcjpwYXNz")])
        assert_problem(resp, 401)
        assert resp.header_all("www-authenticate") == offered
        resp = conn.request("GET", "/orders", headers=[("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}")])
        assert_problem(resp, 400)
        assert 'error="invalid_request"' in challenge(resp)
    assert requests_seen(upstream) == 0


def test_an_unreadable_jwks_is_a_503_with_retry_after(issuer, upstream, start_relay, sensitive):
    issuer.jwks_status = 500
    relay = start_relay([inbound_route(upstream, issuer.url)])
    token = sensitive.add("a valid token", issuer.sign())
    with RawConnection(relay.host, relay.port) as conn:
        for _ in range(5):
            resp = send(conn, token)
            doc = assert_problem(resp, 503, route="inbound")
            # The IdP's words (its URL, its status) are for the log, not for an unauthenticated caller.
            assert doc["detail"] == "the caller's token cannot be checked now: the issuer's keys could not be read lately", doc
            assert 1 <= int(resp.header("retry-after")) <= 10
    assert issuer.jwks_fetches == 1, "retried after the interval, not per request"
    assert "answered HTTP 500" in relay.log()
    assert requests_seen(upstream) == 0


def test_one_token_sent_a_thousand_times_is_checked_once(issuer, upstream, start_relay, sensitive):
    relay, admin = start_with_admin(start_relay, [inbound_route(upstream, issuer.url)])
    token = sensitive.add("a valid token", issuer.sign())
    with RawConnection(relay.host, relay.port) as conn:
        for _ in range(1000):
            assert send(conn, token).status == 200
    metrics = admin.scrape()
    outcomes = metrics.by("oauth_relay_inbound_validations_total", "outcome", route="inbound")
    assert outcomes == {"valid": 1, "cache_hit": 999}, outcomes
    assert metrics.by("oauth_relay_jwks_fetches_total", "outcome", issuer=issuer.url) == {"ok": 1}
    assert issuer.jwks_fetches == 1


def test_access_tokens_glewlwyd_issues_are_admitted_with_keys_found_by_discovery(start_glewlwyd, upstream, start_relay, sensitive):
    idp = start_glewlwyd()
    secret = sensitive.add("the caller's client secret", "inbound-caller-secret-" + secrets.token_hex(8))
    idp.add_client("caller-app", "client_secret_basic", secret=secret, grants=("password",))
    form = urllib.parse.urlencode({"grant_type": "password", "username": USERNAME, "password": PASSWORD, "scope": SCOPE}).encode()
    basic = base64.b64encode(f"caller-app:{secret}".encode()).decode()
    request = urllib.request.Request(idp.token_url, data=form, headers={"Authorization": f"Basic {basic}"})
    token = sensitive.add("the access token glewlwyd issued", json.loads(urllib.request.urlopen(request, timeout=10).read())["access_token"])
    claims = idp.access_token_claims(token)
    # Glewlwyd's access tokens name the granted scope as their audience.
    relay = start_relay([route(upstream, "/", name="glewlwyd", inbound={
        "issuer": idp.issuer, "audiences": [SCOPE], "requiredScopes": [SCOPE],
        "claimHeaders": {"sub": "X-Forwarded-User", "client_id": "X-Forwarded-Client"}})])
    with RawConnection(relay.host, relay.port) as conn:
        resp = send(conn, token, ("X-Forwarded-User", "root"))
        assert resp.status == 200, resp.body
        assert resp.echo_headers("X-Forwarded-User") == [claims["sub"]]
        assert resp.echo_headers("X-Forwarded-Client") == ["caller-app"]
        tampered = token[:-6] + ("AAAAAA" if not token.endswith("AAAAAA") else "BBBBBB")
        sensitive.add("a tampered glewlwyd token", tampered)
        assert_problem(send(conn, tampered), 401, route="glewlwyd")
    assert "issuer keys read" in relay.log()
