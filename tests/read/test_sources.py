"""The input error is a usage error (exit 2) and a ValueError, for callers of the Python API."""

from __future__ import annotations

from trajectory_compressor.read.sources import InputError


def test_input_error_is_a_value_error() -> None:
    assert issubclass(InputError, ValueError)
