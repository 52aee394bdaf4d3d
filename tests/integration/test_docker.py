"""The container files in Docker/, checked without a Docker engine so that they cannot rot.

Dockerfile: parsed into stages; each stage's COPYs are replayed against the files a clean checkout
has (git's tracked and not-ignored files) into a virtual image file system, so that
- the build stage's context is a package SwiftPM loads (`swift package describe` on a scratch copy
  of exactly what the COPYs take), it runs scripts/install-deps after copying it, and builds with
  `swift build -c release --static-swift-stdlib` on a Swift image of the toolchain used here;
- every shared library the release binary links (ldd $OAUTH_RELAY_BIN) is either a Swift runtime
  library that --static-swift-stdlib links statically (an archive of it is in the toolchain's
  swift_static), or belongs (dpkg -S) to a package the runtime stage installs or that every Debian
  image has (the Essential packages and their dependencies); same for what the static stdlib's
  link line adds; and the runtime stage installs nothing else but ca-certificates;
- the runtime stage runs as a numeric non-root USER it creates, EXPOSEs 8180 and 9180, and its
  ENTRYPOINT/CMD/HEALTHCHECK name files it copies; the CMD's arguments are accepted by the binary;
- the runtime stage's files, laid out in a scratch root, run: the ENTRYPOINT + CMD as the image's
  uid (when the test runs as root) with the image's config serves and logs JSON lines, and the
  HEALTHCHECK script passes against its admin listener (and fails against a 503, a closed port and
  a silent server).
compose.yaml and kubernetes.yaml: parsed (PyYAML), their structure checked (sidecar sharing the
network namespace, probes, mounts, secrets, security context, resources), and the configs they
mount validated with `oauth-relay check` with their /run/secrets files provided by the secrets
the files declare.

OAUTH_RELAY_DOCKER_BUILD=1 also runs the build stage's `swift build` (minutes) in the scratch
copy and checks what that static binary links.
"""

from __future__ import annotations

import base64
import fnmatch
import http.server
import json
import math
import os
import posixpath
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from deadlines import scaled, wait_until
from deployment_manifests import (ADMIN_PORT, CONFIG_PATH, DEFAULT_PATH, PROXY_PORT, SECRETS_DIR, check_config,
                                  expand_env, k8s_config, relay_container, secrets_referenced)
from processes import REPO, can_connect, free_port, require_relay_bin, run_cli

DOCKER = REPO / "Docker"
DOCKERFILE = DOCKER / "Dockerfile"
COMPOSE = DOCKER / "compose.yaml"
KUBERNETES = DOCKER / "kubernetes.yaml"

EXPECTED_CMD = ["run", "--config", CONFIG_PATH, "--log-format", "json"]
# What the runtime stage may install besides the packages of the linked libraries.
RUNTIME_EXTRAS = {"ca-certificates"}


# ---------------------------------------------------------------------------------------------
# Dockerfile parsing.

@dataclass
class Instruction:
    cmd: str
    flags: dict
    rest: str
    line: int

    def exec_form(self) -> list[str] | None:
        try:
            value = json.loads(self.rest)
        except ValueError:
            return None
        return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


@dataclass
class Stage:
    image: str
    name: str | None
    index: int
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, cmd: str) -> list[Instruction]:
        return [i for i in self.instructions if i.cmd == cmd]

    def last(self, cmd: str) -> Instruction | None:
        found = self.all(cmd)
        return found[-1] if found else None


def _instruction(text: str, line: int) -> Instruction:
    parts = text.strip().split(None, 1)
    cmd, rest = parts[0].upper(), (parts[1] if len(parts) > 1 else "")
    flags = {}
    while rest.startswith("--"):
        token, _, rest = rest.partition(" ")
        key, _, value = token[2:].partition("=")
        flags[key] = value
        rest = rest.lstrip()
    return Instruction(cmd, flags, rest.strip(), line)


def parse_dockerfile(text: str) -> list[Stage]:
    """Instructions with line continuations joined and comments dropped (also inside a
    continuation, as Docker does), grouped into stages by FROM."""
    instructions, buf, start = [], None, 0
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if buf is None:
            buf, start = "", n
        if raw.rstrip().endswith("\\"):
            buf += raw.rstrip()[:-1] + " "
            continue
        instructions.append(_instruction(buf + raw, start))
        buf = None
    assert buf is None, f"Dockerfile ends inside a line continuation (from line {start})"
    assert "<<" not in " ".join(i.rest for i in instructions if i.cmd in ("RUN", "COPY")), \
        "heredocs are not understood by this test: extend it"
    stages: list[Stage] = []
    for ins in instructions:
        if ins.cmd == "FROM":
            words = ins.rest.split()
            assert len(words) in (1, 3) and (len(words) == 1 or words[1].upper() == "AS"), \
                f"line {ins.line}: FROM {ins.rest!r}"
            stages.append(Stage(words[0], words[2] if len(words) == 3 else None, len(stages)))
        else:
            assert stages or ins.cmd in ("ARG",), f"line {ins.line}: {ins.cmd} before the first FROM"
            if stages:
                stages[-1].instructions.append(ins)
    return stages


def shell_commands(script: str) -> list[list[str]]:
    """The simple commands of a RUN's shell script: words split on && || ; | and parentheses."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, current = [], []
    for token in lexer:
        if token and set(token) <= set("&|;()"):
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands


def command_words(command: list[str]) -> list[str]:
    """Without leading VAR=value assignments and `sudo`/`env`."""
    words = list(command)
    while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in ("sudo", "env", "exec")):
        words.pop(0)
    return words


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def build_stage(stages) -> Stage:
    assert len(stages) >= 2, f"the Dockerfile has {len(stages)} stage(s); a build and a runtime stage expected"
    return stages[0]


@pytest.fixture(scope="module")
def runtime_stage(stages) -> Stage:
    assert len(stages) >= 2, f"the Dockerfile has {len(stages)} stage(s); a build and a runtime stage expected"
    return stages[-1]


# ---------------------------------------------------------------------------------------------
# Replaying COPY instructions against a clean checkout.

def context_files() -> dict[str, Path]:
    """What a clean checkout holds (tracked and not-ignored files), by path relative to the repo."""
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout.decode()
    return {p: REPO / p for p in out.split("\0") if p and (REPO / p).is_file()}


def _glob_match(pattern: str, path: str) -> bool:
    pp, parts = pattern.split("/"), path.split("/")
    return len(pp) == len(parts) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pp))


@dataclass
class ImageFile:
    source: Path
    mode: int


@dataclass
class StageReplay:
    """A stage's file system as its COPYs leave it (image path -> file), WORKDIR and USER, and for
    each RUN the set of paths present when it runs."""
    files: dict[str, ImageFile] = field(default_factory=dict)
    workdir: str = "/"
    user: str | None = None
    runs: list[tuple[Instruction, str, frozenset]] = field(default_factory=list)


def replay(stage: Stage, context: dict[str, Path], from_stages: dict[str, dict[str, Path]] | None = None) -> StageReplay:
    """from_stages maps `--from` stage name -> {image path in that stage: local file}."""
    state = StageReplay()
    dirs = {posixpath.dirname(p) for p in context}
    while True:
        more = {posixpath.dirname(d) for d in dirs if d} - dirs
        if not more:
            break
        dirs |= more
    for ins in stage.instructions:
        if ins.cmd == "WORKDIR":
            state.workdir = posixpath.normpath(posixpath.join(state.workdir, ins.rest))
        elif ins.cmd == "USER":
            state.user = ins.rest
        elif ins.cmd == "RUN":
            state.runs.append((ins, state.workdir, frozenset(state.files)))
        elif ins.cmd in ("COPY", "ADD"):
            assert ins.cmd == "COPY", f"line {ins.line}: use COPY, not ADD"
            words = ins.exec_form() or shlex.split(ins.rest)
            *sources, dest = words
            assert sources, f"line {ins.line}: COPY without a source"
            mode = int(ins.flags["chmod"], 8) if "chmod" in ins.flags else None
            multiple = len(sources) > 1 or any(any(c in s for c in "*?[") for s in sources)
            assert not multiple or dest.endswith("/"), \
                f"line {ins.line}: COPY of several sources needs a destination ending in /"
            dest_abs = posixpath.normpath(posixpath.join(state.workdir, dest))
            for src in sources:
                if "from" in ins.flags:
                    outputs = (from_stages or {}).get(ins.flags["from"])
                    assert outputs is not None, f"line {ins.line}: --from={ins.flags['from']} is not a known stage"
                    assert src in outputs, f"line {ins.line}: the {ins.flags['from']} stage produces no {src}"
                    local = outputs[src]
                    target = posixpath.join(dest_abs, posixpath.basename(src)) if dest.endswith("/") else dest_abs
                    state.files[target] = ImageFile(local, mode if mode is not None else stat.S_IMODE(local.stat().st_mode))
                    continue
                pattern = posixpath.normpath(src.lstrip("/"))
                if any(c in pattern for c in "*?["):
                    matched = [p for p in sorted(set(context) | dirs) if _glob_match(pattern, p)]
                else:
                    matched = [pattern] if (pattern in context or pattern in dirs or pattern == ".") else []
                    assert matched, f"line {ins.line}: COPY {src}: not in a clean checkout (not committed, or ignored)"
                for m in matched:
                    if m in context:
                        target = posixpath.join(dest_abs, posixpath.basename(m)) if (multiple or dest.endswith("/")) else dest_abs
                        state.files[target] = ImageFile(context[m], mode if mode is not None else stat.S_IMODE(context[m].stat().st_mode))
                    else:
                        prefix = "" if m == "." else m + "/"
                        for p, local in context.items():
                            if p.startswith(prefix):
                                state.files[posixpath.join(dest_abs, p[len(prefix):])] = ImageFile(
                                    local, mode if mode is not None else stat.S_IMODE(local.stat().st_mode))
    return state


def materialize(state: StageReplay, root: Path, only_under: str = "/") -> None:
    for image_path, f in state.files.items():
        if not (image_path + "/").startswith(only_under.rstrip("/") + "/"):
            continue
        target = root / image_path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f.source, target)
        target.chmod(f.mode)


def resolve_in_path(name: str, state: StageReplay, path: str = DEFAULT_PATH) -> str | None:
    if "/" in name:
        return name if name in state.files else None
    for d in path.split(":"):
        if posixpath.join(d, name) in state.files:
            return posixpath.join(d, name)
    return None


@pytest.fixture(scope="module")
def context() -> dict[str, Path]:
    return context_files()


@pytest.fixture(scope="module")
def build_replay(build_stage, context) -> StageReplay:
    return replay(build_stage, context)


def built_binary_path(build_stage: Stage, runtime_stage: Stage) -> str:
    """The build-stage path the runtime stage copies the binary from."""
    copies = [i for i in runtime_stage.all("COPY") if i.flags.get("from") in (build_stage.name, str(build_stage.index))]
    assert copies, "the runtime stage copies nothing from the build stage"
    sources = [s for i in copies for s in shlex.split(i.rest)[:-1] if posixpath.basename(s) == "oauth-relay"]
    assert len(sources) == 1, f"the runtime stage should copy exactly one oauth-relay from the build stage: {sources}"
    return sources[0]


@pytest.fixture(scope="module")
def runtime_replay(build_stage, runtime_stage, context) -> StageReplay:
    binary = built_binary_path(build_stage, runtime_stage)
    outputs = {binary: require_relay_bin()}
    return replay(runtime_stage, context, {build_stage.name: outputs, str(build_stage.index): outputs})


# ---------------------------------------------------------------------------------------------
# Packages: ldd, dpkg -S, apt-get install lines.

def linked_libraries(binary: Path) -> dict[str, str]:
    """soname -> resolved path, from ldd (fails on a library ldd cannot find)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = {}
    for line in out.splitlines():
        line = line.strip()
        if "not found" in line:
            pytest.fail(f"ldd {binary}: {line}")
        m = re.match(r"^(\S+) => (\S+) \(0x", line)
        if m:
            libs[m.group(1)] = m.group(2)
        elif re.match(r"^/\S+ \(0x", line):
            path = line.split()[0]
            libs[posixpath.basename(path)] = path
    assert libs, f"ldd found no libraries in {binary}:\n{out}"
    return libs


def owning_package(path: str) -> str | None:
    """The Debian package that ships `path` (merged /usr: tried as given, under /usr, resolved)."""
    candidates = [path]
    if path.startswith("/lib"):
        candidates.append("/usr" + path)
    real = os.path.realpath(path)
    candidates += [real, real[4:]] if real.startswith("/usr/") else [real]
    for candidate in candidates:
        result = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if result.returncode == 0 and result.stdout.strip():
            first = result.stdout.strip().splitlines()[0]
            if first.startswith("diversion"):
                continue
            return first.split(":", 1)[0].split(",")[0].strip()
    return None


def base_image_packages() -> set[str]:
    """Packages every Debian image has: the Essential ones and what they depend on."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Essential}\t${Pre-Depends}\t${Depends}\n"],
                         capture_output=True, text=True, check=True).stdout
    deps, todo = {}, []
    for line in out.splitlines():
        name, essential, pre, dep = (line.split("\t") + ["", "", ""])[:4]
        names = []
        for clause in filter(None, (c.strip() for c in (pre + "," + dep).split(","))):
            first = clause.split("|")[0].strip()
            names.append(re.split(r"[\s(:]", first, maxsplit=1)[0])
        deps[name] = names
        if essential == "yes":
            todo.append(name)
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(d for d in deps.get(name, []) if d in deps)
    assert "libc6" in seen, "dpkg lists no Essential packages depending on libc6: is this Debian?"
    return seen


def apt_installed(stage: Stage) -> set[str]:
    packages = set()
    for ins in stage.all("RUN"):
        for cmd in shell_commands(ins.rest):
            words = command_words(cmd)
            if words[:1] in (["apt-get"], ["apt"]) and "install" in words:
                packages |= {w.split("=")[0] for w in words[words.index("install") + 1:] if not w.startswith("-")}
    return packages


def swift_toolchain_static_dir(lib_path: str) -> Path | None:
    """<toolchain>/usr/lib/swift_static/linux for a library under <toolchain>/usr/lib/swift/linux."""
    p = Path(os.path.realpath(lib_path))
    if p.parent.name == "linux" and p.parent.parent.name == "swift":
        return p.parent.parent.parent / "swift_static" / "linux"
    return None


def ldconfig_path(soname_prefix: str, like: str) -> str | None:
    """Where the dynamic linker finds lib<soname_prefix>.so.N, for the ABI of the library `like`
    (a path ldd reported, e.g. libc's)."""
    entries = []
    for line in subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines():
        m = re.match(r"^\s*(\S+) \(([^)]*)\) => (\S+)$", line)
        if m:
            entries.append(m.groups())
    abi = next((tag for _, tag, path in entries if os.path.realpath(path) == os.path.realpath(like)), None)
    for soname, tag, path in entries:
        if soname.startswith(soname_prefix + ".so.") and tag == abi:
            return path
    return None


def check_libraries_provided(libs: dict[str, str], runtime_packages: set[str], static_stdlib: bool) -> set[str]:
    """Fails unless every library is provided; returns the packages the libraries need."""
    base = base_image_packages()
    needed, problems = set(), []
    for soname, path in sorted(libs.items()):
        static_dir = swift_toolchain_static_dir(path)
        if static_dir is not None:
            archive = static_dir / (Path(soname).name.split(".so")[0] + ".a")
            if not static_stdlib:
                problems.append(f"{soname} comes from the Swift toolchain ({path}) and the build is not --static-swift-stdlib")
            elif not archive.is_file():
                problems.append(f"{soname} ({path}) has no static archive {archive}: --static-swift-stdlib cannot link it in")
            continue
        package = owning_package(path)
        if package is None:
            problems.append(f"{soname} => {path} belongs to no Debian package (dpkg -S)")
            continue
        needed.add(package)
        if package not in runtime_packages and package not in base:
            problems.append(f"{soname} => {path} is in package {package}, which the runtime stage does not install")
    assert not problems, "\n".join(problems)
    return needed


# ---------------------------------------------------------------------------------------------
# Dockerfile: stages, build steps.

def test_dockerfile_has_a_swift_bookworm_build_stage_and_a_slim_runtime_stage(stages, build_stage, runtime_stage):
    assert re.fullmatch(r"swift:\d+\.\d+(\.\d+)?-bookworm", build_stage.image), \
        f"build stage FROM {build_stage.image}: a swift:6.x-bookworm image (Debian 12, like install-deps targets) expected"
    assert int(build_stage.image.split(":")[1].split(".")[0]) >= 6, "Swift 6 expected"
    assert build_stage.name, "the build stage needs a name (FROM ... AS build) for COPY --from"
    assert runtime_stage.image == "debian:bookworm-slim", f"runtime stage FROM {runtime_stage.image}"
    assert runtime_stage is not build_stage


def test_build_image_is_the_swift_release_used_here(build_stage):
    result = subprocess.run(["swift", "--version"], capture_output=True, text=True)
    version = result.stdout + result.stderr
    m = re.search(r"Swift version (\d+)\.(\d+)", version)
    assert m, f"swift --version: {version!r}"
    image = re.match(r"swift:(\d+)\.(\d+)", build_stage.image)
    assert image and image.groups() == m.groups(), \
        f"the image builds with Swift {image.group(1)}.{image.group(2)}, the tests here run Swift {m.group(1)}.{m.group(2)}"
    tools = re.search(r"swift-tools-version:\s*(\d+)\.(\d+)", (REPO / "Package.swift").read_text())
    assert tools and tuple(map(int, tools.groups())) <= tuple(map(int, image.groups())), \
        "Package.swift needs a newer Swift than the build image has"


def _runs_with(state: StageReplay, predicate) -> list[tuple[Instruction, str, frozenset, list[str]]]:
    found = []
    for ins, workdir, present in state.runs:
        for cmd in shell_commands(ins.rest):
            words = command_words(cmd)
            if words and predicate(words):
                found.append((ins, workdir, present, words))
    return found


def _is_swift_release_build(words: list[str]) -> bool:
    if words[:2] != ["swift", "build"] or "--show-bin-path" in words:
        return False
    joined = " ".join(words)
    return bool(re.search(r"(-c|--configuration)[ =]release\b", joined))


def test_build_stage_runs_install_deps_after_copying_it(build_replay):
    script = "scripts/install-deps"

    def invokes(words):
        words = words[1:] if words[0] in ("bash", "sh") else words
        return bool(words) and words[0].lstrip("./").endswith(script)

    runs = _runs_with(build_replay, invokes)
    assert runs, f"no RUN of {script} in the build stage (the README's dependency script)"
    for ins, workdir, present, words in runs:
        path = posixpath.normpath(posixpath.join(workdir, next(w for w in words if w.endswith(script))))
        assert path in present, f"line {ins.line}: RUN {path} before any COPY puts it there"
        assert build_replay.files[path].mode & 0o111, f"{script} is not executable in the image"
    builds = _runs_with(build_replay, _is_swift_release_build)
    assert builds and min(b[0].line for b in builds) > min(r[0].line for r in runs), \
        "install-deps must run before swift build"


def test_build_stage_builds_release_with_a_static_swift_stdlib(build_stage, runtime_stage, build_replay):
    builds = _runs_with(build_replay, _is_swift_release_build)
    assert builds, "no RUN swift build -c release in the build stage"
    assert all("--static-swift-stdlib" in words for *_, words in builds), \
        "swift build without --static-swift-stdlib: the runtime image would need the Swift toolchain's libraries"
    binary = built_binary_path(build_stage, runtime_stage)
    assert any(binary in ins.rest for ins, *_ in builds), \
        f"the runtime stage copies {binary}, which no RUN of the build stage that builds writes"


def test_build_context_is_a_package_swiftpm_loads(build_replay, tmp_path):
    """What the build stage's COPYs take from a clean checkout, laid out as in the image: SwiftPM
    must load the manifest with every target's directory present (test targets included)."""
    workdirs = {w for ins, w, present in build_replay.runs
                if any(_is_swift_release_build(command_words(c)) for c in shell_commands(ins.rest))}
    assert len(workdirs) == 1, f"swift build runs in {workdirs}"
    workdir = workdirs.pop()
    materialize(build_replay, tmp_path / "image", only_under=workdir)
    src = tmp_path / "image" / workdir.lstrip("/")
    assert (src / "Package.swift").is_file(), f"no Package.swift in the build stage's {workdir}"
    result = subprocess.run(["swift", "package", "--scratch-path", str(tmp_path / "scratch"), "describe", "--type", "json"],
                            cwd=src, capture_output=True, text=True, timeout=scaled(120))
    assert result.returncode == 0, f"swift package describe in the build context failed:\n{result.stderr}"
    described = json.loads(result.stdout)
    products = [p["name"] for p in described["products"]]
    assert "oauth-relay" in products, products
    for target in described["targets"]:
        assert (src / target["path"]).is_dir(), f"target {target['name']}: {target['path']} not copied"
    # What the build compiles: the product's targets with --product, else every target but the
    # tests. None may import XCTest, which has no static variant for --static-swift-stdlib (found
    # by the real build, make test-container: the tests' support libraries are plain targets).
    words = next(words for *_, words in _runs_with(build_replay, _is_swift_release_build))
    product = words[words.index("--product") + 1] if "--product" in words else None
    compiled = [t for t in described["targets"] if t["type"] != "test"
                and (product is None or product in t.get("product_memberships", []))]
    for target in compiled:
        for source in target["sources"]:
            text = (src / target["path"] / source).read_text(errors="replace")
            assert not re.search(r"^\s*(@testable\s+)?import\s+XCTest\b", text, re.M), \
                f"swift build {' '.join(words[2:])} compiles {target['name']}, whose {source} imports XCTest"


# ---------------------------------------------------------------------------------------------
# Dockerfile: runtime stage.

def test_runtime_stage_provides_every_library_the_binary_links(build_replay, runtime_stage):
    libs = linked_libraries(require_relay_bin())
    static = all("--static-swift-stdlib" in w for *_, w in _runs_with(build_replay, _is_swift_release_build))
    runtime_packages = apt_installed(runtime_stage)
    needed = check_libraries_provided(libs, runtime_packages, static)
    # What the static Swift stdlib adds to the link line (static-stdlib-args.lnk: -lstdc++, -lm...).
    toolchain_libs = [p for p in libs.values() if swift_toolchain_static_dir(p)]
    if static and toolchain_libs:
        static_dir = swift_toolchain_static_dir(toolchain_libs[0])
        lnk = static_dir / "static-stdlib-args.lnk"
        assert lnk.is_file(), f"{lnk} missing: cannot tell what --static-swift-stdlib links"
        extra = {}
        libc = next(p for soname, p in libs.items() if soname.startswith("libc.so."))
        for lib in re.findall(r"(?m)^-l(\S+)", lnk.read_text()):
            if (static_dir / f"lib{lib}.a").is_file():
                continue
            path = ldconfig_path(f"lib{lib}", libc)
            assert path, f"--static-swift-stdlib links -l{lib}, which ldconfig does not know"
            extra[posixpath.basename(path)] = path
        needed |= check_libraries_provided(extra, runtime_packages, static)
    unneeded = runtime_packages - needed - RUNTIME_EXTRAS
    assert not unneeded, f"the runtime stage installs {sorted(unneeded)}, which no linked library needs"
    for package in runtime_packages:
        shown = subprocess.run(["apt-cache", "show", package], capture_output=True, text=True)
        installed = subprocess.run(["dpkg-query", "-W", package], capture_output=True, text=True)
        assert shown.returncode == 0 or installed.returncode == 0, f"{package}: no such Debian 12 package"


def _user(runtime_stage: Stage) -> tuple[int, int]:
    ins = runtime_stage.last("USER")
    assert ins is not None, "the runtime stage has no USER: it would run as root"
    uid, _, gid = ins.rest.partition(":")
    assert uid.isdigit() and (not gid or gid.isdigit()), \
        f"USER {ins.rest}: numeric uid[:gid] expected (Kubernetes' runAsNonRoot cannot check a name)"
    return int(uid), int(gid or uid)


def test_runtime_stage_runs_as_a_numeric_non_root_user_it_creates(runtime_stage):
    uid, gid = _user(runtime_stage)
    assert uid != 0 and gid != 0, f"USER {uid}:{gid} is root"
    assert runtime_stage.instructions.index(runtime_stage.last("USER")) > max(
        runtime_stage.instructions.index(i) for i in runtime_stage.all("RUN")), "a RUN after USER: move USER last"
    created_uid = created_gid = None
    for ins in runtime_stage.all("RUN"):
        for cmd in shell_commands(ins.rest):
            words = command_words(cmd)
            for opt in ("--uid", "-u"):
                if words[:1] == ["useradd"] and opt in words:
                    created_uid = int(words[words.index(opt) + 1])
            for opt in ("--gid", "-g"):
                if words[:1] == ["groupadd"] and opt in words:
                    created_gid = int(words[words.index(opt) + 1])
    assert created_uid == uid, f"USER {uid}, but useradd creates uid {created_uid}"
    assert created_gid == gid, f"USER group {gid}, but groupadd creates gid {created_gid}"


def healthcheck_cmd(stage: Stage) -> list[str]:
    health = stage.last("HEALTHCHECK")
    assert health is not None, "no HEALTHCHECK in the runtime stage"
    words = health.rest.split(None, 1)
    argv = Instruction("CMD", {}, words[1] if len(words) > 1 else "", health.line).exec_form() \
        if words and words[0].upper() == "CMD" else None
    assert argv, f"HEALTHCHECK {health.rest}: CMD in exec form expected (no shell needed)"
    return argv


def test_runtime_stage_entrypoint_cmd_ports_and_healthcheck(runtime_stage, runtime_replay):
    entrypoint, cmd = runtime_stage.last("ENTRYPOINT"), runtime_stage.last("CMD")
    assert entrypoint and entrypoint.exec_form() == ["oauth-relay"], "ENTRYPOINT [\"oauth-relay\"] (exec form) expected"
    assert cmd and cmd.exec_form() == EXPECTED_CMD, f"CMD {cmd and cmd.rest}: {json.dumps(EXPECTED_CMD)} expected"
    assert resolve_in_path("oauth-relay", runtime_replay), "the runtime stage puts no oauth-relay on the PATH"
    assert CONFIG_PATH in runtime_replay.files, f"the image has no {CONFIG_PATH}, which the CMD reads"
    assert runtime_replay.files[CONFIG_PATH].mode & 0o004, f"{CONFIG_PATH} is not readable by the image's user"
    exposed = {int(p.split("/")[0]) for ins in runtime_stage.all("EXPOSE") for p in ins.rest.split()}
    assert {PROXY_PORT, ADMIN_PORT} <= exposed, f"EXPOSE {sorted(exposed)}"
    argv = healthcheck_cmd(runtime_stage)
    health = runtime_stage.last("HEALTHCHECK")
    assert "timeout" in health.flags and "interval" in health.flags, "HEALTHCHECK without --interval/--timeout"
    program = resolve_in_path(argv[0], runtime_replay)
    assert program, f"HEALTHCHECK runs {argv[0]}, which the runtime stage does not copy onto the PATH"
    assert runtime_replay.files[program].mode & 0o001, f"{program} is not executable by the image's user"


def test_cmd_arguments_are_accepted_by_the_binary(runtime_stage):
    cmd = runtime_stage.last("CMD").exec_form()
    top = run_cli("--help")
    assert top.returncode == 0, top.stderr
    assert re.search(rf"(?m)^\s+{re.escape(cmd[0])}\b", top.stdout), f"oauth-relay --help lists no subcommand {cmd[0]}"
    help_ = run_cli(cmd[0], "--help")
    assert help_.returncode == 0, help_.stderr
    words = cmd[1:]
    while words:
        flag = words.pop(0)
        assert flag.startswith("--"), f"CMD argument {flag!r} where an option was expected"
        m = re.search(rf"(?m)^\s+{re.escape(flag)}(?: <[^>]+>)?", help_.stdout)
        assert m, f"`oauth-relay {cmd[0]} --help` lists no {flag}:\n{help_.stdout}"
        if "<" in m.group(0):
            value = words.pop(0)
            block = help_.stdout[m.end():].split("\n  --", 1)[0]
            values = re.search(r"\(values: ([^;)]+)", block.replace("\n", " "))
            if values:
                allowed = [v.strip() for v in values.group(1).split(",")]
                assert value in allowed, f"{flag} {value}: the binary accepts {allowed}"


# ---------------------------------------------------------------------------------------------
# The runtime stage laid out in a scratch root, run.

class StubAdmin:
    """An HTTP server answering every GET with a fixed status (or, silent, never answering)."""

    def __init__(self, status: int = 200, silent: bool = False):
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                stub.paths.append(self.path)
                if silent:
                    stub.release.wait(10)
                    return
                body = b"ok\n"
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.paths: list[str] = []
        self.release = threading.Event()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def image_root(runtime_replay):
    """The runtime stage's files under a scratch root readable by the image's user."""
    root = Path(tempfile.mkdtemp(prefix="oauth-relay-image-"))
    try:
        root.chmod(0o755)
        materialize(runtime_replay, root)
        for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
            d.chmod(0o755)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def healthcheck_argv(runtime_stage: Stage, runtime_replay: StageReplay, root: Path) -> list[str]:
    argv = healthcheck_cmd(runtime_stage)
    return [str(root / resolve_in_path(argv[0], runtime_replay).lstrip("/")), *argv[1:]]


def run_healthcheck(argv: list[str], addr: str, timeout: float = 10) -> subprocess.CompletedProcess:
    env = {"PATH": DEFAULT_PATH, "OAUTH_RELAY_HEALTHCHECK_ADDR": addr}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=scaled(timeout))


def test_healthcheck_script_passes_on_200_only(runtime_stage, runtime_replay, image_root):
    argv = healthcheck_argv(runtime_stage, runtime_replay, image_root)
    ok, failing, silent = StubAdmin(200), StubAdmin(503), StubAdmin(silent=True)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    try:
        result = run_healthcheck(argv, f"127.0.0.1:{ok.port}")
        assert result.returncode == 0, f"healthcheck against a 200: exit {result.returncode}\n{result.stderr}"
        assert ok.paths == ["/healthz"], ok.paths
        result = run_healthcheck(argv, f"127.0.0.1:{failing.port}")
        assert result.returncode == 1, f"healthcheck against a 503: exit {result.returncode} (1 = unhealthy for Docker)"
        result = run_healthcheck(argv, f"127.0.0.1:{closed.getsockname()[1]}")
        assert result.returncode == 1, f"healthcheck against a closed port: exit {result.returncode}"
        result = run_healthcheck(argv, f"127.0.0.1:{silent.port}")
        assert result.returncode == 1, f"healthcheck against a silent server: exit {result.returncode}"
    finally:
        for stub in (ok, failing, silent):
            stub.close()
        closed.close()


def test_healthcheck_script_defaults_to_the_admin_port(runtime_stage, runtime_replay):
    program = resolve_in_path(healthcheck_cmd(runtime_stage)[0], runtime_replay)
    text = runtime_replay.files[program].source.read_text()
    assert f"127.0.0.1:{ADMIN_PORT}" in text and "/healthz" in text, \
        f"{program} should default to http://127.0.0.1:{ADMIN_PORT}/healthz"


class ImageProcess:
    """The image's ENTRYPOINT + CMD run from a scratch root, as the image's user when possible."""

    def __init__(self, runtime_stage: Stage, runtime_replay: StageReplay, root: Path, env: dict, log: Path):
        entry = runtime_stage.last("ENTRYPOINT").exec_form() + runtime_stage.last("CMD").exec_form()
        argv = [str(root / resolve_in_path(entry[0], runtime_replay).lstrip("/"))]
        for arg in entry[1:]:
            argv.append(str(root / arg.lstrip("/")) if arg in runtime_replay.files else arg)
        self.uid, self.gid = _user(runtime_stage)
        as_user = {}
        if os.geteuid() == 0:
            as_user = {"user": self.uid, "group": self.gid, "extra_groups": []}
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, env={"PATH": DEFAULT_PATH, **env}, cwd="/", stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=out, **as_user)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=scaled(10))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                pytest.fail("the relay did not stop within 10 s of SIGTERM")
        return self.proc.returncode


@pytest.fixture
def image_process(runtime_stage, runtime_replay, image_root, tmp_path):
    """Starts the image's command with its baked-in config; the environment gives the token
    endpoint (a closed port: the identity keeps failing, the relay keeps serving), the upstream,
    free ports, and the client secret file."""
    started = []

    def start():
        secret = image_root / SECRETS_DIR.lstrip("/") / "oauth-client-secret"
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.parent.chmod(0o755)
        secret.write_text("s3cret-for-the-image-test\n")
        secret.chmod(0o400)
        closed = free_port()
        listen, admin = free_port(), free_port()
        env = {
            "OAUTH_TOKEN_URL": f"http://127.0.0.1:{closed}/token",
            "OAUTH_CLIENT_ID": "image-test",
            "UPSTREAM_URL": f"http://127.0.0.1:{closed}",
            "OAUTH_CLIENT_SECRET_FILE": str(secret),
            "OAUTH_RELAY_LISTEN": f"127.0.0.1:{listen}",
            "OAUTH_RELAY_ADMIN": f"127.0.0.1:{admin}",
        }
        proc = ImageProcess(runtime_stage, runtime_replay, image_root, env, tmp_path / "image.log")
        if os.geteuid() == 0:
            os.chown(secret, proc.uid, proc.gid)
        started.append(proc)
        proc.listen, proc.admin = listen, admin

        def listening():
            if proc.proc.poll() is not None:
                pytest.fail(f"the image's command exited with {proc.proc.returncode}:\n{proc.log.read_text()}")
            return can_connect("127.0.0.1", listen)
        wait_until(listening, timeout=10, message=f"the image's command to listen on {listen}")
        return proc

    yield start
    for proc in started:
        if proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait()


def test_image_command_serves_as_the_image_user_and_logs_json(image_process):
    proc = image_process()
    status = Path(f"/proc/{proc.proc.pid}/status").read_text()
    uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
    if os.geteuid() == 0:
        assert uid_line.split()[1:] == [str(proc.uid)] * 4, f"running as {uid_line}, not the image's user {proc.uid}"
    assert proc.stop() == 0, proc.log.read_text()
    lines = [line for line in proc.log.read_text().splitlines() if line.strip()]
    assert lines, "the relay logged nothing"
    for line in lines:
        try:
            assert isinstance(json.loads(line), dict)
        except ValueError:
            pytest.fail(f"--log-format json, but a log line is no JSON object: {line!r}")
    assert "s3cret-for-the-image-test" not in proc.log.read_text(), "the client secret was logged"


def test_image_healthcheck_passes_against_the_running_relay(image_process, runtime_stage, runtime_replay, image_root):
    proc = image_process()
    argv = healthcheck_argv(runtime_stage, runtime_replay, image_root)
    last = []

    def healthy():
        result = run_healthcheck(argv, f"127.0.0.1:{proc.admin}")
        last[:] = [result]
        return result.returncode == 0
    try:
        wait_until(healthy, timeout=10, interval=0.2,
                   message=f"the HEALTHCHECK to pass against the relay's admin listener "
                           f"(last: exit {last[0].returncode if last else '?'}, {last[0].stderr.strip() if last else ''})")
    finally:
        code = proc.stop()
    assert code == 0, proc.log.read_text()


# ---------------------------------------------------------------------------------------------
# Configs mounted by compose.yaml and kubernetes.yaml, validated by the binary.

def host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def assert_reachable_on_loopback(listen: str, what: str):
    host, port = host_port(listen)
    assert port == PROXY_PORT, f"{what}: the relay listens on {listen}, the app calls port {PROXY_PORT}"
    assert host in ("127.0.0.1", "0.0.0.0", "::", "localhost"), \
        f"{what}: the relay listens on {listen}, which http://127.0.0.1:{PROXY_PORT} does not reach"


def test_image_config_is_valid_with_its_documented_environment(tmp_path):
    env = {"OAUTH_TOKEN_URL": "https://idp.example.com/oauth2/token", "OAUTH_CLIENT_ID": "app",
           "UPSTREAM_URL": "https://api.example.com"}
    text = (DOCKER / "config.json").read_text()
    for name in env:
        assert name in DOCKERFILE.read_text(), f"the Dockerfile's comments do not mention {name}, which its config needs"
    check_config(tmp_path, text, {name: "s3cret" for name in secrets_referenced(text)}, env)
    config = json.loads(text)
    assert host_port(expand_env(config["admin"], {}))[1] == ADMIN_PORT
    assert host_port(expand_env(config["listen"], {}))[1] == PROXY_PORT


# ---------------------------------------------------------------------------------------------
# compose.yaml

def compose_interpolate(value, env: dict[str, str]):
    """Compose's own ${VAR}, ${VAR:-default}, ${VAR:?error}, $$ interpolation; a variable without
    a value gets a made-up test value."""
    if isinstance(value, dict):
        return {k: compose_interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [compose_interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(4)
        op, arg = m.group(2), m.group(3)
        if name in env:
            return env[name]
        if op in (":-", "-"):
            return arg
        env[name] = "http://127.0.0.1:9/" if name.endswith("_URL") else f"test-{name.lower()}"
        return env[name]
    return re.sub(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)", sub, value)


@pytest.fixture(scope="module")
def compose_env() -> dict[str, str]:
    return {}


@pytest.fixture(scope="module")
def compose(compose_env) -> dict:
    return compose_interpolate(yaml.safe_load(COMPOSE.read_text()), compose_env)


def _compose_relay(compose) -> tuple[str, dict]:
    services = compose.get("services", {})
    relays = [(n, s) for n, s in services.items()
              if "oauth-relay" in str(s.get("image", "")) or s.get("build")]
    assert len(relays) == 1, f"exactly one relay service (built from Docker/Dockerfile) expected: {[n for n, _ in relays]}"
    return relays[0]


def _env_dict(environment) -> dict[str, str]:
    if isinstance(environment, list):
        return dict(e.split("=", 1) if "=" in e else (e, "") for e in environment)
    return {k: "" if v is None else str(v) for k, v in (environment or {}).items()}


def test_compose_builds_the_image_from_the_repository_root(compose):
    _, relay = _compose_relay(compose)
    build = relay["build"]
    build = {"context": build} if isinstance(build, str) else build
    assert (DOCKER / build["context"]).resolve() == REPO.resolve(), \
        f"build context {build['context']} is not the repository root (the Dockerfile's COPYs are relative to it)"
    assert ((DOCKER / build["context"]) / build.get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE.resolve()


def test_compose_legacy_service_shares_the_relays_network_namespace(compose):
    name, relay = _compose_relay(compose)
    others = {n: s for n, s in compose["services"].items() if n != name}
    assert others, "no legacy service beside the relay"
    config = json.loads((DOCKER / _compose_config_source(relay)).read_text())
    listen = expand_env(config["listen"], _env_dict(relay.get("environment")))
    for other_name, svc in others.items():
        assert svc.get("network_mode") == f"service:{name}", \
            f"{other_name}: network_mode service:{name} expected (the relay's loopback is its loopback)"
        assert "ports" not in svc and "networks" not in svc, f"{other_name}: ports/networks conflict with network_mode"
        assert f"http://127.0.0.1:{PROXY_PORT}" in json.dumps(svc), f"{other_name} does not call http://127.0.0.1:{PROXY_PORT}"
        depends = svc.get("depends_on", {})
        assert isinstance(depends, dict) and depends.get(name, {}).get("condition") == "service_healthy", \
            f"{other_name} should wait for the relay's HEALTHCHECK (depends_on {name}: condition: service_healthy)"
        assert_reachable_on_loopback(listen, other_name)


def _compose_config_source(relay: dict) -> str:
    mounts = []
    for v in relay.get("volumes", []):
        if isinstance(v, str):
            parts = v.split(":")
            v = {"type": "bind", "source": parts[0], "target": parts[1], "read_only": "ro" in parts[2:]}
        if v.get("target") == CONFIG_PATH:
            mounts.append(v)
    assert len(mounts) == 1, f"the relay service mounts nothing at {CONFIG_PATH}"
    mount = mounts[0]
    assert mount.get("type") == "bind" and mount.get("read_only") is True, f"{CONFIG_PATH} should be a read-only bind mount"
    assert (DOCKER / mount["source"]).is_file(), f"{mount['source']} (relative to Docker/) does not exist"
    return mount["source"]


def test_compose_mounts_the_config_read_only_and_secrets_under_run_secrets(compose, compose_env, tmp_path, runtime_stage):
    _, relay = _compose_relay(compose)
    source = _compose_config_source(relay)
    uid, _ = _user(runtime_stage)
    secrets, defined = {}, compose.get("secrets", {})
    for entry in relay.get("secrets", []):
        entry = {"source": entry} if isinstance(entry, str) else entry
        src = entry["source"]
        assert src in defined, f"secret {src} is not defined at the top level"
        target = entry.get("target", src)
        target = target if target.startswith("/") else f"{SECRETS_DIR}/{target}"
        assert posixpath.dirname(target) == SECRETS_DIR, f"secret {src} is mounted at {target}, not under {SECRETS_DIR}"
        spec = defined[src]
        if "environment" in spec:
            assert not relay.get("read_only"), \
                f"secret {src} comes from the environment, which compose cannot inject into a read-only container"
            readable = str(entry.get("uid", "0")) == str(uid) and int(entry.get("mode", 0o444)) & 0o400 \
                or int(entry.get("mode", 0o444)) & 0o004
            assert readable, f"secret {src} is not readable by the image's uid {uid}"
            secrets[posixpath.basename(target)] = f"value-of-{spec['environment']}"
        else:
            assert "file" in spec, f"secret {src}: file or environment expected"
            secrets[posixpath.basename(target)] = "file-secret"
    assert secrets, f"the relay service gets no secrets at {SECRETS_DIR}"
    ports = [str(p) for p in relay.get("ports", [])]
    config_text = (DOCKER / source).read_text()
    env = _env_dict(relay.get("environment"))
    admin = host_port(expand_env(json.loads(config_text)["admin"], env))
    assert all(p.rsplit(":", 1)[-1].split("/")[0] == str(admin[1]) for p in ports), \
        f"published ports {ports}: only the admin port {admin[1]} should be (the proxy stays on loopback)"
    check_config(tmp_path, config_text, secrets, env)


# ---------------------------------------------------------------------------------------------
# kubernetes.yaml

@pytest.fixture(scope="module")
def k8s() -> dict[str, list[dict]]:
    docs = [d for d in yaml.safe_load_all(KUBERNETES.read_text()) if d]
    by_kind: dict[str, list[dict]] = {}
    for d in docs:
        assert "apiVersion" in d and "kind" in d and d.get("metadata", {}).get("name"), f"incomplete object: {d}"
        by_kind.setdefault(d["kind"], []).append(d)
    return by_kind


def _pod(k8s) -> dict:
    assert len(k8s.get("Pod", [])) == 1, "exactly one Pod expected"
    return k8s["Pod"][0]


def _named_port(container, port) -> int:
    if isinstance(port, int):
        return port
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    assert port in ports, f"probe port {port!r} is not a named port of the container"
    return ports[port]


def test_kubernetes_pod_runs_the_relay_as_a_sidecar_of_the_app(k8s):
    pod = _pod(k8s)
    container, _ = relay_container(pod)
    apps = [c for c in pod["spec"].get("containers", []) if c is not container]
    assert apps, "no app container beside the relay"
    config = json.loads(k8s_config(k8s, pod, container)[0])
    for app in apps:
        assert f"http://127.0.0.1:{PROXY_PORT}" in json.dumps(app), f"{app['name']} does not call http://127.0.0.1:{PROXY_PORT}"
        assert_reachable_on_loopback(expand_env(config["listen"], {}), app["name"])
    for key in ("command", "args"):
        assert key not in container or key == "args" and container[key] == EXPECTED_CMD, \
            f"the relay container overrides the image's {key}; keep the image's ENTRYPOINT/CMD"


def test_kubernetes_probes_use_healthz_and_readyz_on_the_admin_port(k8s):
    pod = _pod(k8s)
    container, _ = relay_container(pod)
    config = json.loads(k8s_config(k8s, pod, container)[0])
    admin_host, admin_port = host_port(expand_env(config["admin"], {}))
    assert admin_port == ADMIN_PORT, f"config admin {config['admin']}"
    assert admin_host not in ("127.0.0.1", "localhost", "::1"), \
        f"admin {config['admin']}: the kubelet probes over the Pod IP, a loopback admin listener never answers"
    expected = {"readinessProbe": "/readyz", "livenessProbe": "/healthz"}
    for probe, path in expected.items():
        assert probe in container, f"no {probe}"
        get = container[probe].get("httpGet")
        assert get, f"{probe}: httpGet expected"
        assert get["path"] == path, f"{probe} path {get['path']}, {path} expected"
        assert _named_port(container, get["port"]) == ADMIN_PORT, f"{probe} port {get['port']}"
    if "startupProbe" in container:
        assert container["startupProbe"]["httpGet"]["path"] == "/healthz", \
            "a startup probe on /readyz would restart the relay whenever the IdP is down at start"


def test_kubernetes_mounts_the_config_map_and_the_secret(k8s, tmp_path):
    pod = _pod(k8s)
    container, _ = relay_container(pod)
    config_text, config_mount = k8s_config(k8s, pod, container)
    assert config_mount.get("readOnly") is True, "the config mount should be readOnly"
    volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    secret_mounts = [m for m in container.get("volumeMounts", []) if "secret" in volumes.get(m["name"], {})]
    assert [m["mountPath"].rstrip("/") for m in secret_mounts] == [SECRETS_DIR], \
        f"the Secret should be mounted at {SECRETS_DIR}: {[m['mountPath'] for m in secret_mounts]}"
    mount = secret_mounts[0]
    assert mount.get("readOnly") is True and "subPath" not in mount
    vol = volumes[mount["name"]]["secret"]
    objs = [s for s in k8s.get("Secret", []) if s["metadata"]["name"] == vol["secretName"]]
    assert objs, f"Secret {vol['secretName']} not in the file"
    values = dict(objs[0].get("stringData", {}))
    values.update({k: base64.b64decode(v).decode() for k, v in objs[0].get("data", {}).items()})
    files = {i["path"]: values[i["key"]] for i in vol["items"]} if "items" in vol else values
    pod_sc = pod["spec"].get("securityContext", {})
    mode = vol.get("defaultMode", 0o644)
    assert mode & 0o004 or (mode & 0o040 and pod_sc.get("fsGroup") == _run_as(pod, container)[1]), \
        f"secret files mode {oct(mode)} without a matching fsGroup: the relay's user cannot read them"
    env = {e["name"]: e.get("value", "") for e in container.get("env", []) if "value" in e}
    check_config(tmp_path, config_text, files, env)


def _run_as(pod, container) -> tuple[int | None, int | None]:
    pod_sc, sc = pod["spec"].get("securityContext", {}), container.get("securityContext", {})
    return sc.get("runAsUser", pod_sc.get("runAsUser")), sc.get("runAsGroup", pod_sc.get("runAsGroup"))


def _cpu(q) -> float:
    q = str(q)
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def _bytes(q) -> float:
    q = str(q)
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 1e3, "M": 1e6, "G": 1e9}
    for suffix, factor in units.items():
        if q.endswith(suffix):
            return float(q[:-len(suffix)]) * factor
    return float(q)


def test_kubernetes_relay_is_non_root_and_bounded(k8s, runtime_stage):
    pod = _pod(k8s)
    container, _ = relay_container(pod)
    pod_sc, sc = pod["spec"].get("securityContext", {}), container.get("securityContext", {})
    assert sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True, "runAsNonRoot: true expected"
    uid, gid = _run_as(pod, container)
    image_uid, image_gid = _user(runtime_stage)
    assert uid in (None, image_uid) and gid in (None, image_gid), \
        f"runAsUser/Group {uid}:{gid} differ from the image's USER {image_uid}:{image_gid}"
    assert sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation: false expected"
    assert sc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem: true expected"
    assert "ALL" in sc.get("capabilities", {}).get("drop", []), "capabilities: drop [ALL] expected"
    resources = container.get("resources", {})
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(resources.get(kind, {})), f"resources.{kind} needs cpu and memory"
    assert _cpu(resources["requests"]["cpu"]) <= _cpu(resources["limits"]["cpu"])
    assert _bytes(resources["requests"]["memory"]) <= _bytes(resources["limits"]["memory"])
    config = json.loads(k8s_config(k8s, pod, container)[0])
    workers = config.get("workers", 0)
    assert 1 <= workers <= max(1, math.ceil(_cpu(resources["limits"]["cpu"]))), \
        f"workers {workers} with a CPU limit of {resources['limits']['cpu']} (0 = one per CPU of the node)"


# ---------------------------------------------------------------------------------------------
# Opt-in: the build stage's real build (minutes).

@pytest.mark.skipif(os.environ.get("OAUTH_RELAY_DOCKER_BUILD") != "1",
                    reason="set OAUTH_RELAY_DOCKER_BUILD=1 to run the build stage's swift build (minutes)")
def test_build_stage_build_links_only_what_the_runtime_stage_installs(build_replay, runtime_stage, tmp_path):
    builds = _runs_with(build_replay, _is_swift_release_build)
    ins, workdir, _, words = builds[0]
    materialize(build_replay, tmp_path / "image", only_under=workdir)
    src = tmp_path / "image" / workdir.lstrip("/")
    scratch = tmp_path / "scratch"
    result = subprocess.run([*words, "--scratch-path", str(scratch)], cwd=src, capture_output=True, text=True,
                            timeout=scaled(1800))
    assert result.returncode == 0, f"{' '.join(words)} failed:\n{result.stdout[-5000:]}{result.stderr[-5000:]}"
    bin_dir = subprocess.run([*words, "--scratch-path", str(scratch), "--show-bin-path"], cwd=src,
                             capture_output=True, text=True, check=True).stdout.strip()
    libs = linked_libraries(Path(bin_dir) / "oauth-relay")
    toolchain = [p for p in libs.values() if swift_toolchain_static_dir(p)]
    assert not toolchain, f"the static build still links Swift toolchain libraries: {toolchain}"
    needed = check_libraries_provided(libs, apt_installed(runtime_stage), static_stdlib=True)
    unneeded = apt_installed(runtime_stage) - needed - RUNTIME_EXTRAS
    assert not unneeded, f"the runtime stage installs {sorted(unneeded)}, which the static binary does not link"
