"""The console's request checks: Host and Origin (DNS rebinding, cross-site requests), login and CSRF.

The bearer token itself is checked by `toolhall.mcp.server.BearerTokenMiddleware` in front of every
route; a browser presents it as the `toolhall_token` cookie, set here when the person opens the URL
`toolhall serve` prints (`/?token=...`). State-changing requests made with that cookie must also carry
the CSRF token (a second random cookie, echoed by the page in a header) and come from the same origin.
Requests that present `Authorization: Bearer` (scripts, not browsers) need no CSRF token: a cross-site
page cannot make a browser add that header.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

__all__ = ["CSRF_COOKIE", "CSRF_HEADER", "TOKEN_COOKIE", "Guard", "error_response", "split_host"]

TOKEN_COOKIE = "toolhall_token"  # noqa: S105 - a cookie name, not a secret
"""The cookie `BearerTokenMiddleware` accepts in place of the `Authorization` header."""
CSRF_COOKIE = "toolhall_csrf"
CSRF_HEADER = "x-toolhall-csrf"

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_WILDCARD = ("0.0.0.0", "::", "")  # noqa: S104 - compared, not bound


def error_response(status: int, error: str, message: str) -> JSONResponse:
    """A JSON error the page can show: `{"error": ..., "message": ...}`."""
    return JSONResponse({"error": error, "message": message}, status_code=status, headers={"Cache-Control": "no-store"})


def split_host(value: str) -> tuple[str, str | None]:
    """`host[:port]` (IPv6 in brackets) as (lower-case host without brackets, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        rest = value[end + 1 :]
        return value[1:end], rest[1:] if rest.startswith(":") else None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        return value, None
    return host, port


@dataclass(frozen=True, slots=True)
class Guard:
    """Checks every console request; built once by `console_routes`.

    Args:
        token: the server's bearer token (to check `/?token=...` before setting the cookie).
        allowed_hosts: host names (no port) the console answers to; loopback names always are.
    """

    token: str
    allowed_hosts: frozenset[str]

    @classmethod
    def build(cls, token: str, host: str, extra_hosts: Sequence[str] = ()) -> Guard:
        """The guard for a server bound to `host`, as the MCP transport's checks are."""
        if not isinstance(token, str) or not token:
            raise ValueError("console_routes needs the server's non-empty token (token=...)")
        names = set(LOOPBACK_NAMES)
        bound = split_host(host)[0] if host.startswith("[") else host.strip().lower()
        if bound not in _WILDCARD:
            names.add(bound)
        for extra in extra_hosts:
            if not isinstance(extra, str) or not extra.strip():
                raise ValueError(f"allowed_hosts entries must be non-empty host names; got {extra!r}")
            names.add(split_host(extra)[0])
        return cls(token=token, allowed_hosts=frozenset(names))

    # -- checks ------------------------------------------------------------------------------------
    def refuse(self, request: Request, *, write: bool) -> Response | None:
        """An error response when the request must not be served, else None."""
        host = request.headers.get("host", "")
        if split_host(host)[0] not in self.allowed_hosts:
            return error_response(421, "misdirected", f"this console does not answer to host {host!r}")
        origin = request.headers.get("origin")
        if origin is not None and not self._same_origin(origin, host):
            return error_response(403, "forbidden_origin", f"requests from origin {origin!r} are refused")
        if request.headers.get("sec-fetch-site") == "cross-site":
            return error_response(403, "cross_site", "cross-site requests are refused")
        if write and not self._bearer(request):
            if origin is None and request.headers.get("sec-fetch-site") not in ("same-origin", None):
                return error_response(403, "forbidden_origin", "a change must come from the console's own page")
            if not self._csrf_ok(request):
                return error_response(
                    403, "csrf", f"missing or wrong {CSRF_HEADER} header: reload the console and try again"
                )
        return None

    def _same_origin(self, origin: str, host: str) -> bool:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return parts.netloc.lower() == host.strip().lower() and split_host(parts.netloc)[0] in self.allowed_hosts

    @staticmethod
    def _bearer(request: Request) -> bool:
        return request.headers.get("authorization", "")[:7].lower() == "bearer "

    @staticmethod
    def _csrf_ok(request: Request) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE, "")
        header = request.headers.get(CSRF_HEADER, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), header.encode())

    def token_matches(self, presented: str) -> bool:
        """Whether `presented` is the server's token (constant time)."""
        return hmac.compare_digest(presented.encode(), self.token.encode())

    # -- cookies -----------------------------------------------------------------------------------
    @staticmethod
    def csrf_for(request: Request) -> tuple[str, bool]:
        """The request's CSRF token, and whether it is new (and must be set as a cookie)."""
        current = request.cookies.get(CSRF_COOKIE, "")
        if len(current) >= 32 and current.replace("-", "").replace("_", "").isalnum():
            return current, False
        return Guard.new_csrf(), True

    @staticmethod
    def new_csrf() -> str:
        """A fresh CSRF token (a new one at each login)."""
        return secrets.token_urlsafe(32)

    @staticmethod
    def set_cookies(response: Response, *, csrf: str, token: str | None = None) -> None:
        """Set the CSRF cookie (and the login cookie): HttpOnly, SameSite=Strict, whole site."""
        secure = False  # loopback HTTP by default; a TLS proxy in front may add Secure itself
        if token is not None:
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict", secure=secure)
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict", secure=secure)
