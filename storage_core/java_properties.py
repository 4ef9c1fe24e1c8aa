"""Java `.properties` text (`java.util.Properties.load`/`store`): meta.properties and server.properties.

Lines starting with `#` or `!` are comments; a line ending in an odd number of backslashes
continues on the next; the key ends at the first unescaped `=`, `:` or whitespace; `\\t \\n \\r \\f
\\uXXXX` and `\\<char>` escapes are decoded in keys and values.
"""

from __future__ import annotations

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            following = text[i + 1]
            if following == "u" and i + 6 <= len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(following, following))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def parse_java_properties(text: str) -> dict[str, str]:
    """Keys and values of a properties text, later keys winning."""
    result = {}
    for line in _logical_lines(text):
        i = 0
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":") and (i < len(line) and line[i] not in "=:"):
            rest = rest[1:].lstrip(" \t\f")
        elif i < len(line) and line[i] in "=:":
            rest = line[i + 1 :].lstrip(" \t\f")
        result[_unescape(key)] = _unescape(rest)
    return result


def _escape(text: str, *, is_key: bool) -> str:
    out = []
    for n, char in enumerate(text):
        if char in "\\=:#!" or (char == " " and (is_key or n == 0)):
            out.append("\\" + char)
        elif char in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[char])
        else:
            out.append(char)
    return "".join(out)


def format_java_properties(values: dict[str, str], *, comment_lines: tuple[str, ...] = ("",)) -> str:
    """Properties text: `#` comment lines, then `key=value` lines (Properties.store shape)."""
    head = "".join(f"#{line}\n" for line in comment_lines)
    return head + "".join(f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}\n" for k, v in values.items())
