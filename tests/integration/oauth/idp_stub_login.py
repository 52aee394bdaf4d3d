"""The scripted stub's endpoints for interactive logins (idp_stub.py serves them): discovery,
JWKS, an authorization endpoint that redirects at once, device authorization, revocation, and
the ID tokens its token endpoint adds to an answer. They exist for the negatives a real server
will not produce on demand: a wrong `issuer`, a token signed with the wrong key or for the wrong
audience or nonce, an expired one, `error=access_denied`, device polls that slow down or expire.

Paths (everything else stays the token endpoint):
    GET  /.well-known/openid-configuration        script "discovery"       (default: this stub's metadata)
    GET  /.well-known/oauth-authorization-server  script "oauth_metadata"  (default: 404)
    GET  /jwks                                    script "jwks"            (default: the "published" key)
    GET  /authorize                               script "authorize"       (default: a code, state echoed, iss)
    POST /device                                  script "device"          (default: fresh codes, interval 1)
    POST /revoke                                  script "revoke"          (default: 200, empty body)

Each script entry is a spec or a list of specs (a queue whose last spec repeats). Besides the
token endpoint's generic kinds ("raw", "oauth_error", "close", each with "delay_ms" and
"headers"), they take:
    {"kind": "metadata", "members": {name: value | null}}   the default document with members
        replaced (null removes one): issuer = this stub's base URL, token_endpoint = /token,
        authorization_endpoint = /authorize, device_authorization_endpoint = /device,
        jwks_uri = /jwks, revocation_endpoint = /revoke, code_challenge_methods_supported [S256],
        id_token_signing_alg_values_supported [RS256, ES256]
    {"kind": "jwks", "keys": ["published", ...]}            the public halves of the named keys
    {"kind": "redirect", "code": "<literal>" (default random), "error": "access_denied",
     "error_description": "...", "state": "echo" | "<literal>" | null, "iss": "issuer" | "<literal>" | null}
        a 302 to the request's redirect_uri with those parameters (with "error", no code)
    {"kind": "device", "user_code": "<literal>" (default random), "expires_in": 600, "interval": 1,
     "verification_uri": (default base + /verify), "complete": true, "url_member": false (Google's
     "verification_url" instead of "verification_uri")}
A token spec may add {"id_token": {"key": "published", "kid": (the key's), "alg": (the key's),
 "iss": (base URL), "aud": (the request's client_id), "nonce": "sent" (the nonce of the code's
 authorization request) | "<literal>" | null, "sub": "stub-person", "exp_in": 300, "iat_in": 0,
 "claims": {...}}}: an ID token signed with jwcrypto.

Keys, by name: "published" (RSA, kid stub-1), "rotated" (RSA, kid stub-2: not in the default
JWKS, for a key rotation), "ec" (P-256, kid stub-ec), "attacker" (RSA, kid stub-1 like the
published one: a signature that does not verify); a script's "keys": {name: private JWK (JSON
object)} adds or replaces keys the test made itself.

The records (GET /_stub/requests, "endpoints") hold every request to these paths as received,
with what was issued (codes, device codes); a code's authorization request is remembered, so a
token request presenting it is recorded with `code_binding` (its nonce, client, redirect URI and
whether the code_verifier matches the challenge: `pkce_ok`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from urllib.parse import parse_qsl, urlencode, urlsplit

from jwcrypto import jwk, jwt

DISCOVERY_PATHS = {"/.well-known/openid-configuration": "discovery", "/.well-known/oauth-authorization-server": "oauth_metadata"}
PATHS = {**DISCOVERY_PATHS, "/jwks": "jwks", "/authorize": "authorize", "/device": "device", "/revoke": "revoke"}
DEFAULTS = {
    "discovery": {"kind": "metadata"},
    "oauth_metadata": {"kind": "raw", "status": 404, "content_type": "text/plain", "body": "not found"},
    "jwks": {"kind": "jwks", "keys": ["published"]},
    "authorize": {"kind": "redirect"},
    "device": {"kind": "device"},
    "revoke": {"kind": "raw", "status": 200},
}


# The stub's own keys, made when first used (most tests of the stub never sign anything).
KEY_PARAMETERS = {
    "published": {"kty": "RSA", "size": 2048, "kid": "stub-1", "alg": "RS256"},
    "attacker": {"kty": "RSA", "size": 2048, "kid": "stub-1", "alg": "RS256"},
    "rotated": {"kty": "RSA", "size": 2048, "kid": "stub-2", "alg": "RS256"},
    "ec": {"kty": "EC", "crv": "P-256", "kid": "stub-ec", "alg": "ES256"},
}


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class LoginEndpoints:
    def __init__(self, base_url: str) -> None:
        self.base = base_url
        self.keys: dict[str, jwk.JWK] = {}
        self.script: dict[str, list[dict]] = {}
        self.records: list[dict] = []
        # code -> what its authorization request said (for the token request presenting it)
        self.codes: dict[str, dict] = {}
        self.set_script({})

    def set_script(self, script: dict) -> None:
        for name, default in DEFAULTS.items():
            entry = script.get(name, default)
            self.script[name] = list(entry) if isinstance(entry, list) else [entry]
        for name, private in script.get("keys", {}).items():
            self.keys[name] = jwk.JWK(**private)

    def key(self, name: str) -> jwk.JWK:
        if name not in self.keys:
            self.keys[name] = jwk.JWK.generate(use="sig", **KEY_PARAMETERS[name])
        return self.keys[name]

    @staticmethod
    def serves(path: str) -> bool:
        return path in PATHS

    def next_spec(self, endpoint: str) -> dict:
        queue = self.script[endpoint]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    # -- answering ----------------------------------------------------------------------------

    def answer(self, method: str, target: str, body: bytes) -> tuple[dict, dict, tuple | None]:
        """(record, spec, answer): answer is (status, content type, body, headers), or None when
        the spec is a generic kind the stub answers itself."""
        parts = urlsplit(target)
        endpoint = PATHS[parts.path]
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if method == "POST":
            pairs += parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        spec = self.next_spec(endpoint)
        record = {"n": len(self.records) + 1, "time": time.time(), "endpoint": endpoint, "method": method,
                  "target": target, "form": [list(p) for p in pairs], "kind": spec.get("kind"), "status": None,
                  "issued": {}}
        self.records.append(record)
        form = dict(pairs)
        kind = spec.get("kind")
        if kind == "metadata":
            return record, spec, self.json(200, self.metadata(spec.get("members", {})))
        if kind == "jwks":
            keys = [self.key(name).export_public(as_dict=True) for name in spec.get("keys", ["published"])]
            return record, spec, self.json(200, {"keys": keys})
        if kind == "redirect":
            return record, spec, self.redirect(spec, form, record)
        if kind == "device":
            return record, spec, self.device(spec, record)
        return record, spec, None

    @staticmethod
    def json(status: int, payload: dict, headers: tuple = ()) -> tuple:
        return status, "application/json", json.dumps(payload).encode(), list(headers)

    def metadata(self, members: dict) -> dict:
        document = {
            "issuer": self.base, "token_endpoint": f"{self.base}/token", "authorization_endpoint": f"{self.base}/authorize",
            "device_authorization_endpoint": f"{self.base}/device", "jwks_uri": f"{self.base}/jwks",
            "revocation_endpoint": f"{self.base}/revoke", "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"], "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        }
        document.update(members)
        return {k: v for k, v in document.items() if v is not None}

    def redirect(self, spec: dict, form: dict, record: dict) -> tuple:
        redirect_uri = form.get("redirect_uri")
        if not redirect_uri:
            return 400, "text/plain", b"stub: the authorization request has no redirect_uri", []
        params: dict[str, str] = {}
        if "error" in spec:
            params["error"] = spec["error"]
            if "error_description" in spec:
                params["error_description"] = spec["error_description"]
        else:
            code = spec.get("code") or secrets.token_urlsafe(24)
            params["code"] = code
            record["issued"]["code"] = code
            self.codes[code] = {"nonce": form.get("nonce"), "client_id": form.get("client_id"), "redirect_uri": redirect_uri,
                                "code_challenge": form.get("code_challenge"),
                                "code_challenge_method": form.get("code_challenge_method")}
        state = spec.get("state", "echo")
        if state is not None:
            state = form.get("state") if state == "echo" else state
            if state is not None:
                params["state"] = state
        iss = spec.get("iss", "issuer")
        if iss is not None:
            params["iss"] = self.base if iss == "issuer" else iss
        separator = "&" if urlsplit(redirect_uri).query else "?"
        return 302, "text/plain", b"", [("Location", redirect_uri + separator + urlencode(params))]

    def device(self, spec: dict, record: dict) -> tuple:
        device_code = secrets.token_urlsafe(32)
        user_code = spec.get("user_code") or secrets.token_hex(4).upper()
        uri = spec.get("verification_uri", f"{self.base}/verify")
        answer = {"device_code": device_code, "user_code": user_code,
                  "verification_url" if spec.get("url_member") else "verification_uri": uri,
                  "expires_in": spec.get("expires_in", 600), "interval": spec.get("interval", 1)}
        if spec.get("complete", True):
            answer["verification_uri_complete"] = f"{uri}?user_code={user_code}"
        record["issued"] = {"device_code": device_code, "user_code": user_code}
        return self.json(200, {k: v for k, v in answer.items() if v is not None})

    # -- the token endpoint's part ------------------------------------------------------------------

    def bind_code(self, form: dict, record: dict) -> dict | None:
        """Notes, on a token request's record, the authorization request its code came from."""
        binding = self.codes.get(form.get("code") or "")
        if binding is None:
            return None
        verifier = form.get("code_verifier")
        record["code_binding"] = {
            "client_id": binding["client_id"], "redirect_uri_ok": binding["redirect_uri"] == form.get("redirect_uri"),
            "pkce_ok": (verifier is not None and binding["code_challenge_method"] == "S256"
                        and _s256(verifier) == binding["code_challenge"]),
            "nonce_sent": binding["nonce"] is not None,
        }
        return binding

    def id_token(self, spec: dict, form: dict, binding: dict | None) -> str:
        key = self.key(spec.get("key", "published"))
        now = int(time.time())
        claims = {"iss": spec.get("iss", self.base), "sub": spec.get("sub", "stub-person"),
                  "aud": spec.get("aud", form.get("client_id") or (binding or {}).get("client_id")),
                  "iat": now + int(spec.get("iat_in", 0)), "exp": now + int(spec.get("exp_in", 300))}
        nonce = spec.get("nonce", "sent")
        if nonce == "sent":
            nonce = (binding or {}).get("nonce")
        if nonce is not None:
            claims["nonce"] = nonce
        claims.update(spec.get("claims", {}))
        public = key.export_public(as_dict=True)
        header = {"alg": spec.get("alg", public.get("alg", "RS256")), "typ": "JWT", "kid": spec.get("kid", public.get("kid"))}
        token = jwt.JWT(header={k: v for k, v in header.items() if v is not None},
                        claims={k: v for k, v in claims.items() if v is not None})
        token.make_signed_token(key)
        return token.serialize()
