"""Headless Chromium for the login tests: Debian's `chromium` and `chromium-driver`
(/usr/bin/chromedriver), driven by Selenium from PyPI, on loopback only.

Each browser gets a fresh profile (no cookie or login survives a test) and every wait is
bounded (`deadlines.scaled`). Names other than `localhost` do not resolve in it, and its
background services (updates, sync, translation, safe browsing) are off, so a test browses only
the loopback servers it started.

    from browser import chromium  # the pytest fixture: a driver, quit after the test
    chromium.get(url)
    login_at_dot(chromium, person.username, person.password)
    consent(chromium)
    wait_for_url(chromium, lambda url: url.startswith(callback), "the redirect to the callback")

The helpers name what they waited for when they time out, with the page's URL and title (never
its query, which may hold a code or state).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from deadlines import scaled  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PAGE_SECONDS = 20

# Everything Chromium would fetch on its own, off; only loopback reachable by name.
CHROMIUM_ARGUMENTS = [
    "--headless=new",
    # The tests run as root in containers: no user namespace for the sandbox, a small /dev/shm.
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-client-side-phishing-detection",
    "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,SafeBrowsing",
    "--no-proxy-server",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1 , EXCLUDE [::1]",
    "--window-size=1024,768",
]


def require_chromium() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: install Debian's chromium and chromium-driver "
                    f"(scripts/install-deps --test)")


def start_chromium(profile: Path, log_path: Path | None = None):
    """A headless Chromium with a fresh profile in `profile` (created, must not exist)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    require_chromium()
    profile.mkdir(parents=True)
    options = webdriver.ChromeOptions()
    # Given both paths, Selenium does not look for (or download) a browser or driver itself.
    options.binary_location = str(CHROMIUM)
    for argument in CHROMIUM_ARGUMENTS + [f"--user-data-dir={profile}"]:
        options.add_argument(argument)
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(log_path) if log_path else None)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(scaled(PAGE_SECONDS))
    driver.set_script_timeout(scaled(PAGE_SECONDS))
    return driver


@pytest.fixture
def chromium(tmp_path):
    """A headless Chromium for one test (its profile and chromedriver log in tmp_path)."""
    driver = start_chromium(tmp_path / "chromium-profile", tmp_path / "chromedriver.log")
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


def where(driver) -> str:
    """The page, as a failure message shows it: URL without query or fragment, and title."""
    parts = urlsplit(driver.current_url)
    return f"{parts.scheme}://{parts.netloc}{parts.path} (title {driver.title!r})"


def wait_for(driver, condition, what: str, timeout: float = PAGE_SECONDS):
    """Waits until `condition(driver)` is truthy (returned), failing with `what` and the page."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait
    try:
        return WebDriverWait(driver, scaled(timeout), poll_frequency=0.05).until(condition)
    except TimeoutException:
        pytest.fail(f"timed out after {scaled(timeout):.0f}s waiting for {what}; the browser is at {where(driver)}")


def wait_for_url(driver, predicate, what: str, timeout: float = PAGE_SECONDS) -> str:
    """Waits until the browser's URL satisfies `predicate(url)`; returns the URL."""
    return wait_for(driver, lambda d: d.current_url if predicate(d.current_url) else None, what, timeout)


def wait_for_element(driver, css: str, what: str, timeout: float = PAGE_SECONDS):
    from selenium.webdriver.common.by import By
    return wait_for(driver, lambda d: next(iter(d.find_elements(By.CSS_SELECTOR, css)), None), what, timeout)


def login_at_dot(driver, username: str, password: str) -> None:
    """Fills django-oauth-toolkit's login form (Django's LoginView at /accounts/login/) and
    submits it; returns once the browser has left the login page."""
    form = wait_for_element(driver, "form#login-form", "DOT's login form")
    login_url = driver.current_url
    form.find_element("css selector", "#id_username").send_keys(username)
    form.find_element("css selector", "#id_password").send_keys(password)
    form.find_element("css selector", "#login").click()
    wait_for_url(driver, lambda url: url != login_url, "the login form to be accepted")


def consent(driver, allow: bool = True) -> None:
    """Answers DOT's consent page (its authorize.html): Authorize, or Cancel when not `allow`;
    returns once the browser has left it."""
    form = wait_for_element(driver, "form#authorizationForm", "DOT's consent page")
    consent_url = driver.current_url
    button = "input[name=allow]" if allow else "input[type=submit]:not([name=allow])"
    form.find_element("css selector", button).click()
    wait_for_url(driver, lambda url: url != consent_url, "the consent to be sent")


def login_at_glewlwyd(driver, username: str, password: str) -> None:
    """Fills Glewlwyd's login page (its web app's login.html: #passwordForm) and submits it;
    returns once the form is gone (the page then shows the grant, or a Continue button). The
    page redraws itself while it loads: a form gone stale is filled again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def submit(d):
        try:
            form = next(iter(d.find_elements(By.CSS_SELECTOR, "form#passwordForm")), None)
            if form is None:
                return None
            for field, value in (("username", username), ("password", password)):
                element = form.find_element(By.ID, field)
                element.clear()
                element.send_keys(value)
            form.find_element(By.ID, "loginbut").click()
            return True
        except StaleElementReferenceException:
            return None

    wait_for(driver, submit, "Glewlwyd's login form")
    wait_for(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, "form#passwordForm"), "the login to be accepted")


def grant_at_glewlwyd(driver) -> None:
    """Glewlwyd's consent: ticks every scope the client asks for that is not granted yet, clicks
    "Grant access" (when the page asks), then "Continue"; returns once the browser left the page.
    The page is a React app that redraws itself: an element gone stale is looked up again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def button(d, text: str):
        return next((b for b in d.find_elements(By.CSS_SELECTOR, "button") if b.text == text and b.is_displayed()), None)

    def step(d):
        """One try at the page as it is: True once Continue was clicked."""
        try:
            grant = button(d, "Grant access")
            if grant is not None:
                for box in d.find_elements(By.CSS_SELECTOR, ".list-group input.form-check-input:not([disabled])"):
                    if not box.is_selected():
                        box.click()
                grant.click()
                return None
            go = button(d, "Continue")
            if go is None:
                return None
            go.click()
            return True
        except StaleElementReferenceException:
            return None

    login_url = driver.current_url
    # The page shows the grant (a first login of this client), then Continue.
    wait_for(driver, step, "Glewlwyd's grant and Continue buttons")
    wait_for_url(driver, lambda url: url != login_url, "the browser to leave Glewlwyd's login page")
