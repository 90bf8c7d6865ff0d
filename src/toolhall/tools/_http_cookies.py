"""Cookie jars for the HTTP tool: one per session, kept across calls, persisted in the session's store.

A jar lives in memory (an LRU of recent sessions) and, when the call's context has a store, is saved under
the session's `http.cookies` state key as JSON after any response that set cookies, so a later process
continuing the same session id picks it up. Store failures are logged and never fail a request.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from http.cookiejar import Cookie, CookieJar
from typing import Any

import anyio
import anyio.to_thread
import httpx

__all__ = ["STATE_KEY", "CookieJars", "dump_cookies", "load_cookies"]

STATE_KEY = "http.cookies"
"""The per-session state key the jar is stored under."""

_FIELDS = (
    "version",
    "name",
    "value",
    "port",
    "port_specified",
    "domain",
    "domain_specified",
    "domain_initial_dot",
    "path",
    "path_specified",
    "secure",
    "expires",
    "discard",
    "comment",
    "comment_url",
    "rfc2109",
)

_NONSTANDARD = ("HttpOnly", "SameSite")
"""The non-standard cookie attributes worth keeping across processes."""


def dump_cookies(jar: CookieJar) -> str:
    """The jar's unexpired cookies as JSON text (session cookies included: they last as long as the session)."""
    jar.clear_expired_cookies()
    rows = []
    for cookie in jar:
        row: dict[str, Any] = {name: getattr(cookie, name) for name in _FIELDS}
        row["rest"] = {k: cookie.get_nonstandard_attr(k) for k in _NONSTANDARD if cookie.has_nonstandard_attr(k)}
        rows.append(row)
    return json.dumps(rows, separators=(",", ":"), sort_keys=True)


def load_cookies(text: str, jar: CookieJar | None = None) -> CookieJar:
    """A jar holding the cookies `dump_cookies` wrote (rows that cannot be read are skipped)."""
    jar = jar if jar is not None else CookieJar()
    try:
        rows = json.loads(text)
    except ValueError:
        return jar
    for row in rows if isinstance(rows, list) else []:
        try:
            values = {name: row[name] for name in _FIELDS}
            jar.set_cookie(Cookie(**values, rest=dict(row.get("rest") or {})))
        except (KeyError, TypeError):
            continue
    jar.clear_expired_cookies()
    return jar


class CookieJars:
    """The jars of recent sessions, loaded from and saved to each call's store.

    Args:
        max_sessions: How many sessions' jars stay in memory (least recently used go first; a session
            with a store reloads its jar when it comes back).
    """

    def __init__(self, max_sessions: int = 256) -> None:
        self.max_sessions = max_sessions
        self._jars: OrderedDict[tuple[int, str], tuple[Any, httpx.Cookies]] = OrderedDict()
        # One lock per store: a save dumps and writes under it, so an older snapshot never lands last.
        self._locks: dict[int, tuple[Any, anyio.Lock]] = {}

    async def get(self, store: Any, session_id: str | None, logger: logging.Logger) -> httpx.Cookies:
        """The session's jar, loaded from `store` the first time it is seen."""
        key = (id(store), session_id or "")
        entry = self._jars.get(key)
        if entry is not None and entry[0] is store:
            self._jars.move_to_end(key)
            return entry[1]
        cookies = httpx.Cookies()
        if store is not None and session_id:
            try:
                text = await anyio.to_thread.run_sync(store.get_state, session_id, STATE_KEY)
            except Exception as exc:  # noqa: BLE001 - a failing store must not fail the request
                logger.warning("could not load the HTTP cookie jar of session %s: %s", session_id, exc)
                text = None
            if text:
                load_cookies(text, cookies.jar)
            entry = self._jars.get(key)
            if entry is not None and entry[0] is store:
                return entry[1]  # a concurrent call of the same session loaded it first: share that jar
        # The store is kept in the entry so its id cannot be reused by another store while cached.
        self._jars[key] = (store, cookies)
        while len(self._jars) > self.max_sessions:
            self._jars.popitem(last=False)
        return cookies

    async def save(self, store: Any, session_id: str | None, cookies: httpx.Cookies, logger: logging.Logger) -> None:
        """Persist the session's jar (a no-op without a store or session id); an empty jar deletes the key."""
        if store is None or not session_id:
            return
        held = self._locks.get(id(store))
        if held is None or held[0] is not store:
            held = self._locks[id(store)] = (store, anyio.Lock())
        try:
            async with held[1]:
                text = dump_cookies(cookies.jar)
                if text == "[]":
                    await anyio.to_thread.run_sync(store.delete_state, session_id, STATE_KEY)
                else:
                    await anyio.to_thread.run_sync(store.set_state, session_id, STATE_KEY, text)
        except Exception as exc:  # noqa: BLE001 - a failing store must not fail the request
            logger.warning("could not save the HTTP cookie jar of session %s: %s", session_id, exc)
