"""A message as JSON, exactly as Kafka's generated `*JsonConverter.write(message, version)` builds it
and Jackson's `JsonNode.toString()` prints it (`generator/.../JsonConverterGenerator.java`).

Per struct, the fields present in the version, in declaration order, keyed by the name with its
first letter lower-cased; a field tagged in the version only when its value is not the default;
unknown tags are not printed. Values:

| type                   | JSON                                                              |
|------------------------|-------------------------------------------------------------------|
| bool                   | true / false                                                      |
| int8 int16 int32 int64 uint16 uint32 | the number                                          |
| float64                | the number as Java's `Double.toString` writes it (`1.0E7`, `0.5`) |
| uuid                   | Kafka's Uuid text (URL-safe base64, no padding)                   |
| string                 | the string                                                        |
| bytes                  | standard base64 with padding (Jackson's BinaryNode)               |
| records                | "" (the converters are called with serializeRecords = true)       |
| array, struct          | array, object                                                     |
| null                   | null                                                              |

:func:`jackson_text` prints such a value as Jackson does: no spaces, `\\"` `\\\\` `\\b` `\\t` `\\n`
`\\f` `\\r` escapes, other control characters as `\\u00XX` in upper-case hex, everything else
(non-ASCII included) as is.
"""

from __future__ import annotations

import base64
import math
from decimal import Decimal

from storage_core.messages.schema import ArrayType, Field, FieldType, MessageSpec, StructSpec, StructValue

Json = dict[str, object] | list[object] | str | int | float | bool | None


def _value(type_: FieldType, value: object, version: int) -> Json:
    if value is None:
        return None
    if isinstance(type_, StructSpec):
        if not isinstance(value, StructValue):
            raise TypeError(f"{type_.name} value expected, got {value!r}")
        return _struct(type_, value, version)
    if isinstance(type_, ArrayType):
        return [_value(type_.element, item, version) for item in value]  # type: ignore[attr-defined]
    kind = type_.name
    if kind == "bytes":
        return base64.b64encode(value).decode("ascii")  # type: ignore[arg-type]
    if kind == "records":
        return ""
    if kind == "float64":
        return float(value)  # type: ignore[arg-type]
    return value  # type: ignore[return-value]


def _printed(f: Field, value: object, version: int) -> bool:
    if version not in f.versions:
        return False
    return version not in f.tagged_versions or value != f.default_value()


def _struct(spec: StructSpec, value: StructValue, version: int) -> dict[str, object]:
    return {
        f.json_name: _value(f.type, value[f.name], version) for f in spec.fields if _printed(f, value[f.name], version)
    }


def to_json(spec: MessageSpec | StructSpec, value: StructValue, version: int) -> dict[str, object]:
    """`<Message>JsonConverter.write(value, version)`: the JSON object of `value` in `version`."""
    return _struct(spec.struct if isinstance(spec, MessageSpec) else spec, value, version)


def java_double_text(value: float) -> str:
    """`Double.toString(value)`: shortest digits; plain notation for 1e-3 <= |x| < 1e7, else `d.dddE±n`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    if not isinstance(exponent, int):  # only NaN and infinities, handled above
        raise ValueError(f"not a finite double: {value!r}")
    point = len(digits) + exponent  # digits before the decimal point in plain notation
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{text}"
        whole, fraction = text[:point].ljust(point, "0"), text[point:]
        return f"{prefix}{whole}.{fraction or '0'}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{point - 1}"


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPE_TABLE = str.maketrans({chr(c): _ESCAPES.get(chr(c), f"\\u{c:04X}") for c in range(0x20)} | _ESCAPES)


def _string_text(text: str) -> str:
    return '"' + text.translate(_ESCAPE_TABLE) + '"'


def jackson_text(value: object) -> str:
    """`value` (dicts, lists, strings, numbers, booleans, None) as Jackson's `toString()` prints it.

    Raises:
        TypeError: a value of another type.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string_text(value)
    if isinstance(value, float):
        return java_double_text(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string_text(str(k))}:{jackson_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(jackson_text(v) for v in value) + "]"
    raise TypeError(f"no JSON form for {value!r}")
