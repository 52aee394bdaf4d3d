"""The release artifacts (`make dist`) tested where a user runs them: a copy of a debootstrap'd
Debian 12 root (scripts/debian-root), entered with chroot. `make test-dist` builds dist/ first.

The shared root under /var/tmp/oauth-relay-roots is never changed: each session copies it into its
own directory, mounts /proc and /dev there, and unmounts and removes the copy at the end (also
after a failure).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration"))

ROOTS = Path(os.environ.get("OAUTH_RELAY_ROOTS", "/var/tmp/oauth-relay-roots"))
DIST = REPO / "dist"
DIST_BIN = REPO / ".build-dist" / "release" / "oauth-relay"
MAKE_BIN = REPO / ".build" / "release" / "oauth-relay"


def version_of(binary: Path | str, runner: list[str] | None = None) -> tuple[str, str]:
    """(version, commit) from `binary --version`: `oauth-relay 0.1.0 (commit 0123…)`."""
    out = subprocess.run([*(runner or []), str(binary), "--version"], capture_output=True, text=True, check=True, timeout=30).stdout
    words = out.split()
    assert len(words) == 4 and words[0] == "oauth-relay" and words[2] == "(commit" and words[3].endswith(")"), out
    return words[1], words[3][:-1]


def head_commit() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


@dataclass
class Artifacts:
    version: str
    commit: str
    tarball: Path
    deb: Path


@pytest.fixture(scope="session")
def artifacts() -> Artifacts:
    version, commit = version_of(DIST_BIN)
    found = Artifacts(version, commit, DIST / f"oauth-relay-{version}-linux-x86_64.tar.gz", DIST / f"oauth-relay_{version}_amd64.deb")
    for path in (found.tarball, found.deb):
        if not path.is_file():
            pytest.fail(f"{path} is missing: run `make dist` (or `make test-dist`)")
    return found


class Chroot:
    """A private copy of a Debian root with /proc and /dev mounted."""

    def __init__(self, base: Path):
        self.work = Path(tempfile.mkdtemp(prefix="oauth-relay-dist-", dir="/var/tmp"))
        self.path = self.work / "root"
        self.mounted: list[Path] = []
        try:
            subprocess.run(["cp", "-a", str(base), str(self.path)], check=True)
            shutil.copy("/etc/resolv.conf", self.path / "etc" / "resolv.conf")
            for target, args in (("proc", ["-t", "proc", "proc"]), ("dev", ["--bind", "/dev"])):
                subprocess.run(["mount", *args, str(self.path / target)], check=True)
                self.mounted.append(self.path / target)
        except BaseException:
            self.close()
            raise

    def run(self, *args: str, check: bool = True, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
        environment = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LANG": "C.UTF-8", **(env or {})}
        result = subprocess.run(["chroot", str(self.path), *args], capture_output=True, text=True, timeout=timeout,
                                env=environment, stdin=subprocess.DEVNULL)
        if check and result.returncode != 0:
            pytest.fail(f"`{' '.join(args)}` in the chroot exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def popen(self, *args: str, log: Path) -> subprocess.Popen:
        with open(log, "wb") as out:
            return subprocess.Popen(["chroot", str(self.path), *args], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"})

    def installed(self) -> set[str]:
        out = self.run("dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n").stdout
        return {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}

    def close(self) -> None:
        """Unmounts, then removes the copy, but never while anything is still mounted in it: a
        removal that walked into the bound /dev would delete the host's device nodes."""
        for target in reversed(self.mounted):
            subprocess.run(["umount", "--lazy", str(target)], check=False)
        self.mounted.clear()
        still = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                 if line.split()[4].startswith(f"{self.work}/")]
        if still:
            warnings.warn(f"{self.work} left in place: still mounted there: {still}")
            return
        subprocess.run(["rm", "-rf", "--one-file-system", str(self.work)], check=False)


@dataclass
class Installed:
    """The chroot with the .deb installed (`dpkg -i`, then `apt-get -f install` for its Depends)."""
    root: Chroot
    before: set[str]           # the packages of the debootstrap root
    added: set[str]            # what installing the .deb added, oauth-relay included
    dpkg_output: str


@pytest.fixture(scope="session")
def debian_root(artifacts) -> Installed:
    base = Path(subprocess.run([str(REPO / "scripts" / "debian-root"), "bookworm", str(ROOTS / "bookworm")],
                               capture_output=True, text=True, check=True).stdout.strip())
    root = Chroot(base)
    try:
        before = root.installed()
        shutil.copy(artifacts.deb, root.path / "tmp" / artifacts.deb.name)
        # dpkg alone leaves the package unconfigured until its Depends are there; apt installs them.
        first = root.run("dpkg", "-i", f"/tmp/{artifacts.deb.name}", check=False)
        root.run("apt-get", "update", "-qq")
        root.run("apt-get", "-f", "install", "-y", "-qq", "--no-install-recommends")
        yield Installed(root, before, root.installed() - before, first.stdout + first.stderr)
    finally:
        root.close()
