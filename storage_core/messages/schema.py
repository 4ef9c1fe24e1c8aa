"""Declarations of Kafka's versioned messages: types, fields, structs and messages, and decoded values.

Kafka generates Java classes from message JSONs (`generator/.../message/MessageDataGenerator.java`);
we declare the same schemas in Python with :func:`field`, :func:`struct` and :func:`message`, and one
reader (:mod:`storage_core.messages.reader`), one writer (:mod:`~storage_core.messages.writer`) and
one JSON renderer (:mod:`~storage_core.messages.json_form`) serve every declaration and version.

```
Message   => name, validVersions, flexibleVersions, apiKey (metadata records), fields
Field     => Name (Kafka's spelling; JSON key is the name with its first letter lower-cased)
             type: bool int8 int16 uint16 int32 uint32 int64 float64 uuid string bytes records
                   []T (array of a type) or a nested struct (its own fields)
             versions, nullableVersions, taggedVersions + tag, default, ignorable
```

Defaults (Kafka's `FieldSpec.fieldDefault`): the declared one, else 0, 0.0, false, "", empty bytes,
the zero Uuid, an empty array, or a struct of defaults; `None` means null (declared `"default": "null"`).
A field absent from a version reads as its default; a tagged field absent from the tag buffer too.

Decoded values are :class:`StructValue`s: fields by their declared name (`record["TopicId"]`),
ints, floats, bools, `str` (strings and Kafka Uuid text, e.g. `"4L6g3nShT-eMCtK--X86sw"`), `bytes`,
tuples for arrays, nested `StructValue`s, and `None` for null. Unknown tagged fields are kept as
`(tag, raw bytes)` pairs in `unknown_tags`, as Kafka keeps them, and written back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from types import MappingProxyType
from typing import Final

from storage_core.messages.versions import NONE, Versions

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID as Kafka prints it


@dataclass(frozen=True, slots=True)
class Primitive:
    """A scalar or variable-length type, by Kafka's name (`int32`, `string`, `uuid`, ...)."""

    name: str

    def __str__(self) -> str:
        return self.name


BOOL: Final = Primitive("bool")
INT8: Final = Primitive("int8")
INT16: Final = Primitive("int16")
UINT16: Final = Primitive("uint16")
INT32: Final = Primitive("int32")
UINT32: Final = Primitive("uint32")
INT64: Final = Primitive("int64")
FLOAT64: Final = Primitive("float64")
UUID: Final = Primitive("uuid")
STRING: Final = Primitive("string")
BYTES: Final = Primitive("bytes")
RECORDS: Final = Primitive("records")

_PRIMITIVE_DEFAULTS: dict[str, object] = {
    "bool": False,
    "int8": 0,
    "int16": 0,
    "uint16": 0,
    "int32": 0,
    "uint32": 0,
    "int64": 0,
    "float64": 0.0,
    "uuid": ZERO_UUID,
    "string": "",
    "bytes": b"",
    "records": None,
}
_VARIABLE_LENGTH = frozenset({"string", "bytes", "records"})


@dataclass(frozen=True, slots=True)
class ArrayType:
    """`[]T`: an array of `element`."""

    element: FieldType

    def __str__(self) -> str:
        return f"[]{self.element}"


class _TypeDefault:
    """The sentinel for "no declared default": the type's own default applies."""

    def __repr__(self) -> str:
        return "TYPE_DEFAULT"


TYPE_DEFAULT: Final = _TypeDefault()


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct (Kafka's `FieldSpec`).

    Attributes:
        name: Kafka's field name; the JSON key is :attr:`json_name`.
        type: a :class:`Primitive`, an :class:`ArrayType` or a nested :class:`StructSpec`.
        versions: the versions that carry the field.
        nullable_versions: the versions in which it may be null.
        tagged_versions: the versions in which it is a tagged field (with `tag`).
        tag: the tag number, for tagged fields.
        default: the declared default (None: null), or TYPE_DEFAULT.
        ignorable: writing a version without the field may drop a non-default value.
    """

    name: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions = NONE
    tagged_versions: Versions = NONE
    tag: int | None = None
    default: object = TYPE_DEFAULT
    ignorable: bool = False

    @property
    def json_name(self) -> str:
        """The name with its first letter lower-cased (`MessageGenerator.lowerCaseFirst`)."""
        return self.name[:1].lower() + self.name[1:]

    def default_value(self) -> object:
        """The value of the field when a version or a tag buffer does not carry it."""
        if self.default is not TYPE_DEFAULT:
            return self.default
        if isinstance(self.type, Primitive):
            return _PRIMITIVE_DEFAULTS[self.type.name]
        if isinstance(self.type, ArrayType):
            return ()
        return self.type.new()

    @property
    def is_variable_length(self) -> bool:
        """Strings, bytes, records and arrays: the types that may be null."""
        return isinstance(self.type, ArrayType) or (
            isinstance(self.type, Primitive) and self.type.name in _VARIABLE_LENGTH
        )


@dataclass(frozen=True, slots=True, eq=False)
class StructSpec:
    """A struct: a message's top level, a nested struct or an array's element struct."""

    name: str
    fields: tuple[Field, ...]
    _by_name: Mapping[str, Field] = dataclass_field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_name = {f.name: f for f in self.fields}
        if len(by_name) != len(self.fields):
            raise ValueError(f"struct {self.name} declares a field name twice")
        tags = [f.tag for f in self.fields if f.tag is not None]
        if len(set(tags)) != len(tags):
            raise ValueError(f"struct {self.name} declares a tag twice")
        object.__setattr__(self, "_by_name", MappingProxyType(by_name))

    def field(self, name: str) -> Field:
        """The field called `name`.

        Raises:
            KeyError: no such field.
        """
        return self._by_name[name]

    def new(self, values: Mapping[str, object] | None = None, /, **named: object) -> StructValue:
        """A value of this struct: the given fields, every other one at its default.

        Raises:
            ValueError: a name that is not a field of the struct.
        """
        given = {**(values or {}), **named}
        unknown = set(given) - set(self._by_name)
        if unknown:
            raise ValueError(f"{self.name} has no field {sorted(unknown)}")
        return StructValue(self, {f.name: given[f.name] if f.name in given else f.default_value() for f in self.fields})

    def __str__(self) -> str:
        return self.name


FieldType = Primitive | ArrayType | StructSpec


@dataclass(frozen=True, slots=True, eq=False)
class MessageSpec:
    """A top-level message (Kafka's `MessageSpec`): its struct and version ranges.

    Attributes:
        name: Kafka's message name (`TopicRecord`, `OffsetCommitValue`, ...).
        struct: the fields.
        valid_versions: the versions this declaration reads and writes.
        flexible_versions: the versions with compact encodings and tagged-field buffers.
        api_key: the record type of a metadata record (None for other messages).
    """

    name: str
    struct: StructSpec
    valid_versions: Versions
    flexible_versions: Versions
    api_key: int | None = None

    def new(self, values: Mapping[str, object] | None = None, /, **named: object) -> StructValue:
        """A value of this message (see :meth:`StructSpec.new`)."""
        return self.struct.new(values, **named)

    def __str__(self) -> str:
        return self.name


class StructValue(Mapping[str, object]):
    """A decoded struct: its declaration, its fields by name, and the tagged fields nobody declared.

    A read-only mapping of field name to value; equal to another value of the same declaration
    with equal fields and unknown tags.
    """

    __slots__ = ("_values", "spec", "unknown_tags")

    def __init__(
        self, spec: StructSpec, values: dict[str, object], unknown_tags: tuple[tuple[int, bytes], ...] = ()
    ) -> None:
        self.spec = spec
        self._values = values
        self.unknown_tags = unknown_tags

    def __getitem__(self, name: str) -> object:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StructValue):
            return NotImplemented
        return self.spec is other.spec and self._values == other._values and self.unknown_tags == other.unknown_tags

    def __hash__(self) -> int:
        return hash((self.spec.name, tuple(self._values.items())))

    # Typed accessors, for code that knows the declaration it reads.

    def integer(self, name: str) -> int:
        """An integer field (int8 to int64, uint16, uint32)."""
        value = self._values[name]
        if not isinstance(value, int):
            raise TypeError(f"{self.spec.name}.{name} is not an integer: {value!r}")
        return value

    def text(self, name: str) -> str:
        """A non-null string or uuid field."""
        value = self._values[name]
        if not isinstance(value, str):
            raise TypeError(f"{self.spec.name}.{name} is not a string: {value!r}")
        return value

    def optional_text(self, name: str) -> str | None:
        """A nullable string field."""
        value = self._values[name]
        return None if value is None else self.text(name)

    def integers(self, name: str) -> tuple[int, ...] | None:
        """An array of integers, None when null."""
        value = self._values[name]
        if value is None:
            return None
        if not isinstance(value, tuple) or not all(isinstance(v, int) for v in value):
            raise TypeError(f"{self.spec.name}.{name} is not an array of integers: {value!r}")
        return value

    def texts(self, name: str) -> tuple[str, ...] | None:
        """An array of strings or uuids, None when null."""
        value = self._values[name]
        if value is None:
            return None
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"{self.spec.name}.{name} is not an array of strings: {value!r}")
        return value

    def structs(self, name: str) -> tuple[StructValue, ...]:
        """A non-null array of structs."""
        value = self._values[name]
        if not isinstance(value, tuple) or not all(isinstance(v, StructValue) for v in value):
            raise TypeError(f"{self.spec.name}.{name} is not an array of structs: {value!r}")
        return value

    def replace(self, **changes: object) -> StructValue:
        """A copy with some fields changed (unknown tags kept).

        Raises:
            ValueError: a name that is not a field of the struct.
        """
        unknown = set(changes) - set(self._values)
        if unknown:
            raise ValueError(f"{self.spec.name} has no field {sorted(unknown)}")
        return StructValue(self.spec, {**self._values, **changes}, self.unknown_tags)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self._values.items())
        tags = f", unknown_tags={self.unknown_tags!r}" if self.unknown_tags else ""
        return f"{self.spec.name}({fields}{tags})"


# Declaration helpers: the message files read like Kafka's JSONs.


def _versions(text: str | None) -> Versions:
    return NONE if text is None else Versions.parse(text)


def field(
    name: str,
    type_: FieldType,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tagged: str | None = None,
    tag: int | None = None,
    default: object = TYPE_DEFAULT,
    ignorable: bool = False,
) -> Field:
    """A field: `field("Isr", array(INT32), "0+", nullable="0+", tagged="0+", tag=0, default=None)`.

    Raises:
        ValueError: a tagged field without a tag, or a tag without tagged versions.
    """
    tagged_versions = _versions(tagged)
    if (tag is None) != tagged_versions.empty:
        raise ValueError(f"field {name}: a tagged field needs both tagged versions and a tag")
    return Field(
        name=name,
        type=type_,
        versions=_versions(versions),
        nullable_versions=_versions(nullable),
        tagged_versions=tagged_versions,
        tag=tag,
        default=default,
        ignorable=ignorable,
    )


def array(element: FieldType) -> ArrayType:
    """`[]element`."""
    return ArrayType(element)


def struct(name: str, *fields: Field) -> StructSpec:
    """A nested struct type named `name`."""
    return StructSpec(name, tuple(fields))


def message(name: str, *fields: Field, valid: str, flexible: str, api_key: int | None = None) -> MessageSpec:
    """A top-level message declaration."""
    return MessageSpec(
        name=name,
        struct=StructSpec(name, tuple(fields)),
        valid_versions=Versions.parse(valid),
        flexible_versions=Versions.parse(flexible),
        api_key=api_key,
    )


__all__ = [
    "BOOL",
    "BYTES",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "RECORDS",
    "STRING",
    "TYPE_DEFAULT",
    "UINT16",
    "UINT32",
    "UUID",
    "ZERO_UUID",
    "ArrayType",
    "Field",
    "FieldType",
    "MessageSpec",
    "Primitive",
    "StructSpec",
    "StructValue",
    "array",
    "field",
    "message",
    "struct",
]
