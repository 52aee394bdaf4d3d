"""Docker/kubernetes-fleet.yaml: replicas whose relays share tokens through a Redis beside them.
Parsed (PyYAML) and checked against itself and the binary, no cluster: the relay config the
replicas mount passes `oauth-relay check` and names the Redis Service, the Redis asks for the
password the relays send, and only the relays may reach it."""

from __future__ import annotations

import base64
import json
from urllib.parse import urlsplit

import pytest
import yaml

from processes import REPO
from deployment_manifests import SECRETS_DIR, check_config, expand_env, k8s_config, relay_container

FLEET = REPO / "Docker" / "kubernetes-fleet.yaml"
SAMPLE_REDIS_PASSWORD = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def fleet() -> dict[str, dict[str, dict]]:
    """kind -> name -> object."""
    objects: dict[str, dict[str, dict]] = {}
    for doc in yaml.safe_load_all(FLEET.read_text()):
        if doc:
            objects.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    return objects


def pod_of(deployment: dict) -> dict:
    """The Deployment's Pod template, shaped like a Pod for deployment_manifests' helpers."""
    return {"spec": deployment["spec"]["template"]["spec"], "metadata": deployment["spec"]["template"]["metadata"]}


def relay_deployment(fleet) -> dict:
    found = [d for d in fleet["Deployment"].values()
             if any("oauth-relay" in c["image"] for c in d["spec"]["template"]["spec"].get("initContainers", []))]
    assert len(found) == 1, "exactly one Deployment with the relay sidecar expected"
    return found[0]


def redis_service(fleet, url: str) -> tuple[dict, dict]:
    """The Service the relays' store.redis names, and the Deployment behind it."""
    host = urlsplit(url).hostname
    assert host in fleet["Service"], f"store.redis names {host}, which is no Service in the file"
    service = fleet["Service"][host]
    selected = [d for d in fleet["Deployment"].values()
                if service["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()]
    assert len(selected) == 1, f"Service {host} selects {len(selected)} Deployments"
    return service, selected[0]


def relay_config(fleet) -> tuple[dict, str]:
    pod = pod_of(relay_deployment(fleet))
    container, _ = relay_container(pod)
    text, _ = k8s_config(fleet_as_lists(fleet), pod, container)
    return json.loads(text), text


def fleet_as_lists(fleet) -> dict[str, list[dict]]:
    return {kind: list(objects.values()) for kind, objects in fleet.items()}


def test_several_replicas_each_run_the_relay_beside_the_app(fleet):
    deployment = relay_deployment(fleet)
    assert deployment["spec"]["replicas"] >= 2
    pod = pod_of(deployment)
    container, _ = relay_container(pod)
    assert [c for c in pod["spec"]["containers"] if c is not container], "no app container beside the relay"


def test_the_relay_config_passes_check_and_shares_through_the_redis_service(fleet, tmp_path):
    config, text = relay_config(fleet)
    store = config["store"]
    assert "path" not in store, "a replica's disk is its own: the fleet shares through Redis"
    url = expand_env(store["redis"], {"REDIS_PASSWORD": SAMPLE_REDIS_PASSWORD})
    service, redis = redis_service(fleet, url)
    assert urlsplit(url).port in [p["port"] for p in service["spec"]["ports"]]
    # The relay's password comes from the Secret key the Redis requires.
    pod = pod_of(relay_deployment(fleet))
    container, _ = relay_container(pod)
    relay_env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e}
    (redis_container,) = redis["spec"]["template"]["spec"]["containers"]
    redis_env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in redis_container["env"] if "valueFrom" in e}
    assert relay_env["REDIS_PASSWORD"] == redis_env["REDIS_PASSWORD"]
    args = redis_container["args"]
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    assert args[args.index("--save") + 1] == "" and args[args.index("--appendonly") + 1] == "no", \
        "the entries are re-fetchable: the Redis keeps nothing on disk"
    secret = fleet["Secret"][container_secret_name(pod)]["stringData"]
    assert store["keyFile"] == f"{SECRETS_DIR}/store-key" and "store-key" in secret
    # The Secret's values are placeholders; `check` gets a real key of the documented form.
    files = {"oauth-client-secret": secret["oauth-client-secret"], "store-key": base64.b64encode(bytes(32)).decode()}
    check_config(tmp_path, text, files, {"REDIS_PASSWORD": SAMPLE_REDIS_PASSWORD})


def container_secret_name(pod) -> str:
    (volume,) = [v for v in pod["spec"]["volumes"] if "secret" in v]
    return volume["secret"]["secretName"]


def test_only_the_relays_may_reach_redis(fleet):
    config, _ = relay_config(fleet)
    _, redis = redis_service(fleet, expand_env(config["store"]["redis"], {"REDIS_PASSWORD": SAMPLE_REDIS_PASSWORD}))
    redis_labels = redis["spec"]["template"]["metadata"]["labels"]
    policies = [p for p in fleet.get("NetworkPolicy", {}).values()
                if p["spec"]["podSelector"]["matchLabels"].items() <= redis_labels.items()]
    assert len(policies) == 1, "one NetworkPolicy should guard the Redis"
    (rule,) = policies[0]["spec"]["ingress"]
    allowed = [peer["podSelector"]["matchLabels"] for peer in rule["from"]]
    relay_labels = relay_deployment(fleet)["spec"]["template"]["metadata"]["labels"]
    assert allowed and all(labels.items() <= relay_labels.items() for labels in allowed)
    assert all(not (labels.items() <= redis_labels.items()) for labels in allowed)
