"""A real headless browser for the UI tests: Debian's Chromium driven by Selenium through the
system chromedriver (nothing is downloaded at run time). Every checked page is saved as a
screenshot under the test's tmp dir.

Where Chromium or its driver is missing, the tests that need it are skipped with the reason
(``.ci/run`` installs both from Debian)."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@dataclass
class Browser:
    driver: Any  # selenium.webdriver.Chrome
    base_url: str
    shots: Path
    taken: list[Path] = field(default_factory=list)

    def open(self, path: str) -> None:
        self.driver.get(self.base_url + path)

    def text(self) -> str:
        return self.driver.find_element("tag name", "body").text

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
        """Until ``check()`` is truthy (the React UI renders as its API calls answer)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if value := check():
                    return value
            except Exception:  # an element replaced while React re-renders: look again
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                self.shot(f"timeout-{what}")
                raise TimeoutError(f"the page never showed {what}; it shows:\n{self.text()}")
            time.sleep(0.25)

    def wait_for_text(self, *texts: str, timeout: float = 60, expand: bool = False) -> str:
        """Until the page shows every one of ``texts``; with ``expand``, a task log's folded
        groups (a "▶ Pre Execute" header) are opened each time first: which group a line
        lands in follows the order of the log's sources, which a loaded machine changes."""

        def shown() -> str | None:
            if expand:
                self.expand_log_groups()
            body = self.text()
            return body if all(t in body for t in texts) else None

        return self.wait_for(" and ".join(texts), shown, timeout)

    def expand_log_groups(self) -> None:
        """Open each folded group of a task log (its header starts with "▶")."""
        folded = "//*[starts-with(normalize-space(text()), '▶')]"
        for header in self.driver.find_elements("xpath", folded):
            with contextlib.suppress(Exception):  # re-rendered meanwhile: the next look
                header.click()

    def dialogs(self) -> list[Any]:
        """Open dialogs, the top one last (the UI keeps closed popovers in the DOM, hidden)."""
        found = self.driver.find_elements("css selector", "[role=dialog]")
        return [d for d in found if d.is_displayed()]

    def dialog(self) -> Any:
        return self.wait_for("a dialog", lambda: (self.dialogs() or [None])[-1])

    def click(self, text: str, within: Any = None, tag: str = "*") -> None:
        """Click the visible element whose own text is ``text``."""
        root = within or self.driver
        xpath = f".//{tag}[normalize-space(text())='{text}']"
        self.wait_for(
            f"'{text}' to click",
            lambda: next(e for e in root.find_elements("xpath", xpath) if e.is_displayed()),
        ).click()

    def pick_datetime(self, label: str, day: str, hh_mm: str = "00:00") -> None:
        """Fill the UI's date-time picker under field ``label`` (``YYYY/MM/DD``, ``HH:mm``)."""
        from selenium.webdriver.common.keys import Keys

        open_before = len(self.dialogs())
        field = self.dialog().find_element(
            "xpath", f".//label[normalize-space(text())='{label}']/.."
        )
        field.find_element("css selector", "[data-testid=datetime-input]").click()
        (picker,) = self.wait_for(
            f"the {label} picker",
            lambda: self.dialogs()[open_before:][-1:] or None,
        )
        for placeholder, value in (("YYYY/MM/DD", day), ("HH:mm", hh_mm)):
            box = picker.find_element("css selector", f"input[placeholder='{placeholder}']")
            box.click()
            box.send_keys(Keys.CONTROL, "a")
            box.send_keys(value)
        box.send_keys(Keys.ESCAPE)  # closes the picker, not the dialog
        self.wait_for(f"the {label} picker to close", lambda: len(self.dialogs()) == open_before)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{len(self.taken) + 1:02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        self.taken.append(path)
        return path


def chromium() -> tuple[str, str]:
    """The browser and driver binaries, or a skip that says what is missing."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.fail("selenium is not installed (it comes with the test extra)", pytrace=False)
    binary = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    driver = shutil.which("chromedriver")
    if binary is None or driver is None:
        pytest.fail(
            "no headless browser: install Debian's chromium and chromium-driver "
            "(apt-get install chromium chromium-driver; make test does where it can)",
            pytrace=False,
        )
    return binary, driver


@pytest.fixture(scope="module")
def browser_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=1600,1400")
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
