"""Reading and describing HTTP response bodies with hard size caps.

The body is read from the wire in chunks and decompressed here (not by httpx) with zlib's `max_length`,
so neither the bytes downloaded nor the bytes decompressed ever run past the cap by more than one network
read: a gzip bomb costs at most `max_bytes` of memory. What was read is then described for the model: JSON
parsed, text decoded by the declared or detected charset, binary summarised by type, size and hash.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

import httpx

from .._errors import ToolCallError

__all__ = ["BodyBuffer", "describe_body", "read_body"]

_SLACK = 64 * 1024
"""Wire bytes allowed past the cap: one network read (compressed data is not always smaller)."""


class _Inflater:
    """gzip or deflate, decompressed a bounded amount at a time (multi-member gzip included)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._obj = self._new()
        self._first = True

    def _new(self) -> Any:
        if self.coding == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj()

    def feed(self, data: bytes, limit: int) -> bytes:
        """Decompress `data`, producing at most `limit` bytes (more input is dropped past the limit)."""
        try:
            out = self._obj.decompress(data, limit)
        except zlib.error:
            if not (self._first and self.coding == "deflate"):
                raise
            # Some servers send raw deflate without the zlib header (httpx retries the same way).
            self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._obj.decompress(data, limit)
        self._first = False
        while self._obj.eof and self._obj.unused_data and len(out) < limit and self.coding == "gzip":
            rest = self._obj.unused_data
            self._obj = self._new()
            out += self._obj.decompress(rest, limit - len(out))
        return bytes(out)


@dataclass(slots=True)
class BodyBuffer:
    """What has been read so far; kept by the caller so a deadline still leaves the partial body."""

    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    wire_bytes: int = 0
    truncated: bool = False
    complete: bool = False
    note: str | None = None

    @property
    def content(self) -> bytes:
        """The decoded bytes read so far (never more than the cap)."""
        return b"".join(self.chunks)


def _inflater_for(response: httpx.Response, buffer: BodyBuffer) -> _Inflater | None:
    codings = [c.strip().lower() for c in response.headers.get("content-encoding", "").split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
        return _Inflater("deflate" if codings[0] == "deflate" else "gzip")
    buffer.note = f"content-encoding {', '.join(codings)} was not decoded"
    return None


async def read_body(response: httpx.Response, max_bytes: int, buffer: BodyBuffer) -> None:
    """Stream the body into `buffer`, stopping once it holds more than `max_bytes` decoded bytes.

    Args:
        response: A response opened with `stream=True`.
        max_bytes: The most decoded bytes to keep.
        buffer: Receives the chunks as they arrive, and `truncated` when the cap was hit.

    Raises:
        ToolCallError: The compressed body is corrupt (`execution_error`, `reason: decoding`).
    """
    inflater = _inflater_for(response, buffer)
    async for raw in response.aiter_raw():
        buffer.wire_bytes += len(raw)
        try:
            chunk = raw if inflater is None else inflater.feed(raw, max_bytes - buffer.size + 1)
        except zlib.error as exc:
            raise ToolCallError(
                f"the response body is not valid {inflater.coding if inflater else ''} data: {exc}",
                details={"reason": "decoding"},
            ) from None
        room = max_bytes - buffer.size
        if len(chunk) > room or buffer.wire_bytes > max_bytes + _SLACK:
            buffer.chunks.append(chunk[:room])
            buffer.size += min(len(chunk), room)
            buffer.truncated = True
            return
        buffer.chunks.append(chunk)
        buffer.size += len(chunk)
    buffer.complete = True


_TEXT_TYPES = re.compile(
    r"^(text/.*|application/(json|.*\+json|xml|.*\+xml|javascript|ecmascript|x-www-form-urlencoded|"
    r"x-ndjson|ndjson|yaml|x-yaml|toml|graphql|sql|x-sh|csv)|image/svg\+xml)$"
)
_JSON_TYPES = re.compile(r"^application/(json|.*\+json)$")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]+encoding=["']([A-Za-z0-9_.:-]+)""")
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _known(charset: str | None) -> str | None:
    if not charset:
        return None
    try:
        return codecs.lookup(charset.strip().strip("\"'")).name
    except LookupError:
        return None


def _charset(content: bytes, declared: str | None) -> tuple[str | None, str]:
    """The charset to try first and where it came from (header, BOM, document, or None to detect)."""
    if (name := _known(declared)) is not None:
        return name, "header"
    for bom, name in _BOMS:
        if content.startswith(bom):
            return name, "bom"
    head = content[:2048]
    match = _META_CHARSET.search(head) or _XML_ENCODING.search(head)
    if match and (name := _known(match.group(1).decode("ascii"))) is not None:
        return name, "document"
    return None, "detected"


def _decode(content: bytes, declared: str | None, partial: bool) -> tuple[str, str, str]:
    """Decode text: declared or documented charset, else UTF-8, else Windows-1252 (never fails)."""
    name, source = _charset(content, declared)
    for candidate in [name] if name else ["utf-8", "cp1252"]:
        try:
            # final=False drops a multi-byte character the cap cut in half instead of failing on it.
            text = codecs.getincrementaldecoder(candidate)("strict").decode(content, final=not partial)
            return text, candidate, source
        except UnicodeDecodeError:
            continue
    fallback = name or "cp1252"
    return content.decode(fallback, errors="replace"), fallback, source


def _looks_binary(content: bytes) -> bool:
    head = content[:4096]
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4  # a character cut at the sample's end is not evidence
    return False


def describe_body(content: bytes, headers: httpx.Headers, *, truncated: bool, want_base64: bool) -> dict[str, Any]:
    """Describe a body for the model: parsed JSON, decoded text, or a binary summary.

    Args:
        content: The decoded body bytes (already capped).
        headers: The response headers (for Content-Type and its charset).
        truncated: Whether the body was cut at the cap (JSON is then left as text).
        want_base64: Whether to include binary bodies as base64 as well.

    Returns:
        A dict with `content_type` plus `json`, `text` (with `charset`), or `binary` (type, size, sha256,
        and `base64` when asked).
    """
    raw_type = headers.get("content-type", "")
    mime = raw_type.split(";", 1)[0].strip().lower()
    declared = None
    for param in raw_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            declared = value.strip()
    described: dict[str, Any] = {"content_type": mime or None}
    if not content:
        return described
    is_text = bool(_TEXT_TYPES.match(mime)) or (mime in ("", "application/octet-stream") and not _looks_binary(content))
    if mime == "application/octet-stream" and is_text:
        is_text = False  # declared binary stays binary; sniffing is only for a missing type
    if not is_text:
        summary: dict[str, Any] = {
            "type": mime or "application/octet-stream",
            "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest(),
        }
        if want_base64:
            summary["base64"] = base64.b64encode(content).decode("ascii")
        described["binary"] = summary
        return described
    text, charset, source = _decode(content, declared, truncated)
    described["charset"] = charset
    described["charset_source"] = source
    if _JSON_TYPES.match(mime) and not truncated:
        try:
            described["json"] = json.loads(text)
            return described
        except ValueError as exc:
            described["json_error"] = f"the body is not valid JSON: {exc}"
    described["text"] = text
    return described
