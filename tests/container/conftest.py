"""Fixtures of the container tests (make test-container): the image built from Docker/Dockerfile,
run by podman against the same real servers as the integration tests, whose helpers these import
(../integration: echo upstream, processes, deadlines, deployment_manifests; ../integration/oauth:
django-oauth-toolkit).

- `image`: OAUTH_RELAY_IMAGE (make test-container builds it as localhost/oauth-relay:test).
- `start_container(prefix)`: a `podman.Container`, removed at teardown; its log joins a failing
  test's report.
- `upstream`, `django_idp`: the echo upstream and django-oauth-toolkit on the host's loopback.
- `sensitive`: after each test, no container log may hold a secret or a token the IdP issued.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "integration"), str(HERE.parent / "integration" / "oauth")]

from idp_processes import DjangoIdP  # noqa: E402
from idp_relay import SensitiveValues, find_leaks  # noqa: E402
from podman import Container, podman  # noqa: E402
from processes import EchoUpstream  # noqa: E402

IMAGE = os.environ.get("OAUTH_RELAY_IMAGE", "localhost/oauth-relay:test")
_LOGS = pytest.StashKey[list]()
# What the tests measured of the image (size, layers, libraries), printed after the run.
FIGURES: list[str] = []


def pytest_terminal_summary(terminalreporter):
    if FIGURES:
        terminalreporter.section("the image")
        for figure in FIGURES:
            terminalreporter.write_line(figure)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        for proc in item.stash.get(_LOGS, []):
            text = proc.log()
            report.sections.append((f"{proc.name} log", text[-30_000:] or "(empty)"))
    return report


@pytest.fixture(scope="session")
def image() -> str:
    if podman("image", "exists", IMAGE, check=False).returncode != 0:
        pytest.fail(f"no image {IMAGE}: make test-container builds it (or set OAUTH_RELAY_IMAGE)")
    return IMAGE


@pytest.fixture
def sensitive(request) -> SensitiveValues:
    values = SensitiveValues()
    yield values
    logs = {proc.name: proc.log() for proc in request.node.stash.get(_LOGS, [])}
    leaks = find_leaks(logs, values.collect())
    if leaks:
        pytest.fail("secrets or tokens in a container's output:\n  " + "\n  ".join(leaks), pytrace=False)


@pytest.fixture
def start_container(request, image, tmp_path, sensitive):
    """start_container(prefix, relay=True) -> Container (not yet run). Set up after `sensitive`, so torn down
    (removed) before its leak scan reads the last logs."""
    started: list[Container] = []

    def make(prefix: str, relay: bool = True) -> Container:
        """relay=False: a container that runs something else than the relay (a client whose output
        may hold what the upstream echoed, a token among it): neither in reports nor leak-scanned."""
        container = Container(image, prefix, tmp_path / f"{prefix}-{len(started)}.log")
        started.append(container)
        if relay:
            request.node.stash.setdefault(_LOGS, []).append(container)
        return container

    yield make
    # The last first: a container in another's network namespace must go before it.
    problems = []
    for container in reversed(started):
        try:
            container.remove()
        except AssertionError as e:
            problems.append(str(e))
    if problems:
        pytest.fail("\n".join(problems))


@pytest.fixture
def upstream(request, tmp_path) -> EchoUpstream:
    up = EchoUpstream(tmp_path / "upstream.log")
    request.node.stash.setdefault(_LOGS, []).append(up)
    yield up.start()
    up.kill()


@pytest.fixture(scope="session")
def dot_template_db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("dot-template") / "idp-template.sqlite3"


@pytest.fixture
def django_idp(request, tmp_path, sensitive, dot_template_db) -> DjangoIdP:
    workdir = tmp_path / "django-idp"
    workdir.mkdir()
    idp = DjangoIdP(workdir, template_db=dot_template_db)
    request.node.stash.setdefault(_LOGS, []).append(idp)
    sensitive.add_source(idp.sensitive_values)
    yield idp.start()
    idp.kill()
