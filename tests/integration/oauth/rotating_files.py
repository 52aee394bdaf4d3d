"""Credential files rotated the ways platforms rotate them, for the relay's tests:

- `KubeletVolume`: a Secret or projected volume as kubelet's AtomicWriter keeps it. The payload
  lives in a timestamped directory (`..2026_11_26_21_00_00.123456789`), `..data` is a symbolic
  link to it, and each file is a symbolic link `NAME -> ..data/NAME`. An update writes a new
  timestamped directory, makes a temporary link `..data_tmp` to it, renames that over `..data`
  (one atomic step: a reader sees the old payload or the new one, never a mix) and removes the
  old directory.
- `rewrite_in_place`: the file opened, truncated and written again (same inode; what an editor
  without backups or `cert-manager`'s plain-file writers do).
- `delete_then_create`: the file removed, and later written again (a new inode), with a window
  in between where there is no file at all.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path


class KubeletVolume:
    def __init__(self, root: Path, payload: dict[str, str]) -> None:
        self.root = root
        root.mkdir(parents=True)
        self.updates = 0
        current = self._write_payload(payload)
        os.symlink(current.name, root / "..data")
        for name in payload:
            os.symlink(f"..data/{name}", root / name)

    def path(self, name: str) -> str:
        """The path a pod names (`/var/run/secrets/tokens/NAME`): the symbolic link."""
        return str(self.root / name)

    def update(self, payload: dict[str, str]) -> None:
        """AtomicWriter's swap: new timestamped directory, `..data_tmp`, rename, old one removed."""
        old = os.readlink(self.root / "..data")
        new = self._write_payload(payload)
        temporary = self.root / "..data_tmp"
        os.symlink(new.name, temporary)
        os.rename(temporary, self.root / "..data")
        shutil.rmtree(self.root / old)
        self.updates += 1

    def _write_payload(self, payload: dict[str, str]) -> Path:
        now = time.time_ns()
        stamp = time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(now // 1_000_000_000))
        directory = self.root / f"..{stamp}.{now % 1_000_000_000:09d}"
        directory.mkdir(mode=0o755)
        for name, content in payload.items():
            (directory / name).write_text(content)
            os.chmod(directory / name, 0o644)
        return directory


def rewrite_in_place(path: str, content: str) -> None:
    """Truncates and writes the same file (same inode)."""
    inode = os.stat(path).st_ino
    with open(path, "r+") as file:
        file.truncate(0)
        file.write(content)
    assert os.stat(path).st_ino == inode


def delete(path: str) -> None:
    os.remove(path)


def create(path: str, content: str) -> None:
    """Writes a new file where there was none."""
    with open(path, "x") as file:
        file.write(content)
