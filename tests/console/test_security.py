"""The console's sign-in, token, Host/Origin and CSRF checks, against a real server on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest

from toolhall.console import console_routes

from .conftest import TOKEN, Console, wait_for_pending


@contextmanager
def _signed_in(console: Console) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=console.url, timeout=10) as client:
        response = client.get("/", params={"token": console.token})
        assert response.status_code == 200
        yield client


def _csrf(client: httpx.Client) -> str:
    return str(client.cookies["toolhall_csrf"])


@pytest.fixture
def console(make_console: Callable[..., Console]) -> Console:
    """A console over SQLite."""
    return make_console()


def test_the_page_needs_the_token(console: Console) -> None:
    """Without the token or its cookie every console path is 401."""
    with httpx.Client(base_url=console.url) as client:
        for path in ("/", "/console/api/calls", "/console/api/events", "/console/static/console.js"):
            assert client.get(path).status_code == 401, path


def test_sign_in_link_sets_strict_http_only_cookies_and_drops_the_token(console: Console) -> None:
    """`/?token=` sets the token and CSRF cookies (HttpOnly, SameSite=Strict) on a page that leaves the URL."""
    with httpx.Client(base_url=console.url) as client:
        response = client.get("/", params={"token": console.token})
        cookies = response.headers.get_list("set-cookie")
        assert any(c.startswith("toolhall_token=") for c in cookies)
        assert any(c.startswith("toolhall_csrf=") for c in cookies)
        for cookie in cookies:
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert console.token not in response.text
        assert 'window.location.replace("/")' in client.get("/console/static/login.js").text
        page = client.get("/")
    assert page.status_code == 200
    assert '<meta name="toolhall-csrf" content="' + str(client.cookies["toolhall_csrf"]) in page.text


def test_a_wrong_sign_in_token_is_refused(console: Console) -> None:
    """A wrong token in the link gets 401 and no cookie."""
    with httpx.Client(base_url=console.url) as client:
        response = client.get("/", params={"token": "not-it"})
    assert response.status_code == 401
    assert "set-cookie" not in response.headers


def test_pages_carry_a_strict_content_security_policy(console: Console) -> None:
    """The page forbids inline scripts, framing and foreign connections."""
    with _signed_in(console) as client:
        response = client.get("/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [("Host", "evil.example:80", 421), ("Origin", "http://evil.example", 403), ("Sec-Fetch-Site", "cross-site", 403)],
)
def test_foreign_host_or_origin_is_refused_even_signed_in(
    console: Console, header: str, value: str, status: int
) -> None:
    """DNS rebinding and cross-site requests are refused, as on /mcp."""
    with _signed_in(console) as client:
        response = client.get("/console/api/calls", headers={header: value})
    assert response.status_code == status


def test_an_origin_on_another_port_is_refused(console: Console) -> None:
    """Same host, other port: another origin."""
    with _signed_in(console) as client:
        response = client.get("/console/api/calls", headers={"Origin": "http://127.0.0.1:1"})
    assert response.status_code == 403


def _pending(console: Console) -> str:
    console.call("write_note", {"path": "notes/a.txt", "content": "hello"})
    return wait_for_pending(console.store)


def test_answers_need_the_csrf_header(console: Console) -> None:
    """A cookie-authenticated POST without (or with a wrong) CSRF header is refused and changes nothing."""
    call_id = _pending(console)
    with _signed_in(console) as client:
        origin = {"Origin": console.url}
        no_header = client.post(f"/console/api/approvals/{call_id}", json={"decision": "approve"}, headers=origin)
        wrong = client.post(
            f"/console/api/approvals/{call_id}",
            json={"decision": "approve"},
            headers={**origin, "X-Toolhall-CSRF": "x" * 43},
        )
    assert (no_header.status_code, wrong.status_code) == (403, 403)
    assert no_header.json()["error"] == "csrf"
    approval = console.store.get_approval(call_id)
    assert approval is not None and not approval.answered
    console.store.answer_approval(call_id, "deny")


def test_a_cross_origin_post_is_refused_even_with_the_csrf_token(console: Console) -> None:
    """The Origin check applies to answers as well."""
    call_id = _pending(console)
    with _signed_in(console) as client:
        response = client.post(
            f"/console/api/approvals/{call_id}",
            json={"decision": "approve"},
            headers={"Origin": "http://attacker.example", "X-Toolhall-CSRF": _csrf(client)},
        )
    assert response.status_code == 403
    console.store.answer_approval(call_id, "deny")


def test_a_script_with_the_bearer_token_answers_without_csrf(console: Console) -> None:
    """`Authorization: Bearer` cannot be forged cross-site, so scripts need no CSRF token."""
    call_id = _pending(console)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=console.url, headers=headers) as client:
        response = client.post(f"/console/api/approvals/{call_id}", json={"decision": "deny", "by": "ci bot"})
    assert response.status_code == 200
    approval = console.store.get_approval(call_id)
    assert approval is not None and approval.decision == "deny" and approval.answered_by == "console:ci bot"


def test_console_routes_checks_its_arguments() -> None:
    """Bad options raise with the argument's name and what is allowed."""
    with pytest.raises(ValueError, match="token"):
        console_routes(None, token="")
    with pytest.raises(ValueError, match="approval_timeout must be a positive number"):
        console_routes(None, token="t", approval_timeout=0)
    with pytest.raises(ValueError, match="history must be a positive integer"):
        console_routes(None, token="t", history=0)
    with pytest.raises(ValueError, match="allowed_hosts"):
        console_routes(None, token="t", allowed_hosts=[""])
