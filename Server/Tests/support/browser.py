#!/usr/bin/env python3
"""Drives Gatehouse's hosted email-link pages and admin console in headless Chromium (Selenium).

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

  browser.py admin --url BASE --key KEY --wrong-key WRONG --email EMAIL --revoke-session ID
                   --plan PLAN --delete-email EMAIL2 [--screenshots DIR]
      Walks the admin console at BASE/admin in a desktop-sized window (1280x900), following
      main[data-page] from page to page: WRONG is refused at sign-in, KEY signs in (prints the
      session cookie's flags as "cookie httpOnly=.. secure=.. sameSite=.."); searches the users
      page for EMAIL and opens its user page, revokes session ID, sets the plan override PLAN
      (free, trial, pro or pro_grace) and sees it as the effective plan state, and checks that
      submitting form#disable without its csrf_token is refused (data-page "forbidden") and left
      the user enabled. Opens the same user page in a second, phone-sized browser with the
      session cookie. Then searches for EMAIL2, sees a wrong delete confirmation refused and
      deletes that user with the right one, and opens the keys page. Prints a line per check:
        wrong key refused / cookie httpOnly=True secure=True sameSite=Strict / found user ID /
        session revoked / plan set PLAN / form without csrf refused / wrong confirmation refused /
        user deleted / no csp violations
      With --screenshots, saves DIR/admin-sign-in.png, admin-overview.png, admin-users.png,
      admin-user.png, admin-user-phone.png and admin-keys.png.

Prints OK and exits 0 on success; prints a one-line reason and exits 1 otherwise.
Content-Security-Policy violations reported by the browser are printed to stderr as warnings;
the admin subcommand also fails on them.
"""

import argparse
import os
import shutil
import sys
import time
from urllib.parse import quote

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

TIMEOUT = 10.0
# A page whose state stays the same this long after it has finished loading has settled.
SETTLE = 1.0
# An iPhone-sized screen: screenshots come out 780x1688.
DEVICE_METRICS = {"width": 390, "height": 844, "pixelRatio": 2.0, "mobile": True, "touch": True}
USER_AGENT = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)
# The window without phone emulation (the admin console).
DESKTOP_SIZE = (1280, 900)

# arguments[0]: the attribute of main that names the page's state (data-state, data-page).
STATE_JS = """
const main = document.querySelector('main[' + arguments[0] + ']');
return [document.readyState, main ? main.getAttribute(arguments[0]) : null];
"""
TEXT_JS = "return document.body ? document.body.innerText : '';"
# The submit button of arguments[0], a form or a field in one (form.elements honours form=).
SUBMIT_JS = """
const form = arguments[0] instanceof HTMLFormElement ? arguments[0] : arguments[0].form;
return form ? Array.from(form.elements).find(e => e.type === 'submit') || null : null;
"""
# Why the browser would refuse to submit arguments[0]'s form (constraint validation), or null.
INVALID_JS = """
const form = arguments[0].form;
if (!form || form.noValidate || arguments[0].formNoValidate) return null;
const field = Array.from(form.elements).find(e => e.willValidate && !e.validity.valid);
return field ? (field.name || field.id || field.tagName) + ': ' + field.validationMessage : null;
"""

# The admin console's session cookie: plain HTTP, HTTPS.
ADMIN_COOKIES = ("gatehouse_admin", "__Host-gatehouse_admin")
PLAN_STATES = ("free", "trial", "pro", "pro_grace")


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


def start_driver(phone=True):
    """Headless Chromium emulating a phone, or with phone=False a desktop window of DESKTOP_SIZE."""
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
        "--window-size=390,844" if phone else "--window-size=%d,%d" % DESKTOP_SIZE,
    ):
        options.add_argument(argument)
    if phone:
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


def page_state(driver, attribute="data-state"):
    """(document.readyState, attribute of main or None); None, None while a navigation swaps documents."""
    try:
        ready, state = driver.execute_script(STATE_JS, attribute)
        return ready, state
    except WebDriverException:
        return None, None


def page_text(driver):
    try:
        return driver.execute_script(TEXT_JS) or ""
    except WebDriverException:
        return ""


def describe(driver, reason, attribute="data-state"):
    _, state = page_state(driver, attribute)
    try:
        url = driver.current_url
    except WebDriverException:
        url = "?"
    text = one_line(page_text(driver), 300)
    return f"{reason} ({attribute}={state!r}, url={url}, text={text!r})"


def wait_for_state(driver, wanted, keep_waiting_on=(), timeout=TIMEOUT, attribute="data-state"):
    """Waits for main[attribute=wanted] (data-state unless told); wanted=None accepts any state.

    Gives up early once the page has finished loading and sat on a state that is neither wanted
    nor in keep_waiting_on for SETTLE seconds, so a wrong page fails fast.
    """
    deadline = time.monotonic() + timeout
    last, since = object(), time.monotonic()
    while True:
        ready, state = page_state(driver, attribute)
        if state is not None and (wanted is None or state == wanted):
            return state
        now = time.monotonic()
        if (ready, state) != last:
            last, since = (ready, state), now
        elif ready == "complete" and state is not None and state not in keep_waiting_on and now - since >= SETTLE:
            raise Failure(describe(driver, f"expected {attribute} {wanted!r}, page settled on {state!r}", attribute))
        if now >= deadline:
            what = f"main[{attribute}]" if wanted is None else f'main[{attribute}="{wanted}"]'
            raise Failure(describe(driver, f"timed out after {timeout:g}s waiting for {what}", attribute))
        time.sleep(0.05)


def report_csp(driver, violations=None):
    """Prints the browser's CSP violations (and other refusals) logged since the last call to stderr,
    appending them to the list violations if given; never fails."""
    try:
        entries = driver.get_log("browser")
    except Exception:
        return
    for entry in entries:
        message = entry.get("message", "")
        if entry.get("level") == "SEVERE" and ("Content Security Policy" in message or "Refused to" in message):
            print(f"warning: browser: {one_line(message, 1000)}", file=sys.stderr)
            if violations is not None:
                violations.append(message)


def screenshot(driver, path):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    if not driver.save_screenshot(path):
        raise Failure(f"could not save a screenshot to {path}")


def screenshot_into(driver, directory, name):
    """Saves directory/name when a --screenshots directory was given."""
    if directory:
        screenshot(driver, os.path.join(directory, name))


def submit_button(driver, element):
    """The submit button of element (a form, or a field in one), or None."""
    return driver.execute_script(SUBMIT_JS, element)


def open_page(driver, url):
    try:
        driver.get(url)
    except WebDriverException as error:
        raise Failure(f"could not open {url}: {one_line(error.msg or str(error), 300)}")


def run_reset(driver, args):
    open_page(driver, args.url)
    wait_for_state(driver, "form", keep_waiting_on=("loading",))
    report_csp(driver)
    screenshot_into(driver, args.screenshots, "reset-form.png")
    try:
        password = driver.find_element(By.CSS_SELECTOR, 'input[name="password"]')
        confirm = driver.find_element(By.CSS_SELECTOR, 'input[name="password_confirm"]')
        button = submit_button(driver, password)
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
    screenshot_into(driver, args.screenshots, "reset-success.png")


def run_shot(driver, args):
    open_page(driver, args.url)
    if args.expect_state:
        wait_for_state(driver, args.expect_state, keep_waiting_on=("loading",))
    else:
        wait_for_state(driver, None)
    report_csp(driver)
    screenshot(driver, args.out)


# The admin console: server-rendered pages named by main[data-page], each action a form POST that
# answers (or redirects to) a whole new page.


def page_failure(driver, reason):
    return Failure(describe(driver, reason, "data-page"))


def wait_for_page(driver, wanted):
    """Waits for main[data-page=wanted]; fails fast once the page has settled on another one."""
    return wait_for_state(driver, wanted, attribute="data-page")


def css_string(value):
    """value as a quoted CSS string, for attribute selectors."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def require(driver, selector):
    try:
        return driver.find_element(By.CSS_SELECTOR, selector)
    except NoSuchElementException:
        raise page_failure(driver, f"no {selector} on the page")


def require_attribute(driver, selector, attribute, wanted):
    value = require(driver, selector).get_attribute(attribute)
    if value != wanted:
        raise page_failure(driver, f"{selector} has {attribute}={value!r}, expected {wanted!r}")


def fill(driver, selector, text):
    field = require(driver, selector)
    field.clear()
    field.send_keys(text)


def click_and_wait(driver, element, wanted, action):
    """Clicks a link or submit button, waits for the document to be replaced (so a page that answers
    with the same data-page is not mistaken for the answer) and then for main[data-page=wanted]."""
    refusal = driver.execute_script(INVALID_JS, element)
    if refusal:
        raise page_failure(driver, f"{action}: the browser will not submit the form ({refusal})")
    old = driver.find_element(By.TAG_NAME, "html")
    try:
        element.click()
    except WebDriverException as error:
        raise page_failure(driver, f"{action}: could not click: {one_line(error.msg or str(error), 200)}")
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            old.tag_name
        except StaleElementReferenceException:
            break
        except WebDriverException:
            pass  # the navigation is under way
        if time.monotonic() >= deadline:
            raise page_failure(driver, f"{action}: the page did not change within {TIMEOUT:g}s")
        time.sleep(0.05)
    wait_for_page(driver, wanted)


def follow(driver, selector, wanted):
    click_and_wait(driver, require(driver, selector), wanted, f"following {selector}")


def submit(driver, form_selector, wanted):
    button = submit_button(driver, require(driver, form_selector))
    if button is None:
        raise page_failure(driver, f"{form_selector} has no submit button")
    click_and_wait(driver, button, wanted, f"submitting {form_selector}")


def sign_in(driver, key, wanted):
    fill(driver, "#key", key)
    submit(driver, "form#sign-in", wanted)


def admin_cookie(driver):
    return next((cookie for cookie in driver.get_cookies() if cookie.get("name") in ADMIN_COOKIES), None)


def open_user(driver, email, screenshots=None):
    """From a signed-in page: searches the users page for email, opens the one user found and returns its id."""
    follow(driver, 'a[data-nav="users"]', "users")
    fill(driver, 'form#search input[name="q"]', email)
    submit(driver, "form#search", "users")
    rows = driver.find_elements(By.CSS_SELECTOR, "table#users tbody tr[data-user-id]")
    if len(rows) != 1:
        raise page_failure(driver, f"searching the users for {email!r} found {len(rows)} rows, expected 1")
    user_id = rows[0].get_attribute("data-user-id")
    screenshot_into(driver, screenshots, "admin-users.png")
    follow(driver, f"table#users tbody tr[data-user-id={css_string(user_id)}] a.user-link", "user")
    require_attribute(driver, 'main[data-page="user"]', "data-user-id", user_id)
    return user_id


def open_on_phone(base, args, cookie, user_url, violations):
    """Opens user_url in a second, phone-emulating browser signed in with the same session cookie."""
    phone = start_driver()
    try:
        open_page(phone, f"{base}/admin")
        wait_for_page(phone, "sign-in")
        copy = {name: cookie[name] for name in ("name", "value", "path", "httpOnly", "secure") if name in cookie}
        if cookie.get("sameSite") in ("Strict", "Lax", "None"):
            copy["sameSite"] = cookie["sameSite"]
        try:
            phone.add_cookie(copy)
        except WebDriverException:
            pass
        if admin_cookie(phone) is None:
            print(f"note: could not copy the {cookie['name']} cookie to the phone, signing in there", file=sys.stderr)
            sign_in(phone, args.key, "overview")
        open_page(phone, user_url)
        wait_for_page(phone, "user")
        screenshot_into(phone, args.screenshots, "admin-user-phone.png")
    finally:
        report_csp(phone, violations)
        try:
            phone.quit()
        except Exception:
            pass


def run_admin(driver, args):
    base = args.url.rstrip("/")
    violations = []

    open_page(driver, f"{base}/admin")
    wait_for_page(driver, "sign-in")
    screenshot_into(driver, args.screenshots, "admin-sign-in.png")
    sign_in(driver, args.wrong_key, "sign-in")
    require(driver, '.error[data-error="wrong_key"]')
    print("wrong key refused", flush=True)

    sign_in(driver, args.key, "overview")
    screenshot_into(driver, args.screenshots, "admin-overview.png")
    cookie = admin_cookie(driver)
    if cookie is None:
        names = ", ".join(sorted(c.get("name", "?") for c in driver.get_cookies())) or "none"
        raise page_failure(driver, f"signed in but no {' or '.join(ADMIN_COOKIES)} cookie (cookies: {names})")
    print(
        f"cookie httpOnly={bool(cookie.get('httpOnly'))} secure={bool(cookie.get('secure'))} "
        f"sameSite={cookie.get('sameSite')}",
        flush=True,
    )

    user_id = open_user(driver, args.email, args.screenshots)
    user_url = f"{base}/admin/users/{quote(user_id, safe='')}"
    print(f"found user {user_id}", flush=True)

    row = f"table#sessions tr[data-session-id={css_string(args.revoke_session)}]"
    require_attribute(driver, row, "data-state", "active")
    submit(driver, f"{row} form.revoke-session", "user")
    require(driver, '.flash[data-notice="session_revoked"]')
    require_attribute(driver, row, "data-state", "revoked")
    print("session revoked", flush=True)

    try:
        Select(require(driver, 'form#plan select[name="plan"]')).select_by_value(args.plan)
    except NoSuchElementException:
        raise page_failure(driver, f'form#plan select[name="plan"] has no option {args.plan!r}')
    fill(driver, 'form#plan input[name="reason"]', "browser check")
    submit(driver, "form#plan", "user")
    require(driver, '.flash[data-notice="plan_set"]')
    require_attribute(driver, "[data-plan-state]", "data-plan-state", args.plan)
    print(f"plan set {args.plan}", flush=True)
    screenshot_into(driver, args.screenshots, "admin-user.png")

    fill(driver, 'form#disable input[name="reason"]', "browser check")
    removed = driver.execute_script(
        "const token = document.querySelector('form#disable input[name=\"csrf_token\"]');"
        "if (token) token.remove();"
        "return token !== null;"
    )
    if not removed:
        raise page_failure(driver, 'no form#disable input[name="csrf_token"] to remove')
    submit(driver, "form#disable", "forbidden")
    print("form without csrf refused", flush=True)
    open_page(driver, user_url)
    wait_for_page(driver, "user")
    require_attribute(driver, "[data-disabled]", "data-disabled", "false")

    open_on_phone(base, args, cookie, user_url, violations)

    open_user(driver, args.delete_email)
    fill(driver, 'form#delete input[name="confirm"]', "not the address")
    submit(driver, "form#delete", "user")
    require(driver, '.error[data-error="confirmation_mismatch"]')
    print("wrong confirmation refused", flush=True)
    confirmation = require(driver, "form#delete").get_attribute("data-confirm") or ""
    fill(driver, 'form#delete input[name="confirm"]', confirmation)
    submit(driver, "form#delete", "users")
    require(driver, '.flash[data-notice="user_deleted"]')
    print("user deleted", flush=True)

    open_page(driver, f"{base}/admin/keys")
    wait_for_page(driver, "keys")
    screenshot_into(driver, args.screenshots, "admin-keys.png")

    report_csp(driver, violations)
    if violations:
        raise Failure(
            f"{len(violations)} CSP violation(s) logged (warnings above), the first: {one_line(violations[0], 500)}"
        )
    print("no csp violations", flush=True)


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
    admin = commands.add_parser("admin", help="walk the admin console")
    admin.add_argument("--url", required=True, metavar="BASE")
    admin.add_argument("--key", required=True)
    admin.add_argument("--wrong-key", required=True, metavar="WRONG")
    admin.add_argument("--email", required=True)
    admin.add_argument("--revoke-session", required=True, metavar="SESSION_ID")
    admin.add_argument("--plan", required=True, choices=PLAN_STATES)
    admin.add_argument("--delete-email", required=True, metavar="EMAIL2")
    admin.add_argument("--screenshots", metavar="DIR")
    args = parser.parse_args()

    driver = None
    try:
        driver = start_driver(phone=args.command != "admin")
        if args.command == "reset":
            run_reset(driver, args)
        elif args.command == "admin":
            run_admin(driver, args)
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
