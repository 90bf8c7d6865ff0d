"""MCP: serve toolhall tools to any MCP client, and import an MCP server's tools as toolhall tools."""

from .server import build_server as build_server
from .server import http_app as http_app
from .server import serve_http as serve_http
from .server import serve_stdio as serve_stdio

__all__ = ["build_server", "http_app", "serve_http", "serve_stdio"]
