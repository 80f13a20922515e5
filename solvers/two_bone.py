"""Closed-form two-bone IK (hip-knee-ankle, shoulder-elbow-wrist), after the seed article.

Three cases: the target is reachable (the knee goes on the circle where the two bone spheres meet,
at the point closest to the current knee or toward the pole), too far (the chain extends fully
toward the target), or too close (the longer bone points toward the target, the shorter one away).
The scalar solver works in double precision on plain floats and returns `mathutils` vectors; the
numpy variant solves many chains at once for bakes over thousands of frames.
"""

from __future__ import annotations

import logging
import math
from typing import NamedTuple, Optional

import numpy as np
from mathutils import Vector

from ._types import VecLike
from .soft import soft_distance, soft_distance_array

log = logging.getLogger(__name__)

REACHED = 0
TOO_FAR = 1
TOO_CLOSE = 2
DEGENERATE = 3
CASE_NAMES = {REACHED: "reached", TOO_FAR: "too_far", TOO_CLOSE: "too_close", DEGENERATE: "degenerate"}

# Below this fraction of the chain length a length or offset counts as zero.
_REL_EPS = 1e-9
# Below this fraction of the upper bone's length the knee hint is too short to give a direction.
_HINT_EPS = 1e-6

Vec3 = tuple[float, float, float]


class TwoBoneResult(NamedTuple):
    """New knee (mid joint) and tip positions, which case applied, and the tip's distance to the target.

    A named tuple rather than a frozen dataclass: as immutable, and built in a fifth of the time (a
    frozen dataclass's `__init__` alone took 1 us, half of a whole solve)."""

    knee: Vector
    tip: Vector
    case: int
    error: float

    @property
    def case_name(self) -> str:
        return CASE_NAMES[self.case]

    @property
    def reached(self) -> bool:
        return self.case == REACHED


_new_result = tuple.__new__  # builds a TwoBoneResult without the generated __new__'s Python frame


def _vec(v: VecLike) -> Vec3:
    return (float(v[0]), float(v[1]), float(v[2]))


def _finite(v: Vec3) -> bool:
    return math.isfinite(v[0]) and math.isfinite(v[1]) and math.isfinite(v[2])


def _sanitize(v: Vec3) -> Vec3:
    return (v[0] if math.isfinite(v[0]) else 0.0, v[1] if math.isfinite(v[1]) else 0.0, v[2] if math.isfinite(v[2]) else 0.0)


def _sub(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _norm(a: Vec3) -> float:
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


def _axpy(base: Vec3, s: float, d: Vec3) -> Vec3:
    return (base[0] + s * d[0], base[1] + s * d[1], base[2] + s * d[2])


def any_perpendicular(n: Vec3) -> Vec3:
    """A unit vector perpendicular to the unit vector `n`, chosen deterministically."""
    ax, ay, az = abs(n[0]), abs(n[1]), abs(n[2])
    other: Vec3 = (1.0, 0.0, 0.0) if ax <= ay and ax <= az else ((0.0, 1.0, 0.0) if ay <= az else (0.0, 0.0, 1.0))
    d = _dot(other, n)
    u = _axpy(other, -d, n)
    length = _norm(u)
    return (u[0] / length, u[1] / length, u[2] / length)


def _perpendicular_part(v: Vec3, n: Vec3) -> tuple[Vec3, float]:
    u = _axpy(v, -_dot(v, n), n)
    return u, _norm(u)


_FLOAT32_MAX = 3.4028234663852886e38


def _result(knee: Vec3, tip: Vec3, case: int, target: Vec3) -> TwoBoneResult:
    if max(abs(v) for v in (*knee, *tip)) >= _FLOAT32_MAX:
        # mathutils stores single precision: such a pose would come back as infinities.
        log.warning("two-bone IK: the solved pose does not fit in single precision; returning the origin")
        knee = tip = (0.0, 0.0, 0.0)
        case = DEGENERATE
    error = _norm(_sub(tip, target))
    return TwoBoneResult(Vector(knee), Vector(tip), case, error if math.isfinite(error) else 0.0)


def solve_two_bone(
    root: VecLike,
    knee: VecLike,
    tip: VecLike,
    target: VecLike,
    pole: Optional[VecLike] = None,
    softness: float = 0.0,
) -> TwoBoneResult:
    """Place the tip of the chain root-knee-tip on `target`, keeping both bone lengths.

    `pole`, when given, chooses the side the knee bends toward; otherwise the knee stays as close as
    possible to where it is. `softness` (0 = off) is the fraction of the chain length over which the
    reach eases in near full extension (soft IK). Degenerate input never raises and never returns NaN:
    it logs a warning and returns the most sensible finite pose.
    """
    # The common case in one flat block (no helper calls: each costs about 0.1 us in CPython, and the
    # live preview calls this per limb per frame). Anything unusual goes to `_solve_checked`.
    try:  # indexing, not unpacking: twice as fast on a mathutils Vector
        ax, ay, az = root[0], root[1], root[2]
        bx, by, bz = knee[0], knee[1], knee[2]
        cx, cy, cz = tip[0], tip[1], tip[2]
        tx, ty, tz = target[0], target[1], target[2]
        if pole is None:
            px, py, pz = bx, by, bz
        else:
            px, py, pz = pole[0], pole[1], pole[2]
    except (TypeError, IndexError):
        return _solve_checked(root, knee, tip, target, pole, softness)
    if softness != 0.0:
        return _solve_checked(root, knee, tip, target, pole, softness)
    ux, uy, uz = bx - ax, by - ay, bz - az
    vx, vy, vz = cx - bx, cy - by, cz - bz
    wx, wy, wz = tx - ax, ty - ay, tz - az
    l1 = math.sqrt(ux * ux + uy * uy + uz * uz)
    l2 = math.sqrt(vx * vx + vy * vy + vz * vz)
    d = math.sqrt(wx * wx + wy * wy + wz * wz)
    chain = l1 + l2
    eps = _REL_EPS * chain
    # NaN fails every comparison and an overflowed square makes eps infinite, so this also sends
    # non-finite input there; the bounds keep the result within single precision (mathutils).
    if not (l1 > eps and l2 > eps and d > eps and 1e-30 < chain < 1e30 and d < 1e30
            and -1e30 < ax < 1e30 and -1e30 < ay < 1e30 and -1e30 < az < 1e30):
        return _solve_checked(root, knee, tip, target, pole, softness)
    inv = 1.0 / d
    ex, ey, ez = wx * inv, wy * inv, wz * inv
    if d >= chain:
        kx, ky, kz = ax + l1 * ex, ay + l1 * ey, az + l1 * ez
        nx, ny, nz = ax + chain * ex, ay + chain * ey, az + chain * ez
        case = TOO_FAR if d > chain else REACHED
    elif d < (l1 - l2 if l1 >= l2 else l2 - l1):
        s = l1 if l1 >= l2 else -l1
        kx, ky, kz = ax + s * ex, ay + s * ey, az + s * ez
        r = l2 if l1 >= l2 else -l2
        nx, ny, nz = kx - r * ex, ky - r * ey, kz - r * ez
        case = TOO_CLOSE
    else:
        cos_t = (l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * d)
        cos_t = 1.0 if cos_t > 1.0 else (-1.0 if cos_t < -1.0 else cos_t)
        along = l1 * cos_t
        mx, my, mz = ax + along * ex, ay + along * ey, az + along * ez
        hx, hy, hz = px - mx, py - my, pz - mz  # the pole, or else the current knee
        h = hx * ex + hy * ey + hz * ez
        hx, hy, hz = hx - h * ex, hy - h * ey, hz - h * ez
        n = math.sqrt(hx * hx + hy * hy + hz * hz)
        if not _HINT_EPS * l1 < n < math.inf:  # no usable hint, or a non-finite pole
            return _solve_checked(root, knee, tip, target, pole, softness)
        radius = l1 * math.sqrt(1.0 - cos_t * cos_t) / n  # cos_t is clamped to [-1, 1]
        kx, ky, kz = mx + radius * hx, my + radius * hy, mz + radius * hz
        return _new_result(TwoBoneResult, (Vector((kx, ky, kz)), Vector((tx, ty, tz)), REACHED, 0.0))
    fx, fy, fz = nx - tx, ny - ty, nz - tz
    return _new_result(TwoBoneResult, (Vector((kx, ky, kz)), Vector((nx, ny, nz)), case,
                                        math.sqrt(fx * fx + fy * fy + fz * fz)))


def _solve_checked(
    root: VecLike,
    knee: VecLike,
    tip: VecLike,
    target: VecLike,
    pole: Optional[VecLike],
    softness: float,
) -> TwoBoneResult:
    """`solve_two_bone` with every check: non-finite or huge input, zero lengths, soft IK, no bend hint."""
    a, b, c, t = _vec(root), _vec(knee), _vec(tip), _vec(target)
    goal = t
    if not (_finite(a) and _finite(b) and _finite(c)):
        log.warning("two-bone IK: the chain has non-finite coordinates; returning it unchanged (non-finite parts as 0)")
        a, b, c = _sanitize(a), _sanitize(b), _sanitize(c)
        return _result(b, c, DEGENERATE, c)
    if not _finite(t):
        log.warning("two-bone IK: the target %r is not finite; keeping the FK pose", t)
        return _result(b, c, DEGENERATE, c)
    p: Optional[Vec3] = None
    if pole is not None:
        p = _vec(pole)
        if not _finite(p):
            log.warning("two-bone IK: the pole %r is not finite; ignoring it", p)
            p = None
    if not math.isfinite(softness) or softness < 0.0:
        log.warning("two-bone IK: softness %r is not a finite non-negative number; soft IK off", softness)
        softness = 0.0

    l1 = _norm(_sub(b, a))
    l2 = _norm(_sub(c, b))
    chain = l1 + l2
    if not math.isfinite(chain) or not math.isfinite(_norm(_sub(t, a))):
        log.warning("two-bone IK: coordinates too large to square (overflow); keeping the FK pose")
        return _result(b, c, DEGENERATE, c)
    eps = _REL_EPS * max(chain, 1e-30)
    if l1 <= eps or l2 <= eps:
        log.warning("two-bone IK: zero-length bone (%g, %g); keeping the FK pose", l1, l2)
        return _result(b, c, DEGENERATE, t)

    to_target = _sub(t, a)
    d = _norm(to_target)
    if d > eps:
        e = (to_target[0] / d, to_target[1] / d, to_target[2] / d)
    else:
        # The target sits on the root: any direction is as good; keep the current tip direction.
        log.warning("two-bone IK: the target is on the root joint; folding the chain along its current direction")
        e = _fallback_direction(a, b, c)
        d = 0.0
    if softness > 0.0:
        d_soft = soft_distance(d, chain, softness)
        if d_soft != d:
            d = d_soft
            t = _axpy(a, d, e)

    if d >= chain:
        new_b = _axpy(a, l1, e)
        new_c = _axpy(a, chain, e)
        return _result(new_b, new_c, TOO_FAR if d > chain else REACHED, goal)
    if d < abs(l1 - l2):
        sign = 1.0 if l1 >= l2 else -1.0
        new_b = _axpy(a, sign * l1, e)
        new_c = _axpy(new_b, -sign * l2, e)
        return _result(new_b, new_c, TOO_CLOSE, goal)

    # d == 0 only reaches here with equal bones: the knee then goes anywhere at l1 around the root.
    cos_theta = (l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * (d if d > 0.0 else 1.0))
    cos_theta = min(1.0, max(-1.0, cos_theta))
    sin_theta = math.sqrt(max(0.0, 1.0 - cos_theta * cos_theta))
    m = _axpy(a, l1 * cos_theta, e)
    radius = l1 * sin_theta
    u = _bend_direction(a, b, m, e, p, l1)
    new_b = _axpy(m, radius, u)
    return _result(new_b, t, REACHED, goal)


def _fallback_direction(a: Vec3, b: Vec3, c: Vec3) -> Vec3:
    for v in (_sub(c, a), _sub(b, a)):
        n = _norm(v)
        if n > 0.0:
            return (v[0] / n, v[1] / n, v[2] / n)
    return (0.0, 0.0, -1.0)


def _bend_direction(a: Vec3, b: Vec3, m: Vec3, e: Vec3, pole: Optional[Vec3], l1: float) -> Vec3:
    """Unit vector from the circle's centre toward the new knee, perpendicular to the reach axis `e`."""
    hints = ([_sub(pole, m)] if pole is not None else []) + [_sub(b, m)]
    for hint in hints:
        u, n = _perpendicular_part(hint, e)
        if n > _HINT_EPS * l1:
            return (u[0] / n, u[1] / n, u[2] / n)
    log.warning("two-bone IK: the knee is in line with the root and the target and no usable pole was given; "
                "bending toward an arbitrary side (set a pole target to choose it)")
    return any_perpendicular(e)


def solve_two_bone_batch(
    root: np.ndarray,
    knee: np.ndarray,
    tip: np.ndarray,
    target: np.ndarray,
    pole: Optional[np.ndarray] = None,
    softness: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised `solve_two_bone` over N chains: arrays of shape (N, 3), float64.

    Returns (knee, tip, case) with `case` holding REACHED, TOO_FAR, TOO_CLOSE or DEGENERATE per row.
    Rows with non-finite input or zero-length bones keep their FK pose (finite parts) and are marked
    DEGENERATE; one warning is logged for the batch.
    """
    a = np.asarray(root, dtype=np.float64)
    b = np.asarray(knee, dtype=np.float64)
    c = np.asarray(tip, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    a, b, c, t = np.broadcast_arrays(a, b, c, t)
    with np.errstate(all="ignore"):
        return _solve_batch(a, b, c, t, pole, softness)


def _norms(v: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->i", v, v))


def _solve_batch(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, t: np.ndarray, pole: Optional[np.ndarray], softness: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Rare cases (non-finite input, a target on the root, out of reach, too close, no bend hint,
    # overflow) are found with one global test each and only then handled row by row: in the usual
    # batch none occurs and each would cost a pass over (N, 3) arrays.
    all_finite = bool(np.isfinite(a.sum() + b.sum() + c.sum() + t.sum()))
    if all_finite:
        degenerate = np.zeros(len(a), dtype=bool)
    else:
        finite_target = np.isfinite(t).all(1)
        degenerate = ~(np.isfinite(a).all(1) & np.isfinite(b).all(1) & np.isfinite(c).all(1) & finite_target)
        a = np.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
        b = np.nan_to_num(b, nan=0.0, posinf=0.0, neginf=0.0)
        c = np.nan_to_num(c, nan=0.0, posinf=0.0, neginf=0.0)
        t = np.where(finite_target[:, None], t, c)

    ab = b - a
    l1 = _norms(ab)
    l2 = _norms(c - b)
    chain = l1 + l2
    eps = _REL_EPS * np.maximum(chain, 1e-30)
    to_t = t - a
    d = _norms(to_t)
    degenerate |= (l1 <= eps) | (l2 <= eps) | ~np.isfinite(chain) | ~np.isfinite(d)

    on_root = d <= eps
    if on_root.any():
        ac = c - a
        ac_len = _norms(ac)
        fallback = np.where((ac_len > 0)[:, None], ac / np.where(ac_len > 0, ac_len, 1.0)[:, None],
                            ab / np.where(l1 > 0, l1, 1.0)[:, None])
        e = np.where(on_root[:, None], fallback, to_t / np.where(on_root, 1.0, d)[:, None])
        d = np.where(on_root, 0.0, d)
    else:
        e = to_t / d[:, None]
    if softness > 0.0:
        d = soft_distance_array(d, chain, softness)

    too_far = d >= chain
    too_close = (d < np.abs(l1 - l2)) & ~too_far
    safe_d = np.where(d > 0, d, 1.0)
    safe_l1 = np.where(l1 > 0, l1, 1.0)
    cos_t = np.minimum(np.maximum((l1 * l1 + d * d - l2 * l2) / (2.0 * safe_l1 * safe_d), -1.0), 1.0)
    sin_t = np.sqrt(np.maximum(0.0, 1.0 - cos_t * cos_t))
    m = a + (l1 * cos_t)[:, None] * e
    hint = b - m
    u = hint - np.einsum("ij,ij->i", hint, e)[:, None] * e
    if pole is not None:
        pv = np.broadcast_to(np.asarray(pole, dtype=np.float64), a.shape)
        pole_ok = np.isfinite(pv).all(1)
        ph = np.where(pole_ok[:, None], pv, 0.0) - m  # rows without a pole: not used
        pu = ph - np.einsum("ij,ij->i", ph, e)[:, None] * e
        pu_len = _norms(pu)
        use_pole = pole_ok & (pu_len > _HINT_EPS * safe_l1)
        u = np.where(use_pole[:, None], pu, u)
    u_len = _norms(u)
    no_hint = u_len <= _HINT_EPS * safe_l1
    if no_hint.any():
        bending = no_hint & ~degenerate & ~too_far & ~too_close
        if bending.any():
            log.warning("two-bone IK (batch): %d knee(s) in line with root and target; bending toward an "
                        "arbitrary side", int(np.count_nonzero(bending)))
        for i in np.flatnonzero(no_hint):
            u[i] = any_perpendicular(_vec(e[i]))
        u_len = np.where(no_hint, 1.0, u_len)

    new_b = m + (l1 * sin_t / u_len)[:, None] * u
    new_c = a + d[:, None] * e
    if too_far.any():
        rows = np.flatnonzero(too_far)
        new_b[rows] = a[rows] + l1[rows, None] * e[rows]
        new_c[rows] = a[rows] + chain[rows, None] * e[rows]
    if too_close.any():
        rows = np.flatnonzero(too_close)
        sign = np.where(l1[rows] >= l2[rows], 1.0, -1.0)
        new_b[rows] = a[rows] + (sign * l1[rows])[:, None] * e[rows]
        new_c[rows] = new_b[rows] - (sign * l2[rows])[:, None] * e[rows]
    # Overflow in the intermediate squares (coordinates near 1e154 and beyond) also counts as degenerate.
    if not np.isfinite(new_b.sum() + new_c.sum()):
        degenerate |= ~(np.isfinite(new_b).all(1) & np.isfinite(new_c).all(1))
    case = np.where(too_far & (d > chain), TOO_FAR, np.where(too_close, TOO_CLOSE, REACHED)).astype(np.int8)
    if degenerate.any():
        rows = np.flatnonzero(degenerate)
        new_b[rows] = b[rows]
        new_c[rows] = c[rows]
        case[rows] = DEGENERATE
        log.warning("two-bone IK (batch): %d degenerate chain(s) (non-finite input or zero-length bone) kept as FK",
                    len(rows))
    return new_b, new_c, case
