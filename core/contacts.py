"""Foot contacts: when each foot is down in the source animation, and where it then stays.

Detection reads the animation itself (live preview off): a foot is down while its ankle rests, low (near
its own lowest height of the moment) and barely moving. That is the flat-foot part of a step: once
the heel rises the foot rolls over its toes and is free again, so nothing holds the ankle back while
the animation lifts it. Both thresholds have hysteresis (a stricter one to
land than to stay down) and are relative to the leg length and per second, so they hold at any scale
and frame rate; contacts shorter than `MIN_CONTACT` seconds are dropped and gaps shorter than
`MIN_GAP` closed. Each contact stores its frames and its lock point (the ankle's mean position over
the contact, in world space). Contacts are ordinary settings the user can edit in the panel.

Feet roll (heel strike, flat, toe-off): while the ball is down (`ball_down`: the front of the foot low and
its ball slow along the ground) a contact holds the ball, not the ankle, from the first frame of that run
through toe-off, after the ankle has risen (`roll_of`: Ball Down and Ball Up), and inside the contact from
where the heel starts to peel off a ball still along the ground (`sole_runs`' peel); the ball is held where it was
when the ankle was at the lock point, so the hold goes on from the ankle's without a jump. A contact whose
ball stays down until the next one lands is one stance with it. A ball that lands before the ankle comes to
rest is held from its landing (`landing_of`: Ball Lands), where it will be at Start, along the ground (up the
up axis at its animated height over the terrain under it, or lower: `model.swing_smoothing`'s `landing`);
where the heel strikes first (down, the foot toe-up: `heel_down`, `toe_up`), the heel is held that way
(`first_down`).

During a contact the foot's ankle (or ball) stays at its lock point (along the ground) and its sole is put
down on the terrain; between contacts the correction blends across the swing (`locks_over`).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from . import state
from .anatomy import ball_world, sole_of, sole_world
from .checks import limb_is_usable
from .model import LockTrack, cuts, held_turn_angle, knee_hinge, smoothstep
from .rig import bone_names, settings, world_scale
from .tuning import (
    BALL_JUMP,
    BASELINE_WINDOW,
    FADE,
    FOOTPRINT_ANGLES,
    LAND_HEIGHT,
    LAND_SPEED,
    LIFT_HEIGHT,
    LIFT_SPEED,
    MIN_BALL_STANCE,
    MIN_CONTACT,
    MIN_GAP,
    PITCH_EASE,
    ROLL_HEIGHT,
    ROLL_SPEED,
    ROLL_STAY_HEIGHT,
    ROLL_STAY_SPEED,
    SWING_EASE,
)

if TYPE_CHECKING:
    import bpy


def gap_frames(fps: float) -> int:
    """MIN_GAP in frames at `fps`, at least one: gaps shorter than this between contacts are closed."""
    return max(1, int(round(MIN_GAP * fps)))


def fps_of(scene: bpy.types.Scene) -> float:
    return scene.render.fps / (scene.render.fps_base or 1.0)


def find_contacts(height: np.ndarray, speed: np.ndarray, leg: float, fps: float,
                  still: Optional[np.ndarray] = None) -> list[tuple[int, int]]:
    """Contact intervals (first, last index) from per-frame sole height above the floor and sole speed
    (units per second: the faster of the steps into and out of each frame). With `still` (the slower of the
    two), a stance too short to show a slow frame that way (a run: three or four frames at 30 fps, the foot
    still for two steps) is found too, wherever it overlaps no contact found the first way; its frames are
    those the foot stands still on, the frame it lands on and the one it leaves from."""
    found = _contact_runs(height, speed, leg, fps)
    if still is not None:
        taken = np.zeros(len(height), dtype=bool)
        for a, b in found:
            taken[a:b + 1] = True
        found = sorted(found + [(a, b) for a, b in _contact_runs(height, still, leg, fps) if not taken[a:b + 1].any()])
    return found


def _contact_runs(height: np.ndarray, speed: np.ndarray, leg: float, fps: float) -> list[tuple[int, int]]:
    n = len(height)
    if n == 0:
        return []
    # Each foot's own ground, near in time: mocap puts the soles at different heights (markers, floor
    # calibration, drift over a long take), so heights count from this foot's lowest point within
    # BASELINE_WINDOW seconds rather than from one floor for the whole clip.
    half = max(1, int(round(BASELINE_WINDOW * fps)))
    padded = np.pad(np.asarray(height, dtype=np.float64), half, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1)
    height = height - windows.min(axis=1)
    down = False
    states = np.zeros(n, dtype=bool)
    for i in range(n):
        if not down and height[i] <= LAND_HEIGHT * leg and speed[i] <= LAND_SPEED * leg:
            down = True
        elif down and (height[i] > LIFT_HEIGHT * leg or speed[i] > LIFT_SPEED * leg):
            down = False
        states[i] = down
    runs = []
    i = 0
    while i < n:
        if states[i]:
            j = i
            while j + 1 < n and states[j + 1]:
                j += 1
            runs.append([i, j])
            i = j + 1
        else:
            i += 1
    gap = gap_frames(fps)
    merged: list[list[int]] = []
    for r in runs:
        if merged and r[0] - merged[-1][1] - 1 < gap:
            merged[-1][1] = r[1]
        else:
            merged.append(r)
    shortest = max(1, int(math.ceil(MIN_CONTACT * fps)))
    return [(a, b) for a, b in merged if b - a + 1 >= shortest]


def sample_feet(obj: bpy.types.Object, scene: bpy.types.Scene, start: int, end: int,
                body: bool = False) -> dict[int, dict[str, np.ndarray]]:
    """Per foot limb (by index): ankle positions, the lowest sole point and the ankle's speed, over frames
    [start, end] of the animation (live preview off), all in world space: root motion on the object or a
    parent moves the feet as the viewer sees them, and a planted foot stays put. Nothing here depends on the
    animation's floor, so one sweep gives both the floor and the contacts (`setup.floor_and_contacts`).
    With `body`, each foot's samples also hold the pelvis bone's head ("body", where the rig has one)."""
    s = settings(obj)
    feet = [(i, lb) for i, lb in enumerate(s.limbs) if lb.kind == "FOOT" and lb.enabled and lb.end_bone
            and limb_is_usable(obj, lb)]
    n = end - start + 1
    out = {i: {"ankle": np.empty((n, 3)), "sole": np.empty((n, 3)), "heel": np.empty((n, 3)), "toe": np.empty((n, 3)),
               "ball": np.empty((n, 3)), "front_z": np.empty(n)}
           for i, _lb in feet}
    # With `body`, the pelvis bone's head too, one array every foot's samples share: whether a cut moves the
    # body with the feet (`body_jumps`).
    pelvis: str = s.pelvis_bone
    centre = np.empty((n, 3)) if body and pelvis and pelvis in obj.pose.bones else None
    for d in out.values():
        if centre is not None:
            d["body"] = centre
    # A leg of two bones: its knee's plane in its thigh's own frame and its bend, frame by frame, for the
    # knee's hinge (`model.knee_hinge`).
    chains = {i: bone_names(lb) for i, lb in feet}
    legs = {i: (names[0], names[-1]) for i, names in chains.items()
            if len(names) == 2 and all(b in obj.pose.bones for b in names)}
    for i in legs:
        out[i]["knee_normal"], out[i]["knee_bend"] = np.full((n, 3), np.nan), np.zeros(n)
    with state.paused([obj], scene):
        soles = {i: sole_of(obj, lb.end_bone, lb.toe_bone, lb.foot_offset) for i, lb in feet}
        for k, f in enumerate(range(start, end + 1)):
            scene.frame_set(f)
            pbs = obj.pose.bones
            mw = obj.matrix_world.copy()
            if centre is not None:
                centre[k] = mw @ pbs[pelvis].head
            for i, lb in feet:
                pts = sole_world(obj, soles[i], mw)
                low = min(pts, key=lambda p: p.z)
                d = out[i]
                d["ankle"][k] = mw @ pbs[lb.end_bone].head
                d["heel"][k] = pts[0]
                d["toe"][k] = pts[-1]
                d["sole"][k] = low
                # The ball (the toe bone's head; without a toe bone the sole's `ball`, the toe tip or a hanging
                # tail, as `batch` holds it): held while the foot rolls over it; the front of the foot (the
                # lower of the ball and the toe tip) tells when it is down.
                d["ball"][k] = ball_world(obj, lb.toe_bone, soles[i], pts, mw)
                d["front_z"][k] = min(d["ball"][k][2], pts[-1].z)
                if i in legs:
                    thigh, shin = pbs[legs[i][0]], pbs[legs[i][1]]
                    upper = mw @ shin.head - mw @ thigh.head
                    lower = mw @ pbs[lb.end_bone].head - mw @ shin.head
                    normal = upper.cross(lower)
                    if normal.length > 0.0:
                        frame = (mw @ thigh.matrix).to_3x3().normalized()  # its columns unit: scale out
                        d["knee_normal"][k] = frame.transposed() @ normal.normalized()
                        d["knee_bend"][k] = upper.angle(lower)
    fps = fps_of(scene)
    for d in out.values():
        step = np.diff(d["ankle"], axis=0) * fps
        speed = np.linalg.norm(step, axis=1)
        # Speed at a frame: the faster of the steps into and out of it, so a contact ends before the foot
        # moves off and starts once it has stopped. `still`: the slower of the two, for stances too short for
        # that (`find_contacts`).
        into, out_of = (np.r_[speed[:1], speed], np.r_[speed, speed[-1:]]) if n > 1 else (np.zeros(n), np.zeros(n))
        d["speed"], d["still"] = np.maximum(into, out_of), np.minimum(into, out_of)
        # The ball's speed along the ground (rolling over it lifts it a little).
        d["ball_speed"] = ground_speed(d["ball"], fps)
    return out


def ground_speed(points: np.ndarray, fps: float) -> np.ndarray:
    """Per frame, how fast `points` (N, 3, world) move along the ground (world XY), in units per second: the
    slower of the steps into and out of the frame."""
    n = len(points)
    if n < 2:
        return np.zeros(n)
    step = np.linalg.norm(np.diff(points[:, :2], axis=0), axis=1) * fps
    return np.minimum(np.r_[step[:1], step], np.r_[step, step[-1:]])  # type: ignore[no-any-return]


def ball_down(front: np.ndarray, speed: np.ndarray, leg: float, fps: float) -> np.ndarray:
    """Per frame, whether the ball is down: the front of the foot (`sample_feet`'s "front_z") within ROLL_HEIGHT x leg of
    the level it stands on nearby (`stance_level`), and the ball slower along the ground than ROLL_SPEED x
    leg per second (`sample_feet`); gaps shorter than MIN_GAP seconds (capture jitter) closed."""
    return ball_runs(front, speed, leg, fps)[0]


def stance_level(front: np.ndarray, speed: np.ndarray, leg: float, fps: float) -> np.ndarray:
    """Per frame, the level the front of the foot stands on within BASELINE_WINDOW seconds: the lowest it
    holds for MIN_CONTACT seconds while slower along the ground than ROLL_SPEED (`speed`, units per second), but
    never more than ROLL_STAY_HEIGHT x leg over the lowest it holds for that long at any speed, which is the
    level where it is never that slow for that long within the window."""
    if len(front) == 0:
        return np.zeros(0)
    half = max(1, int(round(BASELINE_WINDOW * fps)))
    w = min(len(front), max(1, int(math.ceil(MIN_CONTACT * fps))))

    def lowest(values: np.ndarray) -> np.ndarray:
        held = np.lib.stride_tricks.sliding_window_view(values, w).max(axis=1)
        held = np.pad(held, (w // 2, w - 1 - w // 2), mode="edge")  # per frame, the run centred on it
        return np.lib.stride_tricks.sliding_window_view(np.pad(held, half, mode="edge"), 2 * half + 1).min(axis=1)

    # Held for MIN_CONTACT: a toe pushing through the floor for a few frames at toe-off (pymo_av8: 2% of the leg
    # under it) is not the level it stands on. Slow: nor is a front moving along the ground, lower than it ever
    # stands (cmu_12_02: read against such frames, the level was 1.7% of the leg low, a toe-off's last three
    # frames read over ROLL_HEIGHT up, their ball was let go and slid 0.8-1.2% of the leg). Near the lowest: a
    # foot hanging still in the air (a jump to a bar) does not stand there.
    front = np.asarray(front, dtype=np.float64)
    anyhow = lowest(front)
    slow = lowest(np.where(np.asarray(speed) <= ROLL_SPEED * leg, front, np.inf))
    return np.minimum(np.where(np.isfinite(slow), slow, anyhow), anyhow + ROLL_STAY_HEIGHT * leg)  # type: ignore[no-any-return]


def ball_runs(front: np.ndarray, speed: np.ndarray, leg: float, fps: float) -> tuple[np.ndarray, np.ndarray]:
    """Per frame, whether the ball is down (`ball_down`) and whether it is kept down: down, or down before and
    since then within ROLL_STAY_HEIGHT of the same level and slower than ROLL_STAY_SPEED (`roll_of`); both
    with gaps shorter than MIN_GAP seconds closed, so every frame down is kept down."""
    n = len(front)
    if n == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
    low = stance_level(front, speed, leg, fps)
    down = (front - low <= ROLL_HEIGHT * leg) & (speed <= ROLL_SPEED * leg)
    kept = down.copy()
    near = (front - low <= ROLL_STAY_HEIGHT * leg) & (speed <= ROLL_STAY_SPEED * leg)
    for i in range(1, n):
        kept[i] = kept[i] or (near[i] and kept[i - 1])
    gap = gap_frames(fps)
    for runs in (down, kept):
        idx = np.flatnonzero(runs)
        for a, b in zip(idx[:-1], idx[1:]):
            if 1 < b - a <= gap:
                runs[a:b] = True
    return down, kept


def tiptoe(d: dict[str, np.ndarray], leg: float) -> np.ndarray:
    """Per frame, whether the foot stands on its toes: its heel more than ROLL_HEIGHT x leg above the front of
    the foot (`sample_feet`)."""
    return d["heel"][:, 2] - d["front_z"] > ROLL_HEIGHT * leg  # type: ignore[no-any-return]


def roll_of(down: np.ndarray, a: int, b: int, limit: int, toes: Optional[np.ndarray] = None,
            peel: Optional[np.ndarray] = None, kept: Optional[np.ndarray] = None) -> Optional[tuple[int, int]]:
    """The frames (first, last) a contact a..b holds its ball: the run of frames the ball is `down` that holds
    the contact's last frame (or starts right after it), from no earlier than `a` to no later than `limit`
    (the frame before the next contact); None where the ball is not down as the contact ends. After the
    contact's last frame only while the foot is on its toes (`toes`, `tiptoe`): a foot lifting off whole is
    not rolling. Back into the contact also over the frames its heel peels off a still ball (`peel`, `sole_runs`):
    the foot stands on its ball there, though the ball, sinking as the toes push, is not yet down by height.
    A ball `kept` down as the contact ends (`ball_runs`: it was down and has since risen less than
    ROLL_STAY_HEIGHT, slower than ROLL_STAY_SPEED; every frame it is `down` it is kept down) rolls too, held
    back into the contact over those frames,
    though not past its last frame unless down there: the foot stands on it as the heel peels off
    (cmu_12_02: the ball 3.3% of the leg up and 0.27 leg/s on the contact's last frames; the ankle held,
    the foot turned about it and swept the ball 2.6% of the leg)."""
    on = down if toes is None else down & toes
    stands = down if kept is None else kept
    if stands[b]:
        first = b
    elif b + 1 <= limit and on[b + 1]:
        first = b + 1
    else:
        return None
    last = first
    while last + 1 <= limit and on[last + 1]:
        last += 1
    back = stands if peel is None else stands | peel
    while first - 1 >= a and back[first - 1]:
        first -= 1
    return first, last


def landing_of(down: np.ndarray, a: int, first: int) -> int:
    """The frame a contact starting on `a` holds its ball from: the first of the run of frames its ball is
    `down` into `a` (the ball landed, on the ground and still, while the ankle was still coming to rest), from
    no earlier than `first` (the frame after the previous contact's last held frame); `a` where the ball is not
    down on `a` and the frame before it. Until the ankle rests the ball slid with the capture's jitter, held
    by nothing (cmu_13_42, cmu_07_04: 1.2-1.7% of the leg)."""
    if a - 1 < first or not (down[a] and down[a - 1]):
        return a
    land = a - 1
    while land - 1 >= first and down[land - 1]:
        land -= 1
    return land


def heel_down(d: dict[str, np.ndarray], leg: float, fps: float) -> np.ndarray:
    """Per frame, whether the heel is down: as `ball_down` for the front of the foot, the heel (`sample_feet`'s
    "heel") within ROLL_HEIGHT x leg of its own lowest height around and slower along the ground than
    ROLL_SPEED x leg per second (`ground_speed`, as the ball's)."""
    return ball_down(d["heel"][:, 2], ground_speed(d["heel"], fps), leg, fps)


def toe_up(d: dict[str, np.ndarray], leg: float) -> np.ndarray:
    """Per frame, whether the foot is turned toe-up: the front of the foot (`sample_feet`'s "front_z") more
    than ROLL_HEIGHT x leg above its heel (`tiptoe` the other way)."""
    return d["front_z"] - d["heel"][:, 2] > ROLL_HEIGHT * leg  # type: ignore[no-any-return]


def sole_runs(d: dict[str, np.ndarray], leg: float, fps: float,
              cut: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What detection and relock read of a foot's samples (`sample_feet`) for its holds: per frame whether its
    ball is down (`ball_down`), whether its heel is (`heel_down`), neither held across a `cut`, whether the
    foot is toe-up (`toe_up`), whether its heel peels off a still ball (the ball slower along the ground
    than ROLL_SPEED, the heel not down; `roll_of`), and whether its ball is kept down (`ball_runs`;
    `roll_of`)."""
    down, kept = ball_runs(d["front_z"], d["ball_speed"], leg, fps)
    down, kept = down & ~cut, kept & ~cut
    heel = heel_down(d, leg, fps) & ~cut
    peel = (d["ball_speed"] <= ROLL_SPEED * leg) & ~heel & ~cut
    return down, heel, toe_up(d, leg), peel, kept


def first_down(down: np.ndarray, heel: np.ndarray, a: int, first: int,
               struck: Optional[np.ndarray] = None) -> tuple[int, bool]:
    """What a contact starting on `a` holds before Start, and from which frame: its ball from Ball Lands
    (`landing_of`) where the ball lands before the ankle rests; else its heel from the frame it lands
    (`landing_of` over `heel`, `heel_down`) where the foot strikes with it: turned toe-up (`struck`,
    `toe_up`) on that frame. A flat foot settling before its ankle rests is not a heel strike, and holding
    its heel alone moved the foot for nothing (cmu_07_04 over stairs: hip 1.16x -> 1.50x the source's).
    (frame, whether it is the heel); (a, False): nothing before Start."""
    land = landing_of(down, a, first)
    if land < a:
        return land, False
    strike = landing_of(heel, a, first)
    return (strike, True) if strike < a and (struck is None or struck[strike]) else (a, False)


def cut_rows(obj: bpy.types.Object, samples: dict[int, dict[str, np.ndarray]], fps: float) -> np.ndarray:
    """The rows of `samples` (`sample_feet`) the animation jumps to (`model.cuts`): every foot's ankle faster
    than CUT_SPEED x its leg per second; none with the rig's Detect Cuts off (`ContactIKSettings.detect_cuts`)."""
    s = settings(obj)
    cut = np.full(len(next(iter(samples.values()))["ankle"]) if samples else 0, s.detect_cuts)
    if s.detect_cuts:
        scale = world_scale(obj)
        for i, d in samples.items():
            cut &= cuts(d["ankle"], (s.limbs[i].length or 1.0) * scale, fps)
    return cut


def body_jumps(obj: bpy.types.Object, samples: dict[int, dict[str, np.ndarray]], fps: float) -> Optional[np.ndarray]:
    """Per row of `samples` (`sample_feet`), whether the whole body jumps there (`model.cuts` with the feet:
    the pelvis faster than CUT_SPEED x the longest leg per second, every ankle with it), as at a loop's seam;
    where a cut (`cut_rows`) is not such a jump, the feet were thrown about a body that stays: a capture's
    glitch, more likely. None without a pelvis bone or feet."""
    body = next(iter(samples.values())).get("body") if samples else None
    if body is None:
        return None
    s = settings(obj)
    leg = max(s.limbs[i].length or 1.0 for i in samples) * world_scale(obj)
    return cuts(body, leg, fps, [d["ankle"] for d in samples.values()])


def cuts_found(obj: bpy.types.Object) -> list[tuple[int, float]]:
    """The frames the feet's contacts are planned on either side of (`ContactIKContact.cut`; none with Detect
    Cuts off), in order, each with the longest jump of an ankle there in its leg's lengths."""
    s = settings(obj)
    if not s.detect_cuts:
        return []
    scale = world_scale(obj)
    found: dict[int, float] = {}
    for lb in s.limbs:
        if lb.kind != "FOOT" or not lb.enabled:
            continue
        leg = (lb.length or 1.0) * scale
        for c in lb.contacts:
            if c.cut:
                found[c.cut] = max(found.get(c.cut, 0.0), float(np.linalg.norm(c.jump)) / leg)
    return sorted(found.items())


def detect_contacts(obj: bpy.types.Object, scene: bpy.types.Scene, start: Optional[int] = None,
                    end: Optional[int] = None, samples: Optional[dict[int, dict[str, np.ndarray]]] = None) -> int:
    """Replace every foot's contacts with those found in the animation (`samples`: `sample_feet` over
    start..end, already taken); the number found."""
    s = settings(obj)
    start = scene.frame_start if start is None else start
    end = scene.frame_end if end is None else end
    samples = sample_feet(obj, scene, start, end) if samples is None else samples
    fps = fps_of(scene)
    total = 0
    scale = world_scale(obj)
    cut = cut_rows(obj, samples, fps)
    measure_hinges(obj, samples)
    for i, d in samples.items():
        limb = s.limbs[i]
        leg = (limb.length or 1.0) * scale  # world units, as the samples
        limb.contacts.clear()
        limb.contact_range = (start, end)
        limb.range_ankles = tuple(d["ankle"][0]) + tuple(d["ankle"][-1])
        last = -1
        found = find_contacts(d["ankle"][:, 2], d["speed"], leg, fps, d["still"])  # the ankle: locked while it rests
        # A contact found from the range's second frame starts on its first: nothing before the range shows
        # the foot landing, and the frame left out of the contact (no lock, the swing's ease in full) made the
        # foot drop into it in one frame (cmu_03_02 over stairs: knee 1.82x the source's on that frame).
        if found and found[0][0] == 1:
            found[0] = (0, found[0][1])
        # A ball or heel is not held across a cut.
        down, heel, struck, peel, kept = sole_runs(d, leg, fps, cut)
        toes = tiptoe(d, leg)
        # A contact whose ball stays down until the next one lands is one stance with it (a shuffle on the
        # ball): one contact, its ball held throughout.
        k = 0
        while k + 1 < len(found):
            a, b = found[k]
            held = roll_of(down, a, b, found[k + 1][0] - 1, toes)
            if held is not None and held[1] == found[k + 1][0] - 1 and down[found[k + 1][0]]:
                found[k:k + 2] = [(a, found[k + 1][1])]
            else:
                k += 1
        found = landed_on_toes(found, down, toes)
        holds = [held_ball(d, down, a, b, found[k + 1][0] - 1 if k + 1 < len(found) else len(down) - 1, peel, kept)
                 for k, (a, b) in enumerate(found)]
        step = np.linalg.norm(np.diff(d["ball"][:, :2], axis=0), axis=1) * fps
        on_ball = ball_stances(down & ~np.concatenate([[False], step > BALL_JUMP * leg]),
                               [(a, max(b, h[1] if h else b)) for (a, b), h in zip(found, holds)],
                               int(math.ceil(MIN_BALL_STANCE * fps)))
        # A stance on the ball that runs into a contact (the foot landed on its ball, the ankle came to rest
        # later), or ends less than MIN_GAP before one (a gap contacts close), is that contact's start: one
        # contact from the stance's first frame, holding its ball. Kept apart across two frames the ball rose
        # by a part of a percent of the leg, the foot was let go and landed again: cmu_08_07 over stairs, the
        # knee 1.55x the source's peak speed.
        starts = {a: k for k, (a, _b) in enumerate(found)}
        gap = gap_frames(fps)
        alone = []
        for a, b in on_ball:
            into = next((b + 1 + j for j in range(gap) if b + 1 + j in starts), None)
            if into is not None:
                found[starts[into]] = (a, found[starts[into]][1])
            else:
                alone.append((a, b))
        on_ball = alone
        found = sorted(found + on_ball)
        held_to = -1  # the previous contact's last held frame
        for k, (a, b) in enumerate(found):
            c = limb.contacts.add()
            c.start, c.end = start + a, start + b
            limit = found[k + 1][0] - 1 if k + 1 < len(found) else len(down) - 1
            roll = (a, b) if (a, b) in on_ball else held_ball(d, down, a, b, limit, peel, kept)
            _fill(c, d, a, b, s.floor_height, roll, *first_down(down, heel, a, held_to + 1, struck))
            held_to = max(b, roll[1]) if roll is not None else b
            at = np.flatnonzero(cut[last + 1:a + 1]) + last + 1 if last >= 0 else np.zeros(0, int)
            if len(at):  # a cut between the previous contact and this one: the first
                c.cut = start + int(at[0])
                c.jump = tuple(d["ankle"][at[0]] - d["ankle"][at[0] - 1])
            last = b
            total += 1
    return total


def measure_hinges(obj: bpy.types.Object, samples: dict[int, dict[str, np.ndarray]]) -> None:
    """Every sampled foot's knee hinge (`model.knee_hinge`) from `samples` (`sample_feet`), into its limb's
    `hinge`: zero where the leg is not of two bones or its knee is never bent enough to show one. Either way it
    is measured (`hinge_measured`)."""
    limbs = settings(obj).limbs
    for i, d in samples.items():
        hinge = knee_hinge(d["knee_normal"], d["knee_bend"]) if "knee_normal" in d else None
        limbs[i].hinge = tuple(hinge) if hinge is not None else (0.0, 0.0, 0.0)
        limbs[i].hinge_measured = True


def relock(obj: bpy.types.Object, scene: bpy.types.Scene, limb_index: int) -> None:
    """Recompute the lock points of one foot's contacts (after the user edited their frames)."""
    limb = settings(obj).limbs[limb_index]
    if not limb.contacts:
        return
    start = min(c.start for c in limb.contacts)
    end = max(c.end for c in limb.contacts)
    fps = fps_of(scene)
    # A second past the last contact: where its ball may still be down.
    stop = max(end, min(scene.frame_end, end + int(math.ceil(fps))))
    samples = sample_feet(obj, scene, start, stop)
    d = samples[limb_index]
    leg = (limb.length or 1.0) * world_scale(obj)
    down, heel, struck, peel, kept = sole_runs(d, leg, fps, cut_rows(obj, samples, fps))
    floor = settings(obj).floor_height
    starts = sorted(c.start for c in limb.contacts)
    # Each contact's ball hold (`held_ball`), found once: it also bounds how far back the next contact's
    # landing reaches (`landing_of`: not before the frame after the previous contact's last held frame).
    rolls: list[Optional[tuple[int, int]]] = []
    for c in limb.contacts:
        a, b = c.start - start, c.end - start
        later = [s0 - start for s0 in starts if s0 > c.end]
        rolls.append(held_ball(d, down, a, b, min(later) - 1 if later else len(down) - 1, peel, kept) if b >= a else None)
    lasts = [c.end - start if r is None else max(c.end - start, r[1]) for c, r in zip(limb.contacts, rolls)]
    for c, roll in zip(limb.contacts, rolls):
        a, b = c.start - start, c.end - start
        if b >= a:
            before = [last for o, last in zip(limb.contacts, lasts) if o.start < c.start]
            _fill(c, d, a, b, floor, roll, *first_down(down, heel, a, max(before, default=-1) + 1, struck))


def landed_on_toes(found: list[tuple[int, int]], down: np.ndarray, toes: np.ndarray) -> list[tuple[int, int]]:
    """Contacts (first, last frame) starting where the foot lands on its toes: a contact whose foot has its
    ball `down` and its heel up (`toes`, `tiptoe`) on the frames right before its ankle comes to rest starts as
    the ball lands, so the ball is held from then (`held_ball`), not left to slide until the ankle stops (a
    jump's landing: cmu_16_01's ball slid 2.8% of the leg, fair1_jumping's 12% over stairs). Never back into
    the contact before."""
    out: list[tuple[int, int]] = []
    for a, b in found:
        first = out[-1][1] + 1 if out else 0
        while a - 1 >= first and down[a - 1] and toes[a - 1]:
            a -= 1
        out.append((a, b))
    return out


def ball_stances(down: np.ndarray, taken: list[tuple[int, int]], shortest: int) -> list[tuple[int, int]]:
    """Stances on the ball alone (first, last frame): runs of at least `shortest` frames the ball is `down`
    outside every contact and ball hold in `taken` (first, last), each up to the first it runs into (none
    where it starts inside one: that run is the contact's). The ankle never comes to rest in them (a foot
    standing on its toes, pivoting on its ball as a walk starts or stops), so no contact is found by the
    ankle; left to the swing, the foot floated over a flight of stairs on its own swing line (cmu_131_01:
    13.7% of the leg). Such a stance holds its ball from its first frame to its last. The caller leaves out
    of `down` the frames the ball jumps to (faster than BALL_JUMP): a capture's glitch of the toe for a frame
    or two, which a held ball would turn into a jump of the whole leg (cmu_08_07). Slower steps are the
    capture's jitter, held through: split at each of them (at LIFT_SPEED), the stances of a foot on its toes at
    120 fps fell under `shortest` and nothing held the ball (cmu_02_04: it slid 1.8% of the leg)."""
    busy = np.zeros(len(down), dtype=bool)
    for a, b in taken:
        busy[a:b + 1] = True
    edges = np.flatnonzero(np.diff(np.concatenate([[0], down.astype(np.int8), [0]])))
    out = []
    for a, b in zip(edges[::2], edges[1::2]):
        if busy[a:b].any():  # up to the contact or hold it runs into (none where it starts in one)
            b = a + int(np.argmax(busy[a:b]))
        if b - a >= shortest:
            out.append((int(a), int(b) - 1))
    return out


def held_ball(d: dict[str, np.ndarray], down: np.ndarray, a: int, b: int, limit: int,
              peel: Optional[np.ndarray] = None, kept: Optional[np.ndarray] = None) -> Optional[tuple[int, int]]:
    """The frames (first, last) a contact a..b holds its ball on: a turn on the ball (`turn_on_ball`) and a
    roll onto the toes (`roll_of`), one after the other where there are both (a ball that turned on the
    ground, slid a few frames as the toes pushed off and is down again as the contact ends was held from
    those last frames alone, and swept the turn: cmu_01_01, 1.1 -> 2.0% of the leg); None: it holds its
    ankle. `limit`: the frame before the next contact. The roll runs on while the ball is down, whether or not
    the heel is up (a foot peeling off flat slid its ball)."""
    roll, turn = roll_of(down, a, b, limit, peel=peel, kept=kept), turn_on_ball(d, down, a, b)
    if roll is None or turn is None:
        return roll or turn
    return min(roll[0], turn[0]), roll[1]


def turn_on_ball(d: dict[str, np.ndarray], down: np.ndarray, a: int, b: int) -> Optional[tuple[int, int]]:
    """A contact a..b whose foot turns on its ball (`sample_feet`): from the first frame its ball is `down`
    in it to its last frame, where the ball moves less along the ground than the ankle does (a turn in place
    swings the heel about the ball). Held at the ankle, the ball swept 6% of the leg (cmu_131_01)."""
    on = np.flatnonzero(down[a:b + 1])
    if len(on) == 0:
        return None
    p = a + int(on[0])

    def drift(key: str) -> float:
        pts = d[key][p:b + 1, :2]
        return float(np.linalg.norm(pts - pts[0], axis=1).max())

    return (p, b) if drift("ball") < drift("ankle") else None


def _fill(c: Any, d: dict[str, np.ndarray], a: int, b: int, floor: float, roll: Optional[tuple[int, int]] = None,
          land: Optional[int] = None, on_heel: bool = False) -> None:
    """A contact's lock point, ankle at landing and lift-off, hovers over the animation's `floor` and footprint
    from the samples of its frames a..b (`sample_feet`), the frames `roll` (first, last; `held_ball`) it
    holds its ball on, and the frame `land` (`first_down`; None: `a`) its ball (`on_heel`: its heel) is held
    from before it starts."""
    lock = d["ankle"][a:b + 1].mean(axis=0)
    c.lock = tuple(lock)
    c.enter, c.leave = tuple(d["ankle"][a]), tuple(d["ankle"][b])
    c.rolls = roll is not None
    last = b
    ball = np.zeros(3)
    # The foot's heading is held while the ankle is (frames a..held_to; none where the ball is held from the
    # first frame), as it lands; from then on the foot keeps the turn it had when the ankle was let go.
    held_to = b if roll is None else roll[0] - 1
    turns = np.zeros(last - a + 1 if roll is None else roll[1] - a + 1)
    c.holds_turn = held_to >= a
    c.heading = c.turn_in = c.turn_out = 0.0
    if c.holds_turn:
        h = headings(d["heel"][a:held_to + 1], d["toe"][a:held_to + 1])
        c.heading = (float(h[0]) + math.pi) % (2.0 * math.pi) - math.pi
        turns[:held_to - a + 1] = held_turn_angle(h[0] - h)
        turns[held_to - a + 1:] = turns[held_to - a]
        c.turn_in, c.turn_out = float(turns[0]), float(turns[held_to - a])
    if roll is not None:
        p, last = roll
        c.pivot, c.roll = c.start + (p - a), c.start + (last - a)
        # Where the ball is when the ankle is at the lock point, on the frame before it is held: the foot goes
        # on from there as it was. A ball held from the contact's first frame is held where it is on average
        # (as the ankle otherwise), the lock point then where the ankle would be for it as the foot lands.
        k = max(a, p - 1)
        ball = turned_z(d["ball"][k] - d["ankle"][k], c.turn_out)
        if p == a:
            lock = d["ball"][p:last + 1].mean(axis=0) - ball
            c.lock = tuple(lock)
        # The ball on Ball Up where it is for the animation's ankle, the foot turned as it is let go.
        c.ball, c.ball_leave = tuple(ball), tuple(d["ankle"][last] + turned_z(d["ball"][last] - d["ankle"][last], c.turn_out))
        c.leave = tuple(d["ankle"][last])  # it lifts off at Ball Up
    else:
        c.pivot = c.roll = c.end
        c.ball, c.ball_leave = (0.0, 0.0, 0.0), tuple(d["ball"][b])
    c.drop_in, c.drop_out = float(d["sole"][a, 2] - floor), float(d["sole"][b, 2] - floor)  # up the up axis it lifts off at End
    # Its ball held from `land`, before Start: where it is at Start (the ankle at the lock point, or, held
    # from Start, where it is held then), so the hold goes on into the contact's without a jump; and how far
    # that is from the animation's ball on `land`, beyond the ankle's correction at Start.
    # A heel that lands first (a heel strike) is held the same way, from the frame it lands, where it is at
    # Start (`land_heel`): the foot turns down about it as animated instead of sliding it.
    c.lands = land is not None and land < a
    c.land_heel = c.lands and on_heel
    c.land, c.land_ball, c.land_shift = c.start, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    if land is not None and land < a:
        point = d["heel"] if c.land_heel else d["ball"]
        at = np.array(c.ball) if roll is not None and roll[0] == a and not c.land_heel else point[a] - d["ankle"][a]
        c.land, c.land_ball = c.start - (a - land), tuple(at)
        c.land_shift = tuple(d["ankle"][a] + at - point[land])
    # The footprint: the smallest rectangle (along the ground) holding the heel and toe tip of every frame
    # of the contact through Ball Up, each relative to the ankle on its frame (where they are when the ankle
    # stays at the lock point): a foot rolling onto its toes or turning in place still keeps all of it on one
    # level. Stored as its centre line, back (heel end) to front (toe end), and half width. Relative to the
    # animation's ankle also where the ball is held: relative to the ankle that holds the ball, a foot turning
    # on its ball swept its heel 8% of the leg further back, and the footprint was moved that much further
    # off a step edge than the ankle's (cmu_131_03 stairs: the other leg's swing, hip 1.00x -> 1.20x).
    ankle = d["ankle"][a:last + 1]
    heel, toe = (turned_z(d[k][a:last + 1] - ankle, turns) for k in ("heel", "toe"))
    c.heel, c.toe, c.width = footprint(heel, toe)


def headings(heel: np.ndarray, toe: np.ndarray) -> np.ndarray:
    """The foot's heading per frame: the angle of heel to toe tip about the up axis (world Z), unwrapped
    (no jump of a turn between frames)."""
    v = toe[..., :2] - heel[..., :2]
    return np.unwrap(np.arctan2(v[..., 1], v[..., 0]))  # type: ignore[no-any-return]


def turned_z(v: np.ndarray, angle: Any) -> np.ndarray:
    """Vectors (..., 3) turned about the up axis (world Z) by `angle` (radians; one or one per vector)."""
    c, s = np.cos(angle), np.sin(angle)
    out = np.array(v, dtype=np.float64, copy=True)
    out[..., 0] = c * v[..., 0] - s * v[..., 1]
    out[..., 1] = s * v[..., 0] + c * v[..., 1]
    return out


def footprint(heel: np.ndarray, toe: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...], float]:
    """The smallest rectangle in the ground plane (world X and Y) holding the points `heel` and `toe`
    (N, 3): (back end, front end, half width), the ends on its centre line, the front toward the toe."""
    pts = np.concatenate((heel, toe))[:, :2]
    forward = toe[:, :2].mean(axis=0) - heel[:, :2].mean(axis=0)
    theta = np.linspace(0.0, math.pi, FOOTPRINT_ANGLES, endpoint=False)
    axes = np.stack((np.cos(theta), np.sin(theta)), 1)
    sides = np.stack((-axes[:, 1], axes[:, 0]), 1)
    along, across = pts @ axes.T, pts @ sides.T  # (P, angles)
    length = along.max(0) - along.min(0)
    width = across.max(0) - across.min(0)
    # The smallest area; among rectangles of (nearly) the same area, the narrowest.
    area = length * width
    k = int(np.argmin(area + 1e-9 * width))
    axis, side = axes[k], sides[k]
    lo, hi = along[:, k].min(), along[:, k].max()
    mid = 0.5 * (across[:, k].max() + across[:, k].min())
    if forward @ axis < 0.0:  # back is the heel's end
        lo, hi, axis = -hi, -lo, -axis
        mid = -mid
        side = -side
    back2 = axis * lo + side * mid
    front2 = axis * hi + side * mid
    back = (float(back2[0]), float(back2[1]), float(heel[:, 2].mean()))
    front = (float(front2[0]), float(front2[1]), float(toe[:, 2].mean()))
    return back, front, float(0.5 * width[k])


def swing_weight(since: Any, fps: float) -> Any:
    """`Lock.swing` from the frames since the nearest contact (floats or arrays)."""
    return smoothstep(np.asarray(since, dtype=np.float64) / max(3.0, SWING_EASE * fps))


def pitch_weight(since: Any, fps: float) -> Any:
    """`Lock.pitch` from the frames since the nearest contact (floats or arrays)."""
    return smoothstep(np.asarray(since, dtype=np.float64) / max(2.0, PITCH_EASE * fps))


def free_weight(since: Any, fps: float) -> Any:
    """`Lock.free` from the frames since the nearest contact (floats or arrays)."""
    ease = max(3.0, SWING_EASE * fps)
    return smoothstep((np.asarray(since, dtype=np.float64) - ease) / ease)


def contact_values(contacts: Any, name: str, size: int = 1) -> np.ndarray:
    """One property of every contact, read at once: (count,) or (count, size)."""
    out = np.empty(len(contacts) * size)
    contacts.foreach_get(name, out)
    return out.reshape(-1, size) if size > 1 else out


def locks_over(limb: bpy.types.PropertyGroup, first: float, count: int, fps: float,
               placed: Optional[np.ndarray] = None, kept: Optional[dict[str, Any]] = None) -> LockTrack:
    """Foot locking for frames first..first+count-1 (`model.LockTrack`), computed over all contacts and
    frames at once. In a contact the ankle stays at the contact's lock point and the sole is on the
    ground. Between two contacts the foot carries the correction it had at lift-off (along the ground and
    in height) and blends it linearly, over the whole swing, into the one it needs at the next landing, so
    no frame jumps and the change is spread as thin as the swing allows; before the first and after the
    last contact the correction fades over FADE seconds. `placed`: the contacts' lock points moved off step
    edges (`reader.placed_locks`), instead of their own. A contact listed first wins where two overlap.
    `kept`: what a set-up reused from frame to frame keeps (live preview's fallback, `batch._fallback_rig`,
    dropped by any edit): the contacts' values and the track over every frame around them, computed once,
    of which each frame then reads its row (the same arithmetic row by row)."""
    def row_of(lo: float, track: LockTrack) -> Optional[LockTrack]:
        if count == 1 and first == int(first) and 0 <= first - lo < len(track.weight):
            row = int(first - lo)
            return track.rows(slice(row, row + 1))  # views: nothing writes into a track
        return None

    if kept is not None and "track" in kept:
        row = row_of(*kept["track"])
        if row is not None:
            return row
    cs = limb.contacts
    if not limb.use_lock or not len(cs):
        return LockTrack.none(count)
    values = [contact_values(cs, name) for name in ("start", "end", "drop_in", "drop_out")] + [
        np.asarray(placed, dtype=np.float64) if placed is not None else contact_values(cs, "lock", 3),
        contact_values(cs, "enter", 3), contact_values(cs, "leave", 3),
        np.array(limb.contact_range, dtype=np.float64), np.array(limb.range_ankles, dtype=np.float64).reshape(2, 3),
        # With Detect Cuts off, every cut the contacts hold is left out: the swings run straight across.
        contact_values(cs, "cut") if settings(limb.id_data).detect_cuts else np.zeros(len(cs)),
        contact_values(cs, "jump", 3)]
    rolls = contact_values(cs, "rolls") > 0.5
    roll = (contact_values(cs, "pivot"), contact_values(cs, "roll"), contact_values(cs, "ball", 3),
            contact_values(cs, "ball_leave", 3))
    # Only where the ball is held (`ContactIKContact.rolls`), from Ball Down (at Start at the earliest) to Ball Up.
    pivot = np.where(rolls, np.maximum(roll[0], values[0]), np.inf)
    up = np.where(rolls, np.maximum(roll[1], values[1]), values[1])
    extra = (pivot, up, np.where(rolls[:, None], roll[2], 0.0), roll[3])
    values += list(extra)
    holds = contact_values(cs, "holds_turn") > 0.5
    turn = (holds, contact_values(cs, "heading"), np.where(holds, contact_values(cs, "turn_in"), 0.0),
            np.where(holds, contact_values(cs, "turn_out"), 0.0))
    # The ball held from Ball Lands, before Start (`ContactIKContact.lands`); never after Start (a contact
    # whose frames were edited since).
    lands = (contact_values(cs, "lands") > 0.5) & (contact_values(cs, "land") < values[0])
    land = (np.where(lands, contact_values(cs, "land"), values[0]),
            np.where(lands[:, None], contact_values(cs, "land_ball", 3), 0.0),
            np.where(lands[:, None], contact_values(cs, "land_shift", 3), 0.0),
            lands & (contact_values(cs, "land_heel") > 0.5))
    lo, hi = land[0].min() - math.ceil(4.0 * fps), max(values[1].max(), up.max()) + math.ceil(4.0 * fps)
    if kept is not None and "track" not in kept and lo <= first <= hi and hi - lo <= 20_000:
        kept["track"] = (lo, _track(np.arange(lo, hi + 1.0), fps, *values, turn=turn, land=land))
        row = row_of(*kept["track"])
        if row is not None:
            return row
    return _track(first + np.arange(count, dtype=np.float64), fps, *values, turn=turn, land=land)


def _around(f: np.ndarray, start: np.ndarray, last: np.ndarray, fade: float) -> tuple[np.ndarray, ...]:
    """Per frame of `f`, with contacts starting on `start` and ending on `last`: the first contact (in list
    order) it lies in, the one that ended last before it and the one that starts first after it (the first
    listed among equals), -1 for none; those two as indices (`p`, `n`); whether it lies between two (`both`),
    after the last only (`only_prev`) or before the first only (`only_next`); its place across the swing
    between them (`t`), and the fades over `fade` frames after a lift-off and before a landing (`k_after`,
    `k_before`). Read-only arrays, kept for the last few arguments (`_around_kept`): a crowd of copies has
    the same contacts' timing foot after foot."""
    return _around_kept(float(fade), *(np.asarray(a, dtype=np.float64).tobytes() for a in (f, start, last)))


@functools.lru_cache(maxsize=8)
def _around_kept(fade: float, f_bytes: bytes, start_bytes: bytes, last_bytes: bytes) -> tuple[np.ndarray, ...]:
    f, start, last = (np.frombuffer(b) for b in (f_bytes, start_bytes, last_bytes))
    within, ended, starts = (start <= f[:, None]) & (f[:, None] <= last), last < f[:, None], start > f[:, None]
    inside = np.where(within.any(1), within.argmax(1), -1)
    prev = np.where(ended.any(1), np.where(ended, last, -np.inf).argmax(1), -1)
    nxt = np.where(starts.any(1), np.where(starts, start, np.inf).argmin(1), -1)
    p, n = np.maximum(prev, 0), np.maximum(nxt, 0)
    both = (prev >= 0) & (nxt >= 0)
    t = np.clip((f - last[p]) / np.maximum(1.0, start[n] - last[p]), 0.0, 1.0)
    k_after = smoothstep(1.0 - (f - last[p]) / fade)
    k_before = smoothstep(1.0 - (start[n] - f) / fade)
    only_prev = (prev >= 0) & (nxt < 0)
    only_next = (prev < 0) & (nxt >= 0)
    got = (inside, prev, nxt, p, n, both, t, k_after, k_before, only_prev, only_next)
    for a in got:
        a.setflags(write=False)
    return got


def _track(f: np.ndarray, fps: float, start: np.ndarray, end: np.ndarray, drop_in: np.ndarray, drop_out: np.ndarray,
           lock: np.ndarray, enter: np.ndarray, leave: np.ndarray, span: np.ndarray, ends: np.ndarray,
           cut: np.ndarray, jump: np.ndarray, pivot: Optional[np.ndarray] = None, up: Optional[np.ndarray] = None,
           ball: Optional[np.ndarray] = None, ball_leave: Optional[np.ndarray] = None, *,
           turn: Optional[tuple[np.ndarray, ...]] = None, land: Optional[tuple[np.ndarray, ...]] = None) -> LockTrack:
    """`locks_over` for frames `f`, from the contacts' values, the range they were detected over (`span`,
    first and last frame), the animation's ankle at its ends (`ends`, (2, 3)) and the cuts before contacts
    (`cut`, frame or 0, and `jump`, (C, 3)). The foot rolling over its ball: from `pivot` (inf: never) to `up`
    (the contact's last frame, at or after `end`) the ball is held at `lock` + `ball`; `ball_leave` is the
    animation's ball on the frame `up`. `turn`: per contact whether it holds the foot's heading while the
    ankle is held, that heading, and the turn from the animation's at landing and when the ankle is let go
    (`ContactIKContact.holds_turn`); None: none does. `land`: per contact the frame its ball is held from
    (`ContactIKContact.land`, at Start where it is not held before), where it is held then, relative to the
    lock point, and the landing's shift beyond the lock's correction (`land_ball`, `land_shift`); None: none
    is held before Start."""
    if pivot is None or up is None or ball is None or ball_leave is None:
        pivot, up, ball, ball_leave = np.full(len(start), np.inf), end, np.zeros((len(start), 3)), leave
    rolls = np.isfinite(pivot)
    # Along the ground a contact lasts until its ball is up (`hold`), and leaves from where its ball is held
    # (the correction on that frame: the ball's lock point less the animation's ball). Up the up axis it ends
    # where the ankle's contact ends (`end`): from there, its ball still held along the ground, the foot keeps
    # its animated height (less its hover at End) and its toe-up turn eases in. It does not clear the terrain
    # around it on any frame it is held, however long past End (`swing` and `free` are 0 on every held frame,
    # and the swing's line over step edges ramps in from Ball Up, `lead`): a ball held beside a riser stays on
    # its tread until Ball Up, and the foot clears the riser once it is let go. (Clearing it wholly over the
    # swing's ease before Ball Up, and from `free` once past End, lifted held balls off their treads inside
    # the source's contacts: fair1_jumping over stairs 12.6% of the leg, 2.6% without, with no run's pops the
    # better for it. Clearing it by a part of the clearance, and the line's, for a held ball the animation has
    # a fraction of a percent of the leg up lifted it off its tread: xia_old over stairs 9.5% of the leg in a
    # source contact, 5.4% without, the rest the swing's smoothing of the lift after Ball Up. The turn is
    # about the ankle, which would move the held ball: it turns once the ball is up, `model.plan_foot`.)
    hold = np.where(rolls, np.maximum(end, up), end)
    out_point = np.where(rolls[:, None], lock + ball, lock)
    out_from = np.where(rolls[:, None], ball_leave, leave)

    fade = max(1.0, FADE * fps)

    def around(last: np.ndarray, first: np.ndarray = start) -> tuple[np.ndarray, ...]:
        return _around(f, first, last, fade)

    if land is None:
        land = (start, np.zeros((len(start), 3)), np.zeros((len(start), 3)))
    lands, land_ball, land_shift = land[:3]
    on_heel = land[3] if len(land) > 3 else np.zeros(len(start), dtype=bool)  # a heel, not a ball, held first
    # Along the ground: the hold (from Ball Lands where the ball lands before the ankle rests) and the
    # correction between holds, which arrives by Ball Lands where the ball is held from there.
    held, prev, nxt, p, n, both, t, k_after, k_before, only_prev, only_next = around(hold, lands)
    after = out_point[p] - out_from[p]
    # What of a held ball's place the ground's turn about the ankle keeps (`model.plan_foot`) goes on into the
    # swing as the correction does: the ball held less the animation's ball from the ankle at lift-off.
    kept = np.where(rolls[:, None], ball - (ball_leave - leave), 0.0)[p]
    before = lock[n] - enter[n] + land_shift[n]
    # Eased (smoothstep), not linear: the foot's correction along the ground stops changing as it lands and
    # starts changing only after it lifts off, so a landing a frame later than the source's does not slide it.
    w_after = np.where(both, 1.0 - smoothstep(t), np.where(only_prev, k_after, 0.0))
    offset = np.where(both[:, None], after + (before - after) * smoothstep(t)[:, None],
                      np.where(only_prev[:, None], after * k_after[:, None],
                               np.where(only_next[:, None], before * k_before[:, None], 0.0)))
    i_held = np.maximum(held, 0)
    on_ball = (held >= 0) & (f >= pivot[i_held])
    landing = (held >= 0) & (f < start[i_held])
    point = np.where((held >= 0)[:, None], lock[i_held] + np.where(
        on_ball[:, None], ball[i_held], np.where(landing[:, None], land_ball[i_held], 0.0)), 0.0)
    carry = np.where((held >= 0)[:, None] | (prev < 0)[:, None], 0.0, kept * w_after[:, None])
    offset = np.where((held >= 0)[:, None], 0.0, offset)
    # The foot's turn about the up axis: its heading held while the ankle is (`heading`, where `turning`); from
    # then on, through the hold on the ball, the turn it had when the ankle was let go; between contacts that
    # turn eased into the one it needs at the next landing, as the correction along the ground is.
    if turn is None:
        turn = (np.zeros(len(start), dtype=bool), np.zeros(len(start)), np.zeros(len(start)), np.zeros(len(start)))
    holds, heading, turn_in, turn_out = turn
    turning = (held >= 0) & ~on_ball & ~landing & holds[i_held]
    s_t = smoothstep(t)
    twist = np.where(both, turn_out[p] + (turn_in[n] - turn_out[p]) * s_t,
                     np.where(only_prev, turn_out[p] * k_after, np.where(only_next, turn_in[n] * k_before, 0.0)))
    twist = np.where(held >= 0, np.where(on_ball, turn_out[i_held], 0.0), twist)
    # Up the up axis (the sole put down, the hover carried, the swing's ground, its clearance and toe-up turn):
    # contacts end with the ankle's.
    inside, prev, nxt, p, n, both, t, k_after, k_before, only_prev, only_next = around(end)
    # The hover carried: between two contacts blended across the swing; before the first and after the last,
    # the first's and the last's, however far. (Faded out over FADE, it left the foot there over the floor the
    # clip was detected on, not over the level of its contacts: cmu_08_07 over flat, 2.6% of the leg over the
    # source's own in a brief source contact after the foot's last.)
    rise = np.where(both, -(drop_out[p] * (1.0 - t) + drop_in[n] * t),
                    np.where(only_prev, -drop_out[p], np.where(only_next, -drop_in[n], 0.0)))
    w0 = np.where(both, 1.0 - t, np.where(only_prev, k_after, np.where(only_next, k_before, 0.0)))
    a0 = np.where(only_next[:, None], lock[n], lock[p])
    w1 = np.where(both, t, 0.0)
    a1 = lock[n]
    # A swing across a cut (`ContactIKContact.cut`): before it, the landing where it would be had the body
    # not jumped; after it, the lift-off moved with the body. Each side is a swing like any other.
    across = both & (cut[n] > end[p]) & (cut[n] <= start[n])
    a1 = np.where((across & (f < cut[n]))[:, None], lock[n] - jump[n], a1)
    a0 = np.where((across & (f >= cut[n]))[:, None], lock[p] + jump[n], a0)
    gap = np.where(both, np.maximum(1.0, start[n] - end[p]), 0.0)
    # A swing that runs off the end of the range the contacts were detected over (the clip ends mid-swing)
    # has no contact to land on: its ground is the line from its contact to the ground under the animation's
    # ankle on the range's last frame, as between two contacts, not the ground right under the foot, which
    # jumps at every step edge it passes (the knee popped, 1.51x the source's, on stairs).
    # No longer than the longest swing the foot makes between two of its contacts: a foot that stays down
    # but too briefly to be a contact, or shuffles, for longer than that (cmu_05_01: the last 6 s) is not
    # in one swing, and a line over all of it lifted it off the ground (hover 14% -> 18% of the leg).
    lo, hi = float(span[0]), float(span[1])
    order = np.argsort(start, kind="stable")
    longest = float((start[order][1:] - end[order][:-1]).max()) if len(start) > 1 else 0.0
    if hi > lo:
        tail = only_prev & (f <= hi) & (end[p] < hi) & (hi - end[p] <= longest)
        t_tail = np.clip((f - end[p]) / np.maximum(1.0, hi - end[p]), 0.0, 1.0)
        w0 = np.where(tail, 1.0 - t_tail, w0)
        w1 = np.where(tail, t_tail, w1)
        a1 = np.where(tail[:, None], ends[1], a1)
        gap = np.where(tail, np.maximum(1.0, hi - end[p]), gap)
        # The same at the range's start, when it starts mid-swing: the line from the ground under the
        # animation's ankle on the first frame to the first contact, with no lift-off to ease in from (left
        # foot of range_inside on stairs: 1.29x -> 1.14x).
        head = only_next & (f >= lo) & (start[n] > lo) & (start[n] - lo <= longest)
        t_head = np.clip((f - lo) / np.maximum(1.0, start[n] - lo), 0.0, 1.0)
        w0 = np.where(head, 1.0 - t_head, w0)
        w1 = np.where(head, t_head, w1)
        a0 = np.where(head[:, None], ends[0], a0)
        gap = np.where(head, np.maximum(1.0, start[n] - lo), gap)
        both = both | tail | head
    else:
        head = np.zeros(len(f), dtype=bool)
    pinned = inside >= 0
    i = np.maximum(inside, 0)
    since = np.minimum(np.where(prev >= 0, f - end[p], np.inf), np.where(nxt >= 0, start[n] - f, np.inf))
    far = pinned | ~np.isfinite(since)
    since = np.where(np.isfinite(since), since, 0.0)
    return LockTrack(
        weight=np.where(held >= 0, 1.0, 0.0),
        point=point,
        ball=np.where(on_ball | (landing & ~on_heel[i_held]), 1.0, 0.0),
        heel=np.where(landing & on_heel[i_held], 1.0, 0.0),
        carry=carry,
        offset=offset,
        down=np.where(pinned, 1.0, 0.0),
        rise=np.where(pinned, 0.0, rise),
        from_point=np.where(pinned[:, None], lock[i], np.where((prev >= 0)[:, None] | (nxt >= 0)[:, None], a0, 0.0)),
        from_weight=np.where(pinned, 1.0, w0),
        to_point=np.where(pinned[:, None], 0.0, np.where(both[:, None], a1, 0.0)),
        to_weight=np.where(pinned, 0.0, w1),
        # No clearance where anything is held, a ball held from its landing too: the edge the foot has just
        # passed held it up over the tread it landed on (fair1_zombie over stairs, 30 fps: 2.9% of the leg).
        swing=np.where(far | (held >= 0), 0.0, swing_weight(since, fps)),
        free=np.where(far | (held >= 0), 0.0, free_weight(since, fps)),
        pitch=np.where(pinned, 0.0, np.where(far, 1.0, pitch_weight(since, fps))),
        gap=np.where(both & ~pinned, gap, 0.0),
        # The frames after End its ball is still held, from the swing's first (a roll's toe-off).
        lead=np.where(both & ~pinned & (prev >= 0), np.clip(hold[p] - end[p], 0.0, np.maximum(0.0, gap - 1.0)), 0.0),
        opened=np.where(head & ~pinned, 1.0, 0.0),
        turning=np.where(turning, 1.0, 0.0),
        heading=np.where(turning, heading[i_held], 0.0),
        twist=twist,
        landing=np.where(landing, 1.0, 0.0),
        anchor=np.where(landing[:, None], lock[i_held], 0.0),
        contactless=np.zeros(len(f)),
    )

