"""`oauth-relay login` for a device login on a terminal: the verification URI drawn as a QR code,
which zbarimg (Debian zbar-tools, a decoder the project did not write) reads back. The command
runs with its standard error on a pseudo-terminal (os.openpty), against the stub's device
endpoint, with no relay running: it serves the configuration itself until the stub's first poll
answer logs the person in. In a pipe, or with --no-qr, none of the drawing is printed.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import termios
import time

import pytest

from idp_relay import oauth_route
from deadlines import scaled
from processes import LOOPBACK, free_port, relay_config, require_relay_bin

pytestmark = pytest.mark.oauth

USER_CODE = "WDJB-MJHT"
SCAN_PROMPT = "Or open it on a phone by scanning this QR code:"
HALF_BLOCKS = {"█": (1, 1), "▀": (1, 0), "▄": (0, 1), " ": (0, 0)}
SGR = re.compile(r"\x1b\[[0-9;]*m")


def login_config(tmp_path, stub, **device) -> str:
    stub.script(device={"kind": "device", "user_code": USER_CODE, **device})
    identity = stub.login_identity("device_code", scope="orders.read")
    config = relay_config(f"{LOOPBACK}:{free_port()}", [oauth_route("http://127.0.0.1:9", "/", "me")],
                          identities={"me": identity})
    path = tmp_path / "login.json"
    path.write_text(json.dumps(config))
    return str(path)


def environment(state) -> dict:
    """The default token store, for a login with no relay running, in `state` (a fresh one logs in
    again: a stored login would end the command before any code is shown)."""
    return {**os.environ, "XDG_STATE_HOME": str(state)}


def login_on_terminal(state, config: str, *flags: str, columns: int = 100) -> tuple[int, str]:
    """Runs the login with standard error on a pseudo-terminal `columns` wide; returns the exit
    code and everything written there (the terminal's CR LF turned back into LF)."""
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen([str(require_relay_bin()), "login", "--config", config, "me", "--timeout", "20", *flags],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=terminal,
                               env=environment(state))
    os.close(terminal)
    output = bytearray()
    deadline = time.monotonic() + scaled(30)
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: every copy of the terminal's other end is closed, the command ended
                break
            if not chunk:
                break
            output += chunk
        else:
            pytest.fail(f"oauth-relay login did not end in time; it wrote: {output.decode(errors='replace')[-2000:]}")
        return process.wait(timeout=scaled(10)), output.decode().replace("\r\n", "\n")
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()


def drawing(text: str) -> list[list[int]]:
    """The modules of the drawing after the scan prompt: each line two rows of modules."""
    assert SCAN_PROMPT in text, f"no QR code in: {text}"
    lines = text.split(SCAN_PROMPT, 1)[1].split("\n")[2:]
    rows: list[list[int]] = []
    for line in lines:
        if not line:
            break
        cells = [HALF_BLOCKS[c] for c in SGR.sub("", line)]
        rows += [[upper for upper, _ in cells], [lower for _, lower in cells]]
    return rows


def decode(rows: list[list[int]], tmp_path) -> str:
    """zbarimg's reading of the modules, drawn 4 pixels a module, dark on white, into a PGM."""
    scale = 4
    pixels = b"".join(bytes(0 if dark else 255 for dark in row for _ in range(scale)) * scale for row in rows)
    image = tmp_path / "qr.pgm"
    image.write_bytes(b"P5\n%d %d\n255\n" % (len(rows[0]) * scale, len(rows) * scale) + pixels)
    result = subprocess.run(["zbarimg", "--raw", "-q", str(image)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, f"zbarimg read no symbol: {result.stderr[-500:]}"
    return result.stdout.rstrip("\n")


def test_the_qr_code_on_a_terminal_opens_the_complete_verification_uri(stub_idp, tmp_path, sensitive):
    code, text = login_on_terminal(tmp_path / "state", login_config(tmp_path, stub_idp))
    sensitive.add_output("stderr of oauth-relay login", text)
    assert code == 0, text[-2000:]
    assert decode(drawing(text), tmp_path) == f"{stub_idp.url}/verify?user_code={USER_CODE}"
    # After the code and the URIs, before the login's end.
    assert text.index(f"  {USER_CODE}\n") < text.index(SCAN_PROMPT) < text.index("Logged in for identity me")
    assert "\x1b[30;107m" in text, "black on bright white, whatever the terminal's theme"


def test_without_a_complete_uri_the_qr_code_holds_the_verification_uri(stub_idp, tmp_path, sensitive):
    code, text = login_on_terminal(tmp_path / "state", login_config(tmp_path, stub_idp, complete=False))
    sensitive.add_output("stderr of oauth-relay login", text)
    assert code == 0, text[-2000:]
    assert decode(drawing(text), tmp_path) == f"{stub_idp.url}/verify"


def test_a_terminal_too_narrow_for_the_symbol_gets_a_line_instead(stub_idp, tmp_path, sensitive):
    code, text = login_on_terminal(tmp_path / "state", login_config(tmp_path, stub_idp), columns=30)
    sensitive.add_output("stderr of oauth-relay login", text)
    assert code == 0, text[-2000:]
    assert SCAN_PROMPT not in text and "▀" not in text
    assert re.search(r"a QR code of this URI needs a terminal \d+ columns wide; this one has 30", text), text


def test_no_qr_code_with_no_qr_or_in_a_pipe(stub_idp, tmp_path, sensitive):
    config = login_config(tmp_path, stub_idp)
    code, text = login_on_terminal(tmp_path / "state-terminal", config, "--no-qr")
    sensitive.add_output("stderr of oauth-relay login --no-qr", text)
    assert code == 0, text[-2000:]
    assert f"  {USER_CODE}\n" in text
    assert SCAN_PROMPT not in text and not set("▀▄█") & set(text) and "\x1b[" not in text

    piped = subprocess.run([str(require_relay_bin()), "login", "--config", config, "me", "--timeout", "20"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, env=environment(tmp_path / "state-pipe"),
                           timeout=scaled(30))
    sensitive.add_output("stderr of oauth-relay login in a pipe", piped.stderr)
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert f"  {USER_CODE}\n" in piped.stderr
    assert SCAN_PROMPT not in piped.stderr and not set("▀▄█") & set(piped.stderr) and "\x1b[" not in piped.stderr
