"""A real HTTP(S) server on loopback, a fenced network backend and small doubles for the HTTP tool tests."""

from __future__ import annotations

import datetime
import gzip
import http.server
import ipaddress
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpcore

_BOMB: dict[int, bytes] = {}


def gzip_bomb(size: int) -> bytes:
    """`size` zero bytes, gzipped (about 1000:1)."""
    if size not in _BOMB:
        _BOMB[size] = gzip.compress(b"\0" * size, compresslevel=9)
    return _BOMB[size]


@dataclass
class Hits:
    """What the server saw: one entry per request, and bytes written by streaming endpoints."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    streamed: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Handler(http.server.BaseHTTPRequestHandler):
    """Routes for the tests; `self.server.hits` records every request."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return None

    def _send(self, status: int, body: bytes = b"", content_type: str | None = "text/plain", **headers: str) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            for item in value.split("\n"):
                self.send_header(name.replace("_", "-"), item)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = {"method": self.command, "path": url.path, "query": url.query, "headers": dict(self.headers.items())}
        seen["body"] = body.decode("utf-8", "replace")
        hits: Hits = self.server.hits  # type: ignore[attr-defined]
        with hits.lock:
            hits.requests.append(seen)
        route = ROUTES.get(url.path) or next((fn for p, fn in PREFIXES if url.path.startswith(p)), None)
        if route is None:
            self._send(404, b"no such route")
            return
        route(self, query, seen)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


def _echo(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    h._send(200, json.dumps(seen).encode(), "application/json")


def _status(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    h._send(int(seen["path"].rsplit("/", 1)[1]), b"status body")


def _redirect(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    extra = {"Set_Cookie": q["cookie"]} if "cookie" in q else {}
    h._send(int(q.get("status", "302")), b"", None, Location=q["to"], **extra)


def _chain(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    n = int(seen["path"].rsplit("/", 1)[1])
    if n == 0:
        h._send(200, b"end of chain")
    else:
        h._send(302, b"", None, Location=f"/chain/{n - 1}")


def _set_cookie(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    cookies = "\n".join(f"{k}={v}; Path=/" for k, v in q.items())
    h._send(200, b"set", Set_Cookie=cookies)


def _cookies(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    h._send(200, json.dumps({"cookie": seen["headers"].get("Cookie")}).encode(), "application/json")


def _fixed(body: bytes, content_type: str | None) -> Callable[[Handler, dict[str, str], dict[str, Any]], None]:
    return lambda h, q, seen: h._send(200, body, content_type)


def _large(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    size = int(q["size"])
    h.send_response(200)
    h.send_header("Content-Type", "application/octet-stream")
    h.send_header("Content-Length", str(size))
    h.end_headers()
    _stream(h, q.get("token", "large"), size)


def _stream(h: Handler, token: str, size: int) -> None:
    hits: Hits = h.server.hits  # type: ignore[attr-defined]
    chunk, sent, deadline = b"x" * 65536, 0, time.monotonic() + 20
    try:
        while sent < size and time.monotonic() < deadline:
            part = chunk[: size - sent]
            h.wfile.write(part)
            sent += len(part)
    except OSError:
        pass
    finally:
        hits.streamed[token] = sent
        h.close_connection = True


def _endless(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Connection", "close")
    h.end_headers()
    _stream(h, q.get("token", "endless"), 10**10)


def _chunked(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain; charset=utf-8")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    for i in range(int(q.get("n", "10"))):
        data = f"chunk {i}\n".encode()
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()
    h.wfile.write(b"0\r\n\r\n")


def _bomb(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    body = gzip_bomb(int(q.get("size", str(64 * 1024 * 1024))))
    h._send(200, body, "application/octet-stream", Content_Encoding="gzip")


def _gzip_text(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    h._send(200, gzip.compress("héllo gzip ".encode() * 100), "text/plain; charset=utf-8", Content_Encoding="gzip")


def _slow_headers(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    time.sleep(float(q.get("delay", "2")))
    h._send(200, b"late")


def _slow_body(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Content-Length", "100")
    h.end_headers()
    try:
        for _ in range(100):
            h.wfile.write(b"a")
            h.wfile.flush()
            time.sleep(0.05)
    except OSError:
        pass
    h.close_connection = True


def _raw(data: bytes) -> Callable[[Handler, dict[str, str], dict[str, Any]], None]:
    def route(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
        h.wfile.write(data)
        h.wfile.flush()
        h.close_connection = True

    return route


def _conn_close(h: Handler, q: dict[str, str], seen: dict[str, Any]) -> None:
    h._send(200, b"closing", Connection="close")
    h.close_connection = True


ROUTES: dict[str, Callable[[Handler, dict[str, str], dict[str, Any]], None]] = {
    "/echo": _echo,
    "/": _echo,
    "/redirect": _redirect,
    "/set-cookie": _set_cookie,
    "/cookies": _cookies,
    "/json": _fixed(b'{"name": "toolhall", "n": [1, 2, 3]}', "application/json"),
    "/bad-json": _fixed(b'{"name": ', "application/json"),
    "/problem": _fixed(b'{"title": "gone"}', "application/problem+json"),
    "/latin1": _fixed("café".encode("latin-1"), "text/plain; charset=iso-8859-1"),
    "/meta-charset": _fixed('<html><meta charset="windows-1251">Привет</html>'.encode("cp1251"), "text/html"),
    "/untyped-utf8": _fixed("naïve text".encode(), None),
    "/png": _fixed(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "image/png"),
    "/large": _large,
    "/endless": _endless,
    "/chunked": _chunked,
    "/bomb": _bomb,
    "/gzip-text": _gzip_text,
    "/slow-headers": _slow_headers,
    "/slow-body": _slow_body,
    "/garbage": _raw(b"this is not HTTP at all\r\n\r\n"),
    "/hangup": _raw(b""),
    "/short": _raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nonly ten b"),
    "/bad-header": _raw(b"HTTP/1.1 200 OK\r\nthis line has no colon\r\nContent-Length: 2\r\n\r\nok"),
    "/conn-close": _conn_close,
}
PREFIXES: list[tuple[str, Callable[[Handler, dict[str, str], dict[str, Any]], None]]] = [
    ("/status/", _status),
    ("/chain/", _chain),
]


class Server(http.server.ThreadingHTTPServer):
    """The test server; `url(path)` builds URLs to it."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, 0), Handler)
        self.hits = Hits()
        self.tls = tls
        self.host = host
        self.port = self.server_address[1]

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = super().get_request()
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # TLS handshakes the client refuses end up here; the test asserts on the client side

    def url(self, path: str = "/", host: str | None = None, scheme: str = "http") -> str:
        """A URL to this server, optionally spelling the host another way."""
        shown = host or (f"[{self.host}]" if ":" in self.host else self.host)
        return f"{scheme}://{shown}:{self.port}{path}"


@contextmanager
def running(host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> Iterator[Server]:
    """Serve in a thread until the block ends."""
    server = Server(host, tls)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def tls_files(folder: Path, names: Sequence[str]) -> tuple[Path, Path]:
    """A self-signed certificate (its own CA) for `names`, and its key, written to `folder`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def server_tls(cert: Path, key: Path, sni_seen: list[str | None]) -> ssl.SSLContext:
    """A server TLS context that records the server name each client asked for."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: sni_seen.append(name)  # type: ignore[assignment,misc,return-value]
    return context


class LoopbackFence(httpcore.AnyIOBackend):
    """A network backend that dials only loopback: anything else is recorded and refused, never sent.

    The tests put it *below* the guard, so a guard bug shows up as an entry in `refused` rather than as
    traffic leaving the machine.
    """

    def __init__(self) -> None:
        self.dialled: list[str] = []
        self.refused: list[str] = []

    async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        address = ipaddress.ip_address(host)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if not (address.is_loopback or address.is_unspecified):
            self.refused.append(host)
            raise httpcore.ConnectError(f"test fence: refused to dial {host}")
        self.dialled.append(host)
        return await super().connect_tcp(host, port, *args, **kwargs)


class StaticResolver:
    """A resolver answering from a table (a list of answers is served in turn); unknown names fail as DNS does."""

    def __init__(self, table: dict[str, list[str] | list[list[str]]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        answers = self.table.get(host)
        if answers is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if answers and isinstance(answers[0], list):
            turn = sum(1 for h in self.calls if h == host) - 1
            return list(answers[min(turn, len(answers) - 1)])  # type: ignore[arg-type]
        return list(answers)  # type: ignore[arg-type]


class MemoryState:
    """Per-session state as a store offers it (`get_state` / `set_state` / `delete_state`)."""

    def __init__(self, fail: bool = False) -> None:
        self.values: dict[tuple[str, str], str] = {}
        self.fail = fail

    def get_state(self, session_id: str, key: str) -> str | None:
        if self.fail:
            raise RuntimeError("store is down")
        return self.values.get((session_id, key))

    def set_state(self, session_id: str, key: str, value: str) -> None:
        if self.fail:
            raise RuntimeError("store is down")
        self.values[(session_id, key)] = value

    def delete_state(self, session_id: str, key: str) -> None:
        self.values.pop((session_id, key), None)
