"""`oauth-relay demo`: the embedded default serves on loopback, with its own echo upstream and
dev-only token issuer, and injects the demo identity's token."""

import json
import signal
import subprocess

from deadlines import wait_until
from http_client import curl
from processes import free_port, require_relay_bin


def test_demo_injects_a_dev_token_and_stops_cleanly(tmp_path):
    relay_bin = require_relay_bin()
    port, upstream_port, admin_port = free_port(), free_port(), free_port()
    stderr = open(tmp_path / "demo.stderr", "wb")
    proc = subprocess.Popen([str(relay_bin), "demo", "--listen", f"127.0.0.1:{port}",
                             "--upstream-port", str(upstream_port), "--admin", f"127.0.0.1:{admin_port}",
                             "--log-format", "json"],
                            stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        def answered():
            resp = curl(f"http://127.0.0.1:{port}/hello", timeout=2)
            return resp if resp.status == 200 else None
        resp = wait_until(answered, timeout=10, message="the demo did not answer")
        echo = json.loads(resp.body)
        assert echo["upstream"] == "oauth-relay demo echo"
        authorization = [v for n, v in echo["headers"] if n.lower() == "authorization"]
        assert len(authorization) == 1 and authorization[0].startswith("Bearer dev-only-")
        assert ["X-Demo", "added by oauth-relay"] in echo["headers"]
        identities = json.loads(curl(f"http://127.0.0.1:{admin_port}/identities").body)["identities"]
        assert [(i["name"], i["state"]) for i in identities] == [("demo", "valid")]
        assert "dev-only-" not in json.dumps(identities), "the admin view showed a token"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        stderr.close()
    log = (tmp_path / "demo.stderr").read_text()
    assert '"msg":"token obtained"' in log
    assert "dev-only-" not in log, "the demo logged its token"
