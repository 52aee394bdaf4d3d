"""django-oauth-toolkit as the real authorization server of the OAuth tests (a single-file Django
project: settings, URLs, views and a middleware, configured at start).

Run by `idp_processes.DjangoIdP`, with the Python that has Django and django-oauth-toolkit:
    python3 idp_django_server.py --dir DIR --clients FILE [--port 0] [--access-token-seconds N]
                                 [--rotate-refresh-token 1|0] [--template-db FILE]
It migrates a sqlite database in DIR (or copies --template-db, which it writes the first time),
creates the applications and users listed in the clients file (JSON, written by the fixture:
`{"applications": [{name, client_id, client_secret, client_type, grant}], "users": [{username,
password}]}`), and serves on 127.0.0.1 with Django's threaded development server. The first line
on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it.

URLs:
    /o/token/  /o/revoke_token/  /o/introspect/   django-oauth-toolkit (`oauth2_provider.urls`)
    GET  /api/whoami      a protected resource: 401 + `WWW-Authenticate: Bearer error="invalid_token"`
                          unless the request carries an access token DOT accepts (checked by DOT's
                          own OAuthLibCore); then 200 JSON {application, client_id, scope, user,
                          token_sha256, expires, method, path}
    GET  /_test/token-requests   what the token endpoint was asked and answered, one record per
                          POST /o/token/ (see TokenRequestRecorder); never a secret or a token,
                          only SHA-256 fingerprints of tokens
    POST /_test/hold      JSON {"ms": N}: every later token request waits N ms before DOT handles it

The access log names method, path (never the query, which may carry a token) and status.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import os
import secrets
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qsl, unquote_plus

SCOPES = {"orders.read": "Read orders", "orders.write": "Write orders"}
TOKEN_PATH = "/o/token/"


def sha256(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest() if text else None


# ---------------------------------------------------------------------------------------------
# What the tests observe and control.

class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[dict] = []
        self.hold_seconds = 0.0


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


class TokenRequestRecorder:
    """Django middleware: holds token requests when told to, and records each POST to the token
    endpoint before its answer leaves (so a test that has the relay's answer sees the record)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path != TOKEN_PATH:
            return self.get_response(request)
        arrived = time.time()
        hold = STATE.hold_seconds
        if hold:
            time.sleep(hold)
        pairs = parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True)
        form = dict(pairs)
        client_auth, client_id = _client_of(request, form)
        response = self.get_response(request)
        try:
            answer = json.loads(response.content)
        except ValueError:
            answer = {}
        record = {
            "time": arrived, "held_seconds": hold, "answered": time.time(),
            "method": request.method, "content_type": request.META.get("CONTENT_TYPE", ""),
            "form_keys": [k for k, _ in pairs],
            "grant_type": form.get("grant_type"), "client_auth": client_auth, "client_id": client_id,
            "scope": form.get("scope"), "username": form.get("username"),
            "refresh_token_sha256": sha256(form.get("refresh_token")),
            "status": response.status_code,
            "error": answer.get("error"), "error_description": answer.get("error_description"),
            "access_token_sha256": sha256(answer.get("access_token")),
            "issued_refresh_token_sha256": sha256(answer.get("refresh_token")),
            "expires_in": answer.get("expires_in"), "granted_scope": answer.get("scope"),
            "token_type": answer.get("token_type"),
        }
        with STATE.lock:
            record["n"] = len(STATE.records) + 1
            STATE.records.append(record)
        return response


def token_requests(request):
    from django.http import JsonResponse
    with STATE.lock:
        records = list(STATE.records)
    return JsonResponse({"requests": records})


def hold(request):
    from django.http import HttpResponseNotAllowed, JsonResponse
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    STATE.hold_seconds = max(0.0, float(json.loads(request.body or b"{}").get("ms", 0)) / 1000)
    return JsonResponse({"hold_ms": STATE.hold_seconds * 1000})


def whoami(request):
    """The resource server side: is the bearer token on this request one DOT accepts?"""
    from django.http import JsonResponse
    from oauth2_provider.oauth2_backends import get_oauthlib_core
    valid, r = get_oauthlib_core().verify_request(request, scopes=[])
    if not valid:
        response = JsonResponse({"error": "invalid_token"}, status=401)
        response["WWW-Authenticate"] = 'Bearer error="invalid_token"'
        return response
    token = r.access_token
    checksum = getattr(token, "token_checksum", None) or sha256(token.token)
    return JsonResponse({
        "application": token.application.name if token.application else None,
        "client_id": token.application.client_id if token.application else None,
        "scope": token.scope, "user": token.user.get_username() if token.user else None,
        "token_sha256": checksum, "expires": token.expires.isoformat(),
        "method": request.method, "path": request.path,
    })


urlpatterns: list = []


def _urls() -> list:
    from django.urls import include, path
    return [
        path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
        path("api/whoami", whoami),
        path("_test/token-requests", token_requests),
        path("_test/hold", hold),
    ]


# ---------------------------------------------------------------------------------------------
# Set-up.

def configure(args, db: Path) -> None:
    from django.conf import settings
    module = __name__
    settings.configure(
        DEBUG=False,
        SECRET_KEY=secrets.token_urlsafe(32),
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=module,
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "oauth2_provider"],
        MIDDLEWARE=[f"{module}.TokenRequestRecorder"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(db),
                               "OPTIONS": {"timeout": 20}}},
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        USE_TZ=True,
        # Client secrets and passwords are hashed with this too; the slow default (PBKDF2) would
        # make every token request cost ~0.3 s, which tokens living 2 s cannot afford.
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        OAUTH2_PROVIDER={
            "ACCESS_TOKEN_EXPIRE_SECONDS": args.access_token_seconds,
            "ROTATE_REFRESH_TOKEN": args.rotate_refresh_token,
            "SCOPES": SCOPES,
            "DEFAULT_SCOPES": list(SCOPES),
        },
        LOGGING={
            "version": 1,
            "disable_existing_loggers": False,
            "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"}},
            "loggers": {
                "django.server": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
                # oauthlib logs request bodies at DEBUG; DOT warns on every password grant.
                "oauthlib": {"handlers": ["stderr"], "level": "ERROR", "propagate": False},
                "oauth2_provider": {"handlers": ["stderr"], "level": "ERROR", "propagate": False},
                "django": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
            },
        },
    )


def prepare_database(db: Path, template: Path | None) -> None:
    from django.core.management import call_command
    if template is not None and template.exists():
        shutil.copyfile(template, db)
        return
    call_command("migrate", interactive=False, verbosity=0)
    if template is not None:
        partial = template.with_name(f"{template.name}.{os.getpid()}.tmp")
        shutil.copyfile(db, partial)
        os.replace(partial, template)


def create_clients(clients_file: Path) -> None:
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import get_application_model
    spec = json.loads(clients_file.read_text())
    users = {}
    for user in spec.get("users", []):
        users[user["username"]] = get_user_model().objects.create_user(user["username"], password=user["password"])
    Application = get_application_model()
    for app in spec.get("applications", []):
        Application.objects.create(
            name=app["name"], client_id=app["client_id"], client_secret=app.get("client_secret") or "",
            client_type=app["client_type"], authorization_grant_type=app["grant"],
            hash_client_secret=True, user=users.get(app.get("owner")), redirect_uris="",
        )


def serve(host: str, port: int) -> None:
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class Handler(WSGIRequestHandler):
        """Django's development request handler, with an access log that never shows a query."""

        def log_request(self, code="-", size="-"):
            path = (getattr(self, "path", "") or "").split("?", 1)[0]
            sys.stderr.write(f"{self.command or '-'} {path} {code}\n")

        def log_message(self, format, *args):
            sys.stderr.write(f"http: {format.split('%', 1)[0].strip()} ({self.command or '-'} "
                             f"{(getattr(self, 'path', '') or '').split('?', 1)[0]})\n")

    application = get_wsgi_application()
    httpd = ThreadedWSGIServer((host, port), Handler, ipv6=":" in host)
    httpd.set_app(application)
    print(f"LISTENING {host} {httpd.server_address[1]}", flush=True)

    def stop(*_):
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    httpd.serve_forever(poll_interval=0.1)
    httpd.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True, help="where the sqlite database goes")
    parser.add_argument("--clients", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--access-token-seconds", type=int, default=3600)
    parser.add_argument("--rotate-refresh-token", type=int, choices=(0, 1), default=1)
    parser.add_argument("--template-db", type=Path)
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "::1"):
        parser.error("only loopback addresses (127.0.0.1, ::1)")
    args.rotate_refresh_token = bool(args.rotate_refresh_token)
    db = args.dir / "idp.sqlite3"
    configure(args, db)
    import django
    django.setup()
    global urlpatterns
    urlpatterns = _urls()
    prepare_database(db, args.template_db)
    create_clients(args.clients)
    serve(args.host, args.port)


if __name__ == "__main__":
    logging.captureWarnings(True)
    main()
