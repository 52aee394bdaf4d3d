"""Docker/compose.yaml's sidecar arrangement, with podman: the legacy service shares the relay's
network namespace (`network_mode: service:relay`), so it calls http://127.0.0.1:8180 and the relay,
listening on that loopback only, adds the token.

Here the relay joins a network namespace made for the test (`ip netns add`, loopback up), in
which django-oauth-toolkit and the echo upstream run too (`ip netns exec`): the relay keeps the
image's default addresses (127.0.0.1:8180, admin 0.0.0.0:9180) without meeting anything else on
the host. A second container joins the relay's namespace (`--network container:RELAY`, what
compose's network_mode does) and calls the relay with bash's /dev/tcp, as Docker/healthcheck does
(the image has no curl). The namespace is deleted at teardown whatever happened.
"""

from __future__ import annotations

import json
import secrets
import subprocess

import pytest

from conftest import _LOGS
from deadlines import scaled, wait_until
from deployment_manifests import PROXY_PORT, SECRETS_DIR
from idp_processes import DjangoIdP
from podman import HARDENED
from processes import EchoUpstream
from relay_runs import CLIENT, SECRET_NAME, documented_env, env_options, secret_file

LEGACY_CALL = f"""exec 3<>/dev/tcp/127.0.0.1/{PROXY_PORT} || exit 1
printf 'GET /legacy/orders HTTP/1.1\\r\\nHost: 127.0.0.1:{PROXY_PORT}\\r\\nConnection: close\\r\\n\\r\\n' >&3
cat <&3"""


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=scaled(10))


@pytest.fixture
def netns():
    name = f"oauth-relay-test-{secrets.token_hex(3)}"
    ip("netns", "add", name)
    try:
        ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=scaled(10))


@pytest.fixture
def namespaced(request, netns, tmp_path, sensitive, dot_template_db):
    """django-oauth-toolkit and the echo upstream, started in the namespace."""
    launcher = ("ip", "netns", "exec", netns)
    workdir = tmp_path / "django-idp"
    workdir.mkdir()
    idp = DjangoIdP(workdir, template_db=dot_template_db)
    idp.launcher = launcher
    upstream = EchoUpstream(tmp_path / "upstream.log", launcher=launcher)
    request.node.stash.setdefault(_LOGS, []).extend([idp, upstream])
    sensitive.add_source(idp.sensitive_values)
    try:
        yield idp.start(), upstream.start()
    finally:
        upstream.kill()
        idp.kill()


def test_a_container_in_the_relays_network_namespace_calls_127_0_0_1_8180_and_gets_the_token(
        netns, namespaced, start_container, tmp_path):
    # (Fixtures in this order: the containers are removed first, then the servers, then the namespace.)
    idp, upstream = namespaced
    secret = secret_file(tmp_path, idp.clients[CLIENT].client_secret)
    relay = start_container("sidecar-relay")
    relay.run("--network", f"ns:/run/netns/{netns}", *HARDENED, *env_options(documented_env(idp, upstream)),
              "-v", f"{secret}:{SECRETS_DIR}/{SECRET_NAME}:ro")

    def healthy():
        if not relay.running():
            pytest.fail(f"the relay stopped: {relay.state()}\n{relay.log()[-5000:]}")
        return relay.healthcheck().returncode == 0
    wait_until(healthy, 30, "the relay's HEALTHCHECK to pass (compose's depends_on: service_healthy)")

    legacy = start_container("sidecar-legacy", relay=False)
    legacy.run("--network", f"container:{relay.name}", *HARDENED, "--entrypoint", "bash", args=("-c", LEGACY_CALL))
    wait_until(lambda: not legacy.running(), 30, "the legacy container's call to finish")
    assert legacy.state()["ExitCode"] == 0, f"the legacy container's call failed: {legacy.state()}"

    # podman logs gives the output line by line, without the CRs.
    head, _, body = legacy.log().replace("\r\n", "\n").partition("\n\n")
    assert head.startswith("HTTP/1.1 200"), head
    answer = json.loads(body)
    assert answer["target"] == "/legacy/orders"
    authorization = [v for k, v in answer["headers"] if k.lower() == "authorization"]
    assert len(authorization) == 1 and authorization[0].startswith("Bearer ")
    token = authorization[0].removeprefix("Bearer ")
    assert token in idp.issued_tokens(), "the upstream got a token django-oauth-toolkit did not issue"

