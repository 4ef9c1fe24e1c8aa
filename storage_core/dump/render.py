"""One dumped line and its two renderings: Kafka's text and JSON. The dumpers decide the fields; this
module only decides how a value looks.

A :class:`DumpLine` is a `kind` (the JSON `type`) and an ordered tuple of :class:`Field` (name, value,
separator). Text renders like `kafka-dump-log.sh` (`DumpLogSegments.scala`): `prefix` + the fields as
`name: value` joined by single spaces + `suffix`, or, for sentence lines, a `template` filled with the
fields' text. JSON renders one compact object per line: `{"type": kind, name: value, ...}` with the
same names.

How values print (text / JSON):

| value                 | text (as Java prints it)                 | JSON                       |
|-----------------------|------------------------------------------|----------------------------|
| bool                  | `true` / `false`                         | true / false               |
| bytes (key, payload)  | UTF-8, malformed input replaced (U+FFFD) | base64                     |
| list[str]             | `[a,b]`                                  | array of strings           |
| OptionalLong          | `OptionalLong.empty` / `OptionalLong[n]` | null / n                   |
| LegacyCrc             | `n}` (the tool's stray brace)            | n                          |
| JsonText              | Jackson's `toString` (messages.json_form) | the nested object          |
| None                  | the field is left out, as Kafka does     | null                       |
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import NamedTuple

from storage_core.messages import jackson_text


@dataclass(frozen=True, slots=True)
class OptionalLong:
    """Java's `OptionalLong`, printed `OptionalLong.empty` or `OptionalLong[n]`."""

    value: int | None

    def __str__(self) -> str:
        return "OptionalLong.empty" if self.value is None else f"OptionalLong[{self.value}]"


@dataclass(frozen=True, slots=True)
class LegacyCrc:
    """A v0/v1 record's CRC. `DumpLogSegments.scala` prints `crc: ${r.checksum}}`: the stray `}` is
    reproduced on purpose (kafka-format.md §12.1) so text output stays byte-identical."""

    value: int

    def __str__(self) -> str:
        return f"{self.value}}}"


@dataclass(frozen=True, slots=True)
class JsonText:
    """A JSON document as Kafka's generated `*JsonConverter.write(...).toString()` prints it."""

    data: object

    def __str__(self) -> str:
        return jackson_text(self.data)


Value = int | str | bool | bytes | list[str] | OptionalLong | LegacyCrc | JsonText | None


class Field(NamedTuple):
    """One named value of a line; `separator` sits between name and value in the text."""

    name: str
    value: Value
    separator: str = ": "


@dataclass(frozen=True, slots=True)
class DumpLine:
    """One output line.

    Attributes:
        kind: what the line describes (`file`, `batch`, `record`, `index_entry`, ...): the JSON `type`.
        fields: the values, in print order.
        template: for sentence lines (`Dumping {file}`), a `str.format` template over the fields' text.
        prefix: text before the fields (`| ` for records).
        suffix: text after the fields (the snapshot line's trailing space).
        stderr: the line belongs on standard error (warnings, verification errors).
    """

    kind: str
    fields: tuple[Field, ...] = ()
    template: str | None = None
    prefix: str = ""
    suffix: str = ""
    stderr: bool = False


def _text(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return "[" + ",".join(value) + "]"
    return str(value)


def render_text(line: DumpLine) -> str:
    """The line exactly as `kafka-dump-log.sh` prints it (without the newline)."""
    if line.template is not None:
        return line.template.format_map({field.name: _text(field.value) for field in line.fields})
    shown = [f"{field.name}{field.separator}{_text(field.value)}" for field in line.fields if field.value is not None]
    if not shown:  # Kafka prints the prefix together with the first value: nothing to show, empty line
        return ""
    return line.prefix + " ".join(shown) + line.suffix


def _json(value: Value) -> object:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, OptionalLong | LegacyCrc):
        return value.value
    if isinstance(value, JsonText):
        return value.data
    return value


def render_json(line: DumpLine) -> str:
    """The line as one compact JSON object: `type`, then every field by name."""
    body: dict[str, object] = {"type": line.kind}
    body.update((field.name, _json(field.value)) for field in line.fields)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)
