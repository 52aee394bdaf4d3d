"""What the credential rotation tests share: traffic through the relay while files rotate, a token
request forced through the admin listener, and the relay's log lines about credential files."""

from __future__ import annotations

import secrets
import threading
import time

from admin_client import log_records
from deadlines import scaled, wait_until
from idp_relay import bearer

# Every relay of these tests logs at trace level, as JSON: the leak scan reads the most it can.
RELAY_ARGS = ("--log-level", "trace", "--log-format", "json")
CHANGED = "credential file changed; its new content is in use"
UNUSABLE = "credential file unusable; the last good content stays in use"
USABLE_AGAIN = "credential file usable again"


def new_secret(label: str) -> str:
    """A client secret with the characters RFC 6749 §2.3.1 makes a client form-encode."""
    return f"{label} +%/=&:{secrets.token_urlsafe(18)}"


class Traffic:
    """Requests through the relay on `threads` threads, each a loop bounded by `limit` requests and
    `seconds` (scaled), from `start` until `stop`; every answer must be a 200."""

    def __init__(self, relay, threads: int = 1, limit: int = 20_000, seconds: float = 90) -> None:
        self.relay = relay
        self.limit = limit
        self.deadline = time.monotonic() + scaled(seconds)
        self.statuses: list[int] = []
        self.failures: list[str] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._loop, args=(n,), daemon=True) for n in range(threads)]

    def __enter__(self) -> "Traffic":
        for thread in self.threads:
            thread.start()
        wait_until(lambda: len(self.statuses) >= 5, 10, "the first answers of the traffic")
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=scaled(30))
        assert not any(thread.is_alive() for thread in self.threads), "a traffic thread did not stop"

    def _loop(self, n: int) -> None:
        for i in range(self.limit):
            if self.stopping.is_set() or time.monotonic() > self.deadline:
                return
            try:
                resp = self.relay.request("GET", f"/traffic/{n}/{i}", timeout=10)
                status, problem = resp.status, (None if resp.status == 200 else resp.body[:300])
            except Exception as error:  # a connection the relay dropped is a failed request too
                status, problem = 0, f"{type(error).__name__}: {error}"
            with self.lock:
                self.statuses.append(status)
                if problem is not None:
                    self.failures.append(f"thread {n} request {i}: {status} {problem!r}")

    def flows(self, more: int = 20) -> None:
        """Waits until `more` requests more have been answered."""
        target = len(self.statuses) + more
        wait_until(lambda: len(self.statuses) >= target, 10, f"{more} more requests through the relay")

    def assert_all_answered_200(self, at_least: int) -> None:
        assert not self.failures, f"{len(self.failures)} of {len(self.statuses)} requests failed: {self.failures[:5]}"
        assert len(self.statuses) >= at_least, f"only {len(self.statuses)} requests went through while files rotated"


def force_token_request(admin, stub, identity: str = "orders") -> dict:
    """POST /identities/NAME/refresh; returns the stub's record of the one token request it caused,
    once answered."""
    before = len(stub.token_requests())
    resp = admin.request("POST", f"/identities/{identity}/refresh")
    assert resp.status == 202, f"refresh answered {resp.status}: {resp.body[:300]!r}"
    records = wait_until(lambda: (r := stub.token_requests())[before:] and r[before]["answered"] and r, 10,
                         "the token request the refresh caused")
    return records[before]


def serves_token_of(relay, record: dict) -> None:
    """Waits until requests through the relay carry the access token the stub issued in `record`."""
    issued = record["issued"]["access_token"]
    wait_until(lambda: bearer(relay.request("GET", "/which")) == issued, 10, f"the token of token request {record['n']} on requests")


def credential_log(relay, msg: str) -> list[dict]:
    """The relay's JSON log lines with message `msg`."""
    return log_records(relay, msg)
