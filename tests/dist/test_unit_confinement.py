"""What the relay does, traced (strace) while the dist binary serves the demo and a request, against
what oauth-relay.service allows it: these tests are why each confinement option is in the unit.
(No systemd runs here as PID 1 to start the unit itself; the TLS and Redis paths are not traced.)"""

import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import DIST_BIN, REPO
from deadlines import wait_until
from processes import can_connect, free_port

UNIT = REPO / "packaging" / "oauth-relay.service"


def unit_values(key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in UNIT.read_text().splitlines() if line.startswith(key + "=")]


def syscall_groups() -> dict[str, list[str]]:
    """systemd's syscall groups, each with its members (syscalls and groups)."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout
    groups: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def expand(name: str, groups: dict[str, list[str]]) -> set[str]:
    if not name.startswith("@"):
        return {name}
    return set().union(*(expand(member, groups) for member in groups[name]))


def allowed_syscalls() -> set[str]:
    groups = syscall_groups()
    allowed: set[str] = set()
    for value in unit_values("SystemCallFilter"):
        if value.startswith("~"):
            allowed -= set().union(*(expand(word, groups) for word in value[1:].split()))
        else:
            allowed |= set().union(*(expand(word, groups) for word in value.split()))
    return allowed


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> str:
    """The demo under `strace -f`: start, one proxied request, the admin's /version, SIGTERM."""
    work = tmp_path_factory.mktemp("trace")
    listen, upstream, admin = free_port(), free_port(), free_port()
    out = work / "strace"
    with open(work / "demo.log", "wb") as log:
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-o", str(out), str(DIST_BIN), "demo", "--listen", f"127.0.0.1:{listen}",
                                   "--upstream-port", str(upstream), "--admin", f"127.0.0.1:{admin}"],
                                  stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: can_connect("127.0.0.1", listen) and can_connect("127.0.0.1", admin), 30, "the traced demo's listeners")
        with urllib.request.urlopen(f"http://127.0.0.1:{listen}/traced", timeout=10) as response:
            assert response.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{admin}/version", timeout=10) as response:
            assert response.status == 200
    finally:
        relay = wait_until(lambda: _child_pid(tracer.pid), 5, "the traced relay's pid")
        subprocess.run(["kill", "-TERM", str(relay)], check=False)
        tracer.wait(timeout=30)
    return out.read_text()


def _child_pid(pid: int) -> int | None:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    words = children.read_text().split() if children.exists() else []
    return int(words[0]) if words else None


def test_every_system_call_is_in_the_units_filter(trace):
    used = set(re.findall(r"^\d+\s+([a-z0-9_]+)\(", trace, re.MULTILINE)) - {"execve"}  # execve: strace starting it
    assert used, "strace recorded no system call"
    refused = sorted(used - allowed_syscalls())
    print(f"\n{len(used)} system calls, all in SystemCallFilter" if not refused else "")
    assert not refused, f"the relay calls what SystemCallFilter refuses: {refused}"


def test_sockets_are_of_the_families_the_unit_allows(trace):
    families = set(re.findall(r"socket\((AF_[A-Z0-9]+)", trace))
    [allowed] = unit_values("RestrictAddressFamilies")
    assert families and families <= set(allowed.split()), families


def test_no_memory_is_writable_and_executable(trace):
    # MemoryDenyWriteExecute refuses these; Swift compiles ahead of time and needs none.
    both = [line for line in trace.splitlines()
            if re.search(r"\b(mmap|mprotect|pkey_mprotect)\(", line) and "PROT_WRITE" in line and "PROT_EXEC" in line]
    assert not both, both[:5]


def test_proc_is_read_only_for_the_process_itself(trace):
    # ProcSubset=pid hides the rest of /proc; ProtectProc=invisible other processes.
    opened = set(re.findall(r'"(/proc/[^"]*)"', trace))
    assert all(path.startswith("/proc/self/") or re.match(r"/proc/\d+/", path) for path in opened), opened


def test_nothing_is_written_outside_the_state_directory(trace):
    # ProtectSystem=strict: the demo keeps its tokens in memory and opens no file for writing.
    writes = [line for line in trace.splitlines() if re.search(r"\bopen(at)?\(.*O_(WRONLY|RDWR|CREAT)", line)
              and "/dev/null" not in line]
    assert not writes, writes[:5]
