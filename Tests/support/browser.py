#!/usr/bin/env python3
"""Drives Gatehouse's hosted email-link pages in headless Chromium (Selenium).

Used by the Swift tests (through $GATEHOUSE_TEST_PYTHON $GATEHOUSE_TEST_BROWSER) and by
scripts/screenshots. Never downloads a browser or a driver: it uses the installed Chromium and
chromedriver (Debian: apt install chromium chromium-driver), overridable with
GATEHOUSE_CHROMIUM and GATEHOUSE_CHROMEDRIVER.

  browser.py reset --url URL --password PW [--screenshots DIR]
      Opens a password-reset page, waits for main[data-state="form"], types PW into both
      password fields, submits and waits for main[data-state="success"]. With --screenshots,
      saves DIR/reset-form.png (empty form) and DIR/reset-success.png.

  browser.py shot --url URL --out FILE [--expect-state STATE]
      Opens a page, waits for main[data-state] (and for STATE if given) and saves a screenshot.

Prints OK and exits 0 on success; prints a one-line reason and exits 1 otherwise.
Content-Security-Policy violations reported by the browser are printed to stderr as warnings.
"""

import argparse
import os
import shutil
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

TIMEOUT = 10.0
# A page whose state stays the same this long after it has finished loading has settled.
SETTLE = 1.0
# An iPhone-sized screen: screenshots come out 780x1688.
DEVICE_METRICS = {"width": 390, "height": 844, "pixelRatio": 2.0, "mobile": True, "touch": True}
USER_AGENT = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)

STATE_JS = """
const main = document.querySelector('main[data-state]');
return [document.readyState, main ? main.getAttribute('data-state') : null];
"""
TEXT_JS = "return document.body ? document.body.innerText : '';"


class Failure(Exception):
    pass


def find_executable(env_name, names):
    override = os.environ.get(env_name)
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise Failure(f"{env_name}={override} is not an executable file")
        return override
    for name in names:
        path = shutil.which(name) if "/" not in name else (name if os.access(name, os.X_OK) else None)
        if path:
            return path
    raise Failure(
        f"none of {', '.join(names)} found (set {env_name}; on Debian: apt install chromium chromium-driver)"
    )


def start_driver():
    browser = find_executable(
        "GATEHOUSE_CHROMIUM",
        [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
            "/Applications/Chromium.app/Contents/MacOS/Chromium",
            "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
        ],
    )
    driver_path = find_executable("GATEHOUSE_CHROMEDRIVER", ["chromedriver"])
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--hide-scrollbars",
        "--window-size=390,844",
    ):
        options.add_argument(argument)
    options.add_experimental_option("mobileEmulation", {"deviceMetrics": DEVICE_METRICS, "userAgent": USER_AGENT})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # With an explicit driver path Selenium skips Selenium Manager, so nothing is downloaded.
    service = Service(executable_path=driver_path)
    try:
        driver = webdriver.Chrome(service=service, options=options)
    except WebDriverException as error:
        raise Failure(f"could not start {browser} with {driver_path}: {one_line(error.msg or str(error), 400)}")
    driver.set_page_load_timeout(30)
    return driver


def one_line(text, limit):
    return " ".join((text or "").split())[:limit]


def page_state(driver):
    """(document.readyState, data-state of main or None); None, None while a navigation swaps documents."""
    try:
        ready, state = driver.execute_script(STATE_JS)
        return ready, state
    except WebDriverException:
        return None, None


def page_text(driver):
    try:
        return driver.execute_script(TEXT_JS) or ""
    except WebDriverException:
        return ""


def describe(driver, reason):
    _, state = page_state(driver)
    try:
        url = driver.current_url
    except WebDriverException:
        url = "?"
    text = one_line(page_text(driver), 300)
    return f"{reason} (data-state={state!r}, url={url}, text={text!r})"


def wait_for_state(driver, wanted, keep_waiting_on=(), timeout=TIMEOUT):
    """Waits for main[data-state=wanted]; wanted=None accepts any state.

    Gives up early once the page has finished loading and sat on a state that is neither wanted
    nor in keep_waiting_on for SETTLE seconds, so a wrong page fails fast.
    """
    deadline = time.monotonic() + timeout
    last, since = object(), time.monotonic()
    while True:
        ready, state = page_state(driver)
        if state is not None and (wanted is None or state == wanted):
            return state
        now = time.monotonic()
        if (ready, state) != last:
            last, since = (ready, state), now
        elif ready == "complete" and state is not None and state not in keep_waiting_on and now - since >= SETTLE:
            raise Failure(describe(driver, f"expected data-state {wanted!r}, page settled on {state!r}"))
        if now >= deadline:
            what = "main[data-state]" if wanted is None else f'main[data-state="{wanted}"]'
            raise Failure(describe(driver, f"timed out after {timeout:g}s waiting for {what}"))
        time.sleep(0.05)


def report_csp(driver):
    """Prints the browser's CSP violations (and other refusals) to stderr; never fails."""
    try:
        entries = driver.get_log("browser")
    except Exception:
        return
    for entry in entries:
        message = entry.get("message", "")
        if entry.get("level") == "SEVERE" and ("Content Security Policy" in message or "Refused to" in message):
            print(f"warning: browser: {one_line(message, 1000)}", file=sys.stderr)


def screenshot(driver, path):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    if not driver.save_screenshot(path):
        raise Failure(f"could not save a screenshot to {path}")


def open_page(driver, url):
    try:
        driver.get(url)
    except WebDriverException as error:
        raise Failure(f"could not open {url}: {one_line(error.msg or str(error), 300)}")


def run_reset(driver, args):
    open_page(driver, args.url)
    wait_for_state(driver, "form", keep_waiting_on=("loading",))
    report_csp(driver)
    if args.screenshots:
        screenshot(driver, os.path.join(args.screenshots, "reset-form.png"))
    try:
        password = driver.find_element(By.CSS_SELECTOR, 'input[name="password"]')
        confirm = driver.find_element(By.CSS_SELECTOR, 'input[name="password_confirm"]')
        # The submit button of the form holding the password field (input.form also honours form=).
        button = driver.execute_script(
            "const form = arguments[0].form;"
            "return form ? form.querySelector('button[type=\"submit\"]') : null;",
            password,
        )
        if button is None:
            button = driver.find_element(By.CSS_SELECTOR, 'form button[type="submit"]')
        for field in (password, confirm):
            field.clear()
            field.send_keys(args.password)
        button.click()
    except WebDriverException as error:
        raise Failure(describe(driver, f"could not fill in the form: {one_line(error.msg or str(error), 200)}"))
    wait_for_state(driver, "success", keep_waiting_on=("form", "loading", "submitting"))
    report_csp(driver)
    if args.screenshots:
        screenshot(driver, os.path.join(args.screenshots, "reset-success.png"))


def run_shot(driver, args):
    open_page(driver, args.url)
    if args.expect_state:
        wait_for_state(driver, args.expect_state, keep_waiting_on=("loading",))
    else:
        wait_for_state(driver, None)
    report_csp(driver)
    screenshot(driver, args.out)


def main():
    parser = argparse.ArgumentParser(description="Drives Gatehouse's hosted pages in headless Chromium.")
    commands = parser.add_subparsers(dest="command", required=True)
    reset = commands.add_parser("reset", help="complete a password reset")
    reset.add_argument("--url", required=True)
    reset.add_argument("--password", required=True)
    reset.add_argument("--screenshots", metavar="DIR")
    shot = commands.add_parser("shot", help="screenshot a page")
    shot.add_argument("--url", required=True)
    shot.add_argument("--out", required=True, metavar="FILE")
    shot.add_argument("--expect-state", metavar="STATE")
    args = parser.parse_args()

    driver = None
    try:
        driver = start_driver()
        if args.command == "reset":
            run_reset(driver, args)
        else:
            run_shot(driver, args)
    except Failure as failure:
        print(f"FAIL: {failure}", flush=True)
        return 1
    except WebDriverException as error:
        print(f"FAIL: webdriver: {one_line(error.msg or str(error), 400)}", flush=True)
        return 1
    finally:
        if driver is not None:
            report_csp(driver)  # whatever was logged since the last check, failures included
            try:
                driver.quit()
            except Exception:
                pass
    print("OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
