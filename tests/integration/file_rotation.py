"""The three ways a credential file rotates on disk under a running relay, as the tests do them.

    kubernetes   kubelet's AtomicWriter (Secret, ConfigMap and projected volumes): the visible
                 `NAME` is a symlink to `..data/NAME`, `..data` a symlink to a timestamped
                 directory; a rotation writes a new timestamped directory, points a `..data_tmp`
                 symlink at it, renames that over `..data` (one atomic step for every file) and
                 removes the old directory. The paths the relay was given never change.
    in_place     cert-manager-style rewrite of each file in place: the same inode, truncated and
                 written again, one file after the other (so for a moment the certificate and
                 the key do not match).
    recreate     delete, then create: for a moment the files do not exist; then new files (new
                 inodes) at the same paths.

`CredentialFiles(directory, style)` writes a set of files (name -> bytes) the first time and
rotates them to another set later; `paths` are the paths a configuration names.
"""

from __future__ import annotations

import datetime
import os
import shutil
from pathlib import Path

STYLES = ("kubernetes", "in_place", "recreate")


class CredentialFiles:
    def __init__(self, directory: Path, style: str, files: dict[str, bytes]):
        assert style in STYLES, style
        self.directory = directory
        self.style = style
        self.names = sorted(files)
        directory.mkdir(parents=True, exist_ok=True)
        self._generation = 0
        if style == "kubernetes":
            data = self._write_timestamped(files)
            os.symlink(data.name, directory / "..data")
            for name in self.names:
                os.symlink(f"..data/{name}", directory / name)
        else:
            for name, content in files.items():
                (directory / name).write_bytes(content)

    @property
    def paths(self) -> dict[str, str]:
        return {name: str(self.directory / name) for name in self.names}

    def rotate(self, files: dict[str, bytes], between=None) -> None:
        """Rotates every file to `files` (the same names). `between`, if given, is called at the
        moment the rotation is incomplete: for `recreate`, once the files are gone."""
        assert sorted(files) == self.names
        if self.style == "kubernetes":
            old = (self.directory / "..data").resolve()
            data = self._write_timestamped(files)
            os.symlink(data.name, self.directory / "..data_tmp")
            os.rename(self.directory / "..data_tmp", self.directory / "..data")
            shutil.rmtree(old)
        elif self.style == "in_place":
            for name in self.names:
                with open(self.directory / name, "r+b") as f:
                    f.truncate(0)
                    f.write(files[name])
        else:
            for name in self.names:
                (self.directory / name).unlink()
            if between is not None:
                between()
            for name in self.names:
                (self.directory / name).write_bytes(files[name])

    def _write_timestamped(self, files: dict[str, bytes]) -> Path:
        self._generation += 1
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("..%Y_%m_%d_%H_%M_%S")
        data = self.directory / f"{stamp}.{self._generation}"
        data.mkdir()
        for name, content in files.items():
            (data / name).write_bytes(content)
        return data
