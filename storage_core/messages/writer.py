"""Write any declared message in any of its versions (Kafka's generated `write(Writable, ..., short)`).

The layout is the reader's (:mod:`storage_core.messages.reader`); what the writer decides
(MessageDataGenerator.generateClassWriter):

* untagged fields present in the version, in declaration order;
* in flexible versions, the tag buffer: every tagged field whose value differs from its default,
  and every unknown tag the value carries, in increasing tag order; a payload is the field in the
  compact encoding (a nullable struct gets an uvarint marker 1 first, a null one is the single byte 0);
* a non-ignorable field absent from the version must hold its default, else the value cannot be
  written in that version (ValueError), as Kafka's UnsupportedVersionException.

Writing is for tests and builders: nothing in a log dir is ever written with it.
"""

from __future__ import annotations

import struct as struct_module
from collections.abc import Callable
from dataclasses import dataclass

from storage_core.messages.schema import ArrayType, Field, FieldType, MessageSpec, StructSpec, StructValue
from storage_core.messages.wire import FIXED, INT16, INT32, encode_unsigned_varint
from storage_core.partition_metadata import decode_uuid

Write = Callable[[bytearray, object], None]
_MAX_STRING_LENGTH = 0x7FFF


def _fixed_writer(name: str) -> Write:
    pack = FIXED[name].pack

    def write(out: bytearray, value: object) -> None:
        out += pack(int(value) if name == "bool" else value)  # type: ignore[call-overload]

    return write


def _write_uuid(out: bytearray, value: object) -> None:
    out += decode_uuid(str(value))


def _length_writer(*, compact: bool, short: bool) -> Callable[[bytearray, int], None]:
    if compact:

        def write_compact(out: bytearray, length: int) -> None:
            out += encode_unsigned_varint(length + 1)

        return write_compact
    pack = (INT16 if short else INT32).pack

    def write_fixed(out: bytearray, length: int) -> None:
        out += pack(length)

    return write_fixed


def _nullable(name: str, nullable: bool, write_length: Callable[[bytearray, int], None], body: Write) -> Write:
    def write(out: bytearray, value: object) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"field {name} is not nullable in this version")
            write_length(out, -1)
            return
        body(out, value)

    return write


def _string_writer(name: str, *, compact: bool, nullable: bool) -> Write:
    write_length = _length_writer(compact=compact, short=True)

    def body(out: bytearray, value: object) -> None:
        raw = str(value).encode("utf-8")
        if len(raw) > _MAX_STRING_LENGTH:
            raise ValueError(f"string field {name} is longer than {_MAX_STRING_LENGTH} bytes")
        write_length(out, len(raw))
        out += raw

    return _nullable(name, nullable, write_length, body)


def _bytes_writer(name: str, *, compact: bool, nullable: bool) -> Write:
    write_length = _length_writer(compact=compact, short=False)

    def body(out: bytearray, value: object) -> None:
        raw = bytes(value)  # type: ignore[call-overload]
        write_length(out, len(raw))
        out += raw

    return _nullable(name, nullable, write_length, body)


def _array_writer(name: str, element: Write, *, compact: bool, nullable: bool) -> Write:
    write_length = _length_writer(compact=compact, short=False)

    def body(out: bytearray, value: object) -> None:
        items = tuple(value)  # type: ignore[call-overload]
        write_length(out, len(items))
        for item in items:
            element(out, item)

    return _nullable(name, nullable, write_length, body)


def _struct_writer(spec: StructSpec, version: int, flexible: bool, *, nullable: bool, tagged: bool) -> Write:
    def write_struct(out: bytearray, value: object) -> None:
        if not isinstance(value, StructValue) or value.spec is not spec:
            raise ValueError(f"expected a {spec.name} value, got {value!r}")
        _write_struct(_plan(spec, version, flexible), out, value)

    if not nullable:
        return write_struct
    present, absent = (encode_unsigned_varint(1), encode_unsigned_varint(0)) if tagged else (b"\x01", b"\xff")

    def write_nullable(out: bytearray, value: object) -> None:
        if value is None:
            out += absent
            return
        out += present
        write_struct(out, value)

    return write_nullable


def _writer(
    name: str, type_: FieldType, version: int, flexible: bool, *, compact: bool, nullable: bool, tagged: bool
) -> Write:
    if isinstance(type_, StructSpec):
        return _struct_writer(type_, version, flexible, nullable=nullable, tagged=tagged)
    if isinstance(type_, ArrayType):
        element = _writer(name, type_.element, version, flexible, compact=compact, nullable=False, tagged=False)
        return _array_writer(name, element, compact=compact, nullable=nullable)
    kind = type_.name
    if kind == "string":
        return _string_writer(name, compact=compact, nullable=nullable)
    if kind in ("bytes", "records"):
        return _bytes_writer(name, compact=compact, nullable=nullable)
    if kind == "uuid":
        return _write_uuid
    return _fixed_writer(kind)


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to write one struct in one version."""

    untagged: tuple[tuple[str, Write], ...]
    tagged: tuple[tuple[int, str, object, Write], ...]  # (tag, name, default, payload writer)
    must_be_default: tuple[tuple[str, object], ...]  # non-ignorable fields absent from the version
    flexible: bool


_PLANS: dict[tuple[StructSpec, int, bool], _Plan] = {}


def _field_writer(f: Field, version: int, flexible: bool, *, tagged: bool) -> Write:
    return _writer(
        f.name,
        f.type,
        version,
        flexible,
        compact=flexible or tagged,
        nullable=version in f.nullable_versions,
        tagged=tagged,
    )


def _plan(spec: StructSpec, version: int, flexible: bool) -> _Plan:
    key = (spec, version, flexible)
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    untagged: list[tuple[str, Write]] = []
    tagged: list[tuple[int, str, object, Write]] = []
    must_be_default: list[tuple[str, object]] = []
    for f in spec.fields:
        if version not in f.versions:
            if not f.ignorable:
                must_be_default.append((f.name, f.default_value()))
        elif version in f.tagged_versions and f.tag is not None:
            if flexible:
                tagged.append((f.tag, f.name, f.default_value(), _field_writer(f, version, flexible, tagged=True)))
            else:
                must_be_default.append((f.name, f.default_value()))
        else:
            untagged.append((f.name, _field_writer(f, version, flexible, tagged=False)))
    plan = _Plan(tuple(untagged), tuple(sorted(tagged, key=lambda t: t[0])), tuple(must_be_default), flexible)
    _PLANS[key] = plan
    return plan


def _write_struct(plan: _Plan, out: bytearray, value: StructValue) -> None:
    for name, default in plan.must_be_default:
        if value[name] != default:
            raise ValueError(f"{value.spec.name}.{name} holds a non-default value but is not in this version")
    for name, write in plan.untagged:
        write(out, value[name])
    if not plan.flexible:
        if value.unknown_tags:
            raise ValueError(f"{value.spec.name} carries tagged fields but this version has no tag buffer")
        return
    fields: list[tuple[int, bool, bytes]] = [(tag, False, raw) for tag, raw in value.unknown_tags]
    for tag, name, default, write in plan.tagged:
        if value[name] != default:
            payload = bytearray()
            write(payload, value[name])
            fields.append((tag, True, bytes(payload)))
    fields.sort(key=lambda f: (f[0], f[1]))  # Kafka writes unknown tags before a known one of the same number
    out += encode_unsigned_varint(len(fields))
    for tag, _, payload in fields:
        out += encode_unsigned_varint(tag)
        out += encode_unsigned_varint(len(payload))
        out += payload


def write_message(spec: MessageSpec, value: StructValue, version: int) -> bytes:
    """Encode `value` as `spec` in `version`.

    Raises:
        ValueError: a version outside the declaration, a value of another struct, a null or too long
            value where the version does not allow it, or a non-default value in a field the version
            does not carry.
    """
    if version not in spec.valid_versions:
        raise ValueError(f"{spec.name} has no version {version} (valid: {spec.valid_versions})")
    if value.spec is not spec.struct:
        raise ValueError(f"expected a {spec.name} value, got one of {value.spec.name}")
    out = bytearray()
    try:
        _write_struct(_plan(spec.struct, version, version in spec.flexible_versions), out, value)
    except struct_module.error as exc:
        raise ValueError(f"{spec.name} version {version}: a value does not fit its type: {exc}") from None
    return bytes(out)
