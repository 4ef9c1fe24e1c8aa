"""One dumped line, rendered as Kafka's text or as JSON: one place decides the fields of both.

A :class:`DumpLine` is an ordered list of (Kafka field name, value). The text renderer prints
`name: value` pairs joined by spaces exactly as `kafka-dump-log.sh` does (booleans `true`/`false`,
`OptionalLong.empty` / `OptionalLong[n]`, lists `[a,b]`, bytes as UTF-8); the JSON renderer prints
one object per line with the same names, a `type` field, bytes in base64 and null for null.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OptionalLong:
    """Java's OptionalLong, printed `OptionalLong.empty` or `OptionalLong[n]`."""

    value: int | None

    def __str__(self) -> str:
        return "OptionalLong.empty" if self.value is None else f"OptionalLong[{self.value}]"


class BracedCrc(int):
    """A legacy record's CRC: Kafka's tool prints it followed by a stray `}` (reproduced on purpose)."""

    def __str__(self) -> str:
        return f"{int(self)}}}"


Value = int | str | bool | bytes | list[str] | OptionalLong | None


@dataclass(frozen=True, slots=True)
class DumpLine:
    """One output line.

    Attributes:
        kind: what the line describes (`file`, `batch`, `record`, `index_entry`, ...), the JSON `type`.
        fields: (name, value) pairs in print order.
        text: fixed text for lines that are not name/value pairs (`Dumping <file>`).
        prefix: text printed before the pairs (`| ` for records).
        stderr: the line goes to standard error (warnings, mismatches).
        suffix: text printed after the pairs (Kafka's stray `}` after legacy record CRCs).
    """

    kind: str
    fields: tuple[tuple[str, Value], ...] = ()
    text: str | None = None
    prefix: str = ""
    stderr: bool = False
    suffix: str = ""


def _text(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return "[" + ",".join(value) + "]"
    return str(value)


def render_text(line: DumpLine) -> str:
    if line.text is not None:
        return line.text
    return line.prefix + " ".join(f"{name}: {_text(value)}" for name, value in line.fields) + line.suffix


def _json(value: Value) -> object:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, OptionalLong):
        return value.value
    return value


def render_json(line: DumpLine) -> str:
    body: dict[str, object] = {"type": line.kind}
    if line.text is not None:
        body["message"] = line.text
    body.update((name, _json(value)) for name, value in line.fields)
    return json.dumps(body, separators=(",", ":"))
