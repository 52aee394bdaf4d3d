"""django-oauth-toolkit as the real authorization server of the OAuth tests (a single-file Django
project: settings, URLs, views and a middleware, configured at start).

Run by `idp_processes.DjangoIdP`, with the Python that has Django and django-oauth-toolkit:
    python3 idp_django_server.py --dir DIR --clients FILE [--port 0] [--access-token-seconds N]
                                 [--rotate-refresh-token 1|0] [--template-db FILE]
                                 [--device-interval N] [--secrets-file FILE]
It migrates a sqlite database in DIR (or copies --template-db, which it writes the first time),
creates the applications and users listed in the clients file (JSON, written by the fixture:
`{"applications": [{name, client_id, client_secret, client_type, grant, redirect_uris, oidc}],
"users": [{username, password, email}]}`), and serves on 127.0.0.1 with Django's threaded
development server. The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT
stops it.

OpenID Connect is on: an RSA signing key is generated at start, the issuer is
`http://127.0.0.1:<port>/o` (DOT's OIDC_ISS_ENDPOINT, set once the port is bound), ID tokens of
applications with `"oidc": true` are RS256 and carry `preferred_username`, `email` and `name`
with the `profile`/`email` scopes. PKCE is required (S256 only) and authorization responses
carry `iss` (RFC 9207, DOT's COMPLIANT_BCP_RFC9700_* gates). Every issued authorization code,
device code and ID token, and every state, nonce and PKCE verifier a client sent, is appended to
--secrets-file (JSON lines, for the tests' leak scan: the database keeps none of them).

URLs:
    /o/token/  /o/revoke_token/  /o/introspect/   django-oauth-toolkit (`oauth2_provider.urls`)
    /o/authorize/          the authorization endpoint: Django's login form first, then DOT's consent
    /o/device-authorization/  /o/device/  the device grant (RFC 8628): codes, then the page where a
                          person enters the user code (and confirms at /o/device-confirm/...)
    /o/.well-known/openid-configuration  /o/.well-known/jwks.json   OIDC discovery and keys
    /.well-known/oauth-authorization-server/o   RFC 8414 metadata (the path form, at the root)
    /accounts/login/      Django's login view (a minimal template)
    GET  /api/whoami      a protected resource: 401 + `WWW-Authenticate: Bearer error="invalid_token"`
                          unless the request carries an access token DOT accepts (checked by DOT's
                          own OAuthLibCore); then 200 JSON {application, client_id, scope, user,
                          token_sha256, expires, method, path}
    GET  /_test/token-requests   JSON {"requests": [...], "authorizations": [...],
                          "device_authorizations": [...], "revocations": [...]}: what each endpoint
                          was asked and answered (idp_django_recorder.py); never a secret, code or token, only
                          SHA-256 fingerprints
    POST /_test/hold      JSON {"ms": N}: every later token request waits N ms before DOT handles it
    POST /_test/redirect-uris  JSON {"client_id", "redirect_uris": [...]}: the application's
                          registered redirect URIs (a relay's callback is known only once it runs)
    POST /_test/client-secret  JSON {"client_id", "client_secret"}: the application's secret is
                          replaced (stored hashed, as at creation): a rotation at the IdP
    POST /_test/approve-device  JSON {"user_code", "username", "action": "accept" | "deny"}: a
                          scripted person enters the user code and accepts or denies, through DOT's
                          own DeviceUserCodeView and DeviceConfirmView (Django's test client, logged
                          in as `username`); answers {"status": the device grant's status}

The access log names method, path (never the query, which may carry a token) and status.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import secrets
import shutil
import signal
import sys
import threading
from pathlib import Path

from idp_django_recorder import STATE, hold, sha256, token_requests

SCOPES = {"orders.read": "Read orders", "orders.write": "Write orders"}
# OpenID Connect's scopes; not among the defaults, so a grant that does not ask gets what it did.
OIDC_SCOPES = {"openid": "OpenID Connect", "profile": "Your name and user name", "email": "Your e-mail address"}
LOGIN_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Log in</title></head>
<body><h1>Log in</h1>
<form method="post" id="login-form">{% csrf_token %}{{ form.as_p }}
<input type="hidden" name="next" value="{{ next }}"><button type="submit" id="login">Log in</button></form>
</body></html>"""


def control(view):
    """A /_test/ view: POST with a JSON body, exempt from CSRF (the tests are its only callers)."""
    from django.http import HttpResponseNotAllowed
    from django.views.decorators.csrf import csrf_exempt

    @csrf_exempt
    def wrapped(request):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        return view(request, json.loads(request.body or b"{}"))
    return wrapped


def redirect_uris(request, payload: dict):
    from django.http import JsonResponse
    from oauth2_provider.models import get_application_model
    updated = get_application_model().objects.filter(client_id=payload["client_id"]).update(
        redirect_uris=" ".join(payload["redirect_uris"]))
    if not updated:
        return JsonResponse({"error": "no such client"}, status=404)
    return JsonResponse({"redirect_uris": payload["redirect_uris"]})


def client_secret(request, payload: dict):
    """The application's secret replaced, as an administrator rotating it would (DOT hashes it on
    save, as it did the first one)."""
    from django.http import JsonResponse
    from oauth2_provider.models import get_application_model
    application = get_application_model().objects.filter(client_id=payload["client_id"]).first()
    if application is None:
        return JsonResponse({"error": "no such client"}, status=404)
    application.client_secret = payload["client_secret"]
    application.save()
    return JsonResponse({"client_id": application.client_id})


def approve_device(request, payload: dict):
    """A person at DOT's device pages: enters the user code, then accepts or denies. Driven through
    DOT's own views with Django's test client (no network, the same code a browser would reach)."""
    from django.contrib.auth import get_user_model
    from django.http import JsonResponse
    from django.test import Client
    from oauth2_provider.models import get_device_grant_model
    action = payload.get("action", "accept")
    user = get_user_model().objects.get(username=payload["username"])
    person = Client()
    person.force_login(user)
    entered = person.post("/o/device/", {"user_code": payload["user_code"]})
    if entered.status_code != 302:
        # The form's errors as DOT's page shows them ("Incorrect user code", "Expired user code").
        errors = re.findall(r"<li>([^<]*)</li>", entered.content.decode("utf-8", "replace"))
        return JsonResponse({"error": "the user code was not accepted", "form_errors": errors}, status=400)
    confirmed = person.post(entered["Location"], {"action": action})
    if confirmed.status_code != 302:
        return JsonResponse({"error": f"the confirmation answered HTTP {confirmed.status_code}"}, status=400)
    grant = get_device_grant_model().objects.get(user_code=payload["user_code"])
    return JsonResponse({"status": grant.status})


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
    from django.contrib.auth.views import LoginView
    from oauth2_provider import urls as dot_urls
    return [
        path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
        # RFC 8414 §3.1 puts the document of issuer .../o at the root, the issuer's path appended.
        path("", include((dot_urls.metadata_urlpatterns, "metadata"), namespace="metadata")),
        path("accounts/login/", LoginView.as_view(template_name="registration/login.html")),
        path("api/whoami", whoami),
        path("_test/token-requests", token_requests),
        path("_test/hold", control(hold)),
        path("_test/redirect-uris", control(redirect_uris)),
        path("_test/client-secret", control(client_secret)),
        path("_test/approve-device", control(approve_device)),
    ]


# ---------------------------------------------------------------------------------------------
# Set-up.

def rsa_private_key_pem() -> str:
    """A fresh RSA key for ID token signatures (DOT's OIDC_RSA_PRIVATE_KEY), one per server."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


# DOT's request validator, with two additions (set in main, once Django is set up: the class
# derives from DOT's, which needs the settings).
ServerValidator = None


def _server_validator_class():
    from oauth2_provider.models import get_device_grant_model
    from oauth2_provider.oauth2_validators import OAuth2Validator
    from oauthlib.oauth2.rfc8628.grant_types.device_code import DeviceCodeGrant

    class FixtureValidator(OAuth2Validator):
        def get_additional_claims(self, request):
            """The person's claims; DOT puts each in ID tokens and userinfo only when its scope
            (`oidc_claim_scope`: profile, email) was granted."""
            user = request.user
            return {"preferred_username": user.get_username(), "email": user.email,
                    "name": f"{user.first_name} {user.last_name}".strip() or user.get_username()}

        def validate_device_code(self, client_id, code, request, *args, **kwargs):
            """oauthlib 4 asks the validator for a device code's status before issuing a token;
            DOT 3.4.1 answers pending, denied and expired codes in its own view but lacks this
            method, so an approved code ended in a 500. The status comes from DOT's device grant,
            and the token is the approving person's, with the scope DOT stored (as DOT's own
            pre-token hook `set_oauthlib_user_to_device_request_user` does)."""
            model = get_device_grant_model()
            device = model.objects.filter(device_code=code, client_id=client_id).first()
            if device is None:
                return None
            if device.status == model.AUTHORIZED:
                request.user = device.user
                request.scopes = device.scope.split() if device.scope else []
            return {model.AUTHORIZED: DeviceCodeGrant.DEVICE_CODE_AUTHORIZED,
                    model.AUTHORIZATION_PENDING: DeviceCodeGrant.DEVICE_CODE_PENDING,
                    model.DENIED: DeviceCodeGrant.DEVICE_CODE_DENIED,
                    model.EXPIRED: DeviceCodeGrant.DEVICE_CODE_EXPIRED}.get(device.status)
    return FixtureValidator


def tolerate_scope_in_device_answers() -> None:
    """oauthlib 4 adds `scope` to a device authorization answer (RFC 8628 §3.2 has no such
    member), and DOT 3.4.1 builds its DeviceCodeResponse dataclass from that answer, which
    refuses the unknown member: every device authorization would end in a 500. The answer sent
    is unchanged; only DOT's record of it drops `scope` (DOT stores the scope it resolved
    itself)."""
    from dataclasses import fields
    from oauth2_provider.models import DeviceCodeResponse
    from oauth2_provider.views import device
    known = {field.name for field in fields(DeviceCodeResponse)}

    def record(**answer):
        return DeviceCodeResponse(**{name: value for name, value in answer.items() if name in known})
    device.DeviceCodeResponse = record


def configure(args, db: Path) -> None:
    from django.conf import settings
    module = __name__
    settings.configure(
        DEBUG=False,
        SECRET_KEY=secrets.token_urlsafe(32),
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=module,
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "oauth2_provider"],
        # Sessions (the login) live in signed cookies: no table, so the migrated template serves.
        MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
                    "django.contrib.auth.middleware.AuthenticationMiddleware", "idp_django_recorder.Recorder"],
        SESSION_ENGINE="django.contrib.sessions.backends.signed_cookies",
        LOGIN_URL="/accounts/login/",
        STATIC_URL="/static/",
        TEMPLATES=[{
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "context_processors": ["django.template.context_processors.request",
                                       "django.contrib.auth.context_processors.auth"],
                "loaders": [("django.template.loaders.locmem.Loader", {"registration/login.html": LOGIN_TEMPLATE}),
                            "django.template.loaders.app_directories.Loader"],
            },
        }],
        # IMMEDIATE: a transaction takes the write lock when it begins. A deferred one that reads
        # first and then writes (a refresh, a revocation) fails at once with "database is locked"
        # when another thread wrote meanwhile: SQLite cannot wait there without a deadlock.
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(db),
                               "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"}}},
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        USE_TZ=True,
        # Client secrets and passwords are hashed with this too; the slow default (PBKDF2) would
        # make every token request cost ~0.3 s, which tokens living 2 s cannot afford.
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        OAUTH2_PROVIDER={
            "ACCESS_TOKEN_EXPIRE_SECONDS": args.access_token_seconds,
            "ROTATE_REFRESH_TOKEN": args.rotate_refresh_token,
            "SCOPES": {**SCOPES, **OIDC_SCOPES},
            "DEFAULT_SCOPES": list(SCOPES),
            "OIDC_ENABLED": True,
            "OIDC_RSA_PRIVATE_KEY": rsa_private_key_pem(),
            "OAUTH2_VALIDATOR_CLASS": f"{module}.ServerValidator",
            "PKCE_REQUIRED": True,
            "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
            "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
            "DEVICE_FLOW_INTERVAL": args.device_interval,
            # OIDC_ISS_ENDPOINT and the device verification URIs name the port: set in `serve`.
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
        users[user["username"]] = get_user_model().objects.create_user(user["username"], password=user["password"],
                                                                       email=user.get("email", ""))
    Application = get_application_model()
    for app in spec.get("applications", []):
        Application.objects.create(
            name=app["name"], client_id=app["client_id"], client_secret=app.get("client_secret") or "",
            client_type=app["client_type"], authorization_grant_type=app["grant"],
            hash_client_secret=True, user=users.get(app.get("owner")), redirect_uris=" ".join(app.get("redirect_uris", [])),
            algorithm="RS256" if app.get("oidc") else "",
        )


def name_the_port(host: str, port: int) -> None:
    """Settings that hold this server's own URL, known once the port is bound: the issuer (so
    discovery, ID tokens and `iss` on authorization responses all say the same) and the device
    verification URIs."""
    from django.conf import settings
    from oauth2_provider.settings import oauth2_settings
    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    settings.OAUTH2_PROVIDER.update({
        "OIDC_ISS_ENDPOINT": f"{base}/o",
        "OAUTH_DEVICE_VERIFICATION_URI": f"{base}/o/device/",
        "OAUTH_DEVICE_VERIFICATION_URI_COMPLETE": f"{base}/o/device/?user_code={{user_code}}",
    })
    oauth2_settings.reload()


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
    name_the_port(host, httpd.server_address[1])
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
    parser.add_argument("--device-interval", type=int, default=5, help="seconds between device polls (RFC 8628 interval)")
    parser.add_argument("--secrets-file", type=Path, help="where issued codes and ID tokens are noted for the leak scan")
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "::1"):
        parser.error("only loopback addresses (127.0.0.1, ::1)")
    args.rotate_refresh_token = bool(args.rotate_refresh_token)
    db = args.dir / "idp.sqlite3"
    configure(args, db)
    STATE.secrets_file = args.secrets_file
    import django
    django.setup()
    global urlpatterns, ServerValidator
    ServerValidator = _server_validator_class()
    tolerate_scope_in_device_answers()
    urlpatterns = _urls()
    prepare_database(db, args.template_db)
    create_clients(args.clients)
    serve(args.host, args.port)


if __name__ == "__main__":
    logging.captureWarnings(True)
    main()
