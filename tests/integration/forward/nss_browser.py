"""Chromium with a throw-away NSS database: the CAs a test trusts, and nobody else's.

Chromium on Linux reads the user's extra trust anchors from `$HOME/.pki/nssdb`; each browser here
gets a HOME of its own in the test's directory, whose database `certutil` (Debian's libnss3-tools)
creates empty and into which the test adds CAs as trusted for TLS servers (`-t "C,,"`). This is
the `certutil` line `oauth-relay ca` tells users to run for a browser profile.

    nss = NSSDatabase(tmp_path / "home")      # creates home/.pki/nssdb
    nss.trust(ca_pem, "relay CA")
    driver = start_nss_chromium(nss, tmp_path / "profile", proxy="http://127.0.0.1:8181")
    page = load(driver, "https://api.test/")  # (net error or None, page text)

Names resolve only as the test says (`resolve={"api.test": "127.0.0.1"}`, or through the
proxy, which then resolves them); every other name is NOTFOUND, so the browser reaches only
the test's loopback servers.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for extra in (HERE.parent, HERE.parent / "oauth"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from browser import CHROMEDRIVER, CHROMIUM, CHROMIUM_ARGUMENTS, PAGE_SECONDS, require_chromium  # noqa: E402
from deadlines import scaled  # noqa: E402

CERTUTIL = shutil.which("certutil") or "/usr/bin/certutil"
# The browser's own error page names the network error (`NET::ERR_CERT_AUTHORITY_INVALID`, ...).
_NET_ERROR = re.compile(r"\b(?:NET::)?(ERR_[A-Z_]+)\b")


def require_certutil() -> None:
    if not Path(CERTUTIL).exists():
        pytest.fail("certutil missing: install Debian's libnss3-tools (scripts/install-deps --test)")


class NSSDatabase:
    """An NSS database in HOME/.pki/nssdb, empty (no password) until `trust` adds CAs."""

    def __init__(self, home: Path):
        require_certutil()
        self.home = home
        self.dir = home / ".pki" / "nssdb"
        self.dir.mkdir(parents=True)
        self._certutil("-N", "--empty-password")

    @property
    def spec(self) -> str:
        return f"sql:{self.dir}"

    def _certutil(self, *args: str) -> str:
        proc = subprocess.run([CERTUTIL, "-d", self.spec, *args], capture_output=True, text=True,
                              timeout=scaled(30), stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"certutil {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
        return proc.stdout

    def trust(self, ca_pem: Path, nickname: str) -> None:
        """Adds the CA certificate as a trust anchor for TLS servers (`-t "C,,"`)."""
        self._certutil("-A", "-n", nickname, "-t", "C,,", "-i", str(ca_pem))

    def nicknames(self) -> list[str]:
        """The certificates in the database (`certutil -L`), by nickname."""
        lines = self._certutil("-L").splitlines()
        # A header of three lines, a blank one, then "<nickname>   <trust flags>".
        return [re.split(r"\s{2,}", line.strip())[0] for line in lines[4:] if line.strip()]


def chromium_arguments(proxy: str | None = None, resolve: dict[str, str] | None = None) -> list[str]:
    """The login tests' arguments (../oauth/browser.py), with a proxy instead of none and the
    given names mapped to addresses (every other name still NOTFOUND; loopback addresses are
    reached directly, the proxy's own included)."""
    args = [a for a in CHROMIUM_ARGUMENTS if not a.startswith(("--no-proxy-server", "--host-resolver-rules"))]
    rules = [f"MAP {name} {address}" for name, address in (resolve or {}).items()]
    rules += ["MAP * ~NOTFOUND", "EXCLUDE localhost", "EXCLUDE 127.0.0.1", "EXCLUDE [::1]"]
    args.append("--host-resolver-rules=" + " , ".join(rules))
    args.append(f"--proxy-server={proxy}" if proxy else "--no-proxy-server")
    return args


def start_nss_chromium(nss: NSSDatabase, profile: Path, log_path: Path | None = None, proxy: str | None = None,
                       resolve: dict[str, str] | None = None):
    """A headless Chromium whose HOME is the database's: it trusts the CAs added there."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    require_chromium()
    profile.mkdir(parents=True)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in chromium_arguments(proxy, resolve) + [f"--user-data-dir={profile}"]:
        options.add_argument(argument)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["HOME"] = str(nss.home)
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(log_path) if log_path else None, env=env)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(scaled(PAGE_SECONDS))
    return driver


def load(driver, url: str) -> tuple[str | None, str]:
    """Navigates to `url`; returns (the network error Chromium shows, e.g. "ERR_CERT_INVALID",
    or None when the page loaded) and the page's text."""
    from selenium.webdriver.common.by import By
    driver.get(url)
    text = driver.find_element(By.TAG_NAME, "body").text
    source = driver.page_source
    error = None
    if driver.execute_script("return document.documentURI || ''").startswith("chrome-error://") \
            or "neterror" in source:
        found = _NET_ERROR.search(text) or _NET_ERROR.search(source)
        error = found.group(1) if found else "unnamed network error"
    return error, text
