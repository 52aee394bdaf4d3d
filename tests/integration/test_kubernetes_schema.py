"""Docker/kubernetes.yaml and Docker/kubernetes-fleet.yaml against the Kubernetes API schema
(kubernetes-validate, offline: the schemas ship in the package), and the relay's container in
each against what tests/container proved of the image by running it (make test-container):

- it ran as IMAGE_UID:IMAGE_GID, with a read-only root file system and no writable mount at all
  (podman --read-only --read-only-tmpfs=false), every capability dropped, no new privileges: the
  manifests may ask exactly that and need no emptyDir;
- its HEALTHCHECK and /readyz answered on the admin port; a config directory mounted over
  /etc/oauth-relay was re-read on SIGHUP; the client secret was read from a file in a Secret
  volume mounted at /run/secrets and its kubelet-style rotation was used.

test_docker.py reads kubernetes.yaml's probes, mounts and security context as text; these tests
hold both files to the schema and to the image's proven run.
"""

from __future__ import annotations

import json
import posixpath

import kubernetes_validate
import pytest
import yaml

from deployment_manifests import (ADMIN_PORT, CONFIG_PATH, IMAGE_GID, IMAGE_UID, SECRETS_DIR, k8s_config,
                                  relay_container)
from processes import REPO

MANIFESTS = ["kubernetes.yaml", "kubernetes-fleet.yaml"]
# Native sidecars (an init container with restartPolicy: Always) need 1.29; and the newest the
# validator knows.
VERSIONS = ["1.29.0", kubernetes_validate.latest_version()]


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((REPO / "Docker" / name).read_text()) if d]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", MANIFESTS)
def test_every_object_is_valid_against_the_kubernetes_schema(name, version):
    for doc in documents(name):
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            pytest.fail(f"{name}: {doc['kind']}/{doc['metadata']['name']} at {path}: {e.message} (Kubernetes {version})")


def relay_pod(name: str) -> tuple[dict[str, list[dict]], dict]:
    """The objects by kind, and the Pod (or the Deployment's Pod template) that runs the relay."""
    by_kind: dict[str, list[dict]] = {}
    for doc in documents(name):
        by_kind.setdefault(doc["kind"], []).append(doc)
    pods = list(by_kind.get("Pod", [])) + [{"metadata": d["spec"]["template"]["metadata"], "spec": d["spec"]["template"]["spec"]}
                                           for d in by_kind.get("Deployment", [])]
    with_relay = [p for p in pods if any("oauth-relay" in c["image"]
                                         for c in p["spec"].get("initContainers", []) + p["spec"]["containers"])]
    assert len(with_relay) == 1, f"{name}: one Pod (template) with the relay expected"
    return by_kind, with_relay[0]


@pytest.mark.parametrize("name", MANIFESTS)
def test_the_relay_runs_as_the_image_was_proven_to_run(name):
    _, pod = relay_pod(name)
    container, _ = relay_container(pod)
    pod_sc, sc = pod["spec"].get("securityContext", {}), container.get("securityContext", {})
    effective = {**pod_sc, **sc}
    assert effective.get("runAsNonRoot") is True
    assert (effective.get("runAsUser"), effective.get("runAsGroup")) == (IMAGE_UID, IMAGE_GID), \
        f"runAsUser/runAsGroup {effective.get('runAsUser')}:{effective.get('runAsGroup')}, the image runs as {IMAGE_UID}:{IMAGE_GID}"
    assert sc.get("readOnlyRootFilesystem") is True
    assert sc.get("allowPrivilegeEscalation") is False
    assert sc.get("capabilities", {}).get("drop") == ["ALL"] and not sc["capabilities"].get("add")
    writable = [m["mountPath"] for m in container.get("volumeMounts", []) if m.get("readOnly") is not True]
    assert not writable, f"writable mounts {writable}: the image runs with nothing writable"


@pytest.mark.parametrize("name", MANIFESTS)
def test_the_probes_ask_the_admin_port_the_image_answers_on(name):
    by_kind, pod = relay_pod(name)
    container, _ = relay_container(pod)
    config = json.loads(k8s_config(by_kind, pod, container)[0])
    assert config["admin"].rsplit(":", 1) == ["0.0.0.0", str(ADMIN_PORT)], \
        f"admin {config['admin']}: the kubelet probes {ADMIN_PORT} over the Pod IP"
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}
    paths = {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    for probe, path in paths.items():
        get = container[probe]["httpGet"]
        assert get["path"] == path, f"{probe} asks {get['path']}"
        assert ports.get(get["port"], get["port"]) == ADMIN_PORT, f"{probe} asks port {get['port']}"


@pytest.mark.parametrize("name", MANIFESTS)
def test_the_config_and_secret_files_are_where_the_image_reads_them(name):
    by_kind, pod = relay_pod(name)
    container, _ = relay_container(pod)
    text, config_mount = k8s_config(by_kind, pod, container)
    assert config_mount["mountPath"].rstrip("/") == posixpath.dirname(CONFIG_PATH) and "subPath" not in config_mount, \
        "the config directory is mounted whole (a subPath mount is never updated, so SIGHUP would re-read the old file)"
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    secret_mounts = {m["mountPath"].rstrip("/"): volumes[m["name"]]["secret"] for m in container["volumeMounts"]
                     if "secret" in volumes[m["name"]]}
    assert list(secret_mounts) == [SECRETS_DIR] and "subPath" not in str(container["volumeMounts"])
    secret = secret_mounts[SECRETS_DIR]
    objects = {s["metadata"]["name"]: s for s in by_kind["Secret"]}
    keys = set(objects[secret["secretName"]].get("stringData", {})) | set(objects[secret["secretName"]].get("data", {}))
    files = {i["path"] for i in secret["items"]} if "items" in secret else keys
    read = {v for k, v in _leaves(json.loads(text)) if k.endswith("File")}
    assert read, "the config reads no secret file"
    for path in read:
        assert posixpath.dirname(path) == SECRETS_DIR and posixpath.basename(path) in files, \
            f"the config reads {path}, which the Secret volume at {SECRETS_DIR} does not provide ({sorted(files)})"


def _leaves(value, key: str = ""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    else:
        yield key, value
