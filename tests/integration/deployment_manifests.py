"""The relay's deployment files in Docker/ as the tests read them, shared by test_docker.py and
test_kubernetes_fleet.py: where the image keeps the config and the secrets, the config a
Kubernetes Pod mounts into the relay's container, the relay's ${NAME} expansion, and
`oauth-relay check` on a mounted config with its secrets provided."""

from __future__ import annotations

import json
import posixpath
import re
import subprocess
from pathlib import Path

import pytest

from deadlines import scaled
from processes import require_relay_bin

CONFIG_PATH = "/etc/oauth-relay/config.json"
# How tests/container runs the built image (make test-container), and so what a manifest may ask
# of the relay's container: the image's numeric user, a read-only root file system with no
# writable volume (the relay writes nothing), every capability dropped, no privilege escalation;
# the admin listener's port, where /healthz and /readyz answer.
IMAGE_UID = 10001
IMAGE_GID = 10001
ADMIN_PORT = 9180
PROXY_PORT = 8180
SECRETS_DIR = "/run/secrets"
# debian's default PATH, which a Dockerfile without ENV PATH keeps.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def secrets_referenced(config_text: str) -> set[str]:
    """The names of the /run/secrets files a config reads."""
    return set(re.findall(re.escape(SECRETS_DIR) + r"/([A-Za-z0-9._-]+)", config_text))


def check_config(tmp_path: Path, config_text: str, secrets: dict[str, str], env: dict[str, str]) -> None:
    """`oauth-relay check` on the config, with /run/secrets/NAME files made from `secrets` in a
    scratch directory (and the config's and environment's /run/secrets paths pointed there)."""
    missing = secrets_referenced(config_text + json.dumps(env)) - set(secrets)
    assert not missing, f"the config reads {sorted(SECRETS_DIR + '/' + m for m in missing)}, which no secret provides"
    root = tmp_path / "secrets-root"
    (root / SECRETS_DIR.lstrip("/")).mkdir(parents=True)
    for name, value in secrets.items():
        (root / SECRETS_DIR.lstrip("/") / name).write_text(value)
    redirect = lambda s: s.replace(SECRETS_DIR + "/", str(root) + SECRETS_DIR + "/")
    path = tmp_path / "config.json"
    path.write_text(redirect(config_text))
    result = subprocess.run([str(require_relay_bin()), "check", "--config", str(path)], capture_output=True, text=True,
                            env={"PATH": DEFAULT_PATH, **{k: redirect(v) for k, v in env.items()}},
                            timeout=scaled(15))
    assert result.returncode == 0, f"oauth-relay check rejects the mounted config:\n{result.stdout}{result.stderr}"


def expand_env(value: str, env: dict[str, str]) -> str:
    """The relay's ${NAME} / ${NAME:-default} / $${ expansion, for reading a config's addresses."""
    def sub(m):
        if m.group(0) == "$${":
            return "${"
        name, default = m.group(1), m.group(3)
        if name in env:
            return env[name]
        assert default is not None, f"${{{name}}} is unset"
        return default
    return re.sub(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", sub, value)


def relay_container(pod) -> tuple[dict, bool]:
    """The Pod's one oauth-relay container, and whether it is an init container (a sidecar: it
    must then restart always)."""
    spec = pod["spec"]
    found = [(c, True) for c in spec.get("initContainers", []) if "oauth-relay" in c["image"]] + \
            [(c, False) for c in spec.get("containers", []) if "oauth-relay" in c["image"]]
    assert len(found) == 1, "exactly one oauth-relay container expected"
    container, is_init = found[0]
    if is_init:
        assert container.get("restartPolicy") == "Always", \
            "the relay is an init container without restartPolicy: Always: it would have to exit before the app starts"
    return container, is_init


def k8s_config(k8s, pod, container) -> tuple[str, dict]:
    """The config text at CONFIG_PATH in the relay container (from a ConfigMap volume)."""
    volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        vol = volumes.get(mount["name"], {})
        if "configMap" not in vol:
            continue
        cms = [c for c in k8s.get("ConfigMap", []) if c["metadata"]["name"] == vol["configMap"]["name"]]
        assert cms, f"volume {mount['name']}: ConfigMap {vol['configMap']['name']} not in the file"
        data = cms[0].get("data", {})
        files = {i["path"]: i["key"] for i in vol["configMap"]["items"]} if "items" in vol["configMap"] else {k: k for k in data}
        mount_path = mount["mountPath"].rstrip("/")
        if "subPath" in mount and mount_path == CONFIG_PATH and mount["subPath"] in files:
            return data[files[mount["subPath"]]], mount
        if "subPath" not in mount and posixpath.dirname(CONFIG_PATH) == mount_path and posixpath.basename(CONFIG_PATH) in files:
            return data[files[posixpath.basename(CONFIG_PATH)]], mount
    pytest.fail(f"no ConfigMap provides {CONFIG_PATH} in the relay container")
