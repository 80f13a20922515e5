"""Iterative IK for chains of any length on joint positions: FABRIK and CCD.

FABRIK follows Aristidou and Lasenby (2011): alternate passes from the tip (the tip set on the
target) and from the root (the root put back), each joint slid along the line to its neighbour so
that every bone keeps its length. CCD turns the chain about one joint at a time, tip to root, so the
end effector points at the target. Both stop at a tolerance or an iteration cap and report the
iterations used and the final distance to the target. They work on plain double-precision floats;
joint limits are applied when positions are written back to rotations (see `pose`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from mathutils import Vector

from ._types import VecLike

log = logging.getLogger(__name__)

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class ChainSolve:
    """Joint positions root to tip after a solve, the iterations it took and the tip's final distance."""

    positions: list[Vector]
    iterations: int
    error: float


def _vecs(points: Sequence[VecLike]) -> list[list[float]]:
    return [[float(p[0]), float(p[1]), float(p[2])] for p in points]


def _dist(a: VecLike, b: VecLike) -> float:
    dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


def _check(points: list[list[float]], target: list[float], solver: str) -> str | None:
    if len(points) < 2:
        return f"{solver}: a chain needs at least two joints"
    if not all(math.isfinite(v) for p in points for v in p):
        return f"{solver}: the chain has non-finite coordinates"
    if not all(math.isfinite(v) for v in target):
        return f"{solver}: the target is not finite"
    return None


def _unchanged(points: list[list[float]], target: list[float]) -> ChainSolve:
    safe = [[v if math.isfinite(v) else 0.0 for v in p] for p in points]
    err = _dist(safe[-1], target) if all(math.isfinite(v) for v in target) else math.inf
    return ChainSolve([Vector(p) for p in safe], 0, err if math.isfinite(err) else 0.0)


def fabrik(
    points: Sequence[VecLike],
    target: VecLike,
    tolerance: float = 1e-3,
    max_iterations: int = 100,
) -> ChainSolve:
    """Solve a chain (joint positions root to tip) so its tip reaches `target`.

    `tolerance` is an absolute distance. An unreachable target is answered in one pass: the chain
    straightened toward it, which is the closest the tip can get.
    """
    p = _vecs(points)
    t = [float(target[0]), float(target[1]), float(target[2])]
    problem = _check(p, t, "FABRIK")
    if problem:
        log.warning("%s; keeping the FK pose", problem)
        return _unchanged(p, t)
    n = len(p) - 1
    lengths = [_dist(p[i + 1], p[i]) for i in range(n)]
    total = sum(lengths)
    root = list(p[0])
    if _dist(t, root) >= total - tolerance:
        # Out of reach, or so near full extension that the straight chain is within tolerance
        # (where FABRIK alone converges slowly).
        for i in range(n):
            r = _dist(t, p[i])
            lam = lengths[i] / r if r > 0.0 else 0.0
            p[i + 1] = [(1 - lam) * p[i][k] + lam * t[k] for k in range(3)]
        return ChainSolve([Vector(q) for q in p], 1, _dist(p[-1], t))

    error = _dist(p[-1], t)
    if error <= tolerance:
        return ChainSolve([Vector(q) for q in p], 0, error)
    # The bend does not keep bone lengths: at least one pass below puts them back.
    _unstraighten(p, t, total)
    iterations = 0
    while iterations == 0 or (error > tolerance and iterations < max_iterations):
        iterations += 1
        # Forward reaching: from the tip back to the root.
        p[n] = list(t)
        for i in range(n - 1, -1, -1):
            _slide(p, i, i + 1, lengths[i])
        # Backward reaching: from the root out to the tip.
        p[0] = list(root)
        for i in range(n):
            _slide(p, i + 1, i, lengths[i])
        error = _dist(p[n], t)
    return ChainSolve([Vector(q) for q in p], iterations, error)


def _unstraighten(p: list[list[float]], target: list[float], total: float) -> None:
    """Bend a (nearly) straight chain a little before FABRIK: from a straight line it converges very slowly."""
    root, tip = p[0], p[-1]
    axis = _minus(tip, root)
    length = math.sqrt(axis[0] ** 2 + axis[1] ** 2 + axis[2] ** 2)
    if length == 0.0 or len(p) < 3:
        return
    axis = (axis[0] / length, axis[1] / length, axis[2] / length)
    for q in p[1:-1]:
        v = _minus(q, root)
        along = v[0] * axis[0] + v[1] * axis[1] + v[2] * axis[2]
        off = (v[0] - along * axis[0], v[1] - along * axis[1], v[2] - along * axis[2])
        if math.sqrt(off[0] ** 2 + off[1] ** 2 + off[2] ** 2) > 1e-3 * total:
            return
    # Bend toward the target's side of the line, or any side when the target is on it.
    to_t = _minus(target, root)
    along = to_t[0] * axis[0] + to_t[1] * axis[1] + to_t[2] * axis[2]
    side = (to_t[0] - along * axis[0], to_t[1] - along * axis[1], to_t[2] - along * axis[2])
    side_len = math.sqrt(side[0] ** 2 + side[1] ** 2 + side[2] ** 2)
    if side_len <= 1e-9 * total:
        from .two_bone import any_perpendicular

        side, side_len = any_perpendicular(axis), 1.0
    bump = 0.02 * total
    for k, q in enumerate(p[1:-1], start=1):
        w = math.sin(math.pi * k / (len(p) - 1)) * bump / side_len
        p[k] = [q[0] + side[0] * w, q[1] + side[1] * w, q[2] + side[2] * w]


def _slide(p: list[list[float]], moving: int, anchor: int, length: float) -> None:
    """Move joint `moving` onto the line to `anchor`, `length` away from it."""
    a, m = p[anchor], p[moving]
    dx, dy, dz = m[0] - a[0], m[1] - a[1], m[2] - a[2]
    r = math.sqrt(dx * dx + dy * dy + dz * dz)
    if r <= 0.0:
        # Coincident joints: keep the previous bone direction (any direction keeps the length).
        dx, dy, dz, r = 0.0, 0.0, 1.0, 1.0
    s = length / r
    p[moving] = [a[0] + dx * s, a[1] + dy * s, a[2] + dz * s]


def ccd(
    points: Sequence[VecLike],
    target: VecLike,
    tolerance: float = 1e-3,
    max_iterations: int = 100,
) -> ChainSolve:
    """Cyclic coordinate descent on joint positions: turn each joint, tip to root, toward the target."""
    p = _vecs(points)
    t = [float(target[0]), float(target[1]), float(target[2])]
    problem = _check(p, t, "CCD")
    if problem:
        log.warning("%s; keeping the FK pose", problem)
        return _unchanged(p, t)
    n = len(p) - 1
    error = _dist(p[n], t)
    iterations = 0
    while error > tolerance and iterations < max_iterations:
        iterations += 1
        for i in range(n - 1, -1, -1):
            pivot = p[i]
            rot = _rotation_between(_minus(p[n], pivot), _minus(t, pivot))
            if rot is None:
                continue
            for j in range(i + 1, n + 1):
                v = _rotate(rot, _minus(p[j], pivot))
                p[j] = [pivot[0] + v[0], pivot[1] + v[1], pivot[2] + v[2]]
        error = _dist(p[n], t)
    return ChainSolve([Vector(q) for q in p], iterations, error)


def _minus(a: VecLike, b: VecLike) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _rotation_between(u: Vec3, v: Vec3) -> tuple[Vec3, float, float] | None:
    """(unit axis, cos, sin) of the smallest rotation taking direction u to direction v."""
    lu = math.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    lv = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if lu == 0.0 or lv == 0.0:
        return None
    ax = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
    s = math.sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]) / (lu * lv)
    c = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) / (lu * lv)
    if s < 1e-15:
        return None
    k = math.sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2])
    return (ax[0] / k, ax[1] / k, ax[2] / k), c, s


def _rotate(rot: tuple[Vec3, float, float], x: Vec3) -> Vec3:
    (kx, ky, kz), c, s = rot
    cross = (ky * x[2] - kz * x[1], kz * x[0] - kx * x[2], kx * x[1] - ky * x[0])
    kd = (kx * x[0] + ky * x[1] + kz * x[2]) * (1.0 - c)
    return (x[0] * c + cross[0] * s + kx * kd, x[1] * c + cross[1] * s + ky * kd, x[2] * c + cross[2] * s + kz * kd)
