"""Containers of the image under test, run with podman: each one named per test, its output kept
for the failing test's report, and removed (`podman rm -f`) at teardown whatever happened.

`HARDENED` are the run options Docker/kubernetes.yaml asks of the relay's container, in podman's
words: a read-only root file system with nothing writable added (podman's --read-only would
otherwise mount tmpfs on /tmp, /run and /var/tmp; Kubernetes' readOnlyRootFilesystem does not),
every capability dropped, no privilege escalation. The user is the image's own (no --user), as
`docker run` and compose leave it: the tests prove the image's USER is the uid the manifests ask.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from pathlib import Path

from deadlines import scaled

PODMAN = "podman"
COMMAND_SECONDS = 60
HARDENED = ["--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]


def podman(*args: str, timeout: float = COMMAND_SECONDS, check: bool = True) -> subprocess.CompletedProcess:
    """Runs `podman ARGS` (text output); with `check`, a non-zero exit fails with podman's stderr."""
    result = subprocess.run([PODMAN, *args], capture_output=True, text=True, timeout=scaled(timeout),
                            stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result


class Container:
    """One `podman run -d` of an image; `name` is unique per test run."""

    def __init__(self, image: str, prefix: str, log_path: Path):
        self.image = image
        self.name = f"oauth-relay-test-{prefix}-{secrets.token_hex(3)}"
        self.log_path = log_path
        self.started = False
        self.removed = False

    def run(self, *options: str, args: tuple[str, ...] = ()) -> "Container":
        """`podman run -d --name NAME OPTIONS IMAGE ARGS`."""
        self.started = True
        podman("run", "-d", "--name", self.name, *options, self.image, *args)
        return self

    def log(self) -> str:
        """stdout and stderr of the container so far (the relay logs to stderr)."""
        if not self.started:
            return ""
        if self.removed:
            return self.log_path.read_text()
        result = podman("logs", self.name, check=False)
        text = result.stdout + result.stderr
        self.log_path.write_text(text)
        return text

    def state(self) -> dict:
        """`.State` of podman inspect: Status (running, exited, ...), ExitCode, ..."""
        return json.loads(podman("inspect", "--format", "{{json .State}}", self.name).stdout)

    def running(self) -> bool:
        return self.state()["Status"] == "running"

    def kill(self, signal: str) -> None:
        podman("kill", "--signal", signal, self.name)

    def stop(self, grace_seconds: int) -> tuple[int, float]:
        """`podman stop --time GRACE`: SIGTERM (the image's STOPSIGNAL default), SIGKILL after
        GRACE seconds. Returns the exit code and how long the stop took."""
        began = time.monotonic()
        podman("stop", "--time", str(grace_seconds), self.name, timeout=grace_seconds + COMMAND_SECONDS)
        return self.state()["ExitCode"], time.monotonic() - began

    def healthcheck(self) -> subprocess.CompletedProcess:
        """`podman healthcheck run`: the image's HEALTHCHECK command, run in the container now."""
        return podman("healthcheck", "run", self.name, check=False)

    def exec(self, *argv: str, timeout: float = COMMAND_SECONDS) -> subprocess.CompletedProcess:
        return podman("exec", self.name, *argv, timeout=timeout, check=False)

    def remove(self) -> None:
        if self.started:
            self.log()
            podman("rm", "-f", "--time", "0", self.name)
            self.removed = True
