"""Arrow and Spark schemas of result dataclasses: the one place a dataclass becomes a table schema."""

from __future__ import annotations

import dataclasses
import datetime
import typing
from typing import Any

import pyarrow as pa

_ARROW = {
    int: pa.int64(),
    str: pa.string(),
    bool: pa.bool_(),
    float: pa.float64(),
    datetime.datetime: pa.timestamp("us", tz="UTC"),
    datetime.date: pa.date32(),
}


def _arrow_field(name: str, hint: Any) -> pa.Field:
    """A non-nullable field for `T`, a nullable one for `T | None`."""
    args = typing.get_args(hint)
    if type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return pa.field(name, _ARROW[inner], nullable=True)
    return pa.field(name, _ARROW[hint], nullable=False)


def arrow_schema(cls: type) -> pa.Schema:
    """The Arrow schema of a flat dataclass (int, str, bool, float, UTC datetime, date fields; `| None` is nullable)."""
    hints = typing.get_type_hints(cls)
    return pa.schema([_arrow_field(f.name, hints[f.name]) for f in dataclasses.fields(cls)])


def to_spark_schema(schema: pa.Schema) -> Any:
    """The Spark StructType of an Arrow schema made here."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def to_arrow(rows: list[Any], cls: type) -> pa.Table:
    """Rows (dataclass instances) as an Arrow table with the dataclass's schema."""
    schema = arrow_schema(cls)
    columns = {name: [getattr(row, name) for row in rows] for name in schema.names}
    return pa.table(columns, schema=schema)
