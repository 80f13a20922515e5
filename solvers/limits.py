"""Joint limits on a bone's local rotation, with the meaning of Blender's pose-bone IK settings.

A bone's local (basis) rotation, relative to its rest pose, is split into a twist about the bone's
own Y axis (the axis from head to tail) and a swing about an axis in its X-Z plane: q = swing @ twist.
`lock_ik_x/y/z` hold the rotation about that axis at zero; `use_ik_limit_x/y/z` with `ik_min_*` and
`ik_max_*` (radians) keep it in range: X and Z on the swing's components, Y on the twist, as
Blender's IK solver treats them. A hinge (a knee or an elbow) is the special case of one free axis
with a one-sided range, so it bends one way and never backwards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mathutils import Quaternion, Vector

_AXES = "XYZ"


@dataclass(frozen=True)
class JointLimits:
    """Per-axis limits of a bone's local rotation (radians); the default limits nothing."""

    lock: tuple[bool, bool, bool] = (False, False, False)
    use_limit: tuple[bool, bool, bool] = (False, False, False)
    minimum: tuple[float, float, float] = (-math.pi, -math.pi, -math.pi)
    maximum: tuple[float, float, float] = (math.pi, math.pi, math.pi)

    @classmethod
    def hinge(cls, axis: str = "X", min_angle: float = 0.0, max_angle: float = math.radians(160.0)) -> JointLimits:
        """A joint that turns only about `axis` ('X' or 'Z'), from `min_angle` to `max_angle`."""
        axis = axis.upper()
        if axis not in ("X", "Z"):
            raise ValueError(f"a hinge turns about the bone's X or Z axis, not {axis!r}")
        if not min_angle <= max_angle:
            raise ValueError(f"hinge range is empty: min {min_angle} > max {max_angle}")
        i = _AXES.index(axis)
        lock = tuple(k != i for k in range(3))
        use = tuple(k == i for k in range(3))
        lo = tuple(min_angle if k == i else 0.0 for k in range(3))
        hi = tuple(max_angle if k == i else 0.0 for k in range(3))
        return cls(lock=lock, use_limit=use, minimum=lo, maximum=hi)  # type: ignore[arg-type]

    @property
    def is_free(self) -> bool:
        return not any(self.lock) and not any(self.use_limit)

    def _range(self, i: int) -> tuple[float, float]:
        if self.lock[i]:
            return 0.0, 0.0
        if self.use_limit[i]:
            lo, hi = self.minimum[i], self.maximum[i]
            if not (math.isfinite(lo) and math.isfinite(hi)):
                lo = lo if math.isfinite(lo) else -math.pi
                hi = hi if math.isfinite(hi) else math.pi
            return (lo, hi) if lo <= hi else (hi, lo)
        return -math.inf, math.inf

    def clamp(self, q: Quaternion) -> Quaternion:
        """The nearest rotation (axis by axis) that these limits allow."""
        if self.is_free:
            return q.copy()
        swing, twist = swing_twist_angles(q)
        sx = _clip(swing[0], *self._range(0))
        ty = _clip(twist, *self._range(1))
        sz = _clip(swing[1], *self._range(2))
        return compose_swing_twist(sx, sz, ty)

    def violation(self, q: Quaternion) -> float:
        """How far (radians) `q` lies outside the limits, axis by axis; 0 when inside."""
        if self.is_free:
            return 0.0
        swing, twist = swing_twist_angles(q)
        worst = 0.0
        for value, i in ((swing[0], 0), (twist, 1), (swing[1], 2)):
            lo, hi = self._range(i)
            worst = max(worst, lo - value, value - hi)
        return worst


def _clip(v: float, lo: float, hi: float) -> float:
    return lo if v < lo else (hi if v > hi else v)


def swing_twist_angles(q: Quaternion) -> tuple[tuple[float, float], float]:
    """Split q into swing (rotation vector (x, z) in the bone's X-Z plane) and twist angle about Y."""
    w, x, y, z = q.w, q.x, q.y, q.z
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if not math.isfinite(norm) or norm == 0.0:
        return (0.0, 0.0), 0.0
    w, x, y, z = w / norm, x / norm, y / norm, z / norm
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    tw_norm = math.hypot(w, y)
    if tw_norm < 1e-12:
        # A half turn of swing: the twist is undefined; take none.
        tw, ty = 1.0, 0.0
    else:
        tw, ty = w / tw_norm, y / tw_norm
    twist_angle = 2.0 * math.atan2(ty, tw)
    # swing = q @ twist^-1
    sw = w * tw + y * ty
    sx = x * tw + z * ty
    sz = z * tw - x * ty
    s_len = math.hypot(sx, sz)
    if s_len < 1e-15:
        return (0.0, 0.0), twist_angle
    angle = 2.0 * math.atan2(s_len, sw)
    return (angle * sx / s_len, angle * sz / s_len), twist_angle


def compose_swing_twist(swing_x: float, swing_z: float, twist: float) -> Quaternion:
    """The rotation swing @ twist from a swing rotation vector (x, z) and a twist angle about Y."""
    angle = math.hypot(swing_x, swing_z)
    swing = Quaternion() if angle == 0.0 else Quaternion(Vector((swing_x / angle, 0.0, swing_z / angle)), angle)
    return swing @ Quaternion(Vector((0.0, 1.0, 0.0)), twist)
