"""The ground model: pure numpy and mathutils, no `bpy` (testable like `solvers/`), over arrays of frames.

Where a foot goes (`plan_foot`: the animation's floor mapped onto the terrain, foot locking, the turn to
the ground normal, the toe-up turn, the clearance field, the swing's line over step edges), where the
pelvis goes (`body_ground`, `soft_reach_drop`, `pelvis_speed_limit`), the smoothing of a foot between its
contacts (`swing_smoothing`), the knee's pole from the animation (`fk_plane_pole`) and the moving of a
contact's footprint off a step edge (`place_footprints`). One implementation: the bake, live preview's
frame cache and its one-frame fallback all run it (`batch`). Rays go through one engine (`Rays`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np
from mathutils import Vector

from ..solvers.rotations import cross, mat_to_quat, norm, q_between, qmul, qrot, qslerp
from .heightfield import DownHits
from .tuning import (
    ALIGN_FADE,
    ANCHORED,
    ARC_LAND_TIME,
    ARC_PATH,
    ARC_RAMP,
    ARC_RAMP_FRAMES,
    ARC_RAMP_TIME,
    ARC_SAMPLES,
    ARC_WIDTH,
    BODY_RADIUS,
    CLEAR_AHEAD,
    CLEAR_CAP,
    CUT_RIGID,
    CUT_SPEED,
    EXT_SLACK,
    FOOT_EDGE,
    FOOT_MARGIN,
    FOOT_SAMPLES,
    FOOT_SHIFT,
    FOOT_STEP,
    FORWARD_BIAS,
    GROUND_JUMP,
    HELD_RISE,
    HELD_SPEEDUP,
    HINGE_BEND,
    LIFT_SPEED,
    MAX_HELD_TURN,
    MAX_LINE_GRADE,
    MAX_PITCH,
    MIN_CONTACT,
    PELVIS_BEND,
    PELVIS_SPEED,
    PELVIS_TREND,
    PELVIS_TREND_FREE,
    PITCH_RUN,
    PITCH_RUN_NONE,
    PLANE_EPS,
    REACH_MARGIN,
    ROLL_SPEED,
    SOFT_LOOSE,
    SOFT_REACH,
    SOFT_STEPS,
    STRAIGHT,
    SWING_LIFT,
    SWING_LIFTED,
    SWING_REACH,
    SWING_SMOOTH,
    TOUCH_PASSES,
)


def per_row(value: Any, n: int) -> np.ndarray:
    """`value` (one for every row, or one per row) as `n` rows of float64: itself when it already is
    (`np.broadcast_to`'s cost per call counts a frame at a time)."""
    a = np.asarray(value, dtype=np.float64)
    return a if a.shape == (n,) else np.broadcast_to(a, (n,))


def clearance_extra(rise: Any, leg: Any) -> Any:
    """How far the clearance field lifts a foot above the ground under it, from the field's `rise` over
    that ground: the rise itself up to CLEAR_CAP x leg, then falling continuously to 0 at twice that."""
    cap = CLEAR_CAP * np.asarray(leg, dtype=np.float64)
    r = np.asarray(rise, dtype=np.float64)
    r = np.where(np.isfinite(r), r, 0.0)
    return np.where(r <= cap, np.maximum(r, 0.0), np.maximum(0.0, 2.0 * cap - r))


def arc_window(x: Any) -> Any:
    """1 at 0, falling smoothly (C1) to 0 at |x| >= 1: cos^2(pi x / 2). Works on floats and numpy arrays."""
    c = np.cos(0.5 * np.pi * np.minimum(np.abs(x), 1.0))
    return c * c


def smoothstep(x: Any) -> Any:
    """0 below 0, 1 above 1, smooth (3x^2 - 2x^3) between. Works on floats and numpy arrays."""
    x = np.minimum(np.maximum(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


def arc_ramp(t: Any, gap: Any, fps: float) -> Any:
    """0 at either end of the swing (`t` from 0 to 1 over `gap` frames), rising smoothly (smoothstep) to 1
    over ARC_RAMP of its time at each end, and over at least ARC_RAMP_FRAMES frames and ARC_RAMP_TIME seconds
    after its lift-off, ARC_LAND_TIME seconds before its landing."""
    gap = np.asarray(gap, dtype=np.float64)
    part = ARC_RAMP * gap
    lift = np.maximum(part, max(ARC_RAMP_FRAMES, ARC_RAMP_TIME * fps))
    land = np.maximum(part, max(ARC_RAMP_FRAMES, ARC_LAND_TIME * fps))
    return smoothstep(np.minimum(t * gap / lift, (1.0 - t) * gap / land))


def pelvis_step(rest_leg: Any, world_scale: Any, fps: float) -> Any:
    """How far the pelvis may move from one frame to the next (`PELVIS_SPEED`), in world units, for a rig
    whose longest leg is `rest_leg` long in armature units; inf without a frame rate."""
    return PELVIS_SPEED * rest_leg * world_scale / fps if fps > 0.0 else np.inf


def cuts(root: np.ndarray, leg: Any, fps: float, feet: Sequence[np.ndarray] = ()) -> np.ndarray:
    """Rows the animation jumps to: `root` ((N, 3), the body) moving faster than CUT_SPEED x `leg` per second
    from the row before, with every one of `feet` ((N, 3) each, the ankles) jumping with it (its step off the
    body's by at most CUT_RIGID of its own length): an NLA repeat's or a loop's seam snapping the whole body
    back. Not a move of the body, and not a capture's glitch throwing the feet about a body that stays."""
    out = np.zeros(len(root), dtype=bool)
    if len(root) > 1 and fps > 0.0:
        step = np.diff(root, axis=0)
        out[1:] = norm(step, axis=1) * fps > CUT_SPEED * per_row(leg, len(root))[1:]
        for p in feet:
            own = np.diff(p, axis=0)
            out[1:] &= norm(own - step, axis=1) <= CUT_RIGID * norm(own, axis=1)
    return out


def pelvis_trend(offset: np.ndarray, moved: np.ndarray, step: np.ndarray, fps: float) -> np.ndarray:
    """The pelvis offset's trend: its Gaussian average (PELVIS_TREND seconds wide) over the frames where the
    pelvis is `moved`, 0 elsewhere: a climb that lasts (a run up a flight of stairs), not one step."""
    n = len(offset)
    width = PELVIS_TREND * fps
    if n < 2 or width <= 0.0 or not moved.any():
        return np.zeros(n)
    r = int(math.ceil(3.0 * width))
    g = np.exp(-0.5 * (np.arange(-r, r + 1, dtype=np.float64) / width) ** 2)
    valid = moved & np.isfinite(offset)
    pad = np.zeros(r)

    def blur(v: np.ndarray) -> np.ndarray:
        return np.convolve(np.concatenate((pad, v, pad)), g, "valid")  # type: ignore[no-any-return]

    total = blur(valid.astype(np.float64))
    mean = blur(np.where(valid, offset, 0.0)) / np.where(total > 0.0, total, 1.0)
    # Only what of it is faster than PELVIS_TREND_FREE x the limit: slower climbs stay wholly under the limit.
    free = PELVIS_TREND_FREE * np.broadcast_to(np.asarray(step, dtype=np.float64), (n,))
    both = valid & np.r_[False, valid[:-1]]
    d = np.where(both, np.diff(mean, prepend=mean[:1]), 0.0)
    fast = np.sign(d) * np.maximum(0.0, np.abs(d) - np.where(np.isfinite(free), free, np.inf))
    return np.cumsum(fast)  # type: ignore[no-any-return]


def pelvis_speed_limit(offset: np.ndarray, moved: np.ndarray, step: np.ndarray, fps: float = 0.0) -> np.ndarray:
    """The highest curve never above `offset` whose departure from the offset's trend (`pelvis_trend`)
    changes by at most `step` (per row) from one frame to the next, over the frames where the pelvis is
    `moved`; a lower pelvis keeps every leg within reach. The trend itself is followed as it is: a body
    running up stairs climbs faster than `step` allows for a jerk, and its legs would fold under it.
    It depends on every frame: the vectorised pass applies it over its range; live preview's fallback adds
    what the last frame cache's limit did."""
    st = np.broadcast_to(np.asarray(step, dtype=np.float64), np.shape(offset))
    if len(st) > 1 and np.isfinite(st).any() and not np.isfinite(st[1:]).all():
        # Infinite steps (cuts, `cuts`): each piece between them on its own.
        out = np.array(offset, dtype=np.float64)
        bounds = [0, *(np.flatnonzero(~np.isfinite(st[1:])) + 1).tolist(), len(st)]
        for a, b in zip(bounds, bounds[1:]):
            piece = st[a:b].copy()
            piece[0] = 0.0  # the step into the piece's first row: none
            if b - a > 1 and np.isfinite(piece).all():
                out[a:b] = pelvis_speed_limit(out[a:b], moved[a:b], piece, fps)
        return out
    trend = pelvis_trend(offset, moved, step, fps)
    x = np.where(moved, offset - trend, np.inf).astype(np.float64)
    if len(x) < 2 or not np.isfinite(st).all():
        return offset
    # st[i] is the step from row i-1 to row i. Forward, y[i] = min(x[i], y[i-1] + st[i]): with S the running
    # sum of the steps, y = S + cummin(x - S). Backward, y[i] = min(y[i], y[i+1] + st[i+1]): the same from the
    # end, with T the sum of the steps after row i. Together: y[i] = min over j of x[j] + |S[i] - S[j]|.
    s = np.concatenate(([0.0], np.cumsum(st[1:])))
    y = s + np.minimum.accumulate(x - s)
    t = np.concatenate((np.cumsum(st[1:][::-1])[::-1], [0.0]))
    y = t + np.minimum.accumulate((y - t)[::-1])[::-1]
    if fps > 0.0 and PELVIS_SPEED > 0.0 and np.isfinite(y).all():
        # PELVIS_BEND per row per row: the step's (PELVIS_SPEED per row) over PELVIS_SPEED, per row again.
        y = pelvis_bend_limit(y, PELVIS_BEND / PELVIS_SPEED / fps * float(np.median(st[1:])))
    return np.where(moved & np.isfinite(y), y + trend, offset)


def pelvis_bend_limit(y: np.ndarray, bend: float) -> np.ndarray:
    """The highest curve never above `y` whose slope falls by at most `bend` from one row to the next: a
    climb that slows, or a descent that speeds up, does so over several frames, where under the speed limit
    alone the pelvis rose (or fell) at the limit and changed to the ground's own pace from one frame to the
    next, and the standing knee took the difference (pymo_av8 over stairs: the knee 1.40x the source's peak
    at a landing, 1.21x now; xia_strutting over noise 1.53x, 1.22x now).
    Where `y` moves at most a step per row, so does the curve: each stretch it lowers bends down at `bend`
    from a slope no steeper than `y`'s where it leaves `y` to one no steeper than `y`'s where it meets it
    again. A single row's rise and return is kept: the pelvis follows a foot's jump for one frame (a
    capture's toe flipping in a held contact, cmu_01_01 at a landing), and holding it down there moves the
    knee by the whole jump (1.09x -> 1.29x the source's peak)."""
    n = len(y)
    if n < 3 or not bend > 0.0:
        return y
    rows = np.arange(n, dtype=np.float64)
    # The greatest convex minorant of y + bend/2 x row^2 (its lower hull), less the parabola.
    lifted = y + 0.5 * bend * rows * rows
    g = lifted.tolist()
    hull: list[int] = []
    for k in range(n):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (g[b] - g[a]) * (k - a) >= (g[k] - g[a]) * (b - a):
                hull.pop()
            else:
                break
        hull.append(k)
    if len(hull) == n:  # y bends down nowhere faster than `bend`
        return y
    at = np.array(hull)
    out = np.interp(rows, at.astype(np.float64), lifted[at]) - 0.5 * bend * rows * rows
    # A stretch over a single row (hull points two rows apart): kept as it is.
    single = at[1:][np.diff(at) == 2] - 1
    out[single] = y[single]
    return out  # type: ignore[no-any-return]


def _swing_spans(fps: float) -> tuple[float, int, float]:
    """`swing_smoothing`'s Gaussian width and radius, and its carried differences' reach, in frames."""
    width = SWING_SMOOTH * fps if fps > 0.0 else 0.0
    return width, int(math.ceil(3.0 * width)), SWING_REACH * width


def _let_go_span(reach: float) -> int:
    """How many frames either side of a Ball Up `swing_smoothing` lets a ball held through toe-off go: as far as
    its carried differences reach, and one more."""
    return int(math.ceil(reach)) + 1


def context_frames(fps: float) -> int:
    """How many frames either side of a range `swing_smoothing` reaches: read them too (`BatchRig.context`,
    the frame-by-frame bake's first sweep) and the range's frames come out as in any longer range."""
    if fps <= 0.0:
        return 0
    _width, radius, reach = _swing_spans(fps)
    span = _let_go_span(reach)
    one = radius + span
    # A ball held through toe-off (`swing_smoothing`'s `toe_off`) is smoothed in three passes, the second's held
    # frames let go by what the first two give around Ball Up, `span` frames either side.
    return 3 * (one + span)


def context_rows(start: int, end: int, first: int, last: int, fps: float) -> tuple[int, int]:
    """The frames read before and after frames `start`..`end` (`context_frames`), none outside `first`..`last`
    (the scene's frame range): frames a user leaves out of it (a leading T-pose, a capture's garbage frames,
    as the command line leaves them out) are not motion, and the smoothing between contacts read them into
    the range's first frames (cmu_02_01 over rings: knee 1.68x the source's, from its five glitch frames)."""
    pad = context_frames(fps)
    return min(pad, max(0, start - first)), min(pad, max(0, last - end))


def _window_max(values: np.ndarray, radius: int) -> np.ndarray:
    """The largest of `values` within `radius` rows of each row."""
    from numpy.lib.stride_tricks import sliding_window_view

    padded = np.concatenate((np.full(radius, -np.inf), values, np.full(radius, -np.inf)))
    return sliding_window_view(padded, 2 * radius + 1).max(1)  # type: ignore[no-any-return]


def beside_jump(values: np.ndarray, limit: Any, runs: int = 1) -> np.ndarray:
    """Per frame, whether `values` (N) jump by more than `limit` (per frame, or one for all) from one frame to
    the next within a frame of it: the jump after frame i marks frames i - 1 to i + 2. Non-finite values
    count as 0. `runs`: the rows are that many runs of frames one after another (several feet planned at
    once, `plan_feet`), each on its own: nothing jumps, or is marked, across from one to the next."""
    v = np.where(np.isfinite(values), values, 0.0).reshape(runs, -1)
    n = v.shape[1]
    step = np.abs(np.diff(v, axis=1)) > per_row(limit, runs * n).reshape(runs, n)[:, 1:]
    near = np.zeros((runs, n + 3), dtype=bool)  # frame j at j + 1
    for k in range(4):
        near[:, k:k + n - 1] |= step
    return near[:, 1:n + 1].reshape(-1)  # type: ignore[no-any-return]


def held_floor(values: np.ndarray, width: int) -> float:
    """The lowest level that `width` consecutive `values` all stay at or below: the level a foot stands on for
    a stance, which a capture's glitch a frame or two deep under its floor is not."""
    from numpy.lib.stride_tricks import sliding_window_view

    v = np.asarray(values, dtype=np.float64)
    w = min(max(1, int(width)), len(v))
    return float(sliding_window_view(v, w).max(1).min())


def swing_smoothing(correction: np.ndarray, floor: np.ndarray, touch: np.ndarray, pinned: np.ndarray,
                    fps: float, leg: Any, stretch: Optional[np.ndarray] = None, dip: Optional[np.ndarray] = None,
                    held: Optional[np.ndarray] = None, toe_off: Optional[np.ndarray] = None,
                    landing: Optional[np.ndarray] = None) -> np.ndarray:
    """A foot's `correction` per frame (along the up axis: how far the plan lifts its target over the ground
    it follows, `plant._plan_foot`) smoothed where it is free: a Gaussian of SWING_SMOOTH seconds over all
    frames, `pinned` ones (in a contact, no plan, the ground less than ANCHORED from the contacts around
    beside a jump of the terrain under the ankle, `beside_jump`) read as they are and kept; a sole the
    animation has on its floor outside a contact is not pinned (kept exactly, a toe crossing a step edge
    as it pushed off stepped the foot by the riser in one frame). What the Gaussian would move a pinned
    frame by is carried back into the free frames around it, fading out over SWING_REACH widths, so the foot
    arrives at every pinned frame exactly, with no jump, and its speed changes gradually there too. Never below
    `touch`, the correction at which the sole points touch the terrain right under them (-inf: no bound): a
    free frame the smoothing would put under it is held at it as a pinned frame is, and the frames around
    smoothed again (up to TOUCH_PASSES times), so the foot comes up to a touch that jumps (a toe crossing a
    riser's edge) over the frames before it instead of being clamped onto it in one frame.
    `floor` is that correction for the sole points at their animated heights over it: where the plan lifts
    the foot no higher than that within the Gaussian's reach (it just follows the terrain), the animation's
    swing is kept as it is. Non-finite corrections count as pinned and are left out of every average.
    It depends on every frame: the vectorised pass and the frame-by-frame bake apply it over their range;
    live preview's fallback adds what the last frame cache's smoothing did (`handlers.caches.feet`).

    `dip` (per row, >= 0): how much of `correction` lifts a free frame's sole the animation has under its floor
    (a toe dragged through the floor in a capture) up onto the terrain; none of it counts in `floor`. Such a
    lift is smoothed like any other: the foot comes up over the frames around, not in one frame onto it. `held`
    (per row): the foot's ball is still held along the ground there (`LockTrack.weight`); such a frame keeps
    what it would have without `dip`, pinned at it, so a dip just after toe-off does not lift the held ball.

    `toe_off` (per row): the foot's ball is held through toe-off there (after the ankle's contact, until Ball
    Up; not before a contact's Start). Such a frame is kept within HELD_RISE x leg of its correction: the lift
    the smoothing gives ahead of the lift-off does not raise the held ball off its ground by more, and the
    frames after Ball Up come away from it as from a pinned frame. Its last frames (SWING_REACH widths and one
    frame) are smoothed as before where a frame kept as it is (a contact, a jump of the ground) follows Ball
    Up as closely, or where holding them makes the foot come away faster, around Ball Up, than HELD_SPEEDUP
    times the fastest the smoothing alone moves it there: the foot is needed off the ground at once (a toe
    at a riser's edge).

    `landing` (per row): the foot's ball (a heel strike's heel) is held before its contact's Start
    (`LockTrack.landing`).
    Such a frame is kept no higher than its correction (the sole at its animated height over the terrain under
    it): the smoothing may lower it, never lift it, and the frames before come down to it as to a pinned
    frame. Smoothed with the swing coming down before it, a ball on its ground in the animation was left up to
    3.2% of the leg over the tread it landed on (cmu_10_01 and fair1_zombie at 30 fps, over stairs).

    `stretch` (one number per row, rows of a stretch together): each stretch smoothed on its own, exactly as
    if it were passed alone (several feet, the stretches between a loop's cuts: one call for all of them).
    Each row's sums run in the same order either way (`_blur`), so the result does not depend on what else
    is in the call."""
    height = np.asarray(correction, dtype=np.float64)
    n = len(height)
    leg = per_row(leg, n)
    width, r, reach = _swing_spans(fps)
    if n == 0 or width <= 0.0:
        return height.copy()
    seg = np.zeros(n, dtype=np.int64) if stretch is None else np.asarray(stretch, dtype=np.int64)
    first = np.concatenate(([True], seg[1:] != seg[:-1]))
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, n))
    valid = np.isfinite(height)
    fixed = np.asarray(pinned, dtype=bool) | ~valid
    # Stretches with fewer than two rows or nothing free are kept as they are.
    free = np.add.reduceat((~fixed).astype(np.int64), starts)
    keep = np.repeat((sizes < 2) | (free == 0), sizes)
    values = np.where(valid, height, 0.0)
    # The stretches r empty rows apart (nothing valid there), so no Gaussian reaches from one to the next.
    pos = np.arange(n) + r * (np.cumsum(first) - 1)
    g = np.exp(-0.5 * (np.arange(-r, r + 1, dtype=np.float64) / width) ** 2)
    total = _blur(valid.astype(np.float64), pos, g)
    smooth = _blur(values, pos, g) / np.where(total > 0.0, total, 1.0)
    # What the Gaussian moved each pinned frame by, given back around it: weights that are 1 on the pinned
    # frame, fade out (smoothstep) over `reach` frames, and share linearly between two pinned frames closer
    # than that on either side (of its own stretch).
    rows = np.arange(n)
    bound = np.where(np.isfinite(touch), touch, -np.inf)

    def carried(pin: np.ndarray, at_pin: np.ndarray) -> np.ndarray:
        pins = np.flatnonzero(pin)
        if not len(pins):
            return smooth
        moved = np.where(pin & valid, at_pin - smooth, 0.0)
        at = np.searchsorted(pins, rows)
        left = pins[np.maximum(at - 1, 0)]
        right = pins[np.minimum(at, len(pins) - 1)]
        has_left = (at > 0) & (seg[left] == seg)
        has_right = (at < len(pins)) & (seg[right] == seg)
        dl = np.where(has_left, rows - left, np.inf)
        dr = np.where(has_right, right - rows, np.inf)
        fl = np.where(np.isfinite(dl), smoothstep(1.0 - dl / reach), 0.0)
        fr = np.where(np.isfinite(dr), smoothstep(1.0 - dr / reach), 0.0)
        share = np.where(np.isfinite(dl) & np.isfinite(dr), dr / np.where(np.isfinite(dl + dr), dl + dr, 1.0), 1.0)
        to_left = fl * (1.0 - fr) + fl * fr * share
        to_right = fr * (1.0 - fl) + fl * fr * (1.0 - share)
        return smooth + to_left * moved[left] + to_right * moved[right]  # type: ignore[no-any-return]

    # A free frame the smoothing would put through the terrain under its soles (under `touch`) is held at
    # `touch` like a pinned frame, and the rest smoothed again around it, so the foot comes up to it
    # gradually instead of being clamped there in one frame (a toe crossing a riser's edge).
    def passes(fix: np.ndarray, at_fix: np.ndarray) -> np.ndarray:
        pin, at_pin = fix, at_fix
        out = carried(pin, at_pin)
        for _ in range(TOUCH_PASSES):
            low = ~pin & valid & (out < bound)
            if not low.any():
                break
            pin = pin | low
            at_pin = np.where(low, bound, at_pin)
            out = carried(pin, at_pin)
        return np.maximum(out, bound)  # type: ignore[no-any-return]

    # Only where something lifts the foot over the terrain under its soles, within the Gaussian's reach:
    # a foot that just follows the terrain keeps the animation's swing as it is.
    bounded = np.isfinite(floor)
    scale = SWING_LIFTED * np.asarray(leg, dtype=np.float64)

    def nearness(fl: np.ndarray) -> np.ndarray:
        lifted = np.where(valid & bounded, np.maximum(0.0, values - np.where(bounded, fl, 0.0)),
                          np.where(valid, np.inf, 0.0))
        spread = np.full(int(pos[-1]) + 1 + 2 * r, -np.inf)
        spread[pos + r] = lifted
        # The lift over SWING_LIFTED x leg, divided only below 1 (a leg collapsed to a point in the pose has no
        # length to divide by; what is beyond is 1 anyway).
        over = np.minimum(_window_max(spread, r)[pos + r], 1e300)
        ratio = np.ones_like(over)
        np.divide(over, np.broadcast_to(scale, over.shape), out=ratio, where=over < scale)
        return smoothstep(ratio)  # type: ignore[no-any-return]

    near = nearness(floor)
    result = np.where(fixed | keep, height, values + near * (passes(fixed, height) - values))
    fix, at_fix = fixed, height
    if dip is not None and np.any(dip > 0.0):
        # A swing whose animated sole dips under its floor (`dip`) is lifted onto the terrain over the frames
        # around, too, as the smoothing lifts it over anything else. A frame whose ball is still held (`held`)
        # keeps what it had without it: it is pinned there, and the frames after it come away from it smoothly.
        near_dip = nearness(floor - np.where(np.isfinite(dip), np.maximum(dip, 0.0), 0.0))
        extra = (np.zeros(n, dtype=bool) if held is None else np.asarray(held, dtype=bool)) & (near_dip > near) & ~fixed
        near, fix = near_dip, fixed | extra
        at_fix = np.where(extra, result, height)
        result = np.where(fix | keep, at_fix, values + near * (passes(fix, at_fix) - values))
    loose = (np.zeros(n, dtype=bool) if toe_off is None else np.asarray(toe_off, dtype=bool)) & ~fix & ~keep & valid
    land = (np.zeros(n, dtype=bool) if landing is None else np.asarray(landing, dtype=bool)) & ~fix & ~keep & valid
    if not loose.any() and not land.any():
        return result  # type: ignore[no-any-return]
    # A ball held through toe-off: its frames held within HELD_RISE of their correction, then let go near each
    # Ball Up where that is needed (see the docstring); a ball held before Start: no higher than its correction.
    # Everything else pinned as above.
    cap = np.where(loose, np.minimum(result, height + HELD_RISE * leg), np.where(land, np.minimum(result, height), at_fix))
    held_out = np.where(fix | loose | land | keep, cap, values + near * (passes(fix | loose | land, cap) - values))
    span = _let_go_span(reach)
    hold = loose.copy()
    starts_run = loose & (first | ~np.concatenate(([False], loose[:-1])))
    ends_run = loose & (np.concatenate((first[1:], [True])) | ~np.concatenate((loose[1:], [False])))
    for a, last in zip(np.flatnonzero(starts_run).tolist(), np.flatnonzero(ends_run).tolist()):
        b = last + 1  # the frame after Ball Up
        lo, hi = max(0, max(a, b - span) - span), min(n, b + span)
        same = seg[lo:hi] == seg[last]
        after = (fix[b:hi] & same[b - lo:]).any()
        if after or _steepest(held_out[lo:hi], same) > HELD_SPEEDUP * _steepest(result[lo:hi], same) + 1e-12:
            hold[max(a, b - span):b] = False
    hold |= land
    at_hold = np.where(hold, cap, at_fix)
    return np.where(fix | hold | keep, at_hold, values + near * (passes(fix | hold, at_hold) - values))  # type: ignore[no-any-return]


def _steepest(values: np.ndarray, same: np.ndarray) -> float:
    """The largest change of `values` from one row to the next, between rows both `same` (0: none)."""
    d = np.abs(np.diff(values))
    ok = same[1:] & same[:-1] & np.isfinite(d)
    return float(d[ok].max()) if ok.any() else 0.0


def _blur(values: np.ndarray, pos: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Per row, the sum of `g` (2r + 1 weights) times the rows around it, rows placed at `pos` (gaps hold
    nothing), summed weight by weight in one order whatever the rows are."""
    r = len(g) // 2
    spread = np.zeros(int(pos[-1]) + 1 + 2 * r)
    spread[pos + r] = values
    out = np.zeros(len(values))
    for k in range(len(g)):
        out += g[k] * spread[pos + k]
    return out


class SwingFoot(NamedTuple):
    """One foot's arguments to `swing_changes`, row by row: `swing_smoothing`'s, and the rows the animation
    jumps to (`cut`, None: none). A plain tuple of the first six (or all eight) converts as it is."""

    correction: np.ndarray
    floor: np.ndarray
    touch: np.ndarray
    pinned: np.ndarray
    leg: Any
    cut: Optional[np.ndarray] = None
    dip: Optional[np.ndarray] = None
    held: Optional[np.ndarray] = None
    toe_off: Optional[np.ndarray] = None
    landing: Optional[np.ndarray] = None


def swing_changes(feet: Sequence[SwingFoot | tuple[Any, ...]], fps: float) -> list[np.ndarray]:
    """What `swing_smoothing` adds to each frame's correction (0 where it has none), for each of `feet`
    (`SwingFoot`s), in one call. With a `cut` (rows the animation jumps to, `cuts`), each stretch between
    cuts is smoothed on its own: the heights on either side of a loop's seam belong to places a body apart,
    and averaging them across it moved the foot on the frames around the seam (the knee 2.9x the source's).
    Each foot's result is the one it gets alone."""
    if not feet:
        return []
    fs = [SwingFoot(*f) for f in feet]
    sizes = [len(f.correction) for f in fs]
    stretch, base = [], 0
    for f, m in zip(fs, sizes):
        ids = np.zeros(m, dtype=np.int64)
        if f.cut is not None and len(f.cut) == m and m > 1:
            ids[1:] = np.cumsum(np.asarray(f.cut[1:], dtype=np.int64))
        stretch.append(ids + base)
        base += int(ids[-1]) + 1 if m else 0
    correction = np.concatenate([np.asarray(f.correction, dtype=np.float64) for f in fs])
    smoothed = swing_smoothing(correction, np.concatenate([f.floor for f in fs]), np.concatenate([f.touch for f in fs]),
                               np.concatenate([f.pinned for f in fs]), fps,
                               np.concatenate([per_row(f.leg, m) for f, m in zip(fs, sizes)]), np.concatenate(stretch),
                               np.concatenate([np.zeros(m) if f.dip is None else f.dip for f, m in zip(fs, sizes)]),
                               np.concatenate([np.zeros(m, dtype=bool) if f.held is None else f.held
                                               for f, m in zip(fs, sizes)]),
                               np.concatenate([np.zeros(m, dtype=bool) if f.toe_off is None else f.toe_off
                                               for f, m in zip(fs, sizes)]),
                               np.concatenate([np.zeros(m, dtype=bool) if f.landing is None else f.landing
                                               for f, m in zip(fs, sizes)]))
    change = np.subtract(smoothed, correction, out=np.zeros(len(smoothed)), where=np.isfinite(correction))
    return np.split(change, np.cumsum(sizes)[:-1])


def swing_change(correction: np.ndarray, floor: np.ndarray, touch: np.ndarray, pinned: np.ndarray, fps: float,
                 leg: Any, cut: Optional[np.ndarray] = None) -> np.ndarray:
    """`swing_changes` for one foot."""
    return swing_changes([SwingFoot(correction, floor, touch, pinned, leg, cut)], fps)[0]


# ------------------------------------------------------------------------------------------ the plan
# Everything below runs over arrays of frames (N rows); one frame is N = 1. World space throughout.


@dataclass
class LockTrack:
    """Foot locking per frame (`contacts.locks_over`), in world space and units. In a contact
    (`weight` 1) the ankle is pinned (along the ground) to `point` and the sole put down (`down` 1); between
    contacts it is shifted by `offset` and its sole raised by `rise`. Its ground comes from the contact it
    left (`from_point`, `from_weight`) and the one it lands on (`to_point`, `to_weight`); the rest, up to 1,
    from the ground under the ankle. `swing` (how much the foot keeps clear of the terrain around it), `free`
    (how far it is from its contacts in time), both 0 while anything is held, and `pitch` (how much it may
    turn toe-up) ease in and out around contacts; `gap` is the frames between the two contacts (0 unless
    between two), `lead` how many of them, from the first, its ball is still held (a roll's toe-off)."""

    weight: np.ndarray
    point: np.ndarray  # (N, 3)
    offset: np.ndarray  # (N, 3)
    down: np.ndarray
    rise: np.ndarray
    from_point: np.ndarray  # (N, 3)
    from_weight: np.ndarray
    to_point: np.ndarray  # (N, 3)
    to_weight: np.ndarray
    swing: np.ndarray
    free: np.ndarray
    pitch: np.ndarray
    gap: np.ndarray
    lead: np.ndarray
    opened: np.ndarray  # 1 where the swing starts in the air on the range's first frame (no lift-off there)
    # 1 where the foot rolls over its ball: in the contact, the ball (`Foot.ball`), not the ankle, is at `point`.
    ball: np.ndarray
    # (N, 3) after a contact held on its ball, the ball's offset from the ankle as held less the animation's at
    # lift-off, faded as the correction is: what the ground's turn about the ankle does to it goes on.
    carry: np.ndarray
    # 1 where the foot's heading (heel to toe tip about the up axis) is held at `heading` (radians, world Z),
    # while its ankle is held; elsewhere it is turned from the animation's by `twist` (radians).
    turning: np.ndarray
    heading: np.ndarray
    twist: np.ndarray
    # 1 where the ball is held before the contact's Start (`ContactIKContact.land`: it landed before the ankle
    # came to rest): along the ground (`ball` is 1 there too); up the up axis the frame is a swing's with no
    # clearance (`swing` and `free` 0, as wherever something is held), kept no higher than the terrain under it
    # puts it (`swing_smoothing`'s `landing`). Its contact's lock point there (`anchor`, (N, 3)), where the
    # ground turns the foot about the ankle.
    landing: np.ndarray
    anchor: np.ndarray
    # 1 where the heel, not the ball, is held before Start (a heel strike, `ContactIKContact.land_heel`): at
    # `point` as the ball otherwise (`ball` is 0 there).
    heel: np.ndarray
    # 1 on every frame of a foot with no contacts at all (none found, or locking off: `none`), 0 on a foot with
    # contacts, however far from them: it follows the terrain right under it, smoothed (`plan_foot`).
    contactless: np.ndarray

    @classmethod
    def none(cls, count: int) -> LockTrack:
        """No locking (the limb has no contacts, or locking is off)."""
        z, z3 = np.zeros(count), np.zeros((count, 3))
        return cls(z, z3, z3.copy(), z.copy(), z.copy(), z3.copy(), z.copy(), z3.copy(), z.copy(), z.copy(),
                   z.copy(), np.ones(count), z.copy(), z.copy(), z.copy(), z.copy(), z3.copy(), z.copy(), z.copy(),
                   z.copy(), z.copy(), z3.copy(), z.copy(), np.ones(count))

    def rows(self, sl: slice) -> LockTrack:
        return LockTrack(**{k: v[sl] for k, v in vars(self).items()})


class Rays:
    """The ground model's one ray engine, for every path (plan, live preview, bake, CLI): down-rays in bulk
    along world Z (`heightfield.DownRays`, exact against the terrain's triangles: the first hit from above,
    overhangs included) and the clearance field. `terrain` is a `ground.Terrain`."""

    def __init__(self, terrain: Any):
        self.terrain = terrain
        # The terrain's `DownRays` and extent per up axis, its clearance fields per up axis and leg length:
        # looked up once (a set-up kept from frame to frame, `batch.BatchRig.rays`, keeps them too).
        self._down: dict[bytes, Any] = {}
        self._extent: dict[bytes, tuple[float, float]] = {}
        self._fields: dict[tuple[bytes, float], Any] = {}

    def extent(self, up: np.ndarray) -> tuple[float, float]:
        key = up.tobytes()
        got = self._extent.get(key)
        if got is None:
            got = self._extent[key] = self.terrain.extent(up)
        return got

    def cast(self, points: np.ndarray, reach: Any, up: np.ndarray) -> DownHits:
        """The highest terrain within `reach` above or below each point (up: world Z on every row)."""
        key = up[0].tobytes()
        down = self._down.get(key)
        if down is None:
            down = self._down[key] = self.terrain.down_rays(up[0])
        return down.cast(points, reach)  # type: ignore[no-any-return]

    def clearance(self, points: np.ndarray, up: np.ndarray, leg: Any) -> np.ndarray:
        """The clearance field's height under `points` (`heightfield.ClearanceField`), per leg length."""
        leg = per_row(leg, len(points))
        if (leg == leg[0]).all():  # the usual case: one field for every row
            return self._field(up[0], float(leg[0])).height(points)  # type: ignore[no-any-return]
        out = np.full(len(points), -np.inf)
        for value in np.unique(leg):
            sel = np.flatnonzero(leg == value)
            out[sel] = self._field(up[0], float(value)).height(points[sel])
        return out

    def _field(self, up: np.ndarray, leg: float) -> Any:
        key = (up.tobytes(), leg)
        field = self._fields.get(key)
        if field is None:
            field = self._fields[key] = self.terrain.clearance(up, leg)
        return field


@dataclass
class Placement:
    """Where the armature stands, per frame: world up (`up`, unit: the scene's Z, `rig.UP`), a point of the
    animation's floor (`base`, at world height `floor_height`) and the armature's mean scale (`scale`,
    world units per armature unit, from its world matrices `matrix`)."""

    matrix: np.ndarray  # (N, 4, 4)
    floor_height: float  # world units, along world Z

    def __post_init__(self) -> None:
        n = len(self.matrix)
        self.up = np.zeros((n, 3))
        self.up[:, 2] = 1.0
        self.base = np.zeros((n, 3))
        self.base[:, 2] = self.floor_height
        self.scale = np.add.reduce(np.abs(norm(self.matrix[:, :3, :3], axis=1)), axis=1) / 3.0  # the mean

    @classmethod
    def concat(cls, parts: list[Placement]) -> Placement:
        """Several placements' rows one after another (several feet, of one rig or of several, planned in
        one pass: `plan_feet`); each row keeps its own floor (`base`)."""
        if len(parts) == 1:
            return parts[0]
        out = copy.copy(parts[0])
        out.matrix = np.concatenate([p.matrix for p in parts])
        out.up, out.base, out.scale = (np.concatenate([getattr(p, name) for p in parts]) for name in ("up", "base", "scale"))
        if any(p.floor_height != parts[0].floor_height for p in parts):
            out.floor_height = math.nan  # a floor per row: `base`
        return out

    def height(self, points: np.ndarray) -> np.ndarray:
        """Heights of points (N, 3) above the floor, along the up axis."""
        return points[:, 2] - self.base[:, 2]  # type: ignore[no-any-return]

    def level(self, heights: np.ndarray) -> np.ndarray:
        """Heights along the up axis (as `DownHits.height`) made heights above the floor."""
        return heights - self.base[:, 2]  # type: ignore[no-any-return]


@dataclass
class Foot:
    """A foot limb's animated pose over the frames (world space) and its settings, as the plan reads them.
    Each setting is one value for every row, or one per row (`plan_feet`: several feet's rows at once)."""

    joints: list[np.ndarray]  # the chain's joints root to tip (the ankle, the end bone's head), each (N, 3)
    end_frame: np.ndarray  # (N, 4, 4) the foot bone's frame, its scale taken out
    soles: list[np.ndarray]  # the heel (and the toe's tip), each (N, 3)
    ray_length: Any  # armature units; 0: the leg's length
    align: Any  # bool: turn the foot to the ground normal near the ground
    max_align: Any  # radians
    rest_length: Any  # the chain's length at rest, armature units
    use_lock: Any  # bool
    lock: Optional[LockTrack] = None
    feet: int = 1  # the rows are this many feet's, one after another (`plan_feet`)
    # (N, 3) the ball (the toe bone's head; the toe tip without a toe bone), held while the foot rolls over it
    # (`LockTrack.ball`); None: the last sole point.
    ball: Optional[np.ndarray] = None
    # (N,) how fast the front of the foot moves along the ground as animated (`front_speeds`, over all of a
    # rig's rows: a chunk's own would depend on where it starts); None: not known (taken as still).
    front_speed: Optional[np.ndarray] = None


@dataclass
class FootPlan:
    """Where the plan puts a foot on each frame, and what the pelvis and the smoothing need from it."""

    planned: np.ndarray  # the ray under the ankle hit the terrain (elsewhere the foot keeps its animated pose)
    target: np.ndarray  # (N, 3) the ankle's target
    rotation: np.ndarray  # (N, 4) the foot bone's world rotation
    hip: np.ndarray  # (N, 3) the chain's root
    leg: np.ndarray  # the chain's length, as animated
    extension: np.ndarray  # hip to ankle over the leg's length, as animated
    support: np.ndarray  # the pelvis's ground from this foot (height above the floor)
    # For `swing_smoothing`: how far the target is lifted over the ground it follows (`correction`), how far
    # it would be for the sole points to stand their animated heights over the terrain right under them
    # (`floor`, -inf where no ray hit) and to touch it (`touch`), and whether the foot is held (`pinned`).
    # A foot with no contacts at all: its correction, floor and touch include the terrain right under its ankle,
    # and its floor is -inf beside a jump of its correction (smoothed there wherever it is free, `plan_foot`).
    correction: np.ndarray
    floor: np.ndarray
    touch: np.ndarray
    pinned: np.ndarray
    # How much of `correction` lifts a sole the animation has under its floor onto the terrain, in a swing
    # (`swing_smoothing`'s `dip`; 0 elsewhere), and whether its ball is held along the ground (`held`).
    dip: np.ndarray
    held: np.ndarray
    toe_off: np.ndarray  # its ball held through toe-off: after the ankle's contact, until Ball Up (`swing_smoothing`)
    landing: np.ndarray  # its ball (a heel strike's heel) held before the contact's Start (`swing_smoothing`)

    def rows(self, sl: slice) -> FootPlan:
        return FootPlan(**{k: v[sl] for k, v in vars(self).items()})


@dataclass
class SwingLine:
    """The ground a swinging foot keeps its height above, between two contacts, for the frames `rows`:
    the straight line from the ground it left (`start`, height `h0`) to the ground it lands on (`h1`), at
    each point's place along it, rising across it by `across` (per unit, world space; none: level across),
    raised by `lift` to clear what lies between; `ramp` fades it in and out at the swing's ends."""

    rows: np.ndarray  # indices of the frames it applies to
    start: np.ndarray
    direction: np.ndarray
    length: np.ndarray
    h0: np.ndarray
    h1: np.ndarray
    lift: np.ndarray
    ramp: np.ndarray
    across: Optional[np.ndarray] = None  # (rows, 3)

    def height(self, points: np.ndarray) -> np.ndarray:
        """The line's height at points (..., its rows, 3): extrapolated past the ends, exact on a plane."""
        rel = points - self.start
        x = np.einsum("...i,...i->...", rel, self.direction) / self.length
        out = self.h0 + (self.h1 - self.h0) * x + self.lift
        if self.across is not None:
            out = out + np.einsum("...i,...i->...", rel, self.across)
        return out  # type: ignore[no-any-return]


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ni,ni->n", a, b)  # type: ignore[no-any-return]


@dataclass
class SwingRays:
    """`swing_rays`' rays down along the swing's path, cast with the sole points' (one cast, `plan_foot`),
    and what makes the swing's line of their hits (`line`)."""

    points: np.ndarray  # (K * M, 3) where the rays start
    reach: np.ndarray  # (K * M,)
    up: np.ndarray  # (K * M, 3)
    near: np.ndarray  # (K, M) each sample's weight by its distance to the foot
    level: np.ndarray  # (K, M) the line at each sample's own place, raised by its rise to the foot's back
    base: np.ndarray  # (M,) the floor's height along up
    partial: SwingLine  # the line, without its lift yet

    def line(self, hit: DownHits) -> SwingLine:
        """The line from the rays' hits: lifted to clear the terrain's rise above it near the foot."""
        hh = hit.height.reshape(ARC_SAMPLES, -1) - self.base
        lifts = np.where(hit.hit.reshape(ARC_SAMPLES, -1) & (self.near > 0.0), (hh - self.level) * self.near, 0.0)
        self.partial.lift = np.maximum(0.0, lifts.max(0)) if len(self.base) else np.zeros(0)
        return self.partial


def swing_rays(rows: np.ndarray, a: np.ndarray, b: np.ndarray, ga: np.ndarray, gb: np.ndarray, t: np.ndarray,
               gap: np.ndarray, lead: np.ndarray, opened: np.ndarray, ankle: np.ndarray, soles: list[np.ndarray],
               at: Placement, leg: np.ndarray, fps: float, slope: Optional[np.ndarray] = None) -> SwingRays:
    """The swing's ground line for the frames in `rows` whose ends (`a`, `b`, grounds `ga`, `gb`) hit the
    terrain, once its rays are cast (`SwingRays.line`). Along the swing's path (heel to toe) the terrain's
    rise above the line is sampled; each rise lifts the line within ARC_WIDTH x leg of it, by a smooth
    window of the distance from the foot, so the foot rises before a step edge and comes down after it, in
    space: it arcs over a step instead of jumping onto it. `slope` (N, 3): the ground's rise per unit along
    the ground at the ends (the mean of theirs); the line rises across its path by its part across the path
    (a foot swinging wide of the straight line on a slope keeps its height over the slope beside it)."""
    path = b - a
    plen = norm(path, axis=1)
    idx = np.flatnonzero(rows & (plen > 0.0) & np.isfinite(ga) & np.isfinite(gb))
    a, ga, gb, t, plen = a[idx], ga[idx], gb[idx], t[idx], plen[idx]
    path, u, lg = path[idx], at.up[idx], leg[idx]
    direction = path / plen[:, None]
    # The foot's extent along the path, heel to toe, relative to the ankle.
    along = np.stack([_dot(p[idx] - ankle[idx], direction) for p in soles], 1)
    front = np.maximum(0.0, along.max(1)) / plen
    back = np.maximum(0.0, -along.min(1)) / plen
    here = np.minimum(np.maximum(_dot(ankle[idx] - a, direction) / plen, 0.0), 1.0)
    width = ARC_WIDTH * lg
    base_h = _dot(at.base[idx], u)
    # Rays from a leg above the higher end of the swing: the same hits whatever the foot's height.
    top = np.maximum(ga, gb) + lg
    rc = np.abs(gb - ga) + 2.0 * lg
    # Samples fixed along the path, each weighted by its distance to the foot (heel to toe): the lift changes
    # as smoothly as the foot moves, never by a sample crossing a step edge. All samples in one cast.
    tau = np.arange(1, ARC_SAMPLES + 1)[:, None] / (ARC_SAMPLES + 1)  # (K, 1)
    near = arc_window(np.maximum(0.0, np.maximum(tau - here - front, here - back - tau)) * plen / width)  # (K, M)
    q = a + path * tau[..., None]  # (K, M, 3)
    line = ga + (gb - ga) * tau  # the line at the sample's own place
    # A sample behind the foot (a step edge it has passed) lifts it to that sample's height, not to the line's
    # rise carried on past it: going up, the line climbing on from an edge behind held the foot over the tread
    # it lands on by a part of the riser until the swing's end (cmu_12_02 over stairs: 3.65% of the leg over
    # its tread in a source contact, 2.11% without).
    line = line + np.maximum(0.0, gb - ga) * np.maximum(0.0, here - back - tau)
    start = q + u * (base_h + top - rc - np.einsum("kmi,mi->km", q, u))[..., None]  # rays from `top` down
    count = ARC_SAMPLES * len(idx)
    # A swing that starts in the air on the range's first frame ramps in at its landing only. One whose ball
    # is held for its first `lead` frames (toe-off) ramps in from Ball Up: none while the ball is held, which
    # stays on its tread (`contacts._track`), and no jump as it is let go.
    held_for, gap = lead[idx], gap[idx]
    free_for = np.maximum(1.0, gap - held_for)  # the swing's frames from Ball Up
    t = (t * gap - held_for) / free_for
    ramp = arc_ramp(np.where(opened[idx] > 0.0, np.maximum(t, 0.5), t), free_for, fps)
    ramp = ramp * smoothstep(plen / (ARC_PATH * lg))
    across = None
    if slope is not None:  # along the path the line's own rise from ga to gb stands
        g = slope[idx]
        across = g - direction * _dot(g, direction)[:, None]
    return SwingRays(start.reshape(count, 3), np.concatenate([rc] * ARC_SAMPLES), np.concatenate([u] * ARC_SAMPLES),
                     near, line, base_h, SwingLine(idx, a, direction, plen, ga, gb, np.zeros(len(idx)), ramp, across))


def toe_pitch(heel: np.ndarray, toe: np.ndarray, heel_need: np.ndarray, toe_need: np.ndarray,
              up: np.ndarray, weight: Any = 1.0, shin: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """A foot in the air whose toe would have to lift the ankle more than its heel does (the toe reaching
    the ground first, or a step under it) turns toe-up about the ankle instead, by at most MAX_PITCH: the
    turn (heel and toe relative to the ankle) that brings the toe's need to rise down to the heel's, times
    `weight`. (turns (N, 4), which rows have one); a need of -inf (a ray that missed) has none. The turn is
    about a level axis across the foot's run along the ground; for a foot pointing nearly straight down
    (PITCH_RUN), across the foot and `shin` (from the ankle toward the knee, (N, 3)), the ankle's hinge."""
    both = np.isfinite(heel_need) & np.isfinite(toe_need)
    gap = np.where(both, toe_need, 0.0) - np.where(both, heel_need, 0.0)
    if not (gap > 0.0).any():  # no toe needs more than its heel (a frame at a time: most frames)
        q = np.zeros((len(gap), 4))
        q[:, 0] = 1.0
        return q, np.zeros(len(gap), dtype=bool)
    along = toe - heel
    along = along - up * _dot(along, up)[:, None]
    length = norm(along, axis=1)
    d = along / np.where(length > 0.0, length, 1.0)[:, None]

    def flat(v: np.ndarray) -> np.ndarray:
        return v - up * _dot(v, up)[:, None]  # type: ignore[no-any-return]

    reach = _dot(flat(toe), d) + np.maximum(0.0, -_dot(flat(heel), d))
    has = both & (gap > 0.0) & (length > 0.0) & (reach > 0.0)
    angle = weight * np.arcsin(np.minimum(math.sin(MAX_PITCH), np.where(has, gap, 0.0) / np.where(reach > 0.0, reach, 1.0)))
    axis = cross(d, up)
    if shin is not None:
        # A foot pointing nearly straight down: its run along the ground is short and turns with every wobble
        # of the capture (pymo_av8 over flat ground, a toe dragged under the floor in mid-swing: the axis swung
        # 120 degrees in one frame and back three frames on, the knee 2.4x the source's peak speed).
        full = norm(toe - heel, axis=1)
        run = length / np.where(full > 0.0, full, 1.0)
        w = smoothstep((run - PITCH_RUN_NONE) / (PITCH_RUN - PITCH_RUN_NONE))
        hinge = flat(cross(toe - heel, shin))
        hinge = hinge / np.maximum(norm(hinge, axis=1), 1e-12)[:, None]
        axis = w[:, None] * axis + (1.0 - w)[:, None] * hinge
    alen = norm(axis, axis=1)
    axis = axis / np.where(alen > 0.0, alen, 1.0)[:, None]
    # No axis (the foot straight along its shin, or the two axes cancelling): no turn, not a scaled quaternion.
    angle = np.where(alen > 1e-9, angle, 0.0)
    q = np.concatenate((np.cos(0.5 * angle)[:, None], axis * np.sin(0.5 * angle)[:, None]), 1)
    return q, has


def knee_hinge(normals: np.ndarray, bends: np.ndarray) -> Optional[np.ndarray]:
    """The line a leg's knee bends about, in its thigh's own frame (unit), from the animation: `normals`
    (N, 3), per frame the unit normal of the plane of hip, knee and ankle in the thigh's frame (thigh x
    shin), and `bends` (N,), the knee's bend off straight there (radians). The principal axis of the
    normals of the frames bent more than HINGE_BEND, each weighed by the square of the sine of its bend
    (a straight knee's plane is the capture's jitter), pointing to the side most of the bend is on (the
    knee bends toward `a` x hinge, `a` from hip to ankle; `fk_plane_pole`). None where no frame is bent
    that far."""
    normals = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    bends = np.asarray(bends, dtype=np.float64).reshape(-1)
    ok = np.isfinite(normals).all(1) & np.isfinite(bends) & (bends > HINGE_BEND) & (bends < math.pi)
    if not ok.any():
        return None
    n, w = normals[ok], np.sin(bends[ok]) ** 2
    _vals, vecs = np.linalg.eigh(np.einsum("k,ki,kj->ij", w, n, n))
    h = vecs[:, -1]
    return -h if float(w @ (n @ h)) < 0.0 else h  # type: ignore[no-any-return]


def fk_plane_pole(hip: np.ndarray, knee: np.ndarray, tip: np.ndarray, end_frame: Optional[np.ndarray],
                  foot: Any, hinge: Optional[np.ndarray] = None) -> np.ndarray:
    """A pole in the plane the animation bends a two-bone limb in (hip, knee, ankle), a chain length out
    from the middle: the knee keeps pointing where the FK pointed it. For a leg (`foot`), its front keeps the
    knee in front: a knee the animation overextends backwards is mirrored forward and a straight leg bends to
    its front, continuously (no switch, so no flip from frame to frame). The front is across the knee's
    `hinge` (world, (N, 3), `knee_hinge` carried by the thigh; NaN rows: none), the side it bends to, and
    where there is no hinge, where the foot points (the end bone's forward axis). `foot`: one for all rows,
    or per row. NaN rows where there is no plane (an arm with no bend): the solver then ignores them."""
    axis = tip - hip
    alen = norm(axis, axis=1)
    a = axis / np.where(alen > 0, alen, 1.0)[:, None]
    leg = norm(knee - hip, axis=1) + norm(tip - knee, axis=1)
    kh = knee - hip
    perp = kh - a * _dot(kh, a)[:, None]
    foot = np.asarray(foot, dtype=bool)
    if foot.any() and end_frame is not None:
        fwd = end_frame[:, :3, 1]
        fwd = fwd - a * _dot(fwd, a)[:, None]
        if hinge is not None:
            # Across the knee's own hinge, to the side it bends to: a knee bends about its hinge, so a straight
            # leg made to bend does so in the plane it bends in elsewhere, not where the foot happens to point
            # (a standing idle whose capture has the knees locked slightly back and out: its knee turned about
            # a line up to 115 degrees off its hinge, the speed of that turn 4-6x the source's peak).
            across = cross(a, hinge)
            alen_h = norm(across, axis=1)
            usable = np.isfinite(alen_h) & (alen_h > 0.5)
            fwd = np.where(usable[:, None], across / np.where(usable, alen_h, 1.0)[:, None], fwd)
        flen = norm(fwd, axis=1)
        has = flen > 1e-9 * leg
        f = fwd / np.where(has, flen, 1.0)[:, None]
        along = _dot(perp, f)
        # Only a nearly straight knee is corrected (fully when straight, not at all from a bend of STRAIGHT
        # x leg): a folded leg (a hop, a kneel) keeps its own plane whatever the foot does.
        t = np.minimum(1.0, norm(perp, axis=1) / (STRAIGHT * leg))
        m = 1.0 - t * t * (3.0 - 2.0 * t)
        bent = perp + f * (m * (FORWARD_BIAS * leg - 2.0 * np.minimum(along, 0.0)))[:, None]
        perp = np.where((has & foot)[:, None], bent, perp)
    plen = norm(perp, axis=1)
    ok = (alen > 0) & (plen >= PLANE_EPS * leg)
    pole = (hip + tip) * 0.5 + perp / np.where(plen > 0, plen, 1.0)[:, None] * leg[:, None]
    return np.where(ok[:, None], pole, np.nan)  # type: ignore[no-any-return]


_RING = np.repeat([1.0, 2.0, 3.0], 12)  # `disk_offsets`' rings, and the angles of their points
_ANGLE = 2.0 * math.pi * (np.tile(np.arange(12.0), 3) + 0.5 * _RING) / 12.0
_COS, _SIN = np.cos(_ANGLE), np.sin(_ANGLE)
_RINGS: dict[bytes, np.ndarray] = {}  # `disk_offsets`' ring directions (36, 3) per up axis


def disk_offsets(up: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """The centre and three rings of twelve points, weighted evenly over a disk across `up`: offsets
    (N, 37, 3) from its centre."""
    r = radius[:, None] * _RING / 3.0  # (N, 36)
    if (up == up[0]).all():  # one up for every row (world Z): the rings' directions found once
        key = up[0].tobytes()
        ring = _RINGS.get(key)
        if ring is None:
            side = np.array(Vector(up[0]).orthogonal().normalized())[None]
            fwd = cross(up[:1], side)
            ring = _RINGS[key] = side * _COS[:, None] + fwd * _SIN[:, None]  # (36, 3)
        around = ring[None] * r[..., None]
    else:
        side = np.empty_like(up)
        for i in range(len(up)):
            side[i] = Vector(up[i]).orthogonal().normalized()
        fwd = cross(up, side)
        around = (side[:, None] * _COS[:, None] + fwd[:, None] * _SIN[:, None]) * r[..., None]
    return np.concatenate((np.zeros_like(up)[:, None], around), 1)


def body_ground(rays: Rays, centre: np.ndarray, at: Placement, leg: np.ndarray) -> np.ndarray:
    """Mean terrain height (above the floor) over a disk of BODY_RADIUS x leg under the pelvis (`centre`),
    0 where the disk misses the terrain. Cast from above the whole terrain: the highest surface under each
    sample."""
    n, up = len(centre), at.up
    pts = centre[:, None] + disk_offsets(up, BODY_RADIUS * leg)  # (N, 37, 3)
    m = pts.shape[1]
    ups = np.repeat(up, m, axis=0)
    flat = pts.reshape(-1, 3)
    h = _dot(flat, ups)
    if (up == up[0]).all():
        low, high = rays.extent(up[0])
        reach = np.maximum(np.abs(high - h), np.abs(h - low)) + np.repeat(leg, m)
    else:
        ext = np.array([rays.extent(u) for u in ups])
        reach = np.maximum(np.abs(ext[:, 1] - h), np.abs(h - ext[:, 0])) + np.repeat(leg, m)
    hits = rays.cast(flat, reach, ups)
    hh = hits.height.reshape(n, -1) - _dot(at.base, up)[:, None]
    got = hits.hit.reshape(n, -1)
    count = got.sum(1)
    return np.where(count > 0, np.where(got, hh, 0.0).sum(1) / np.maximum(count, 1), 0.0)  # type: ignore[no-any-return]


def reach_drop(plans: list[FootPlan], offset: np.ndarray, up: np.ndarray, tighten: Any = 0.0,
               margin: float = REACH_MARGIN) -> tuple[np.ndarray, np.ndarray]:
    """The pelvis offset `offset` lowered where a leg could not otherwise reach its target, or only
    straighter than `margin` (the rig's Leg Stretch; REACH_MARGIN by default) or than the animation has it
    (EXT_SLACK): (offset, whether any foot is planned, where the pelvis moves). `tighten` (S, 1) and `offset`
    (S, N): S such offsets at once."""
    any_plan = np.zeros(offset.shape[-1], dtype=bool)
    offset = offset.copy()
    for p in plans:
        any_plan |= p.planned
        hip = p.hip + up * offset[..., None]
        reach = (np.minimum(margin, p.extension + EXT_SLACK) - tighten) * p.leg
        d = p.target - hip
        dl = norm(d)
        # Lower the hip by the smallest x >= 0 with |d + up*x| <= reach; if no vertical move is enough (the
        # target is too far sideways), by the x that brings it closest.
        b = np.einsum("...i,...i->...", d, up)
        disc = b * b - (dl * dl - reach * reach)
        x = np.where(disc >= 0.0, -b - np.sqrt(np.maximum(disc, 0.0)), -b)
        offset = np.where(p.planned & (dl > reach) & (x > 0.0), offset - x, offset)
    return np.where(any_plan, offset, 0.0), any_plan


def soft_reach_drop(plans: list[FootPlan], offset: np.ndarray, up: np.ndarray,
                    margin: float = REACH_MARGIN) -> tuple[np.ndarray, np.ndarray]:
    """`reach_drop`, eased in: the mean of those for limits up to SOFT_REACH x leg tighter, so it sets in
    gradually, never higher than it and with no kink where a leg reaches its limit."""
    tighten = SOFT_REACH * (np.arange(SOFT_STEPS)[:, None] / (SOFT_STEPS - 1) - SOFT_LOOSE)
    drops, planned = reach_drop(plans, np.broadcast_to(offset, (SOFT_STEPS, len(offset))), up, tighten, margin)
    return np.add.reduce(drops, axis=0) / SOFT_STEPS, planned  # the mean


def front_speeds(front: np.ndarray, up: np.ndarray, fps: float) -> np.ndarray:
    """Per row, how fast `front` (N, 3: the front of a foot, frame by frame) moves along the ground (across
    `up`, (N, 3)), in units per second: its move over MIN_CONTACT seconds around the row (one-sided at the
    ends), so a capture's repeated frames do not read as stops and jumps. For `Foot.front_speed`."""
    n = len(front)
    if n < 2 or fps <= 0.0:
        return np.zeros(n)
    flat = front - up * _dot(front, up)[:, None]
    half = max(1, int(round(0.5 * MIN_CONTACT * fps)))
    i = np.arange(n)
    lo, hi = np.maximum(i - half, 0), np.minimum(i + half, n - 1)
    return norm(flat[hi] - flat[lo], axis=1) * fps / np.maximum(hi - lo, 1)  # type: ignore[no-any-return]


def plan_feet(feet: list[Foot], at: Placement | list[Placement], rays: Rays, window: np.ndarray | list[np.ndarray],
              fps: float) -> list[FootPlan]:
    """`plan_foot` for several feet over as many frames: the feet whose sole points and joints are as many
    planned together, their rows one after another (one pass and one ray cast per step for all of them: a
    frame at a time, and for a crowd's rigs, numpy's cost per call outweighs its speed per row). `at` and
    `window` are the rig's, or one per foot (feet of several rigs on one terrain, `batch.compute_all`)."""
    ats = at if isinstance(at, list) else [at] * len(feet)
    windows = window if isinstance(window, list) else [window] * len(feet)
    n = len(windows[0]) if windows else 0
    if any(len(w) != n for w in windows):
        raise ValueError("plan_feet: every foot over as many frames")
    plans: list[Optional[FootPlan]] = [None] * len(feet)
    groups: dict[tuple[int, int, bool], list[int]] = {}
    for i, f in enumerate(feet):
        groups.setdefault((len(f.soles), len(f.joints), f.lock is None), []).append(i)
    for members in groups.values():
        if len(members) == 1:
            plans[members[0]] = plan_foot(feet[members[0]], ats[members[0]], rays, windows[members[0]], fps)
            continue
        group = [feet[i] for i in members]
        k = len(group)

        locks = [f.lock for f in group]
        stacked = Foot(
            joints=[np.concatenate([f.joints[j] for f in group]) for j in range(len(group[0].joints))],
            end_frame=np.concatenate([f.end_frame for f in group]),
            soles=[np.concatenate([f.soles[j] for f in group]) for j in range(len(group[0].soles))],
            ray_length=np.repeat([f.ray_length for f in group], n),
            align=np.repeat([bool(f.align) for f in group], n),
            max_align=np.repeat([f.max_align for f in group], n),
            rest_length=np.repeat([f.rest_length for f in group], n),
            use_lock=np.repeat([bool(f.use_lock) for f in group], n),
            ball=None if any(f.ball is None for f in group) else np.concatenate([f.ball for f in group]),
            front_speed=None if any(f.front_speed is None for f in group)
            else np.concatenate([f.front_speed for f in group]),
            lock=None if locks[0] is None else LockTrack(**{
                name: np.concatenate([getattr(lk, name) for lk in locks]) for name in vars(locks[0])}),
            feet=k)
        plan = plan_foot(stacked, Placement.concat([ats[i] for i in members]), rays,
                         np.concatenate([windows[i] for i in members]), fps)
        for j, i in enumerate(members):
            plans[i] = plan.rows(slice(j * n, (j + 1) * n))
    return [p for p in plans if p is not None]


def held_turn_angle(turn: Any) -> Any:
    """The turn (radians) from the animation's heading that holds a foot at its contact's heading
    (`LockTrack.heading`), brought into [-pi, pi) and to at most MAX_HELD_TURN either way: a foot the
    animation turns further turns on with it."""
    return np.clip((np.asarray(turn) + math.pi) % (2.0 * math.pi) - math.pi, -MAX_HELD_TURN, MAX_HELD_TURN)


def held_turn(foot: Foot) -> Optional[np.ndarray]:
    """The turn about the up axis (world Z) of the foot's locking (`LockTrack.turning`, `heading`, `twist`), as
    quaternions (N, 4) about the ankle; None where it turns no frame."""
    lk = foot.lock
    if lk is None or len(foot.soles) < 2 or not (lk.turning.any() or lk.twist.any()):
        return None
    v = foot.soles[-1] - foot.soles[0]  # heel to toe tip, as `contacts.headings`
    now = np.arctan2(v[:, 1], v[:, 0])
    angle = np.where(lk.turning > 0.0, held_turn_angle(lk.heading - now), lk.twist)
    angle = np.where(np.asarray(foot.use_lock, dtype=bool), angle, 0.0)
    q = np.zeros((len(angle), 4))
    q[:, 0], q[:, 3] = np.cos(0.5 * angle), np.sin(0.5 * angle)
    return q


def turned_foot(foot: Foot, yaw: np.ndarray) -> Foot:
    """The foot's sole points and ball turned about its ankle by `yaw` (N, 4; its bone's frame is turned
    where the plan makes its rotation)."""
    ankle = foot.joints[-1]
    out = copy.copy(foot)
    out.soles = [ankle + qrot(yaw, p - ankle) for p in foot.soles]
    out.ball = None if foot.ball is None else ankle + qrot(yaw, foot.ball - ankle)
    return out


def held_point(foot: Foot, lk: LockTrack) -> np.ndarray:
    """Per row, the animation's sole point a hold on the foot's front or heel keeps in place: the heel (the
    first sole point) where `lk.heel`, else the ball (`Foot.ball`; the last sole point without one)."""
    ball = foot.ball if foot.ball is not None else foot.soles[-1]
    if not lk.heel.any():
        return ball
    return np.where((lk.heel > 0.0)[:, None], foot.soles[0], ball)  # type: ignore[no-any-return]


def plan_foot(foot: Foot, at: Placement, rays: Rays, window: np.ndarray, fps: float) -> FootPlan:
    """The ground model for one foot over the frames: the animation's floor maps onto the terrain, the foot
    keeping its animated height above the floor as its height above the terrain under it (from its contacts
    around, `LockTrack`), turned toward the ground normal near the ground, toe-up rather than lifting its
    ankle for its toe, clear of the terrain around it in mid-swing and over the swing's line across step
    edges. Rays search `reach` above and below the foot raised by `window` (the terrain height under the
    body), where the ground under the foot is expected."""
    n = len(window)
    up, base = at.up, at.base
    yaw = held_turn(foot)
    shin = foot.joints[-2] - foot.joints[-1]  # the ankle's hinge for a toe-up turn (`toe_pitch`)
    if yaw is not None:
        foot = turned_foot(foot, yaw)
        shin = qrot(yaw, shin)
    joints = foot.joints
    hip, ankle = joints[0], joints[-1]
    leg = np.maximum(sum(norm(b - a, axis=1) for a, b in zip(joints, joints[1:])), 1e-12)
    ext = norm(ankle - hip, axis=1) / leg  # how straight the animation has the leg
    reach = np.where(np.asarray(foot.ray_length) > 0.0, foot.ray_length * at.scale, leg)  # armature units to world
    soles = list(foot.soles)
    heights = np.stack([at.height(p) for p in soles], 1)
    lifted = np.maximum(0.0, heights.min(1))  # the sole's height in the animation, above its floor
    arc: Optional[SwingLine] = None
    on_ball = np.zeros(n, dtype=bool)  # its ball held through toe-off, past the ankle's contact
    pending: Optional[SwingRays] = None  # the swing's rays, cast with the sole points'
    anchored = np.zeros(n, dtype=bool)  # the ground (almost) wholly from the contacts around (ANCHORED)
    held, ground_support = np.zeros(n), np.zeros(n)
    lk = foot.lock
    if lk is not None and (lk.weight.any() or lk.down.any() or lk.offset.any() or lk.rise.any()):
        # Foot locking: the ankle (or, as the foot rolls over it, the ball) along the ground to the contact's
        # lock point (or by the correction that carries it between contacts), and the sole down onto the ground.
        pin = ankle
        if lk.ball.any() or lk.heel.any():  # the ball, or the heel held from its strike (`held_point`)
            pin = ankle + (lk.ball + lk.heel)[:, None] * (held_point(foot, lk) - ankle)
        d = np.where((lk.weight > 0.0)[:, None], lk.point - pin, lk.offset)  # world space, as the locks
        move = d - up * _dot(d, up)[:, None]
        ankle = ankle + move
        soles = [p + move for p in soles]
        heights = heights * (1.0 - lk.down)[:, None] + lk.rise[:, None]
        # Through toe-off (its ball held after the ankle's contact) the foot is lifted by as much as its sole is
        # over the ground of its contacts (the hover it carries taken off), not over the animation's floor: a
        # ball on its ground stays there until it is let go instead of clearing the terrain around it.
        on_ball = (lk.weight > 0.0) & (lk.ball > 0.0) & (lk.down <= 0.0) & (lk.landing <= 0.0)
        lifted = np.where(on_ball, np.maximum(0.0, heights.min(1)), lifted)
    clearance = np.maximum(0.0, heights.min(1))
    # How far the animation has the sole off the ground it stands on, for the clearance field's gate
    # (SWING_LIFT; the swing line's keeps `lifted`): over
    # the ground of its contacts (the hover they carry taken off, `LockTrack.rise`), not over the animation's
    # floor. A capture whose contacts stand 1.5-3% of the leg over its floor (a marker offset) read as lifted
    # the moment the lock let go, and the clearance field lifted the foot off its tread at once while the
    # source's was still down (cmu_12_01 over stairs: hover 1.06% of the leg in a source contact).
    off_ground = clearance if lk is not None else lifted
    if lk is not None and foot.front_speed is not None:
        # ... but a front of the foot moving along the ground, faster than a ball that is down (ROLL_SPEED) up
        # to one that has lifted (LIFT_SPEED), is on its way: it is lifted as before, by its height over the
        # floor (cmu_01_01 over stairs: a toe sliding into a riser, left down, was yanked onto the step in one
        # frame).
        moving = smoothstep((foot.front_speed - ROLL_SPEED * leg) / ((LIFT_SPEED - ROLL_SPEED) * leg))
        off_ground = moving * lifted + (1.0 - moving) * off_ground
    lift = up * window[:, None]
    anchored_ground = lk is not None and bool(lk.from_weight.any() or lk.to_weight.any())
    # The ray under the ankle, and those from the contacts around (from their own heights, whatever the
    # foot's): one cast.
    points = [ankle]
    landing = lk is not None and anchored_ground and bool(lk.landing.any())
    if lk is not None and anchored_ground:
        points += [lk.from_point, lk.to_point]
        if landing:  # a ball held before Start turns with the ground at its contact's lock point
            points.append(lk.anchor)
    reach = per_row(reach, n)
    hits = rays.cast(np.concatenate([p + lift for p in points]), np.concatenate([reach] * len(points)),
                     np.concatenate([up] * len(points)))
    under = DownHits(hits.hit[:n], hits.height[:n], hits.normal[:n])
    planned = under.hit  # where the ray missed the terrain the foot keeps its animated pose
    ground = at.level(under.height)
    if lk is not None and anchored_ground:
        # The ground height from the contacts around (the ground left and the ground landed on).
        blended, used = np.zeros(n), np.zeros(n)
        ends = []
        for k, w in ((1, lk.from_weight), (2, lk.to_weight)):
            p = points[k]
            ok = hits.hit[k * n:(k + 1) * n] & (w > 0.0)
            hh = at.level(hits.height[k * n:(k + 1) * n])
            blended += np.where(ok, w * hh, 0.0)  # hh is finite where ok
            used += np.where(ok, w, 0.0)
            # The ground's rise per unit along it there, from its normal (level where the ray missed), at most
            # MAX_LINE_GRADE: a ray grazing a steep face does not tilt the whole swing's line.
            nk = np.where(ok[:, None], hits.normal[k * n:(k + 1) * n], up)
            nu = _dot(nk, up)
            grade = -(nk - up * nu[:, None]) / np.maximum(nu, 1e-6)[:, None]
            grade *= np.minimum(1.0, MAX_LINE_GRADE / np.maximum(norm(grade, axis=1), 1e-12))[:, None]
            ends.append((p - up * _dot(p - ankle, up)[:, None], np.where(ok, hh, np.nan), grade))
        under_ankle = ground
        ground = blended + (1.0 - used) * ground
        # Where less than ANCHORED of the ground is from the contacts, the terrain right under the ankle weighs
        # in it, and that jumps at a step edge: the frames beside such a jump are kept as they are, the rest
        # smoothed like the swing (a held ball let go there dropped the foot 6.5% of the leg in one frame).
        anchored = (used >= ANCHORED - 1e-9) | ~beside_jump(under_ankle, GROUND_JUMP * leg, foot.feet)
        held, ground_support = np.minimum(1.0, lk.from_weight + lk.to_weight), ground.copy()
        if foot.feet > 1:  # several feet at once: as planned alone, a foot with no contact around has none
            own = np.repeat(((lk.from_weight != 0.0) | (lk.to_weight != 0.0)).reshape(foot.feet, -1).any(1),
                            n // foot.feet)
            held, ground_support = np.where(own, held, 0.0), np.where(own, ground_support, 0.0)
        # The swing's line over step edges, between the two contacts: it weighs nothing while a ball is held
        # and ramps in from Ball Up (`LockTrack.lead`, `swing_rays`).
        two = (lk.from_weight > 0.0) & (lk.to_weight > 0.0) & (used >= 1.0 - 1e-9)
        if two.any():
            (pa, ga, sa), (pb, gb, sb) = ends
            pending = swing_rays(two, pa, pb, ga, gb, lk.to_weight, lk.gap, lk.lead, lk.opened, ankle, soles, at, leg,
                                 fps, 0.5 * (sa + sb))  # the line rises across its path as the ground at its ends
    identity = np.zeros((n, 4))
    identity[:, 0] = 1.0
    tilt = identity
    if np.any(foot.align):
        # The foot turns to the ground while within ALIGN_FADE x leg above the floor.
        contact = np.minimum(np.maximum(1.0 - clearance / (ALIGN_FADE * leg), 0.0), 1.0)
        normal = np.where(planned[:, None], under.normal, up)
        # A held ball (below) also needs the ground's whole turn (within the limit) at the ankle's lock point:
        # found with the foot's, its rows after the foot's (every step row by row: one pass, the same values).
        holds = lk is not None and anchored_ground and bool(lk.ball.any() or lk.heel.any() or lk.carry.any())
        rows, limit, ups = contact, foot.max_align, up
        if holds:
            at_lock, lock_normal = hits.hit[n:2 * n], hits.normal[n:2 * n]
            if landing:
                assert lk is not None
                ahead = lk.landing > 0.0
                at_lock = np.where(ahead, hits.hit[3 * n:4 * n], at_lock)
                lock_normal = np.where(ahead[:, None], hits.normal[3 * n:4 * n], lock_normal)
            normal = np.concatenate((normal, np.where(at_lock[:, None], lock_normal, up)))
            rows, limit, ups = np.concatenate((contact, np.ones(n))), np.tile(per_row(limit, n), 2), np.tile(up, (2, 1))
        full = q_between(ups, normal)
        angle = 2.0 * np.arccos(np.minimum(np.abs(full[:, 0]), 1.0))
        allowed = np.minimum(angle, limit)
        frac = np.where((angle > 1e-9) & (rows > 0.0), rows * allowed / np.where(angle > 1e-9, angle, 1.0), 0.0)
        turns = qslerp(np.tile(identity, (2, 1)) if holds else identity, full, frac)
        tilt = turns[:n]
        if not np.all(foot.align):
            tilt = np.where(np.asarray(foot.align)[:, None], tilt, identity)
        if lk is not None and holds:
            # The turn is about the ankle, so the held ball would move with it as the ground under the moving
            # ankle turns. It stays where it was on the frame before it was held, when the ankle was at the
            # lock point (`from_point` in a contact) and turned to the ground there (`was`): the ankle goes
            # where that puts the ball, turned as it is now.
            was = turns[n:]
            # The ball from the ankle's lock point, as held (before Start, from its own contact's).
            off = lk.point - np.where((lk.landing > 0.0)[:, None], lk.anchor, lk.from_point)
            rel = held_point(foot, lk) - foot.joints[-1]  # as animated
            # After it, the shift at lift-off carried on (with the turn at the lock point), faded as the
            # correction is, so the ankle does not jump as the ball is let go. The three turns in one pass.
            moves = np.concatenate((off, rel, lk.carry))
            moves = qrot(np.concatenate((was, tilt, was)), moves) - moves
            shift = np.where(((lk.ball > 0.0) | (lk.heel > 0.0))[:, None], moves[:n] - moves[n:2 * n], moves[2 * n:])
            shift = (shift - up * _dot(shift, up)[:, None]) * np.asarray(foot.align, dtype=np.float64)[..., None]
            ankle = ankle + shift
            soles = [p + shift for p in soles]
    target = ankle + up * np.where(planned, ground, 0.0)[:, None]
    rest = foot.rest_length * at.scale

    count = len(soles)
    offsets = np.stack(soles) - ankle  # (S, N, 3): the sole points from the ankle
    ups, bases, reaches = np.concatenate([up] * count), np.concatenate([base] * count), np.concatenate([reach] * count)
    base_up = _dot(bases, ups)
    swing = lk is not None and bool(lk.swing.any())
    if swing:
        assert lk is not None
        gate = lk.swing * np.maximum(smoothstep(off_ground / (SWING_LIFT * leg)), lk.free)
        rests = per_row(rest, n)
        # Between two contacts, CLEAR_AHEAD along the path from the one it left to the one it lands on (along
        # the ground; none elsewhere): where the clearance field is read again (`needs`).
        path = lk.to_point - lk.from_point
        path = path - up * _dot(path, up)[:, None]
        plen = norm(path, axis=1)
        toward = (lk.from_weight > 0.0) & (lk.to_weight > 0.0) & (plen > 0.0)
        ahead = path * (CLEAR_AHEAD * leg / np.where(toward, plen, 1.0))[:, None]

    dip_w = lk.free if lk is not None else np.zeros(n)

    def needs(turn: np.ndarray, also: Optional[SwingRays] = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Optional[DownHits], np.ndarray]:
        """How far each sole point must rise (N, sole points; -inf where a ray missed): to stand its
        animated height above the ground under it, clearance included; without the clearance (what the
        terrain right under it needs); and to touch the terrain right under it. Then the sole points turned,
        from the ankle (S, N, 3), the hits of the rays `also` (cast with the sole points', in one cast),
        None without them, and the rise without the clearance for a sole left under its floor where the
        foot is free (`dip_w`)."""
        turned = qrot(turn, offsets)
        ms = (target + turned).reshape(-1, 3)  # at the ground's height
        along = None
        if also is None:
            below = rays.cast(ms, reaches, ups)
        else:
            m = len(ms)
            hits = rays.cast(np.concatenate((ms, also.points)), np.concatenate((reaches, also.reach)),
                             np.concatenate((ups, also.up)))
            below, along = hits.rows(slice(0, m)), hits.rows(slice(m, None))
        bh = (below.height - base_up).reshape(count, n)
        mh = (_dot(ms - bases, ups)).reshape(count, n)
        got = below.hit.reshape(count, n)
        need = bh + np.maximum(0.0, heights.T) - mh
        extra: Any = 0.0
        if swing:
            # A lifted foot keeps clear of the terrain around it, not only of the point under it: of what
            # still rises around it CLEAR_AHEAD further along its path, too (the lower of the field's two
            # readings), so an edge behind it does not hold it up as it comes down onto the tread beyond
            # (fair1_zombie over stairs: 6.4% of the leg over its tread as it landed, its heel 8% held up).
            all_rests = np.concatenate([rests] * count)
            field = np.array(rays.clearance(ms, ups, all_rests))
            sel = np.tile(toward, count)  # read again only where there is a way ahead (elsewhere the same)
            if sel.any():
                field[sel] = np.minimum(field[sel], rays.clearance(ms[sel] + np.tile(ahead, (count, 1))[sel], ups[sel],
                                                                   all_rests[sel]))
            field = field.reshape(count, n)
            extra = gate * clearance_extra(field - base_up[:n] - bh, rests)
        # A foot rolling over its held ball: its heel (the first sole point), up in the air behind the ball,
        # only keeps out of the terrain; kept at its animated height over a bump under it, it lifted the held
        # ball off its ground (fair1_jumping over noise: 1.02% of the leg in a source contact).
        rest_on = bh - mh  # each sole point's rise onto the terrain right under it
        if on_ball.any():
            need[0] = np.where(on_ball, rest_on[0], need[0])
        deficits = np.where(got, need + extra, -np.inf)
        bare = np.where(got, need, -np.inf)
        # ... and where the foot is free of its contacts (`LockTrack.free`), with a sole the animation has under
        # its floor left there: how much of the lift puts such a sole back on the terrain (`FootPlan.dip`). A
        # capture's toe dragged 3% of the leg through the floor after toe-off was lifted onto the terrain in the
        # frame it dipped, unsmoothed (pymo_av8 over flat ground: the knee 1.46x the source's peak speed).
        raw = np.where(got, need + dip_w[None, :] * np.minimum(heights.T, 0.0), -np.inf)
        touching = np.where(got, rest_on, -np.inf)
        return deficits.T, bare.T, touching.T, turned, along, raw.T

    turn = tilt
    found, bare, touching, turned, along, raw = needs(turn, pending)
    arc = pending.line(along) if pending is not None and along is not None else None
    if len(soles) > 1:
        # A foot in the air turns toe-up rather than lift its ankle for its toe.
        loose = (((lk.weight == 0.0) | (lk.landing > 0.0)) & (lk.pitch > 0.0) if lk is not None
                 else np.ones(n, dtype=bool))
        pitch, has = toe_pitch(turned[0], turned[-1],
                               found[:, 0], found[:, -1], up, lk.pitch if lk is not None else 1.0, shin)
        sel = loose & has
        if sel.any():
            turn = np.where(sel[:, None], qmul(pitch, tilt), tilt)
            if lk is not None and lk.landing.any():
                # A ball held before Start (`LockTrack.landing`) stays where it is held as the foot turns
                # toe-up about the ankle: the ankle moves along the ground by what the turn moves the ball.
                rel = held_point(foot, lk) - foot.joints[-1]
                moved = qrot(turn, rel) - qrot(tilt, rel)
                moved = moved - up * _dot(moved, up)[:, None]
                target = target - np.where((sel & (lk.landing > 0.0))[:, None], moved, 0.0)
            found, bare, touching, turned, _, raw = needs(turn)
    best = np.max(found, 1)
    if arc is not None:
        # In mid-swing each sole point keeps its height above the swing's line (raised over what lies
        # between), not above the terrain right under it: a step edge passing under the foot does not move
        # it. A sole point that would still go through the terrain lifts the foot further. Faded in and out
        # at the swing's ends (ARC_RAMP), and while the animation still has the sole on its floor
        # (SWING_LIFT: a toe pivoting at lift-off stays on the terrain under it), though no longer once the
        # foot is well clear of its contacts in time (`LockTrack.free`).
        idx = arc.rows
        m = (target + turned)[:, idx]  # (S, M, 3): every sole point at once
        over = (arc.height(m) + np.maximum(0.0, heights.T[:, idx])
                - np.einsum("...i,...i->...", m - base[idx], up[idx])).max(0)
        under_only = np.where(np.isfinite(best[idx]), best[idx], over)
        free = lk.free[idx] if lk is not None else 0.0
        w = arc.ramp * np.maximum(smoothstep(lifted[idx] / (SWING_LIFT * leg[idx])), free)
        best[idx] = np.maximum(best[idx], w * over + (1.0 - w) * under_only)
    floor = np.max(bare, 1)
    floor_raw = np.max(raw, 1)
    dip = np.zeros(n)  # 0 where a ray missed (either is -inf there)
    np.subtract(floor, floor_raw, out=dip, where=np.isfinite(floor) & np.isfinite(floor_raw))
    dip = np.maximum(dip, 0.0)
    touch = np.max(touching, 1)
    target = target + up * np.where(np.isfinite(best), best, 0.0)[:, None]
    animated = mat_to_quat(foot.end_frame)
    rotation = qmul(turn, animated if yaw is None else qmul(yaw, animated))  # the held heading's turn first
    # The pelvis's ground from this foot: the ground from its contacts around, lowered as the foot is lowered
    # under its animated height (its hover removed): in a contact by the hover of the frame, between contacts
    # by the hover the foot carries (`LockTrack.rise`, blended across the swing), not by how far its sole
    # happens to be over its floor in the animation (a toe brushing the floor in mid-swing jerked the body).
    # Before the first contact and after the last the ground fades into the terrain under the body (`window`),
    # still lowered by the hover the foot carries there, so the leg stays as long as animated.
    lowered = np.where(lk.down > 0.0, lifted, -lk.rise) if lk is not None else 0.0
    support = held * ground_support + (1.0 - held) * window - lowered
    pinned = ~planned | ~np.isfinite(best) | ~anchored
    pinned |= np.where(foot.use_lock, lk.down > 0.0, True) if lk is not None else True
    contactless = lk.contactless > 0.0 if lk is not None else np.ones(n, dtype=bool)
    if contactless.any():
        # A foot with no contacts (none found, or locking off: `LockTrack.contactless`) has no ground of its own
        # between them: it follows the terrain right under it, which steps by a riser at every edge it passes.
        # The steps go into what the swing's smoothing evens out (the correction with the ground under the ankle
        # added, never below the touch), around every jump of it (GROUND_JUMP) whether or not something lifts
        # the foot there (`floor` unbounded), as elsewhere only where something does: a foot crossing a step edge
        # in the air rises over the frames around the edge, not by the riser in one frame (cmu_09_01, a run the
        # contacts' detector finds no stance in, over stairs: the knee 3.5-3.9x the source's peak speed ->
        # 0.9-1.3x, its single-frame snaps gone), and one that follows smooth ground keeps its swing as it is.
        steps = np.where(planned, ground, 0.0)
        best = np.where(contactless, best + steps, best)
        jumps = beside_jump(best, GROUND_JUMP * leg, foot.feet)
        floor = np.where(contactless, np.where(jumps, -np.inf, floor + steps), floor)
        touch = np.where(contactless, touch + steps, touch)
        pinned = np.where(contactless, ~planned | ~np.isfinite(best), pinned)
    hold = (np.asarray(foot.use_lock, dtype=bool) & (lk.weight > 0.0)) if lk is not None else np.zeros(n, dtype=bool)
    toe_off = hold & (lk.down <= 0.0) & (lk.landing <= 0.0) if lk is not None else hold
    ball_lands = hold & (lk.down <= 0.0) & (lk.landing > 0.0) if lk is not None else np.zeros(n, dtype=bool)
    return FootPlan(planned, target, rotation, hip, leg, ext, support, best, floor, touch, pinned, dip, hold, toe_off,
                    ball_lands)


def place_footprints(cs: list[Any], terrain: Any, leg: float) -> list[Vector]:
    """The lock points (world space) of contacts `cs`, each moved off any step edge its footprint straddles
    (heel to toe and its width, FOOT_MARGIN x leg beyond, sampled on a grid, neighbouring samples more than
    FOOT_EDGE x leg apart in height) across the ground, on a grid of FOOT_STEP x leg and at most FOOT_SHIFT
    x leg, to a place where it does not: a foot lands on one tread, not half on two. Of those places, the ones
    the swings before and after (to and from the foot's previous and next contacts, `cs` in any order) climb
    least steeply, in height per frame; of those, the nearest."""
    u = np.array([0.0, 0.0, 1.0])
    lock = np.array([tuple(c.lock) for c in cs], dtype=np.float64)
    h = lock + np.array([tuple(c.heel) for c in cs], dtype=np.float64)
    t = lock + np.array([tuple(c.toe) for c in cs], dtype=np.float64)
    width = np.array([c.width for c in cs], dtype=np.float64)
    axis = t - h
    axis -= u * (axis @ u)[:, None]
    length = np.linalg.norm(axis, axis=1)
    has = length > 1e-6 * leg
    axis = axis / np.where(has, length, 1.0)[:, None]
    side = np.cross(u, axis)
    margin = FOOT_MARGIN * leg
    a = np.linspace(0.0, 1.0, FOOT_SAMPLES)
    b = np.array([-1.0, 0.0, 1.0])
    start = h - axis * margin
    span = (t - h) + 2.0 * axis * margin
    half = (width + margin)[:, None, None, None] * side[:, None, None]
    grid = start[:, None, None] + span[:, None, None] * a[None, :, None, None] + half * b[None, None, :, None]  # (C, S, 3, 3)
    k = np.arange(-int(FOOT_SHIFT / FOOT_STEP), int(FOOT_SHIFT / FOOT_STEP) + 1) * FOOT_STEP * leg
    kx, ky = np.meshgrid(k, k, indexing="ij")
    kx, ky = kx.ravel(), ky.ravel()
    r = np.hypot(kx, ky)
    keep = r <= FOOT_SHIFT * leg + 1e-12
    order = np.lexsort((-kx[keep], r[keep]))  # nearest first, forward first among equals
    kx, ky = kx[keep][order], ky[keep][order]
    low, high = terrain.extent(u)
    rays = terrain.down_rays(u)

    def heights(pts: np.ndarray) -> np.ndarray:
        """The highest terrain under points (..., 3), nan where none."""
        flat = pts.reshape(-1, 3)
        flat = flat + u * (0.5 * (low + high) - flat @ u)[:, None]
        hits = rays.cast(flat, np.full(len(flat), 0.5 * (high - low) + leg))
        return np.where(hits.hit, hits.height, np.nan).reshape(pts.shape[:-1])

    def is_level(hh: np.ndarray) -> np.ndarray:
        """Footprints (..., S, 3) with no step between neighbouring samples; one with a miss is not level."""
        jump = np.maximum(np.abs(np.diff(hh, axis=-2)).max((-2, -1)), np.abs(np.diff(hh, axis=-1)).max((-2, -1)))
        return np.isfinite(jump) & (jump <= FOOT_EDGE * leg)

    move = np.zeros((len(cs), 3))
    footing = heights(grid)  # (C, S, 3)
    todo = np.flatnonzero(has & ~is_level(footing))  # only footprints on a step edge are searched
    if len(todo):
        shifts = axis[todo, None] * kx[None, :, None] + side[todo, None] * ky[None, :, None]  # (C', K, 3)
        hh = heights(grid[todo, None] + shifts[:, :, None, None])  # (C', K, S, 3)
        level = is_level(hh)
        # What a move changes is the swings on either side: each climbs (or steps down) from the level of the
        # contact before to this one's and on to the next one's, in the frames between them. So among the
        # places off the edge, those where the steeper of the two swings climbs least per frame: a foot
        # shuffling on one tread stays on it, a swing that must climb several risers in a few frames climbs
        # fewer of them (range_inside on stairs: a stance moved back onto its ankle's level left the next swing
        # three risers to climb in 13 frames, knee 1.41x; a stance split in two a few frames apart, moved to
        # two levels, made the foot step between them where the source stands, skate 8% of the leg). Among
        # those, the shortest move (the leg's reach at landing and push-off), then the level the ankle itself
        # stands over (where the animation put the weight), then forward first.
        under = heights(lock[todo])
        mean = np.where(level, np.where(np.isfinite(hh), hh, 0.0).mean(axis=(2, 3)), np.nan)
        same = level & (np.abs(mean - under[:, None]) <= FOOT_EDGE * leg)
        dist = np.hypot(kx, ky)
        start = np.array([c.start for c in cs], dtype=np.float64)
        end = np.array([c.end for c in cs], dtype=np.float64)
        seq = np.argsort(start, kind="stable")
        at = np.empty(len(cs), dtype=np.int64)
        at[seq] = np.arange(len(cs))
        # Each contact's level: an unmoved footprint's mean height; a moved one's, once placed (the shortest
        # move to begin with), nan where none is known.
        height = np.where(np.isfinite(footing).all(axis=(1, 2)), np.nan_to_num(footing).mean(axis=(1, 2)), np.nan)
        height[todo] = np.nan
        row = np.arange(len(todo))
        short = level & (dist[None] <= dist[level.argmax(1)][:, None] + 1e-6 * leg)
        first = np.where((short & same).any(1)[:, None], short & same, short).argmax(1)
        height[todo] = np.where(level.any(1), mean[row, first], np.nan)
        for _ in range(2):  # each placement against its neighbours' latest, in two passes
            for j, i in enumerate(todo):
                if not level[j].any():
                    continue
                rate = np.zeros(len(kx))
                for n in (at[i] - 1, at[i] + 1):
                    if not 0 <= n < len(cs) or not np.isfinite(height[seq[n]]):
                        continue
                    o = seq[n]
                    frames = max(1.0, start[i] - end[o] if n < at[i] else start[o] - end[i])
                    rate = np.maximum(rate, np.abs(np.nan_to_num(mean[j]) - height[o]) / frames)
                rate = np.where(level[j], rate, np.inf)
                pick = rate <= rate.min() + 1e-9 * leg
                pick &= dist <= dist[pick].min() + 1e-6 * leg
                if (pick & same[j]).any():
                    pick &= same[j]
                first[j] = pick.argmax()
                height[i] = mean[j, first[j]]
        move[todo] = np.where(level.any(1)[:, None], shifts[row, first], 0.0)
    return [Vector(p) for p in lock + move]
