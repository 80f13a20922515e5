"""Motion quality, one module for tests, the CLI report and the benchmarks; lengths relative to the limb.

Per foot, over a clip: penetration (the deepest any sole point, heel and toe, goes below the ground),
hover (the lowest sole point's height above the ground on contact frames, mean and max), skate (the
horizontal travel of what each contact holds, mean and max over contacts: the ankle, and the ball from Ball
Down to Ball Up where the foot rolls over it), pops (the largest angular
velocity and acceleration of the knee and of the hip). Per limb: bone length error (how far a chain
bone's length strays from its rest length, relative). Per hand with a target: reach error on frames
where the target is within reach. Contacts are the rig's own (`limb.contacts`), so the source
animation and the result are measured on the same frames.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
from mathutils import Vector

from . import anim, bake, state
from .anatomy import ball_world, sole_of, sole_world
from .checks import limb_is_usable
from .contacts import fps_of
from .ground import Hit
from .rig import UP, rest_leg_length, settings

if TYPE_CHECKING:
    import bpy


class FlatGround:
    """A plane through `point` across `up`, with the terrain's down-ray interface (the source animation's
    own floor, to measure its hover and skate on the ground it was recorded on)."""

    def __init__(self, point: Vector, up: Vector):
        self.point, self.up = point, up

    def ray(self, origin: Vector, direction: Vector, distance: float) -> Optional[Hit]:
        denom = direction.dot(self.up)
        if denom == 0.0:
            return None
        t = (self.point - origin).dot(self.up) / denom
        if t < 0.0 or t > distance:
            return None
        return Hit(origin + direction * t, self.up.copy())


@dataclass
class LimbMetrics:
    limb: str
    kind: str
    frames: int
    leg_length: float
    contacts: int = 0
    contact_frames: int = 0
    penetration_max: float = 0.0
    penetration_frames: int = 0
    hover_mean: float = 0.0
    hover_max: float = 0.0
    skate_mean: float = 0.0
    skate_max: float = 0.0
    knee_velocity_max: float = 0.0  # degrees per second
    knee_acceleration_max: float = 0.0  # degrees per second squared
    hip_velocity_max: float = 0.0
    hip_acceleration_max: float = 0.0
    bone_length_error: float = 0.0
    reach_error_max: float = 0.0  # hands: distance to a reachable target
    reach_frames: int = 0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        leg = self.leg_length or 1.0
        for k in ("penetration_max", "hover_mean", "hover_max", "skate_mean", "skate_max", "reach_error_max"):
            d[k + "_rel"] = d[k] / leg
        return d


@dataclass
class _Track:
    heights: list[float] = field(default_factory=list)  # lowest sole point above the ground (nan: no ground)
    ankle: list[Vector] = field(default_factory=list)
    ball: list[Vector] = field(default_factory=list)  # the toe bone's head, else the last sole point
    knee: list[Any] = field(default_factory=list)  # local rotation of the lower bone in the upper's frame
    hip: list[Any] = field(default_factory=list)  # local rotation of the upper bone in its parent's frame
    length_error: float = 0.0
    reach: list[float] = field(default_factory=list)


class Meter:
    """Samples one rig frame by frame (call `sample()` after each frame_set), then `result()`."""

    def __init__(self, obj: bpy.types.Object, ground: Any, fps: float, first_frame: int):
        self.obj, self.ground, self.fps, self.first = obj, ground, fps, first_frame
        s = settings(obj)
        self.limbs = [lb for lb in s.limbs if lb.enabled and limb_is_usable(obj, lb)]
        bones = obj.data.bones
        self.rest = {lb.name: {b.bone: bones[b.bone].length for b in lb.bones} for lb in self.limbs}
        self.legs = {lb.name: rest_leg_length(obj, [b.bone for b in lb.bones if b.bone], lb.end_bone) for lb in self.limbs}
        self.tracks = {lb.name: _Track() for lb in self.limbs}
        self.soles = {lb.name: sole_of(obj, lb.end_bone, lb.toe_bone, lb.foot_offset) for lb in self.limbs if lb.end_bone}

    def sample(self) -> None:
        obj = self.obj
        up = Vector(UP)
        mw = obj.matrix_world
        pbs = obj.pose.bones
        for lb in self.limbs:
            tr = self.tracks[lb.name]
            names = [b.bone for b in lb.bones if b.bone]
            for n in names:
                pb = pbs[n]
                rest = self.rest[lb.name][n]
                if rest > 0.0:
                    tr.length_error = max(tr.length_error, abs((pb.tail - pb.head).length - rest) / rest)
            if len(names) >= 2:
                upper, lower = pbs[names[0]], pbs[names[1]]
                tr.knee.append((upper.matrix.to_quaternion().inverted() @ lower.matrix.to_quaternion()).normalized())
                parent = upper.parent
                pq = parent.matrix.to_quaternion() if parent is not None else mw.to_quaternion()
                tr.hip.append((pq.inverted() @ upper.matrix.to_quaternion()).normalized())
            if lb.kind == "HAND" and lb.target_object is not None and lb.end_bone:
                t = lb.target_object.matrix_world.translation
                root = mw @ pbs[names[0]].head
                reach = self.legs[lb.name]
                if (t - root).length <= 0.99 * reach:
                    tr.reach.append((mw @ pbs[lb.end_bone].head - t).length)
            if lb.kind != "FOOT" or not lb.end_bone:
                continue
            leg = self.legs[lb.name]
            foot = pbs[lb.end_bone]
            pts = sole_world(obj, self.soles[lb.name], mw)
            heights = []
            for p in pts:
                hit = self.ground.ray(p + up * (2.0 * leg), -up, 4.0 * leg) if self.ground is not None else None
                heights.append((p - hit.location).dot(up) if hit is not None else math.nan)
            finite = [h for h in heights if not math.isnan(h)]
            tr.heights.append(min(finite) if finite else math.nan)
            tr.ankle.append(mw @ foot.head)
            tr.ball.append(ball_world(obj, lb.toe_bone, self.soles[lb.name], pts, mw))

    def result(self) -> list[LimbMetrics]:
        out = []
        up = Vector(UP)
        for lb in self.limbs:
            tr = self.tracks[lb.name]
            leg = self.legs[lb.name]
            n = max(len(tr.knee), len(tr.heights), 1)
            m = LimbMetrics(lb.name, lb.kind, n, leg, bone_length_error=tr.length_error)
            m.knee_velocity_max, m.knee_acceleration_max = angular_peaks(tr.knee, self.fps)
            m.hip_velocity_max, m.hip_acceleration_max = angular_peaks(tr.hip, self.fps)
            if tr.reach:
                m.reach_error_max, m.reach_frames = max(tr.reach), len(tr.reach)
            if lb.kind == "FOOT" and tr.heights:
                low = np.asarray(tr.heights)
                if np.isfinite(low).any():
                    m.penetration_max = float(max(0.0, -np.nanmin(low)))
                    m.penetration_frames = int(np.count_nonzero(low < -1e-4 * leg))
                hovers, skates = [], []
                for c in lb.contacts:
                    last = max(c.end, c.roll) if c.rolls else c.end
                    a, b = max(0, c.start - self.first), min(len(tr.heights) - 1, last - self.first)
                    if b < a:
                        continue
                    m.contacts += 1
                    m.contact_frames += b - a + 1
                    down = min(b, c.end - self.first)  # the sole is put down until End; the ball held until Ball Up
                    hovers += [max(0.0, h) for h in tr.heights[a:down + 1] if not math.isnan(h)]
                    travel = 0.0
                    pivot = max(c.pivot, c.start) - self.first if c.rolls else b + 1
                    for k in range(a, b):
                        if k + 1 == pivot:
                            continue  # what is held changes from the ankle to the ball
                        held = tr.ball if k >= pivot else tr.ankle
                        d = held[k + 1] - held[k]
                        travel += (d - up * d.dot(up)).length
                    skates.append(travel)
                if hovers:
                    m.hover_mean, m.hover_max = float(np.mean(hovers)), float(max(hovers))
                if skates:
                    m.skate_mean, m.skate_max = float(np.mean(skates)), float(max(skates))
            out.append(m)
        return out


def angular_velocities(rotations: list[Any], fps: float) -> np.ndarray:
    """Angular velocity (radians per second, an axis scaled by the speed) of each step from one rotation of a
    sequence to the next: (len - 1, 3)."""
    omegas = []
    for q0, q1 in zip(rotations, rotations[1:]):
        d = q0.inverted() @ q1
        if d.w < 0.0:
            d.negate()
        axis, angle = d.to_axis_angle()
        omegas.append(np.asarray(axis) * angle * fps)
    return np.asarray(omegas).reshape(-1, 3)


def angular_peaks(rotations: list[Any], fps: float, skip: Optional[np.ndarray] = None) -> tuple[float, float]:
    """Largest angular speed (deg/s) and angular acceleration (deg/s^2) of a sequence of rotations, leaving
    out the steps from one rotation to the next that `skip` marks (a cut in the animation)."""
    speed, acc, _frame = angular_peaks_at(rotations, fps, skip)
    return speed, acc


def angular_peaks_at(rotations: list[Any], fps: float,
                     skip: Optional[np.ndarray] = None) -> tuple[float, float, int]:
    """`angular_peaks`, and the index of the rotation the fastest step ends on (-1: no step)."""
    if len(rotations) < 2:
        return 0.0, 0.0, -1
    w = angular_velocities(rotations, fps)
    keep = np.ones(len(w), dtype=bool) if skip is None else ~np.asarray(skip, dtype=bool)
    speeds = np.degrees(np.linalg.norm(w, axis=1))
    frame = int(np.flatnonzero(keep)[np.argmax(speeds[keep])]) + 1 if keep.any() else -1
    speed = speeds[frame - 1] if keep.any() else 0.0
    accs = np.degrees(np.linalg.norm(np.diff(w, axis=0), axis=1)) * fps
    both = keep[1:] & keep[:-1]
    acc = accs[both].max() if both.any() else 0.0
    return float(speed), float(acc), frame


def measure(obj: bpy.types.Object, ground: Any, frames: list[int], scene: bpy.types.Scene) -> list[LimbMetrics]:
    """Metrics of `obj` as it plays over `frames` (whatever it plays: the source, live preview or a bake)."""
    meter = Meter(obj, ground, fps_of(scene), frames[0])
    current = scene.frame_current
    for f in frames:
        scene.frame_set(f)
        meter.sample()
    scene.frame_set(current)
    return meter.result()


def source_floor(obj: bpy.types.Object) -> FlatGround:
    """The source animation's own floor (the rig's floor height, world Z), as a ground to measure on."""
    return FlatGround(Vector((0.0, 0.0, settings(obj).floor_height)), Vector(UP))


@contextmanager
def playing_source(obj: bpy.types.Object, scene: bpy.types.Scene) -> Iterator[None]:
    """Inside the block the rig plays its source animation: live preview paused, the source action
    assigned (where the rig plays a bake); all as it was after it."""
    action = anim.action_of(obj)
    source = bake.source_of(action)
    # A bake of a rig with no action of its own (its motion in NLA strips) is laid over the strips: without it
    # they play the source.
    over_nla = source is None and bake.is_baked(action)
    slot = getattr(anim.slot_of(obj), "identifier", None)
    kept = state.caches.frames.get(obj.name)  # still valid after: playing the source changes nothing
    with state.paused([obj], scene):
        if source is not None:
            anim.assign(obj, source, slot)
        elif over_nla:
            obj.animation_data.action = None
        if source is not None or over_nla:
            # The channels the source does not key, as they were before the bake (the bake keys them: playing
            # it again after the block gives them its values back). Left at the bake's last values, they made
            # a rig whose source keys only its body read the bake's knees as the source's.
            bake.unkeyed_back(obj, action)
        try:
            yield
        finally:
            if (source is not None or over_nla) and action is not None:
                anim.assign(obj, action, slot)
            if kept is not None and obj.name not in state.caches.frames:
                state.caches.frames[obj.name] = kept


def measure_source(obj: bpy.types.Object, terrain: Any, frames: list[int], scene: bpy.types.Scene) -> list[LimbMetrics]:
    """The source animation's own figures (live preview off, the source action): hover, skate and pops on
    its own floor, penetration against `terrain` (what Contact IK fixes)."""
    with playing_source(obj, scene):
        own = measure(obj, source_floor(obj), frames, scene)
        on_terrain = measure(obj, terrain, frames, scene) if terrain is not None else own
    for m, t in zip(own, on_terrain):
        m.penetration_max, m.penetration_frames = t.penetration_max, t.penetration_frames
    return own


def length_text(scene: bpy.types.Scene, value: float) -> str:
    """A world length in the scene's unit system (metric, imperial, or plain units)."""
    import bpy.utils.units

    us = scene.unit_settings
    if us.system == "NONE":
        return f"{value:.4g}"
    return bpy.utils.units.to_string(us.system, "LENGTH", value * us.scale_length, precision=3)
