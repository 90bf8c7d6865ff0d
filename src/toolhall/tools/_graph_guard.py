"""The statement guard in front of the graph database, and dialect hints for failed queries.

A read-only ladybug database still runs `COPY (…) TO '<file>'`, `LOAD FROM '<file>'`, `INSTALL` (network)
and `ATTACH`, so read-only mode alone is not enough. The guard tokenises the query with string literals
and comments removed and refuses any clause that writes, reads or fetches outside the graph, and any
procedure outside a small discovery allow-list.
"""

from __future__ import annotations

import re

from .._errors import ToolCallError

__all__ = ["ALLOWED_CALLS", "check_query", "dialect_hint"]

ALLOWED_CALLS = frozenset({"show_tables", "table_info", "show_connection"})
_FIRST = frozenset({"MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL", "EXPLAIN"})
_FORBIDDEN = frozenset({
    "COPY", "LOAD", "EXPORT", "IMPORT", "INSTALL", "UNINSTALL", "ATTACH", "DETACH", "USE", "CREATE", "MERGE",
    "SET", "DELETE", "REMOVE", "DROP", "ALTER", "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT", "FOREACH",
})
# Strings ('…', "…" with backslash escapes), backquoted names, and both comment styles.
_NOISE = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|`[^`]*`|//[^\n]*|/\*.*?\*/", re.DOTALL)
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\S")


def _tokens(query: str) -> list[str]:
    cleaned = _NOISE.sub(lambda m: " " if m.group(0)[0] in "/" else " _lit_ ", query)
    for opener in ("'", '"', "`", "/*"):
        if opener in cleaned:
            raise ToolCallError(
                f"query: unterminated {opener!r} (a string, name or comment is not closed)",
                code="invalid_input", details={"reason": "unterminated"},
            )
    return _TOKEN.findall(cleaned)


def check_query(query: str) -> set[str]:
    """Refuse anything but a read-only query over the graph (raises ToolCallError); return its $parameters."""
    tokens = _tokens(query)
    while tokens and tokens[-1] == ";":
        tokens.pop()
    if not tokens:
        raise ToolCallError("query: empty (write a Cypher query such as MATCH (f:Function) RETURN f.qname LIMIT 5)",
                            code="invalid_input", details={"reason": "empty"})
    if ";" in tokens:
        raise ToolCallError("query: one statement per call (remove the ';' between statements)",
                            code="denied", details={"reason": "multiple_statements"})
    first = tokens[0].upper()
    if first not in _FIRST:
        raise ToolCallError(
            f"query: a read-only query must start with one of {', '.join(sorted(_FIRST))}, not {tokens[0]!r}",
            code="denied", details={"reason": "not_a_query", "keyword": tokens[0]},
        )
    for index, token in enumerate(tokens):
        word = token.upper()
        after_dot = index > 0 and tokens[index - 1] == "."
        if after_dot:
            continue
        if word in _FORBIDDEN:
            raise ToolCallError(
                f"query: {word} is not allowed: the graph is read-only and queries may not touch files, "
                "extensions or other databases",
                code="denied", details={"reason": "forbidden_clause", "keyword": word},
            )
        if word == "CALL":
            procedure = tokens[index + 1] if index + 1 < len(tokens) else ""
            if procedure.lower() not in ALLOWED_CALLS:
                raise ToolCallError(
                    f"query: CALL {procedure} is not allowed; allowed procedures: {', '.join(sorted(ALLOWED_CALLS))}",
                    code="denied", details={"reason": "forbidden_call", "procedure": procedure},
                )
    return {tokens[i + 1] for i in range(len(tokens) - 1) if tokens[i] == "$"}


_HINTS = (
    (re.compile(r"\btype\s*\(", re.I), "this dialect has no type(r): use label(r)"),
    (re.compile(r"\b(all)?shortestpath\s*\(", re.I),
     "no shortestPath(): write MATCH p = (a)-[:CALLS* SHORTEST 1..6]->(b) RETURN p"),
    (re.compile(r"\[\s*\w+\s+IN\s+(nodes|relationships|rels)\s*\(", re.I),
     "list comprehensions over paths fail: use properties(nodes(p), 'qname') "
     "or list_transform(nodes(p), x -> x.qname)"),
    (re.compile(r"\bexists\s*\(\s*\(", re.I), "use EXISTS { MATCH (a)-[:CALLS]->(b) } for pattern predicates"),
    (re.compile(r"\b(collect|size)\s*\(\s*\(", re.I), "pattern expressions are not values: MATCH the pattern first"),
)


def dialect_hint(query: str, message: str) -> str | None:
    """A hint for a failed query written in Neo4j's dialect (None when nothing applies)."""
    for pattern, hint in _HINTS:
        if pattern.search(query):
            return hint
    if "Variable" in message and "already" in message or "bound" in message:
        return "an alias must not reuse a variable name: RETURN f.qname AS name, not AS f"
    if "does not exist" in message and ("Table" in message or "table" in message):
        return "see the tables with CALL show_tables() RETURN * and CALL table_info('Function') RETURN *"
    return None
