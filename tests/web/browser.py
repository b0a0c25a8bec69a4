"""A real browser for the workbench's tests: Debian's chromium driven through its chromedriver
by Selenium, headless.

The tests that use it skip when the two programs are missing (a fresh clone on a machine
without them), unless REQUIRE_BROWSER_TESTS is set, as `.ci/run` sets it after installing
them: there a missing browser fails the run. Screenshots go to `SCREENSHOTS`
(BROWSER_SCREENSHOTS, default artifacts/screenshots in the checkout), which git ignores.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

T = TypeVar("T")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))
# flags of a headless browser that makes no connection but the page's own (the machine's
# network is closed: background services would fail at every start)
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-extensions",
    "--window-size=1400,1000",
]


def available() -> bool:
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    """A headless chromium session (selenium's WebDriver), closed at the end."""
    if not available():
        if os.environ.get("REQUIRE_BROWSER_TESTS"):
            pytest.fail(f"no browser: {CHROMIUM} and {CHROMEDRIVER} are required")
        pytest.skip(
            "chromium and chromedriver are not installed (apt install chromium chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(condition: Callable[[], T], timeout: float = 30.0, what: str = "condition") -> T:
    """`condition()`'s first truthy value, polled until `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def screenshot(driver: WebDriver, name: str) -> Path:
    """The page as a PNG in SCREENSHOTS/`name`.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
