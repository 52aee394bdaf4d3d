"""What idpyoidc's token endpoint (idp_idpyoidc_server.py) was asked and answered, for the tests: a
WSGI middleware in front of the real server that records each token request before its answer
leaves (so a test holding the answer sees the record), and holds token requests when told to.

A record: {n, grant_type, client_auth ("basic" | "post" | "none"), client_id, form: [[name,
value], ...], status, error, error_description, issued_token_type, token_sha256}. Secret form
fields (client_secret, password, subject_token, actor_token, refresh_token) are recorded as
`sha256:<hex>`, never whole; the Basic header only as the client id it names. The access tokens
the server issued are kept whole apart from the records (`issued`), for the tests' leak scan:
this server listens on loopback for the test alone.

    GET  /_test/token-requests  JSON {"requests": [record, ...], "issued": [token, ...]}
    POST /_test/hold            JSON {"ms": N}: every later token request waits N ms before the
                                server handles it (outside its lock, so concurrent ones all wait)
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import time
from urllib.parse import parse_qsl, unquote_plus

SECRET_FIELDS = {"client_secret", "password", "subject_token", "actor_token", "refresh_token"}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def client_of(authorization: str, form: dict[str, str]) -> tuple[str, str | None]:
    """(client authentication method, client id) of a token request."""
    if authorization[:6].lower() == "basic ":
        try:
            decoded = base64.b64decode(authorization[6:].strip()).decode()
        except (ValueError, UnicodeDecodeError):
            return "basic", None
        return "basic", unquote_plus(decoded.split(":", 1)[0])
    if "client_secret" in form:
        return "post", form.get("client_id")
    return "none", form.get("client_id")


class TokenRequestRecorder:
    def __init__(self, app, token_path: str):
        self.app = app
        self.token_path = token_path
        self.lock = threading.Lock()
        self.records: list[dict] = []
        self.issued: list[str] = []
        self.hold_seconds = 0.0

    def __call__(self, environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        if path.startswith("/_test/"):
            return self._control(method, path, environ, start_response)
        if (method, path) != ("POST", self.token_path):
            return self.app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        if self.hold_seconds:
            time.sleep(self.hold_seconds)
        answer: dict = {}

        def recording_start(status, headers, exc_info=None):
            answer["status"] = int(status.split()[0])
            return start_response(status, headers, exc_info)

        chunks = self.app(environ, recording_start)
        payload = b"".join(chunks)
        self._record(environ, body, answer["status"], payload)
        return [payload]

    def _record(self, environ, body: bytes, status: int, payload: bytes) -> None:
        pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        form = dict(pairs)
        auth, client_id = client_of(environ.get("HTTP_AUTHORIZATION", ""), form)
        try:
            answer = json.loads(payload)
        except ValueError:
            answer = {}
        token = answer.get("access_token") if status == 200 else None
        record = {
            "grant_type": form.get("grant_type"), "client_auth": auth, "client_id": client_id,
            "form": [[name, f"sha256:{sha256(value)}" if name in SECRET_FIELDS else value] for name, value in pairs],
            "status": status, "error": answer.get("error"), "error_description": answer.get("error_description"),
            "issued_token_type": answer.get("issued_token_type"), "token_sha256": sha256(token) if token else None,
        }
        with self.lock:
            record["n"] = len(self.records) + 1
            self.records.append(record)
            if token:
                self.issued.append(token)

    def _control(self, method: str, path: str, environ, start_response):
        if (method, path) == ("GET", "/_test/token-requests"):
            with self.lock:
                body = json.dumps({"requests": self.records, "issued": self.issued}).encode()
            status = "200 OK"
        elif (method, path) == ("POST", "/_test/hold"):
            length = int(environ.get("CONTENT_LENGTH") or 0)
            self.hold_seconds = json.loads(environ["wsgi.input"].read(length) or b"{}").get("ms", 0) / 1000
            body, status = json.dumps({"ms": round(self.hold_seconds * 1000)}).encode(), "200 OK"
        else:
            body, status = b'{"error": "not_found"}', "404 Not Found"
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
