"""The image built from Docker/Dockerfile, run by podman as the README and Docker/kubernetes.yaml
run it: uid 10001, a read-only root file system with nothing writable, every capability dropped
(podman.HARDENED); configured by the environment only (the `docker run` line of Docker/Dockerfile
and the README: the token URL, client id and upstream, the client secret a mounted file), on the
host's network against django-oauth-toolkit and the echo upstream on loopback.

The listeners are moved to free ports (OAUTH_RELAY_LISTEN, OAUTH_RELAY_ADMIN, and
OAUTH_RELAY_HEALTHCHECK_ADDR for the HEALTHCHECK) because `--network host` shares the host's
ports; test_sidecar.py runs the defaults (8180, 9180) in a namespace of their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

from admin_client import AdminClient
from conftest import FIGURES
from deadlines import scaled, wait_until
from deployment_manifests import CONFIG_PATH, IMAGE_GID, IMAGE_UID, SECRETS_DIR
from podman import HARDENED, podman
from processes import LOOPBACK, REPO, free_port
from relay_runs import (CLIENT, ENGINE_GRACE_SECONDS, IDENTITY, SECRET_NAME, SHUTDOWN_GRACE_SECONDS, Ports,
                        assert_accepted_by_idp, bearer_of, documented_env, get, proc_status, run_relay, secret_file)
from rotating_files import KubeletVolume


def test_hardened_and_configured_by_environment_only_it_adds_the_token(start_container, django_idp, upstream,
                                                                       tmp_path):
    ports = Ports()
    secret = secret_file(tmp_path, django_idp.clients[CLIENT].client_secret)
    relay = run_relay(start_container("env"), ports, documented_env(django_idp, upstream),
                      "-v", f"{secret}:{SECRETS_DIR}/{SECRET_NAME}:ro")

    token = bearer_of(get(ports.proxy, "/orders/1"))
    assert_accepted_by_idp(django_idp, token)

    status = proc_status(relay)
    assert status["Name"].strip() == "oauth-relay"
    assert status["Uid"].split() == [str(IMAGE_UID)] * 4, f"the relay runs as uid {status['Uid']}"
    assert status["Gid"].split() == [str(IMAGE_GID)] * 4, f"the relay runs as gid {status['Gid']}"
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0, "the relay holds capabilities"
    assert status["NoNewPrivs"].strip() == "1"
    # Nothing in the container is writable, and the relay needed nothing to be.
    for path in ("/tmp", "/run", "/var/tmp", "/etc/oauth-relay"):
        attempt = relay.exec("bash", "-c", f": > {path}/probe")
        assert attempt.returncode != 0 and "Read-only file system" in attempt.stderr, f"{path} is writable"
    assert relay.running()


def test_the_healthcheck_passes_and_readyz_follows_the_first_token(start_container, django_idp, upstream, tmp_path):
    hold_ms = int(scaled(5000))
    django_idp.hold(hold_ms)  # the first token request waits at the IdP
    ports = Ports()
    secret = secret_file(tmp_path, django_idp.clients[CLIENT].client_secret)
    relay = run_relay(start_container("ready"), ports, documented_env(django_idp, upstream),
                      "-v", f"{secret}:{SECRETS_DIR}/{SECRET_NAME}:ro")
    admin = AdminClient(ports.admin)

    check = relay.healthcheck()
    assert check.returncode == 0, f"podman healthcheck run: {check.stdout}{check.stderr}"
    not_ready = admin.request("GET", "/readyz")
    assert not_ready.status == 503 and IDENTITY in not_ready.json()["detail"], \
        f"/readyz before the first token: {not_ready.status} {not_ready.body!r}"
    assert len(django_idp.token_requests()) == 0, "the token request was not held at the IdP"

    wait_until(lambda: admin.request("GET", "/readyz").status == 200, hold_ms / 1000 + 15,
               "/readyz to answer 200 once the token arrived")
    assert_accepted_by_idp(django_idp, bearer_of(get(ports.proxy)))

    # The HEALTHCHECK fails when the admin listener does not answer (here: pointed elsewhere).
    elsewhere = relay.exec("env", f"OAUTH_RELAY_HEALTHCHECK_ADDR={LOOPBACK}:{free_port()}", "oauth-relay-healthcheck")
    assert elsewhere.returncode == 1 and "cannot connect" in elsewhere.stderr


def test_sighup_applies_a_changed_mounted_config(start_container, django_idp, upstream, tmp_path):
    # The config directory mounted read-only over /etc/oauth-relay, as the Pod mounts its ConfigMap.
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    config = json.loads((REPO / "Docker" / "config.json").read_text())
    (config_dir / "config.json").write_text(json.dumps(config))
    ports = Ports()
    secret = secret_file(tmp_path, django_idp.clients[CLIENT].client_secret)
    relay = run_relay(start_container("hup"), ports, documented_env(django_idp, upstream),
                      "-v", f"{config_dir}:{os.path.dirname(CONFIG_PATH)}:ro",
                      "-v", f"{secret}:{SECRETS_DIR}/{SECRET_NAME}:ro")
    assert get(ports.proxy, "/a").json()["target"] == "/a"

    config["routes"][0]["upstream"] = "${UPSTREAM_URL}/after-reload"
    replacement = config_dir / "config.json.new"
    replacement.write_text(json.dumps(config))
    replacement.chmod(0o644)
    replacement.rename(config_dir / "config.json")  # atomic, as an editor or the kubelet writes
    relay.kill("HUP")

    wait_until(lambda: get(ports.proxy, "/a").json()["target"] == "/after-reload/a", 10,
               "the reloaded route to apply")
    assert relay.running()
    assert_accepted_by_idp(django_idp, bearer_of(get(ports.proxy, "/a")))


def test_podman_stop_drains_a_request_in_flight_and_exits_0(start_container, django_idp, upstream, tmp_path):
    ports = Ports()
    secret = secret_file(tmp_path, django_idp.clients[CLIENT].client_secret)
    relay = run_relay(start_container("stop"), ports, documented_env(django_idp, upstream),
                      "-v", f"{secret}:{SECRETS_DIR}/{SECRET_NAME}:ro")
    slow_ms = int(scaled(3000))
    answers = []
    client = threading.Thread(target=lambda: answers.append(get(ports.proxy, f"/slow?ms={slow_ms}", timeout=scaled(30))))
    client.start()
    try:
        wait_until(lambda: upstream.stats()["requests_in_flight"] == 1, 15, "the slow request to reach the upstream")
        code, took = relay.stop(ENGINE_GRACE_SECONDS)
    finally:
        client.join(timeout=scaled(40))
    assert answers and answers[0].status == 200, f"the request in flight got {answers}"
    assert bearer_of(answers[0])
    assert code == 0, f"the container exited {code} on podman stop\n{relay.log()[-3000:]}"
    assert took < SHUTDOWN_GRACE_SECONDS, f"podman stop took {took:.1f}s"


def test_a_secret_volume_is_read_and_its_rotation_used_without_a_restart(start_container, django_idp, upstream,
                                                                         tmp_path, sensitive):
    # A Kubernetes Secret volume mounted at /run/secrets (the kubelet's ..data symlink swap).
    volume = KubeletVolume(tmp_path / "secrets", {SECRET_NAME: django_idp.clients[CLIENT].client_secret + "\n"})
    ports = Ports()
    relay = run_relay(start_container("rotate"), ports, documented_env(django_idp, upstream),
                      "-v", f"{volume.root}:{SECRETS_DIR}:ro")
    first = bearer_of(get(ports.proxy))
    assert_accepted_by_idp(django_idp, first)
    started = relay.state()["StartedAt"]

    rotated = sensitive.add("the rotated client secret", f"rotated-{os.urandom(12).hex()} +%/=&:")
    django_idp.set_client_secret(CLIENT, rotated)  # the old secret no longer authenticates
    volume.update({SECRET_NAME: rotated + "\n"})
    refresh = AdminClient(ports.admin).request("POST", f"/identities/{IDENTITY}/refresh")
    assert refresh.status == 202, f"{refresh.status} {refresh.body!r}"

    wait_until(lambda: len(django_idp.token_requests()) == 2, 15, "the second token request")
    second_request = django_idp.token_requests()[1]
    assert second_request["status"] == 200, f"the token request after the rotation was answered {second_request['status']}"
    wait_until(lambda: bearer_of(get(ports.proxy)) != first, 10, "the relay to use the new token")
    assert_accepted_by_idp(django_idp, bearer_of(get(ports.proxy)))
    assert relay.state()["StartedAt"] == started and relay.running(), "the container restarted"


def test_image_size_layers_and_libraries_and_nothing_of_the_checkout(image):
    size = int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout)
    history = podman("history", "--format", "{{.Size}}\t{{.CreatedBy}}", image).stdout
    ldd = podman("run", "--rm", "--network", "none", *HARDENED, "--entrypoint", "ldd", image,
                 "/usr/local/bin/oauth-relay").stdout
    FIGURES.append(f"image {image}: {size / 1e6:.1f} MB")
    FIGURES.append("layers (podman history):\n" + "\n".join(f"  {line[:150]}" for line in history.splitlines()))
    FIGURES.append("ldd /usr/local/bin/oauth-relay in the image:\n" + ldd.rstrip())
    assert "not found" not in ldd, ldd
    assert "libswift" not in ldd and "libFoundation" not in ldd, "the binary links Swift toolchain libraries"
    assert size < 150e6, f"the image is {size / 1e6:.0f} MB"

    files = image_files(image)
    from_checkout = [f for f in files if any(part in f for part in
                     ("/.build/", "/.venv-test/", "/tests/", "/Tests/", "/Sources/", "Package.swift", "/src/"))]
    assert not from_checkout, f"files of the checkout in the image: {from_checkout[:20]}"
    for expected in ("/usr/local/bin/oauth-relay", "/usr/local/bin/oauth-relay-healthcheck", CONFIG_PATH):
        assert expected in files, f"{expected} missing from the image"


def test_the_image_names_the_commit_it_was_built_from(image):
    """make test-container passes the checkout's commit as the Dockerfile's build argument (the build
    context has no .git); the binary names it in `--version`, as /version and the start-up log do."""
    commit = os.environ.get("OAUTH_RELAY_COMMIT") or subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    line = podman("run", "--rm", "--network", "none", *HARDENED, image, "--version").stdout.strip()
    assert line.endswith(f"(commit {commit})"), f"the image's binary says {line!r}, the checkout is at {commit}"


def image_files(image: str) -> set[str]:
    """Every path in the image's file system (podman image mount: the merged layers, read-only)."""
    root = Path(podman("image", "mount", image).stdout.strip())
    try:
        return {"/" + str(Path(dirpath, name).relative_to(root))
                for dirpath, dirnames, filenames in os.walk(root) for name in dirnames + filenames}
    finally:
        podman("image", "unmount", image, check=False)
