"""The commit is set at build time (Package.swift reads OAUTH_RELAY_COMMIT, which the Makefile sets to
`git rev-parse HEAD`): the Makefile's binaries name the checkout's commit, and a new commit reaches
the binary by recompiling one C file and relinking, with no Swift module compiled again."""

import os
import subprocess

from conftest import DIST_BIN, MAKE_BIN, REPO, head_commit, version_of


def dist_build(commit: str) -> str:
    result = subprocess.run(["swift", "build", "-c", "release", "--static-swift-stdlib", "--scratch-path", ".build-dist",
                             "--product", "oauth-relay"], cwd=REPO, capture_output=True, text=True, timeout=1800,
                            env={**os.environ, "OAUTH_RELAY_COMMIT": commit})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def object_times() -> dict[str, int]:
    objects = (REPO / ".build-dist" / "release").glob("*.build/**/*.o")
    return {str(path.relative_to(REPO)): path.stat().st_mtime_ns for path in objects}


def test_make_dists_binary_names_the_checkouts_commit():
    assert version_of(DIST_BIN)[1] == head_commit()


def test_make_builds_binary_names_the_checkouts_commit():
    # make dist runs generate-manual on .build/release, the binary `make build` and `make run` use.
    assert version_of(MAKE_BIN)[1] == head_commit()


def test_a_new_commit_recompiles_one_c_file_and_relinks():
    head = head_commit()
    other = head[:-1] + ("0" if head[-1] != "0" else "1")
    before = object_times()
    try:
        dist_build(other)
        assert version_of(DIST_BIN)[1] == other
        after = object_times()
        changed = sorted(path for path in before if after.get(path) != before[path])
        assert changed == [".build-dist/release/CRelayBuild.build/RelayBuild.c.o"], changed
    finally:
        dist_build(head)
    assert version_of(DIST_BIN)[1] == head
