"""Per-host secrets for the HTTP tool: parsing the configuration, attaching headers, redacting results.

A secret is attached only to requests whose host (and port, when given) matches its key, over https unless
the key says `http://`, and its value is looked up at request time (`env:NAME`). Everything a call returns
passes through `redact`, so a server that echoes request headers cannot show a token to the model or to
the log.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from .._errors import ConfigError, ToolCallError
from ._ssrf import HostRule, numeric_host, parse_host_rule

__all__ = ["Secret", "parse_secrets", "redact", "secret_headers"]

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


@dataclass(frozen=True, slots=True)
class Secret:
    rule: HostRule
    plain_http: bool
    headers: tuple[tuple[str, str], ...]


def _secret_headers(host: str, value: str | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if isinstance(value, str):
        return (("Authorization", value),)
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"secrets[{host!r}]: give an Authorization value or a mapping of header names to values")
    for name, header_value in value.items():
        if not isinstance(name, str) or not _TOKEN.match(name) or not isinstance(header_value, str):
            raise ConfigError(f"secrets[{host!r}]: header {name!r} needs a valid name and a string value")
    return tuple(value.items())


def parse_secrets(secrets: Mapping[str, str | Mapping[str, str]] | None) -> tuple[Secret, ...]:
    parsed = []
    for key, value in (secrets or {}).items():
        plain_http = key.startswith("http://")
        host = key.removeprefix("http://").removeprefix("https://").rstrip("/")
        try:
            rule = parse_host_rule(host)
        except ValueError as exc:
            raise ConfigError(f"secrets: {exc}") from None
        parsed.append(Secret(rule, plain_http, _secret_headers(key, value)))
    return tuple(parsed)


def _resolve_secret(value: str) -> str:
    """A secret's value: `env:NAME` reads the environment at request time, so config files hold no tokens."""
    if value.startswith("env:"):
        name = value[4:]
        found = os.environ.get(name)
        if found is None:
            raise ToolCallError(
                f"a secret configured for this host refers to the environment variable {name}, which is not set",
                details={"reason": "secret_missing"},
            )
        return found
    return value


def _authorization(value: str) -> str:
    # A bare token (no scheme word) is sent as a bearer token.
    return value if " " in value.strip() else f"Bearer {value.strip()}"


def secret_headers(secrets: tuple[Secret, ...], url: httpx.URL) -> list[tuple[str, str]]:
    """The configured headers for this URL's host (https only, unless the key said `http://`).

    Args:
        secrets: The parsed secrets.
        url: The URL of the hop about to be sent.

    Returns:
        `(name, value)` pairs to set on the request, values resolved (`env:NAME` read now).

    Raises:
        ToolCallError: A secret names an environment variable that is not set.
    """
    host = url.host.rstrip(".")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        literal = numeric_host(host)
    except ValueError:
        return []
    headers: list[tuple[str, str]] = []
    for secret in secrets:
        if url.scheme != "https" and not secret.plain_http:
            continue
        hit = secret.rule.matches_address(literal, port) if literal else secret.rule.matches_name(host, port)
        if hit:
            for name, value in secret.headers:
                value = _resolve_secret(value)
                headers.append((name, _authorization(value) if name.lower() == "authorization" else value))
    return headers


def redact(value: Any, secrets: set[str]) -> Any:
    """`value` with every secret string replaced by `[secret]`, in nested lists and dicts too."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in sorted(secrets, key=len, reverse=True):  # "Bearer tok" before "tok"
            value = value.replace(secret, "[secret]")
        return value
    if isinstance(value, list):
        return [redact(item, secrets) for item in value]
    if isinstance(value, dict):
        return {redact(k, secrets): redact(v, secrets) for k, v in value.items()}
    return value
