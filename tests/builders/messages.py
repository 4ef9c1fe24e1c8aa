"""Hypothesis strategies for values of any declared message in any version.

`struct_values(spec, version)` draws a :class:`StructValue` that the version can carry: fields the
version lacks keep their defaults, nullable ones are sometimes null, and in flexible versions the
struct may carry unknown tagged fields (tags no declaration uses), as a newer Kafka would write.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from storage_core.messages.schema import ArrayType, Field, FieldType, MessageSpec, StructSpec, StructValue
from storage_core.partition_metadata import encode_uuid

_INTS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "uint32": st.integers(0, 2**32 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
}
UNKNOWN_TAG_BASE = 100  # declared tags stay far below this
_MAX_STRING_BYTES = 0x7FFF


def _string() -> st.SearchStrategy[str]:
    return st.text(max_size=12).filter(lambda s: len(s.encode()) <= _MAX_STRING_BYTES)


def _value(type_: FieldType, version: int, flexible: bool) -> st.SearchStrategy[object]:
    if isinstance(type_, StructSpec):
        return struct_values(type_, version, flexible=flexible)
    if isinstance(type_, ArrayType):
        return st.lists(_value(type_.element, version, flexible), max_size=3).map(tuple)
    name = type_.name
    if name in _INTS:
        return _INTS[name]
    if name == "bool":
        return st.booleans()
    if name == "float64":
        return st.floats(allow_nan=False).filter(lambda x: not math.isnan(x))
    if name == "uuid":
        return st.binary(min_size=16, max_size=16).map(encode_uuid)
    if name == "string":
        return _string()
    return st.binary(max_size=12)  # bytes, records


def _field_value(f: Field, version: int, flexible: bool) -> st.SearchStrategy[object]:
    if version not in f.versions or (version in f.tagged_versions and not flexible):
        return st.just(f.default_value())
    value = _value(f.type, version, flexible)
    if version in f.nullable_versions:
        value = st.none() | value
    return value


@st.composite
def _unknown_tags(draw: st.DrawFn) -> tuple[tuple[int, bytes], ...]:
    tags = draw(st.lists(st.integers(UNKNOWN_TAG_BASE, UNKNOWN_TAG_BASE + 20), unique=True, max_size=2))
    return tuple((tag, draw(st.binary(max_size=6))) for tag in sorted(tags))


def struct_values(spec: StructSpec, version: int, *, flexible: bool) -> st.SearchStrategy[StructValue]:
    """Values of `spec` that `version` (flexible or not) can carry."""
    fields = st.fixed_dictionaries({f.name: _field_value(f, version, flexible) for f in spec.fields})
    tags = _unknown_tags() if flexible else st.just(())
    return st.builds(lambda values, unknown: StructValue(spec, values, unknown), fields, tags)


def message_values(spec: MessageSpec, version: int) -> st.SearchStrategy[StructValue]:
    """Values of a message in `version`."""
    return struct_values(spec.struct, version, flexible=version in spec.flexible_versions)
