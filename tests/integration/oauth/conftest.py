"""Fixtures of the OAuth tests (on top of ../conftest.py: start_relay, upstream, closed_port, ...).

- `django_idp` / `start_django_idp(access_token_seconds=3600, rotate_refresh_token=True)`:
  django-oauth-toolkit on a free loopback port, with its applications and user (credentials
  generated per test, see idp_processes.DjangoIdP). The database is migrated once per session
  into a template and copied per server.
- `stub_idp` / `start_stub_idp()`: the scripted token endpoint (idp_stub.py).
- `start_glewlwyd(access_token_seconds=3600, dpop_nonce_counter=None, external_url=None, registration=None)`: Glewlwyd
  (idp_glewlwyd.py), the real server for private_key_jwt, client_secret_jwt and DPoP; with a
  `Registration`, for clients that register themselves (RFC 7591) and people who log in.
- `start_idpyoidc(users=("alice", "bob"), access_token_seconds=3600, exchange_audiences=...,
  exchange_resources=..., exchange_scopes=...)`: idpyoidc (idp_idpyoidc.py), the real RFC 8693
  token exchange server: callers' tokens by `caller_token(user)`, exchanges counted by
  `exchange_count()`.
- `dpop_rs`: the DPoP resource server (dpop_resource_server.py), an upstream that checks proofs.
- `protected_resource`: the RFC 9728 resource server (resource_server.py), the upstream of a
  zero-configuration identity; its `configure(idp, metadata=...)` names the authorization server.
- `sensitive`: the values no relay log may contain; every IdP registers its secrets and issued
  tokens there, and tests add their own. After every test here (autouse), the stderr of every
  relay it started, and the outputs added to `sensitive`, are searched for them.
A failing test's report carries the IdP logs (the relay and upstream logs come from ../conftest.py).
"""

from __future__ import annotations

import signal

import pytest

from idp_glewlwyd import GlewlwydIdP, Registration
from idp_idpyoidc import IdpyoidcIdP
from idp_processes import DjangoIdP, DPoPResourceServer, ProtectedResource, StubIdP
from idp_relay import SensitiveValues, find_leaks, relay_logs
from redis_server import RedisServer

_IDPS = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        for proc in item.stash.get(_IDPS, []):
            text = proc.log()
            if len(text) > 30_000:
                text = "[...]\n" + text[-30_000:]
            report.sections.append((f"{proc.name} log ({proc.log_path})", text or "(empty)"))
    return report


@pytest.fixture
def sensitive() -> SensitiveValues:
    return SensitiveValues()


@pytest.fixture(autouse=True)
def no_secret_in_relay_logs(tmp_path, sensitive):
    """Set up before (so torn down after) the relays and IdPs of the test: the logs are complete."""
    yield
    leaks = find_leaks({**relay_logs(tmp_path), **sensitive.outputs}, sensitive.collect())
    if leaks:
        pytest.fail("secrets or tokens in the relay's output:\n  " + "\n  ".join(leaks), pytrace=False)


@pytest.fixture(scope="session")
def dot_template_db(tmp_path_factory):
    """Where the first django-oauth-toolkit of the session leaves its migrated database."""
    return tmp_path_factory.mktemp("dot-template") / "idp-template.sqlite3"


@pytest.fixture
def start_django_idp(request, tmp_path, sensitive, dot_template_db):
    started: list[DjangoIdP] = []

    def start(access_token_seconds: int = 3600, rotate_refresh_token: bool = True) -> DjangoIdP:
        workdir = tmp_path / f"django-idp-{len(started)}"
        workdir.mkdir()
        idp = DjangoIdP(workdir, access_token_seconds, rotate_refresh_token, dot_template_db)
        started.append(idp)
        request.node.stash.setdefault(_IDPS, []).append(idp)
        sensitive.add_source(idp.sensitive_values)
        return idp.start()

    yield start
    for idp in started:
        idp.kill()


@pytest.fixture
def django_idp(start_django_idp) -> DjangoIdP:
    return start_django_idp()


@pytest.fixture
def start_stub_idp(request, tmp_path, sensitive):
    started: list[StubIdP] = []
    stopped: dict[int, dict] = {}

    def start() -> StubIdP:
        idp = StubIdP(tmp_path / f"stub-idp-{len(started)}.log")
        started.append(idp)
        request.node.stash.setdefault(_IDPS, []).append(idp)
        index = len(started) - 1
        # Its records are read while it runs; after the kill, the last read stands.
        sensitive.add_source(lambda: stopped.get(index) if index in stopped else idp.sensitive_values())
        return idp.start()

    yield start
    for i, idp in enumerate(started):
        if idp.running():
            try:
                stopped[i] = idp.sensitive_values()
            except (OSError, AssertionError):
                stopped[i] = {}
        else:
            stopped[i] = {}
        idp.kill()


@pytest.fixture
def stub_idp(start_stub_idp) -> StubIdP:
    return start_stub_idp()


@pytest.fixture
def start_glewlwyd(request, tmp_path, sensitive):
    started: list[GlewlwydIdP] = []

    def start(access_token_seconds: int = 3600, dpop_nonce_counter: int | None = None,
              external_url: str | None = None, registration: Registration | None = None) -> GlewlwydIdP:
        workdir = tmp_path / f"glewlwyd-{len(started)}"
        workdir.mkdir()
        idp = GlewlwydIdP(workdir, access_token_seconds, dpop_nonce_counter, external_url, registration)
        started.append(idp)
        request.node.stash.setdefault(_IDPS, []).append(idp)
        if registration is not None:
            sensitive.add_source(idp.sensitive_values)
        return idp.start()

    yield start
    for idp in started:
        idp.kill()


@pytest.fixture
def start_idpyoidc(request, tmp_path, sensitive):
    started: list[IdpyoidcIdP] = []

    def start(**options) -> IdpyoidcIdP:
        workdir = tmp_path / f"idpyoidc-{len(started)}"
        workdir.mkdir()
        idp = IdpyoidcIdP(workdir, **options)
        started.append(idp)
        request.node.stash.setdefault(_IDPS, []).append(idp)
        sensitive.add_source(idp.sensitive_values)
        return idp.start()

    yield start
    for idp in started:
        if idp.running():
            try:
                idp.sensitive_values()  # the issued tokens, read while it still answers
            except (OSError, AssertionError):
                pass  # the tokens read at the last ask stand
        idp.kill()


@pytest.fixture
def redis(tmp_path):
    """A redis-server of the test's own, resumed before it is killed in case the test stopped it
    (SIGSTOP: a store that hangs)."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = RedisServer(workdir).start()
    yield server
    server.send_signal(signal.SIGCONT)
    server.kill()


@pytest.fixture
def dpop_rs(request, tmp_path):
    server = DPoPResourceServer(tmp_path / "dpop-rs.log")
    request.node.stash.setdefault(_IDPS, []).append(server)
    yield server.start()
    server.kill()


@pytest.fixture
def protected_resource(request, tmp_path, sensitive):
    server = ProtectedResource(tmp_path / "protected-resource.log")
    request.node.stash.setdefault(_IDPS, []).append(server)
    received: dict[str, str] = {}

    def tokens() -> dict[str, str]:
        # The tokens it received, read while it runs; after the kill, the last read stands.
        if server.running():
            received.update(server.sensitive_values())
        return received

    sensitive.add_source(tokens)
    yield server.start()
    tokens()
    server.kill()
