"""The Arrow types columnar inputs declare: JSON-typed columns to decode, and types an output restores.

Parquet and `datasets` inputs carry a schema. Two things are read from it, never from the rows:
which columns (or nested fields) hold Arrow JSON text, which the Parquet reader decodes back
into objects (`json_decoder`), and the type of every other column, which a Parquet or ``hf``
output gives its column again (`source_column_types`, see `arrow_values.carried_columns`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from trajectory_compressor.read.sources import InputSource


def source_column_types(sources: Sequence[InputSource]) -> dict[str, Any]:
    """Arrow types of every column of the columnar inputs, read from their schemas, so a Parquet
    or ``hf`` output can restore them (see `arrow_values.carried_columns`).

    A column two inputs give different types is left out (it is then inferred from its values).
    """
    found: dict[str, Any] = {}
    conflicting: set[str] = set()
    for source in sources:
        for name, arrow_type in _column_types_of(source).items():
            if found.setdefault(name, arrow_type) != arrow_type:
                conflicting.add(name)
    return {name: arrow_type for name, arrow_type in found.items() if name not in conflicting}


def _column_types_of(source: InputSource) -> dict[str, Any]:
    try:
        if source.kind == "parquet":
            import pyarrow.parquet as pq

            schema = pq.read_schema(source.path or source.name)
        elif source.kind == "hf_disk":
            import datasets

            loaded = datasets.load_from_disk(source.path or source.name)
            if isinstance(loaded, datasets.DatasetDict):
                loaded = next(iter(loaded.values()))
            schema = loaded.features.arrow_schema
        else:
            return {}
    except Exception:  # an unreadable input is reported by the run itself, not here
        return {}
    from trajectory_compressor.read.arrow_values import carried_columns

    json_fields = {field.name for field in schema if contains_json_type(field.type)}
    return {name: t for name, t in carried_columns(schema).items() if name not in json_fields}


def contains_json_type(arrow_type: Any) -> bool:
    """Whether `arrow_type` is, or holds in a struct or list, Arrow's JSON extension type."""
    import pyarrow as pa

    if isinstance(arrow_type, pa.JsonType):
        return True
    if pa.types.is_struct(arrow_type):
        return any(contains_json_type(field.type) for field in arrow_type)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return contains_json_type(arrow_type.value_type)
    return False


def json_decoder(arrow_type: Any) -> Any:
    """A function turning `to_pylist()` output of `arrow_type` back into plain JSON values.

    Columns (or nested fields) that mixed types when written are stored as Arrow JSON text
    (see `write.converters`); reading them back as objects makes parquet round trips lossless.
    """
    import pyarrow as pa

    if isinstance(arrow_type, pa.JsonType):
        return lambda value: None if value is None else orjson.loads(value)
    if pa.types.is_struct(arrow_type):
        fields = [(field.name, json_decoder(field.type)) for field in arrow_type]

        def decode_struct(value: Any) -> Any:
            if value is None:
                return None
            for name, decode in fields:
                if name in value:
                    value[name] = decode(value[name])
            return value

        return decode_struct
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        decode_item = json_decoder(arrow_type.value_type)
        return lambda value: None if value is None else [decode_item(item) for item in value]
    return lambda value: value
