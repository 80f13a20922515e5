"""Shared type names of the solvers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

from mathutils import Vector

VecLike = Union[Vector, Sequence[float]]


def vec(v: VecLike) -> Vector:
    """A new `Vector` from any 3-sequence (the stubs do not know Vector accepts a Vector)."""
    return Vector(v)  # type: ignore[arg-type]


def components(v: VecLike) -> tuple[float, float, float]:
    """The three components as floats (the stubs do not know Vector and Matrix are iterable)."""
    return (float(v[0]), float(v[1]), float(v[2]))
