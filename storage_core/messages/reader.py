"""Read any declared message in any of its versions (Kafka's generated `read(Readable, short)`).

A struct is its fields in declaration order, each present in `field.versions` and not tagged in
the version read; in flexible versions a tagged-field buffer follows:

```
Struct      => [untagged field]...  TAG_BUFFER (flexible versions only)
TAG_BUFFER  => count:uvarint  [tag:uvarint size:uvarint payload:size bytes]...
string      => int16 length (-1 null) | compact: uvarint length+1 (0 null); UTF-8
bytes       => int32 length (-1 null) | compact: uvarint length+1 (0 null)
[]T         => int32 count (-1 null)  | compact: uvarint count+1 (0 null); then the elements
struct      => its fields; when nullable: int8 marker first (-1 null), in a tag payload an
               uvarint marker (0 null)
```

Rules (MessageDataGenerator.generateClassReader):

* a field absent from the version, or tagged and not in the buffer, takes its default;
* a tagged field's payload always uses the compact encodings, whatever the version;
* a declared tag that is not valid for the version read is an error; an unknown tag is kept
  (`StructValue.unknown_tags`) and skipped;
* null in a non-nullable field, a string longer than 32767 bytes, an array longer than the bytes
  left, and a value running past the end are errors. Strings decode as Java does (malformed UTF-8
  becomes U+FFFD).

The per-(struct, version) plan is built once and cached; reading a record is then one pass.
"""

from __future__ import annotations

import struct as struct_module
from collections.abc import Callable
from dataclasses import dataclass

from storage_core.errors import CorruptRecordError, UnsupportedMessageVersionError
from storage_core.messages.schema import ArrayType, Field, FieldType, MessageSpec, StructSpec, StructValue
from storage_core.messages.wire import FIXED, INT16, INT32, Buffer, read_unsigned_varint
from storage_core.partition_metadata import UUID_SIZE, encode_uuid

Read = Callable[[memoryview, int], tuple[object, int]]
ReadInt = Callable[[memoryview, int], tuple[int, int]]
_MAX_STRING_LENGTH = 0x7FFF


class _Malformed(Exception):
    """A value that does not parse; re-raised as CorruptRecordError naming the message."""


def _fixed_reader(name: str) -> Read:
    codec = FIXED[name]
    size = codec.size
    unpack = codec.unpack_from

    def read(buf: memoryview, pos: int) -> tuple[object, int]:
        try:
            return unpack(buf, pos)[0], pos + size
        except struct_module.error:
            raise _Malformed(f"a {name} at {pos} runs past the end") from None

    if name != "bool":
        return read

    def read_bool(buf: memoryview, pos: int) -> tuple[object, int]:
        value, end = read(buf, pos)
        return value != 0, end

    return read_bool


def _read_uuid(buf: memoryview, pos: int) -> tuple[object, int]:
    end = pos + UUID_SIZE
    if end > len(buf):
        raise _Malformed(f"a uuid at {pos} runs past the end")
    return encode_uuid(bytes(buf[pos:end])), end


def _int_reader(codec: struct_module.Struct) -> ReadInt:
    def read(buf: memoryview, pos: int) -> tuple[int, int]:
        try:
            value: int = codec.unpack_from(buf, pos)[0]
        except struct_module.error:
            raise _Malformed(f"an int{8 * codec.size} at {pos} runs past the end") from None
        return value, pos + codec.size

    return read


def _read_compact_length(buf: memoryview, pos: int) -> tuple[int, int]:
    value, end = read_unsigned_varint(buf, pos)
    return value - 1, end


def _length_reader(*, compact: bool, short: bool) -> ReadInt:
    """The length prefix of a string (`short`), bytes or array: -1 for null."""
    if compact:
        return _read_compact_length
    return _int_reader(INT16 if short else INT32)


def _null_or_fail(name: str, nullable: bool, pos: int) -> tuple[object, int]:
    if not nullable:
        raise _Malformed(f"non-nullable field {name} was serialized as null")
    return None, pos


def _string_reader(name: str, *, compact: bool, nullable: bool) -> Read:
    read_length = _length_reader(compact=compact, short=True)

    def read(buf: memoryview, pos: int) -> tuple[object, int]:
        length, pos = read_length(buf, pos)
        if length < 0:
            return _null_or_fail(name, nullable, pos)
        if length > _MAX_STRING_LENGTH:
            raise _Malformed(f"string field {name} had invalid length {length}")
        end = pos + length
        if end > len(buf):
            raise _Malformed(f"string field {name} of {length} bytes runs past the end")
        return str(buf[pos:end], "utf-8", "replace"), end

    return read


def _bytes_reader(name: str, *, compact: bool, nullable: bool) -> Read:
    read_length = _length_reader(compact=compact, short=False)

    def read(buf: memoryview, pos: int) -> tuple[object, int]:
        length, pos = read_length(buf, pos)
        if length < 0:
            return _null_or_fail(name, nullable, pos)
        end = pos + length
        if end > len(buf):
            raise _Malformed(f"bytes field {name} of {length} bytes runs past the end")
        return bytes(buf[pos:end]), end

    return read


def _array_reader(name: str, element: Read, *, compact: bool, nullable: bool) -> Read:
    read_length = _length_reader(compact=compact, short=False)

    def read(buf: memoryview, pos: int) -> tuple[object, int]:
        count, pos = read_length(buf, pos)
        if count < 0:
            return _null_or_fail(name, nullable, pos)
        if count > len(buf) - pos:
            raise _Malformed(f"array field {name} of {count} elements is longer than the {len(buf) - pos} bytes left")
        items = []
        for _ in range(count):
            item, pos = element(buf, pos)
            items.append(item)
        return tuple(items), pos

    return read


def _struct_reader(spec: StructSpec, version: int, flexible: bool, *, nullable: bool, tagged: bool) -> Read:
    def read_struct(buf: memoryview, pos: int) -> tuple[object, int]:
        return _read_struct(_plan(spec, version, flexible), buf, pos)

    if not nullable:
        return read_struct
    read_marker = read_unsigned_varint if tagged else _int_reader(FIXED["int8"])
    null_below = 1 if tagged else 0  # a tag payload marks null with 0, an untagged field with -1

    def read_nullable(buf: memoryview, pos: int) -> tuple[object, int]:
        marker, pos = read_marker(buf, pos)
        if marker < null_below:
            return None, pos
        return read_struct(buf, pos)

    return read_nullable


def _reader(
    name: str, type_: FieldType, version: int, flexible: bool, *, compact: bool, nullable: bool, tagged: bool
) -> Read:
    if isinstance(type_, StructSpec):
        return _struct_reader(type_, version, flexible, nullable=nullable, tagged=tagged)
    if isinstance(type_, ArrayType):
        element = _reader(name, type_.element, version, flexible, compact=compact, nullable=False, tagged=False)
        return _array_reader(name, element, compact=compact, nullable=nullable)
    kind = type_.name
    if kind == "string":
        return _string_reader(name, compact=compact, nullable=nullable)
    if kind in ("bytes", "records"):
        return _bytes_reader(name, compact=compact, nullable=nullable)
    if kind == "uuid":
        return _read_uuid
    return _fixed_reader(kind)


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to read one struct in one version."""

    spec: StructSpec
    defaults: dict[str, object]  # fields not read in this version, and tagged ones
    untagged: tuple[tuple[str, Read], ...]
    tagged: dict[int, tuple[str, Read]]
    invalid_tags: dict[int, str]  # declared tags not valid in this version
    flexible: bool


_PLANS: dict[tuple[StructSpec, int, bool], _Plan] = {}


def _field_reader(f: Field, version: int, flexible: bool, *, tagged: bool) -> Read:
    return _reader(
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
    defaults: dict[str, object] = {}
    untagged: list[tuple[str, Read]] = []
    tagged: dict[int, tuple[str, Read]] = {}
    invalid_tags: dict[int, str] = {}
    for f in spec.fields:
        present = version in f.versions
        is_tagged = version in f.tagged_versions
        if f.tag is not None:
            if present and is_tagged and flexible:
                tagged[f.tag] = (f.name, _field_reader(f, version, flexible, tagged=True))
            else:
                invalid_tags[f.tag] = f.name
        if present and not is_tagged:
            untagged.append((f.name, _field_reader(f, version, flexible, tagged=False)))
        else:
            defaults[f.name] = f.default_value()
    plan = _Plan(spec, defaults, tuple(untagged), tagged, invalid_tags, flexible)
    _PLANS[key] = plan
    return plan


def _read_tag_buffer(
    plan: _Plan, values: dict[str, object], buf: memoryview, pos: int
) -> tuple[tuple[tuple[int, bytes], ...], int]:
    count, pos = read_unsigned_varint(buf, pos)
    unknown: list[tuple[int, bytes]] = []
    for _ in range(count):
        tag, pos = read_unsigned_varint(buf, pos)
        size, pos = read_unsigned_varint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise _Malformed(f"tagged field {tag} of {size} bytes runs past the end")
        known = plan.tagged.get(tag)
        if known is not None:
            name, read = known
            values[name], after = read(buf[:end], pos)
            if after != end:
                raise _Malformed(f"tagged field {name} (tag {tag}) declares {size} bytes but holds {after - pos}")
        elif tag in plan.invalid_tags:
            raise _Malformed(f"tag {tag} ({plan.invalid_tags[tag]}) is not valid for this version")
        else:
            unknown.append((tag, bytes(buf[pos:end])))
        pos = end
    return tuple(unknown), pos


def _read_struct(plan: _Plan, buf: memoryview, pos: int) -> tuple[StructValue, int]:
    values = dict(plan.defaults)
    for name, read in plan.untagged:
        values[name], pos = read(buf, pos)
    unknown: tuple[tuple[int, bytes], ...] = ()
    if plan.flexible:
        unknown, pos = _read_tag_buffer(plan, values, buf, pos)
    return StructValue(plan.spec, values, unknown), pos


def read_message(
    spec: MessageSpec, data: Buffer, version: int, *, position: int = 0, lenient_version: bool = False
) -> tuple[StructValue, int]:
    """Decode `spec` in `version` from `data` at `position`.

    Args:
        spec: the message declaration.
        data: the bytes.
        version: the version to read.
        position: where the message starts in `data`.
        lenient_version: read a version outside the declared range as the nearest declared one,
            as Kafka's generated readers do for a forward-compatible message (the consumer
            protocol's subscription and assignment); otherwise such a version is an error.

    Returns:
        The value and the position after it (bytes after it are the caller's business).

    Raises:
        UnsupportedMessageVersionError: `version` is outside the declaration (not lenient).
        CorruptRecordError: the bytes do not hold the message; the message names it, the field
            and the byte position.
    """
    valid = spec.valid_versions
    if version not in valid:
        if not lenient_version:
            raise UnsupportedMessageVersionError(message=spec.name, version=version, type_id=spec.api_key)
        version = min(max(version, valid.lowest), valid.highest)
    view = memoryview(data)
    try:
        return _read_struct(_plan(spec.struct, version, version in spec.flexible_versions), view, position)
    except (_Malformed, CorruptRecordError) as exc:
        raise CorruptRecordError(f"{spec.name} version {version} does not parse: {exc}") from None
