"""Fixtures of the forward-proxy tests (issue 26), on top of ../conftest.py (start_relay, upstream,
register_log, ...) and ../oauth's IdP fixtures (start_django_idp, django_idp, stub_idp,
sensitive, and the autouse scan of every relay log for secrets and issued tokens).

- `forward_pki` (session): forward_pki.ForwardPKI: the API's CA and api.test leaf, an unrelated
  CA and its other.test leaf.
- `start_site(leaf, ca)`: a real TLS server (Debian's nginx, ../tls/tls_nginx.py) on a free
  loopback port presenting `leaf`, answering every path with JSON of what it received (request
  line, Host, Authorization, SNI, ALPN, ...).
- `api_site`: that server for api.test (the "API" behind the relay); `other_site`: for
  other.test (a host no route names, reached through the tunnel), also on ::1.
- `nss_home`: a throw-away NSS database (certutil) in a HOME of its own; `nss_chromium(...)`:
  Chromium using it (nss_browser.py), quit after the test.
- `ca_directory`: where the test's relay keeps its CA (tmp_path/forward-ca, created by the relay).
- `start_api_relay(**options)` / `api_relay`: django-oauth-toolkit, the api.test site, and a
  relay (`oauth-relay ca` run first) whose one route `match.host: api.test` goes to that site
  with the token of DOT's `orders-cc` client (client_credentials); a forward_relay.ForwardRelay.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for extra in (HERE.parent / "oauth", HERE.parent / "tls", HERE):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))


def _load_oauth_fixtures():
    """../oauth/conftest.py under a module name of its own (pytest loads it as `conftest` for
    the oauth directory only), so this directory uses the same IdP fixtures."""
    spec = importlib.util.spec_from_file_location("oauth_fixtures_for_forward", HERE.parent / "oauth" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_oauth = _load_oauth_fixtures()
# The IdP fixtures, the leak scan (autouse) and the hook that puts IdP logs in failure reports.
dot_template_db = _oauth.dot_template_db
start_django_idp = _oauth.start_django_idp
django_idp = _oauth.django_idp
start_stub_idp = _oauth.start_stub_idp
stub_idp = _oauth.stub_idp
sensitive = _oauth.sensitive
no_secret_in_relay_logs = _oauth.no_secret_in_relay_logs
pytest_runtest_makereport = _oauth.pytest_runtest_makereport

from forward_pki import API_HOST, ForwardPKI  # noqa: E402
from forward_relay import ForwardRelay, api_route, start_forward_relay  # noqa: E402
from nss_browser import NSSDatabase, start_nss_chromium  # noqa: E402
from tls_nginx import NginxTLS  # noqa: E402
from tls_pki import CertKey  # noqa: E402


class OneSite:
    """The PKI interface NginxTLS reads (`leaf(kind)`, `ca`), for one leaf of any CA."""

    def __init__(self, leaf: CertKey, ca: CertKey):
        self._leaf = leaf
        self.ca = ca

    def leaf(self, kind: str) -> CertKey:
        return self._leaf


@pytest.fixture(scope="session")
def forward_pki(tmp_path_factory) -> ForwardPKI:
    return ForwardPKI(tmp_path_factory.mktemp("forward-pki"))


@pytest.fixture
def start_site(tmp_path, register_log, start_upstream):
    """start_site(leaf, ca, ipv6=False) -> NginxTLS. (Depends on start_upstream so that the sites
    stop after the relays that connect to them, which stop before the upstreams.)"""
    started: list[NginxTLS] = []

    def start(leaf: CertKey, ca: CertKey, ipv6: bool = False) -> NginxTLS:
        site = NginxTLS(tmp_path / f"site-{len(started)}", OneSite(leaf, ca), verify_client="off", ipv6=ipv6)
        site.name = f"nginx presenting {leaf.cert.name}"
        started.append(site)
        register_log(site)
        return site.start()

    yield start
    for site in started:
        site.kill()


@pytest.fixture
def api_site(start_site, forward_pki) -> NginxTLS:
    return start_site(forward_pki.api, forward_pki.api_ca)


@pytest.fixture
def other_site(start_site, forward_pki) -> NginxTLS:
    return start_site(forward_pki.other, forward_pki.other_ca, ipv6=None)


@pytest.fixture
def ca_directory(tmp_path) -> Path:
    return tmp_path / "forward-ca"


@pytest.fixture
def nss_home(tmp_path) -> NSSDatabase:
    return NSSDatabase(tmp_path / "browser-home")


@pytest.fixture
def nss_chromium(tmp_path, nss_home):
    """nss_chromium(proxy=None, resolve=None) -> a driver whose HOME is nss_home's; quit after
    the test."""
    drivers = []

    def start(proxy: str | None = None, resolve: dict[str, str] | None = None):
        index = len(drivers)
        driver = start_nss_chromium(nss_home, tmp_path / f"chromium-profile-{index}",
                                    tmp_path / f"chromedriver-{index}.log", proxy=proxy, resolve=resolve)
        drivers.append(driver)
        return driver

    yield start
    for i, driver in enumerate(drivers):
        driver.quit()
        shutil.rmtree(tmp_path / f"chromium-profile-{i}", ignore_errors=True)


@pytest.fixture
def start_api_relay(start_relay, django_idp, api_site, forward_pki, ca_directory):
    """start_api_relay(connect_ports=(443,), forward_options=None, **route_options) -> ForwardRelay."""

    def start(connect_ports=(443,), forward_options: dict | None = None, **route_options) -> ForwardRelay:
        route = api_route(API_HOST, api_site.url(), forward_pki.api_ca.cert, identity="orders", name="api",
                          **route_options)
        return start_forward_relay(start_relay, [route], ca_directory, connect_ports, forward_options,
                                   identities={"orders": django_idp.identity("orders-cc")})

    return start


@pytest.fixture
def api_relay(start_api_relay) -> ForwardRelay:
    return start_api_relay()
