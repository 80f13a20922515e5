"""The ground model over arrays of frames: pure numpy, no `bpy` (testable like `solvers/`).

What depends on every frame at once (the pelvis's speed limit, the smoothing of a foot between its
contacts) and the curves the plan is built from. Live preview's frame cache, its fallback and the bake
all run these.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .tuning import (
    ARC_RAMP,
    ARC_RAMP_FRAMES,
    ARC_RAMP_TIME,
    CLEAR_CAP,
    PELVIS_SPEED,
    SWING_LIFTED,
    SWING_REACH,
    SWING_SMOOTH,
)


def clearance_extra(rise: Any, leg: Any) -> Any:
    """How far the clearance field lifts a foot above the ground under it, from the field's `rise` over
    that ground: the rise itself up to CLEAR_CAP x leg, then falling continuously to 0 at twice that."""
    cap = CLEAR_CAP * np.asarray(leg, dtype=np.float64)
    r = np.nan_to_num(np.asarray(rise, dtype=np.float64), nan=0.0, neginf=0.0, posinf=0.0)
    return np.where(r <= cap, np.maximum(r, 0.0), np.maximum(0.0, 2.0 * cap - r))


def arc_window(x: Any) -> Any:
    """1 at 0, falling smoothly (C1) to 0 at |x| >= 1: cos^2(pi x / 2). Works on floats and numpy arrays."""
    c = np.cos(0.5 * np.pi * np.minimum(np.abs(x), 1.0))
    return c * c


def smoothstep(x: Any) -> Any:
    """0 below 0, 1 above 1, smooth (3x^2 - 2x^3) between. Works on floats and numpy arrays."""
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def arc_ramp(t: Any, gap: Any, fps: float) -> Any:
    """0 at either end of the swing (`t` from 0 to 1 over `gap` frames), rising smoothly (smoothstep) to 1
    over ARC_RAMP of its time, and over at least ARC_RAMP_TIME seconds and ARC_RAMP_FRAMES frames."""
    gap = np.asarray(gap, dtype=np.float64)
    least = max(ARC_RAMP_FRAMES, ARC_RAMP_TIME * fps)
    return smoothstep(np.minimum(t, 1.0 - t) * gap / np.maximum(ARC_RAMP * gap, least))


def pelvis_step(rest_leg: Any, world_scale: Any, fps: float) -> Any:
    """How far the pelvis may move from one frame to the next (`PELVIS_SPEED`), in world units, for a rig
    whose longest leg is `rest_leg` long in armature units; inf without a frame rate."""
    return PELVIS_SPEED * rest_leg * world_scale / fps if fps > 0.0 else np.inf


def pelvis_speed_limit(offset: np.ndarray, moved: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The highest curve never above `offset` that changes by at most `step` (per row) from one frame to
    the next, over the frames where the pelvis is `moved`; a lower pelvis keeps every leg within reach.
    It depends on every frame: the vectorised pass and the frame-by-frame bake apply it over their range;
    `plant.plant_rig` alone cannot (live preview's fallback adds what the last frame cache's limit did)."""
    x = np.where(moved, offset, np.inf).astype(np.float64)
    st = np.broadcast_to(np.asarray(step, dtype=np.float64), x.shape)
    if len(x) < 2 or not np.isfinite(st).all():
        return offset
    # st[i] is the step from row i-1 to row i. Forward, y[i] = min(x[i], y[i-1] + st[i]): with S the running
    # sum of the steps, y = S + cummin(x - S). Backward, y[i] = min(y[i], y[i+1] + st[i+1]): the same from the
    # end, with T the sum of the steps after row i. Together: y[i] = min over j of x[j] + |S[i] - S[j]|.
    s = np.concatenate(([0.0], np.cumsum(st[1:])))
    y = s + np.minimum.accumulate(x - s)
    t = np.concatenate((np.cumsum(st[1:][::-1])[::-1], [0.0]))
    y = t + np.minimum.accumulate((y - t)[::-1])[::-1]
    return np.where(moved & np.isfinite(y), y, offset)


def _swing_spans(fps: float) -> tuple[float, int, float]:
    """`swing_smoothing`'s Gaussian width and radius, and its carried differences' reach, in frames."""
    width = SWING_SMOOTH * fps if fps > 0.0 else 0.0
    return width, int(math.ceil(3.0 * width)), SWING_REACH * width


def context_frames(fps: float) -> int:
    """How many frames either side of a range `swing_smoothing` reaches: read them too (`BatchRig.context`,
    the frame-by-frame bake's first sweep) and the range's frames come out as in any longer range."""
    if fps <= 0.0:
        return 0
    _width, radius, reach = _swing_spans(fps)
    return radius + int(math.ceil(reach)) + 1


def _window_max(values: np.ndarray, radius: int) -> np.ndarray:
    """The largest of `values` within `radius` rows of each row."""
    from numpy.lib.stride_tricks import sliding_window_view

    padded = np.concatenate((np.full(radius, -np.inf), values, np.full(radius, -np.inf)))
    return sliding_window_view(padded, 2 * radius + 1).max(1)  # type: ignore[no-any-return]


def swing_smoothing(correction: np.ndarray, floor: np.ndarray, touch: np.ndarray, pinned: np.ndarray,
                    fps: float, leg: Any) -> np.ndarray:
    """A foot's `correction` per frame (along the up axis: how far the plan lifts its target over the ground
    it follows, `plant._plan_foot`) smoothed where it is free: a Gaussian of SWING_SMOOTH seconds over all
    frames, `pinned` ones (in a contact, a sole the animation has on its floor, the ground less than ANCHORED
    from the contacts around, no plan) read as they are and kept. What the Gaussian would move a pinned frame by
    is carried back into the free frames around it, fading out over SWING_REACH widths, so the foot arrives
    at every pinned frame exactly, with no jump, and its speed changes gradually there too. Never below
    `touch`, the correction at which the sole points touch the terrain right under them (-inf: no bound).
    `floor` is that correction for the sole points at their animated heights over it: where the plan lifts
    the foot no higher than that within the Gaussian's reach (it just follows the terrain), the animation's
    swing is kept as it is. Non-finite corrections count as pinned and are left out of every average.
    It depends on every frame: the vectorised pass and the frame-by-frame bake apply it over their range;
    live preview's fallback adds what the last frame cache's smoothing did (`handlers.caches.feet`)."""
    height = np.asarray(correction, dtype=np.float64)
    n = len(height)
    leg = np.broadcast_to(np.asarray(leg, dtype=np.float64), (n,))
    width, r, reach = _swing_spans(fps)
    valid = np.isfinite(height)
    fixed = np.asarray(pinned, dtype=bool) | ~valid
    if n < 2 or width <= 0.0 or fixed.all():
        return height.copy()
    values = np.where(valid, height, 0.0)
    g = np.exp(-0.5 * (np.arange(-r, r + 1, dtype=np.float64) / width) ** 2)
    total = np.convolve(valid.astype(np.float64), g, "same")
    smooth = np.convolve(values, g, "same") / np.where(total > 0.0, total, 1.0)
    # What the Gaussian moved each pinned frame by, given back around it: weights that are 1 on the pinned
    # frame, fade out (smoothstep) over `reach` frames, and share linearly between two pinned frames closer
    # than that on either side.
    pins = np.flatnonzero(fixed)
    if len(pins):
        moved = np.where(fixed & valid, height - smooth, 0.0)
        rows = np.arange(n)
        at = np.searchsorted(pins, rows)
        left = pins[np.maximum(at - 1, 0)]
        right = pins[np.minimum(at, len(pins) - 1)]
        dl = np.where(at > 0, rows - left, np.inf)
        dr = np.where(at < len(pins), right - rows, np.inf)
        fl = np.where(np.isfinite(dl), smoothstep(1.0 - dl / reach), 0.0)
        fr = np.where(np.isfinite(dr), smoothstep(1.0 - dr / reach), 0.0)
        share = np.where(np.isfinite(dl) & np.isfinite(dr), dr / np.where(np.isfinite(dl + dr), dl + dr, 1.0), 1.0)
        to_left = fl * (1.0 - fr) + fl * fr * share
        to_right = fr * (1.0 - fl) + fl * fr * (1.0 - share)
        smooth = smooth + to_left * moved[left] + to_right * moved[right]
    smooth = np.maximum(smooth, np.where(np.isfinite(touch), touch, -np.inf))
    # Only where something lifts the foot over the terrain under its soles, within the Gaussian's reach:
    # a foot that just follows the terrain keeps the animation's swing as it is.
    bounded = np.isfinite(floor)
    lifted = np.where(valid & bounded, np.maximum(0.0, values - np.where(bounded, floor, 0.0)), np.where(valid, np.inf, 0.0))
    near = smoothstep(np.minimum(_window_max(lifted, r), 1e300) / (SWING_LIFTED * leg))
    return np.where(fixed, height, values + near * (smooth - values))


def swing_change(correction: np.ndarray, floor: np.ndarray, touch: np.ndarray, pinned: np.ndarray, fps: float,
                 leg: Any) -> np.ndarray:
    """What `swing_smoothing` adds to each frame's correction (0 where it has none)."""
    smoothed = swing_smoothing(correction, floor, touch, pinned, fps, leg)
    return np.subtract(smoothed, correction, out=np.zeros(len(smoothed)), where=np.isfinite(correction))
