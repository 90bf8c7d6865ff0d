"""A text file held as bytes for editing: matching, replacing and inserting without decoding the whole file.

UTF-8 is self-synchronising, so a UTF-8 needle can only match a UTF-8 body at character boundaries; Latin-1
maps one character to one byte. Either way byte-level `count`/`find`/`replace` give exactly the text-level
answer at memchr speed, and every untouched byte stays as it was. UTF-16/32 bodies are held as UTF-8 and
converted back on save.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from ._fileio import encode

__all__ = ["TextDoc"]

_WIDE = ("utf-16", "utf-32")


@dataclass(slots=True)
class TextDoc:
    """A file's body in a byte codec (utf-8 or latin-1), with what it takes to write it back."""

    body: bytes
    codec: str
    """How the body's bytes map to text: `utf-8` or `latin-1`."""
    encoding: str
    """The file's own encoding (`utf-8`, `utf-8-sig`, `utf-16`, `utf-32`, `latin-1`)."""
    newline: bytes
    """The dominant line ending, `b"\\r\\n"` or `b"\\n"`."""
    original: bytes

    @classmethod
    def from_bytes(cls, data: bytes) -> TextDoc:
        """Recognise the encoding (BOM, UTF-8, else Latin-1) and the line ending."""
        if data.startswith(codecs.BOM_UTF8):
            body, codec, encoding = data[len(codecs.BOM_UTF8) :], "utf-8", "utf-8-sig"
        elif data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
            body, codec, encoding = data.decode("utf-32").encode("utf-8", "surrogatepass"), "utf-8", "utf-32"
        elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            body, codec, encoding = data.decode("utf-16").encode("utf-8", "surrogatepass"), "utf-8", "utf-16"
        elif data.isascii() or _is_utf8(data):
            body, codec, encoding = data, "utf-8", "utf-8"
        else:
            body, codec, encoding = data, "latin-1", "latin-1"
        crlf = body.count(b"\r\n")
        newline = b"\r\n" if crlf and crlf * 2 >= body.count(b"\n") else b"\n"
        return cls(body=body, codec=codec, encoding=encoding, newline=newline, original=data)

    def encode(self, text: str, what: str = "the new text") -> bytes:
        """Text in the body's codec, or a clear error when the file's encoding cannot hold it."""
        return encode(text, self.codec, what) if self.codec == "latin-1" else text.encode("utf-8")

    def text(self, start: int = 0, end: int | None = None) -> str:
        """Decode part of the body (leniently: a window may cut a character)."""
        return self.body[start:end].decode(self.codec, "replace")

    def save(self, body: bytes) -> bytes:
        """The file's bytes for a new body, in its own encoding (BOM included)."""
        if self.encoding == "utf-8-sig":
            return codecs.BOM_UTF8 + body
        if self.encoding in _WIDE:
            return encode(body.decode("utf-8", "surrogatepass"), self.encoding)
        return body

    def line_of(self, index: int, body: bytes | None = None) -> int:
        """The 1-based line holding byte `index`."""
        return (self.body if body is None else body).count(b"\n", 0, index) + 1

    def line_count(self) -> int:
        """Lines in the body (a last line without a newline counts)."""
        body = self.body
        return body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
