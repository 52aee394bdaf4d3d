"""What django-oauth-toolkit (idp_django_server.py) was asked and answered, for the tests: a
Django middleware recording each request to the token, authorization, device authorization and
revocation endpoints (SHA-256 fingerprints, never a secret, code or token), the view that lists
the records, and the test-controlled hold on token requests.

Issued authorization codes, device codes and ID tokens, and the client's own secrets of a login
(the `state` and `nonce` of its authorization requests, the PKCE `code_verifier` of its code
exchanges), are also appended to the secrets file the fixture gives (JSON lines, mode 0600): the
leak scan needs them whole, and the database keeps none.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from pathlib import Path
from urllib.parse import parse_qsl, unquote_plus, urlsplit

TOKEN_PATH = "/o/token/"
# The endpoints besides the token endpoint whose requests are recorded, by the record list's name.
RECORDED_PATHS = {"/o/authorize/": "authorizations", "/o/device-authorization/": "device_authorizations",
                  "/o/revoke_token/": "revocations"}

def sha256(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest() if text else None


# ---------------------------------------------------------------------------------------------
# What the tests observe and control.

class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[dict] = []
        self.others: dict[str, list[dict]] = {name: [] for name in RECORDED_PATHS.values()}
        self.hold_seconds = 0.0
        self.secrets_file: Path | None = None

    def add(self, records: list[dict], record: dict) -> None:
        with self.lock:
            record["n"] = len(records) + 1
            records.append(record)

    def issued(self, kind: str, value: str | None) -> None:
        """Notes a secret the server issued, or a login's secret a client sent it, for the leak
        scan (the file is the fixture's, 0600)."""
        if not value or self.secrets_file is None:
            return
        with self.lock, open(self.secrets_file, "a") as out:
            out.write(json.dumps({"kind": kind, "value": value}) + "\n")


STATE = _State()


def _client_of(request, form: dict[str, str]) -> tuple[str, str | None]:
    """(client authentication method, client id) of a token request, the way DOT reads them."""
    auth = request.META.get("HTTP_AUTHORIZATION", "")
    if auth[:6].lower() == "basic ":
        try:
            decoded = base64.b64decode(auth[6:].strip()).decode()
            return "basic", unquote_plus(decoded.split(":", 1)[0])
        except (ValueError, UnicodeDecodeError):
            return "basic", None
    if "client_secret" in form:
        return "post", form.get("client_id")
    return "none", form.get("client_id")


class Recorder:
    """Django middleware: holds token requests when told to, and records each request to the token,
    authorization, device authorization and revocation endpoints before its answer leaves (so a
    test that has the relay's answer sees the record). Records hold fingerprints, never a secret."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == TOKEN_PATH:
            return self.token_request(request)
        if request.path in RECORDED_PATHS:
            return self.other_request(request, RECORDED_PATHS[request.path])
        return self.get_response(request)

    def token_request(self, request):
        arrived = time.time()
        hold = STATE.hold_seconds
        if hold:
            time.sleep(hold)
        pairs = parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True)
        form = dict(pairs)
        client_auth, client_id = _client_of(request, form)
        response = self.get_response(request)
        answer = _json(response)
        STATE.issued("id_token", answer.get("id_token"))
        STATE.issued("code_verifier", form.get("code_verifier"))
        STATE.add(STATE.records, {
            "time": arrived, "held_seconds": hold, "answered": time.time(),
            "method": request.method, "content_type": request.META.get("CONTENT_TYPE", ""),
            "form_keys": [k for k, _ in pairs],
            "grant_type": form.get("grant_type"), "client_auth": client_auth, "client_id": client_id,
            "scope": form.get("scope"), "username": form.get("username"),
            "refresh_token_sha256": sha256(form.get("refresh_token")),
            "code_sha256": sha256(form.get("code")), "redirect_uri": form.get("redirect_uri"),
            "code_verifier_sha256": sha256(form.get("code_verifier")),
            "device_code_sha256": sha256(form.get("device_code")),
            "status": response.status_code,
            "error": answer.get("error"), "error_description": answer.get("error_description"),
            "access_token_sha256": sha256(answer.get("access_token")),
            "issued_refresh_token_sha256": sha256(answer.get("refresh_token")),
            "id_token_sha256": sha256(answer.get("id_token")),
            "expires_in": answer.get("expires_in"), "granted_scope": answer.get("scope"),
            "token_type": answer.get("token_type"),
        })
        return response

    def other_request(self, request, kind: str):
        arrived = time.time()
        pairs = parse_qsl(request.META.get("QUERY_STRING", ""), keep_blank_values=True)
        if request.method == "POST":
            pairs += parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True)
        form = dict(pairs)
        client_auth, client_id = _client_of(request, form)
        response = self.get_response(request)
        record = {"time": arrived, "answered": time.time(), "method": request.method, "status": response.status_code,
                  "form_keys": [k for k, _ in pairs], "client_auth": client_auth, "client_id": client_id,
                  "scope": form.get("scope")}
        if kind == "authorizations":
            record.update(self.authorization(form, response))
        elif kind == "device_authorizations":
            answer = _json(response)
            STATE.issued("device_code", answer.get("device_code"))
            record.update({key: answer.get(key) for key in ("user_code", "verification_uri", "verification_uri_complete",
                                                             "expires_in", "interval", "error", "error_description")})
            record["device_code_sha256"] = sha256(answer.get("device_code"))
        else:
            answer = _json(response)
            record.update({"token_sha256": sha256(form.get("token")), "token_type_hint": form.get("token_type_hint"),
                           "error": answer.get("error")})
        STATE.add(STATE.others[kind], record)
        return response

    @staticmethod
    def authorization(form: dict, response) -> dict:
        """What an authorization request asked (state and nonce as fingerprints) and, when it
        redirected back to the client, what the redirect carried."""
        STATE.issued("state", form.get("state"))
        STATE.issued("nonce", form.get("nonce"))
        record = {"response_type": form.get("response_type"), "redirect_uri": form.get("redirect_uri"),
                  "state_sha256": sha256(form.get("state")), "nonce_sha256": sha256(form.get("nonce")),
                  "code_challenge": form.get("code_challenge"), "code_challenge_method": form.get("code_challenge_method"),
                  "allow": form.get("allow") is not None, "to_client": None}
        location = response.get("Location", "") if response.status_code in (301, 302, 303) else ""
        redirect_uri = form.get("redirect_uri")
        if redirect_uri and location.startswith(redirect_uri):
            back = dict(parse_qsl(urlsplit(location).query, keep_blank_values=True))
            STATE.issued("authorization_code", back.get("code"))
            record["to_client"] = {"code_sha256": sha256(back.get("code")), "state_sha256": sha256(back.get("state")),
                                   "iss": back.get("iss"), "error": back.get("error")}
        return record


def _json(response) -> dict:
    try:
        answer = json.loads(response.content)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def token_requests(request):
    from django.http import JsonResponse
    with STATE.lock:
        answer = {"requests": list(STATE.records), **{name: list(records) for name, records in STATE.others.items()}}
    return JsonResponse(answer)


def hold(request, payload: dict):
    from django.http import JsonResponse
    STATE.hold_seconds = max(0.0, float(payload.get("ms", 0)) / 1000)
    return JsonResponse({"hold_ms": STATE.hold_seconds * 1000})
