"""The console in a real browser: Debian's Chromium, headless, driven by Playwright.

Skips with a reason when /usr/bin/chromium is missing; fails instead under CI=true (`.ci/run` installs
the `chromium` package). Screenshots land in test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import WAIT, XSS, Console, wait_for_pending

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip

if not CHROMIUM.exists():
    reason = "Debian's chromium is not installed (/usr/bin/chromium): apt-get install chromium"
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: the browser tests must run)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402 - only with a browser

expect.set_options(timeout=WAIT * 1000)  # generous for a loaded CI box; passing runs take milliseconds


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the module (never Playwright's own download)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def console(make_console: Callable[..., Console]) -> Console:
    """A console over SQLite with an agent session asking through the queue."""
    return make_console()


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    """A signed-in console page (through the `/?token=` link)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(WAIT * 1000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(f"{console.url}/?token={console.token}")
    page.wait_for_url(f"{console.url}/")
    expect(page.locator("#conn")).to_have_text("live")
    yield page
    context.close()
    assert errors == [], f"the page logged errors: {errors}"


def _row(page: Page, tool: str, status: str) -> object:
    return page.locator(f'#calls-body tr[data-status="{status}"]', has_text=tool)


def test_sign_in_removes_the_token_from_the_address_bar(page: Page, console: Console) -> None:
    """After the sign-in link the page is plain `/` and the token is nowhere in its URL or history entry."""
    assert page.url == f"{console.url}/"
    assert console.token not in page.url
    assert page.evaluate("history.length") <= 2


def test_a_call_appears_live(page: Page, console: Console) -> None:
    """A call the agent makes shows up in the feed without a reload, newest first."""
    assert console.call("echo", {"text": "first"}).result(WAIT).ok
    expect(page.locator("#calls-body tr")).to_have_count(1)
    assert console.call("echo", {"text": "second call"}).result(WAIT).ok
    expect(page.locator("#calls-body tr")).to_have_count(2)
    first_row = page.locator("#calls-body tr").first
    expect(first_row).to_contain_text("second call")
    expect(first_row.locator(".status")).to_have_text("ok")


def test_approving_in_the_browser_completes_the_agents_call(page: Page, console: Console) -> None:
    """A pending call shows tool, subject, arguments and annotations; Approve lets the agent's call finish."""
    for text in ("hello", "build the index", "read the plan"):
        console.call("echo", {"text": text}).result(WAIT)
    console.call("big").result(WAIT)
    denied = console.call("write_note", {"path": "/etc/passwd", "content": "no"})
    console.store.answer_approval(
        wait_for_pending(console.store), "deny", reason="outside the project", answered_by="console:bo"
    )
    assert denied.result(WAIT).error is not None
    future = console.call("write_note", {"path": "notes/plan.md", "content": "ship the console"})
    call_id = wait_for_pending(console.store)
    card = page.locator(f'article.approval[data-id="{call_id}"]')
    expect(card).to_be_visible()
    expect(card.locator(".tool")).to_have_text("write_note")
    expect(card.locator(".subject")).to_have_text("notes/plan.md")
    expect(card.locator(".badge.destructive")).to_be_visible()
    expect(card.locator("pre")).to_contain_text('"content": "ship the console"')
    expect(page.locator("#approval-count")).to_have_text("1")
    expect(page.locator("#sessions-body tr")).to_have_count(1)
    page.fill("#who", "alice")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "console.png"))
    assert not future.done()
    card.get_by_role("button", name="Approve", exact=True).click()
    result = future.result(WAIT)
    assert result.ok and result.output == "wrote 16 characters to notes/plan.md"
    expect(card).to_have_count(0)
    expect(_row(page, "write_note", "ok")).to_have_count(1)
    approval = console.store.get_approval(call_id)
    assert approval is not None and approval.decision == "approve" and approval.answered_by == "console:alice"
    assert approval.answered_at is not None
    page.screenshot(path=str(ARTIFACTS / "console-approved.png"), full_page=True)


def test_denying_with_a_reason_refuses_the_call(page: Page, console: Console) -> None:
    """Deny with a reason: the agent gets `denied` with that reason, and the feed shows `denied`."""
    future = console.call("write_note", {"path": "notes/x.md", "content": "x"})
    card = page.locator(f'article.approval[data-id="{wait_for_pending(console.store)}"]')
    card.get_by_placeholder("reason for a denial (the agent sees it)").fill("not on a Friday")
    card.get_by_role("button", name="Deny").click()
    result = future.result(WAIT)
    assert result.error is not None and result.error.code == "denied"
    assert "not on a Friday" in result.error.message
    expect(_row(page, "write_note", "denied")).to_have_count(1)
    _row(page, "write_note", "denied").first.click()  # type: ignore[attr-defined]
    drawer = page.locator("#detail")
    expect(drawer).to_contain_text("not on a Friday")
    expect(drawer).to_contain_text("console")


def test_approving_for_the_session_stops_asking(page: Page, console: Console) -> None:
    """ "Approve for session" answers this call and every later call of the tool in that session."""
    future = console.call("write_note", {"path": "a.md", "content": "a"})
    page.locator("article.approval").get_by_role("button", name="Approve for session").click()
    assert future.result(WAIT).ok
    assert console.call("write_note", {"path": "b.md", "content": "b"}).result(WAIT).ok
    expect(_row(page, "write_note", "ok")).to_have_count(2)
    expect(page.locator("article.approval")).to_have_count(0)


def test_markup_from_tools_renders_as_text(page: Page, console: Console) -> None:
    """`<script>` and `onerror` in outputs, arguments and subjects show as text and never run."""
    assert console.call("leak").result(WAIT).ok
    future = console.call("write_note", {"path": XSS, "content": XSS})
    card = page.locator(f'article.approval[data-id="{wait_for_pending(console.store)}"]')
    expect(card.locator(".subject")).to_have_text(XSS)
    expect(card.locator("pre")).to_contain_text("<script>window.__pwned = 1</script>")
    card.get_by_role("button", name="Deny").click()
    future.result(WAIT)
    _row(page, "leak", "ok").first.click()  # type: ignore[attr-defined]
    output = page.locator("#detail pre[aria-label=output]")
    expect(output).to_have_text(XSS)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[src=x], #detail script, #approvals script, #calls-body script").count() == 0


def test_long_output_is_collapsed_and_json_pretty_printed(page: Page, console: Console) -> None:
    """A long JSON output opens pretty-printed, cut to its first lines, and expands on demand."""
    assert console.call("big").result(WAIT).ok
    _row(page, "big", "ok").first.click()  # type: ignore[attr-defined]
    output = page.locator("#detail pre[aria-label=output]")
    expect(output).to_contain_text('"rows": [')
    assert "line 399" not in output.inner_text()
    page.locator("#detail").get_by_role("button", name="Show all").first.click()
    expect(output).to_contain_text('"text": "line 399"')


def test_filters_narrow_the_feed(page: Page, console: Console) -> None:
    """Filtering by tool and by status shows only matching calls."""
    console.call("echo", {"text": "one"}).result(WAIT)
    console.call("leak").result(WAIT)
    console.call("write_note", {"path": "x", "content": "y"})
    console.store.answer_approval(wait_for_pending(console.store), "deny", answered_by="test")
    expect(page.locator("#calls-body tr")).to_have_count(3)
    page.select_option("#f-tool", "echo")
    expect(page.locator("#calls-body tr")).to_have_count(1)
    page.select_option("#f-tool", "")
    page.select_option("#f-status", "denied")
    expect(page.locator("#calls-body tr")).to_have_count(1)
    expect(page.locator("#calls-body tr .tool")).to_have_text("write_note")
