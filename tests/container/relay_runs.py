"""How the container tests run the image and talk to it: the `docker run` line's environment, the secret
file as compose leaves it, the listeners on free ports of the host's network, and the checks on
what the upstream received."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deadlines import wait_until
from deployment_manifests import IMAGE_GID, IMAGE_UID
from http_client import RawConnection
from podman import HARDENED
from processes import LOOPBACK, can_connect, free_port

CLIENT = "orders-cc"
IDENTITY = "upstream"  # the identity's name in Docker/config.json
SECRET_NAME = "oauth-client-secret"  # the default config's /run/secrets file
START_SECONDS = 30
# The default shutdownGraceSeconds (Docker/config.json sets none); compose's stop_grace_period and
# the Pod's terminationGracePeriodSeconds (35) leave the relay that long before SIGKILL.
SHUTDOWN_GRACE_SECONDS = 30
ENGINE_GRACE_SECONDS = 35


class Ports:
    def __init__(self):
        self.proxy = free_port()
        self.admin = free_port()

    def env(self) -> dict[str, str]:
        return {"OAUTH_RELAY_LISTEN": f"{LOOPBACK}:{self.proxy}", "OAUTH_RELAY_ADMIN": f"{LOOPBACK}:{self.admin}",
                "OAUTH_RELAY_HEALTHCHECK_ADDR": f"{LOOPBACK}:{self.admin}"}


def env_options(env: dict[str, str]) -> list[str]:
    return [option for name, value in env.items() for option in ("-e", f"{name}={value}")]


def documented_env(idp, upstream) -> dict[str, str]:
    """The environment of the `docker run` line in Docker/Dockerfile's header (and the README's)."""
    return {"OAUTH_TOKEN_URL": idp.token_url, "OAUTH_CLIENT_ID": idp.clients[CLIENT].client_id,
            "UPSTREAM_URL": upstream.url}


def secret_file(directory: Path, value: str) -> Path:
    """The client secret as compose's `file:` secret leaves it: a file the image's user owns, 0400."""
    path = directory / SECRET_NAME
    path.write_text(value + "\n")
    os.chown(path, IMAGE_UID, IMAGE_GID)
    path.chmod(0o400)
    return path


def run_relay(container, ports: Ports, env: dict[str, str], *mounts: str):
    container.run("--network", "host", *HARDENED, *env_options({**env, **ports.env()}), *mounts)
    wait_serving(container, ports)
    return container


def wait_serving(container, ports: Ports) -> None:
    def serving():
        if not container.running():
            pytest.fail(f"the container stopped: {container.state()}\n{container.log()[-5000:]}")
        return can_connect(LOOPBACK, ports.proxy) and can_connect(LOOPBACK, ports.admin)
    wait_until(serving, START_SECONDS, "the relay in the container to listen")


def get(port: int, target: str = "/", timeout: float | None = None):
    with RawConnection(LOOPBACK, port) as conn:
        return conn.request("GET", target, headers=[("Connection", "close")], host=f"{LOOPBACK}:{port}",
                            timeout=timeout)


def bearer_of(resp) -> str:
    """The token the echo upstream received."""
    assert resp.status == 200, f"{resp.status} {resp.body[:300]!r}"
    values = resp.echo_headers("Authorization")
    assert len(values) == 1 and values[0].startswith("Bearer "), "the upstream got no bearer token"
    return values[0].removeprefix("Bearer ")


def assert_accepted_by_idp(idp, token: str) -> None:
    answer = idp.whoami(token)
    assert answer.status == 200 and answer.json()["client_id"] == idp.clients[CLIENT].client_id, \
        f"django-oauth-toolkit does not accept the token the upstream got: {answer.status}"


def proc_status(container) -> dict[str, str]:
    """/proc/1/status of the container (the relay is PID 1: the image's ENTRYPOINT in exec form)."""
    result = container.exec("cat", "/proc/1/status")
    assert result.returncode == 0, result.stderr
    return dict(line.split(":\t", 1) for line in result.stdout.splitlines() if ":\t" in line)


