"""Arrow values that JSON has no type for (binary, decimal, dates and times), in and back out.

The pipeline works on JSON records (its work file is JSON Lines, which is what makes resume
exact), so a Parquet or `datasets` column of such a type is encoded when read:

- binary (``binary``, ``large_binary``, ``fixed_size_binary``): a base64 string (RFC 4648,
  with padding);
- decimal (``decimal128``, ``decimal256``): the number as a string (``"12.30"``), every digit kept;
- timestamp, date, time: an ISO 8601 string (``2024-05-01T12:00:00.123456+00:00``,
  ``2024-05-01``, ``12:00:00``); a time zone is kept as an offset;
- duration: its length in seconds, a number.

That encoding is what a JSONL output holds. For a Parquet or ``hf`` output the converter gets
each such column's original Arrow type (`column_types`, read from the input files' schemas,
never from the rows) and decodes the values back (`decoder`), so the column comes out with the
type it came in with. Every other column of a columnar input is carried the same way
(`carried_columns`): its values are checked against the type (an int column takes only
integers, a float32 column only values it holds exactly) and `pa.array` builds it; a column
that does not fit is inferred from its JSON values instead.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa


def is_special(arrow_type: pa.DataType) -> bool:
    """Whether `arrow_type` is, or holds, a type JSON cannot carry as is."""
    t = pa.types
    if (
        t.is_binary(arrow_type)
        or t.is_large_binary(arrow_type)
        or t.is_fixed_size_binary(arrow_type)
        or t.is_decimal(arrow_type)
        or t.is_temporal(arrow_type)
    ):
        return True
    if t.is_struct(arrow_type):
        return any(is_special(field.type) for field in arrow_type)
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        return is_special(arrow_type.value_type)
    if t.is_map(arrow_type):
        return is_special(arrow_type.key_type) or is_special(arrow_type.item_type)
    return False


def special_columns(schema: pa.Schema) -> dict[str, pa.DataType]:
    """The top-level columns of `schema` that need `to_json`, with their types."""
    return {field.name: field.type for field in schema if is_special(field.type)}


def carried_columns(schema: pa.Schema) -> dict[str, pa.DataType]:
    """Every top-level column of `schema` with its type, for a columnar output to restore.

    Not only the encoded ones: an int32, float32, dictionary or all-null column would otherwise
    come back as whatever its JSON values suggest (int64, double, string, null). A column whose
    values no longer fit its type is inferred instead (see `decoder`).
    """
    return {field.name: field.type for field in schema}


def to_json(value: Any) -> Any:
    """`value` (from Arrow's `to_pylist`) with binary, decimal and temporal values encoded."""
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return value


class DoesNotDecode(ValueError):
    """A JSON value does not fit the column's original Arrow type."""


def decoder(arrow_type: pa.DataType) -> Callable[[Any], Any]:
    """A function turning a `to_json` value back into a Python value `pa.array(..., type)` takes.

    Raises `DoesNotDecode` when a value does not fit (a struct key the type lacks: Arrow would
    drop it silently), so the caller can fall back to inferring the column instead.
    """
    t = pa.types
    if t.is_struct(arrow_type):
        fields = {field.name: decoder(field.type) for field in arrow_type}

        def struct(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, dict) or not value.keys() <= fields.keys():
                raise DoesNotDecode(f"{value!r:.80} does not fit {arrow_type}")
            return {key: fields[key](item) for key, item in value.items()}

        return struct
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        item = decoder(arrow_type.value_type)

        def listed(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, list):
                raise DoesNotDecode(f"{value!r:.80} is not a list")
            return [item(v) for v in value]

        return listed
    if t.is_map(arrow_type):
        key, item = decoder(arrow_type.key_type), decoder(arrow_type.item_type)

        def mapped(value: Any) -> Any:
            if value is None:
                return None
            try:
                return [(key(k), item(v)) for k, v in value]
            except (TypeError, ValueError) as exc:
                raise DoesNotDecode(str(exc)) from None

        return mapped
    scalar = _scalar_decoder(arrow_type)
    if scalar is None:
        return lambda value: value

    def decode(value: Any) -> Any:
        if value is None:
            return None
        try:
            return scalar(value)
        except (TypeError, ValueError, InvalidOperation, binascii.Error) as exc:
            raise DoesNotDecode(f"{value!r:.80} is not a {arrow_type} value: {exc}") from None

    return decode


def _scalar_decoder(arrow_type: pa.DataType) -> Callable[[Any], Any] | None:
    t = pa.types
    if t.is_dictionary(arrow_type):
        return decoder(arrow_type.value_type)
    if t.is_boolean(arrow_type):
        return _boolean
    if t.is_integer(arrow_type):
        return _integer
    if t.is_floating(arrow_type):
        return _floating(arrow_type.bit_width)
    if t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return _text
    if t.is_null(arrow_type):
        return _none
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or t.is_fixed_size_binary(arrow_type):
        return lambda value: base64.b64decode(_text(value), validate=True)
    if t.is_decimal(arrow_type):
        return lambda value: Decimal(_text(value))
    if t.is_timestamp(arrow_type):
        return _timestamp
    if t.is_date(arrow_type):
        return lambda value: dt.date.fromisoformat(_text(value))
    if t.is_time(arrow_type):
        return lambda value: dt.time.fromisoformat(_text(value))
    if t.is_duration(arrow_type):
        return _duration
    return None


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {type(value).__name__}")
    return value


def _integer(value: Any) -> int:
    """An integer, never a bool or a float (Arrow would cut 1.5 to 1 without a word)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def _floating(bit_width: int) -> Callable[[Any], float]:
    """A number that the float type holds exactly as it came (a float32 column stays float32
    only while rounding to it changes no value)."""
    packing = {16: "e", 32: "f"}.get(bit_width)

    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number, got {type(value).__name__}")
        number = float(value)
        if isinstance(value, int) and number != value:
            raise ValueError("an integer a float cannot hold exactly")
        if packing and not math.isnan(number):
            try:
                rounded = struct.unpack(packing, struct.pack(packing, number))[0]
            except (OverflowError, struct.error) as exc:
                raise ValueError(str(exc)) from None
            if rounded != number:
                raise ValueError(f"{number!r} is not exact as float{bit_width}")
        return number

    return check


def _none(value: Any) -> None:
    raise TypeError(f"expected null, got {type(value).__name__}")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _timestamp(value: Any) -> Any:
    """ISO 8601 text back to a timestamp; pandas keeps nanoseconds when it is there."""
    text = _text(value)
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with datasets
        return dt.datetime.fromisoformat(text)
    return pd.Timestamp(text)


def _duration(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected seconds, got {type(value).__name__}")
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        return dt.timedelta(seconds=value)
    return pd.Timedelta(seconds=value)
