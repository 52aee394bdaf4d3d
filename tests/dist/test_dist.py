"""`make dist`'s tarball and .deb, installed and run in a copy of a Debian 12 root (conftest.py).
The tests run in file order: the tarball's binary runs before systemd and man-db are added, in a
root that holds the debootstrap minbase and the .deb's Depends only."""

import json
import re
import subprocess
import tarfile
import urllib.request

import pytest

from conftest import REPO, head_commit, version_of
from deadlines import wait_until
from processes import can_connect, free_port

# What the binary built with --static-swift-stdlib still links, each for a reason (README, "make dist").
RUNTIME_LIBRARIES = {"libssl.so.3", "libcrypto.so.3", "libuv.so.1", "libstdc++.so.6", "libgcc_s.so.1",
                     "libm.so.6", "libc.so.6", "ld-linux-x86-64.so.2"}
UNIT = "/usr/lib/systemd/system/oauth-relay.service"


def tar_names(artifacts) -> list[str]:
    with tarfile.open(artifacts.tarball) as tar:
        return tar.getnames()


def test_tarball_holds_the_binary_readme_sample_configs_and_schema(artifacts):
    top = f"oauth-relay-{artifacts.version}-linux-x86_64"
    names = set(tar_names(artifacts))
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "--", "Config"], capture_output=True, text=True,
                             check=True).stdout.split()
    samples = {f"{top}/config/{path.removeprefix('Config/')}" for path in tracked}
    assert {f"{top}/oauth-relay", f"{top}/README.md", f"{top}/config/oauth-relay.schema.json"} | samples <= names
    assert all(name == top or name.startswith(top + "/") for name in names), names
    # Only what git tracks: a checkout's own files in Config/ (a local config, a key) stay out.
    with tarfile.open(artifacts.tarball) as tar:
        shipped = {member.name for member in tar.getmembers() if member.isfile() and member.name.startswith(f"{top}/config/")}
    assert shipped == samples, f"untracked files shipped: {sorted(shipped - samples)}"


def test_tarball_binary_links_no_swift_library(artifacts, tmp_path):
    with tarfile.open(artifacts.tarball) as tar:
        tar.extractall(tmp_path, filter="data")
    binary = tmp_path / f"oauth-relay-{artifacts.version}-linux-x86_64" / "oauth-relay"
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    linked = {line.split()[0].rsplit("/", 1)[-1] for line in ldd.splitlines() if line.strip() and "linux-vdso" not in line}
    print(f"\nldd {binary.name}: {' '.join(sorted(linked))}")
    assert linked == RUNTIME_LIBRARIES, ldd


def test_deb_installs_with_its_dependencies_from_the_archive(debian_root):
    status = debian_root.root.run("dpkg-query", "-W", "-f", "${db:Status-Status} ${Version}", "oauth-relay").stdout
    assert status.startswith("installed "), status
    print(f"\ndpkg -i alone: {'dependency problems' in debian_root.dpkg_output and 'unconfigured' or 'configured'}; "
          f"apt-get -f install added {sorted(debian_root.added - {'oauth-relay'})}")
    assert {"libuv1", "libssl3"} <= debian_root.added
    assert not any(package.startswith("libhiredis") for package in debian_root.added), debian_root.added


def test_tarball_binary_runs_without_a_swift_toolchain(artifacts, debian_root):
    root = debian_root.root
    with tarfile.open(artifacts.tarball) as tar:
        tar.extractall(root.path / "opt", filter="data")
    swift_libraries = root.run("find", "/", "-xdev", "-name", "libswift*", "-print").stdout
    assert swift_libraries == "", f"the root holds Swift libraries:\n{swift_libraries}"
    top = f"/opt/oauth-relay-{artifacts.version}-linux-x86_64"
    assert version_of(f"{top}/oauth-relay", runner=["chroot", str(root.path)]) == (artifacts.version, head_commit())
    check = root.run(f"{top}/oauth-relay", "check", "--config", f"{top}/config/demo.json")
    assert "ok" in check.stdout, check.stdout


def test_installed_binary_names_the_version_and_the_checkouts_commit(artifacts, debian_root):
    runner = ["chroot", str(debian_root.root.path)]
    assert version_of("/usr/bin/oauth-relay", runner=runner) == (artifacts.version, head_commit())


def test_check_accepts_the_packaged_config(debian_root):
    result = debian_root.root.run("oauth-relay", "check", "--config", "/etc/oauth-relay/config.json")
    assert result.stdout.startswith("/etc/oauth-relay/config.json: ok"), result.stdout


def test_config_is_a_conffile(debian_root):
    conffiles = debian_root.root.run("dpkg-query", "-W", "-f", "${Conffiles}", "oauth-relay").stdout.split()
    assert "/etc/oauth-relay/config.json" in conffiles, conffiles


def test_demo_in_the_chroot_answers_a_request_from_the_host(artifacts, debian_root, tmp_path):
    listen, upstream, admin = free_port(), free_port(), free_port()
    log = tmp_path / "demo.log"
    demo = debian_root.root.popen("oauth-relay", "demo", "--listen", f"127.0.0.1:{listen}", "--upstream-port", str(upstream),
                                  "--admin", f"127.0.0.1:{admin}", log=log)
    try:
        wait_until(lambda: can_connect("127.0.0.1", listen) and can_connect("127.0.0.1", admin), 20, "the demo's listeners")
        with urllib.request.urlopen(f"http://127.0.0.1:{listen}/from-the-host", timeout=10) as response:
            echoed = json.load(response)
        headers = dict(echoed["headers"])
        assert echoed["target"] == "/from-the-host", echoed
        assert re.fullmatch(r"Bearer dev-only-[0-9a-f]+", headers.get("Authorization", "")), "no demo token in the echo"
        assert headers.get("X-Demo") == "added by oauth-relay", headers
        with urllib.request.urlopen(f"http://127.0.0.1:{admin}/version", timeout=10) as response:
            assert json.load(response) == {"version": artifacts.version, "commit": head_commit()}
    finally:
        demo.terminate()
        code = demo.wait(timeout=20)
    assert code == 0, log.read_text()[-2000:]


def test_completions_are_installed_for_bash_zsh_and_fish(debian_root):
    root = debian_root.root
    loaded = root.run("bash", "-c", "source /usr/share/bash-completion/completions/oauth-relay && complete -p oauth-relay").stdout
    assert loaded.strip().endswith(" oauth-relay"), loaded
    assert (root.path / "usr/share/zsh/vendor-completions/_oauth-relay").read_text().startswith("#compdef oauth-relay")
    assert "complete -c 'oauth-relay'" in (root.path / "usr/share/fish/vendor_completions.d/oauth-relay.fish").read_text()


@pytest.fixture(scope="module")
def systemd_and_man(debian_root):
    """systemd (systemd-analyze) and man-db, added after the tests that want the runtime packages only."""
    debian_root.root.run("apt-get", "install", "-y", "-qq", "--no-install-recommends", "systemd", "man-db")
    return debian_root.root


def test_man_page_documents_every_subcommand(systemd_and_man):
    page = systemd_and_man.run("man", "-P", "cat", "oauth-relay", env={"MANWIDTH": "100"}).stdout
    for subcommand in ("run", "check", "token", "login", "logout", "demo"):
        assert re.search(rf"^\s+{subcommand}\s", page, re.MULTILINE), f"the man page has no {subcommand}:\n{page[:1500]}"


def test_systemd_unit_verifies_without_a_warning(systemd_and_man):
    result = systemd_and_man.run("systemd-analyze", "verify", UNIT, check=False)
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 0 and output == "", output


def test_systemd_unit_runs_as_a_dynamic_user_with_the_hardening_options(systemd_and_man):
    unit = (systemd_and_man.path / UNIT.lstrip("/")).read_text()
    settings = {line.strip() for line in unit.splitlines() if "=" in line and not line.startswith("#")}
    for setting in ("DynamicUser=yes", "StateDirectory=oauth-relay", "ConfigurationDirectory=oauth-relay", "ProtectSystem=strict",
                    "ProtectHome=yes", "NoNewPrivileges=yes", "PrivateTmp=yes", "PrivateDevices=yes", "CapabilityBoundingSet=",
                    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "SystemCallFilter=@system-service",
                    "MemoryDenyWriteExecute=yes"):
        assert setting in settings, f"the unit lacks {setting}"
    security = systemd_and_man.run("systemd-analyze", "security", "--offline=yes", UNIT).stdout
    [level] = re.findall(r"Overall exposure level for oauth-relay.service: ([0-9.]+)", security)
    print(f"\nsystemd-analyze security: exposure {level}")
    assert float(level) <= 2.0, security


def test_systemd_units_reload_command_makes_the_relay_reload(systemd_and_man, tmp_path):
    """ExecReload as systemd runs it (`$$` unescaped, MAINPID in the environment), against the
    packaged relay on the packaged config, in the chroot."""
    root = systemd_and_man
    unit = (root.path / UNIT.lstrip("/")).read_text()
    [reload] = [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecReload=")]
    assert reload.startswith("/bin/sh -c '") and reload.endswith("'"), reload
    script = reload[len("/bin/sh -c '"):-1].replace("$$", "$")
    log = tmp_path / "relay.log"
    config = root.path / "tmp" / "config.json"
    listen, admin = free_port(), free_port()
    config.write_text((root.path / "etc/oauth-relay/config.json").read_text()
                      .replace("127.0.0.1:8180", f"127.0.0.1:{listen}").replace("127.0.0.1:9180", f"127.0.0.1:{admin}"))
    relay = root.popen("oauth-relay", "run", "--config", "/tmp/config.json", "--log-format", "json", log=log)
    try:
        wait_until(lambda: can_connect("127.0.0.1", admin), 20, "the packaged relay's admin listener")
        root.run("/bin/sh", "-c", script, env={"MAINPID": str(relay.pid)})
        wait_until(lambda: '"configuration reloaded"' in log.read_text(), 10, "a reload after ExecReload")
    finally:
        relay.terminate()
        code = relay.wait(timeout=20)
    assert code == 0, log.read_text()[-2000:]
