"""Planting one rig on its terrain for the current frame: the computation live preview and bake share.

Ground model: the animation's own floor (a plane through the armature at `floor_height` along its
up axis) maps onto the terrain. Each foot keeps its animated height above the floor as its height
above the terrain under it, so a planted foot rests on the surface and a swinging foot keeps its
clearance; no sole point (heel, and toe tip when there is a toe bone) ends below the surface. The
foot turns toward the ground normal while near the ground. The pelvis follows the ground the feet
stand on or travel between (`_FootPlan.support`: from their contacts, so stairs give a step-by-step rise;
the terrain under the body, averaged over a disk the size of a stride, for a foot without contacts
around) and drops, gradually (`soft_reach_drop`), where a leg could not otherwise reach or would be
straighter than animated. Over all frames (the bake, live preview's frame cache), the pelvis then keeps
under a speed limit (`model.pelvis_speed_limit`), which `plant_rig` is given (`pelvis_offset`,
`pelvis_shift`) since one frame alone cannot know it. A lifted foot keeps clear of the terrain around it
(`heightfield.ClearanceField`) and turns toe-up rather than lift its ankle for its toe (`_toe_pitch`);
a contact whose footprint straddles a step edge is moved onto one level (`placed_locks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
from mathutils import Matrix, Quaternion, Vector

from ..solvers import ChainPose, solve_limb
from . import rig
from .checks import limb_is_usable
from .contacts import fps_of, lock_at
from .ground import Terrain, terrain_height
from .model import arc_ramp, arc_window, clearance_extra, smoothstep
from .rig import bone_names, floor_point, heel_local, object_moves, rest_leg_length, up_axis, world_scale
from .tuning import (
    ALIGN_FADE,
    ANCHORED,
    ARC_PATH,
    ARC_SAMPLES,
    ARC_WIDTH,
    BODY_RADIUS,
    EXT_SLACK,
    FOOT_EDGE,
    FOOT_MARGIN,
    FOOT_SAMPLES,
    FOOT_SHIFT,
    FOOT_STEP,
    FORWARD_BIAS,
    MAX_PITCH,
    PLANE_EPS,
    REACH_MARGIN,
    SOFT_LOOSE,
    SOFT_REACH,
    SOFT_STEPS,
    SOLE_DOWN,
    STRAIGHT,
    SWING_LIFT,
)

if TYPE_CHECKING:
    import bpy


@dataclass
class LimbResult:
    name: str
    target: Vector
    error: float
    sole_heights: list[float] = field(default_factory=list)


@dataclass
class RigResult:
    pelvis_offset: float = 0.0
    pelvis_moved: bool = False
    # Per foot planned (by its index in the settings' limbs), for `model.swing_smoothing` (`dry` only): its
    # correction, floor, touch, whether it is pinned (`_FootPlan`) and the leg's length.
    feet: dict[int, tuple[float, float, float, bool, float]] = field(default_factory=dict)
    limbs: list[LimbResult] = field(default_factory=list)
    written: list[str] = field(default_factory=list)


def sole_points(obj: bpy.types.Object, limb: bpy.types.PropertyGroup, foot_frame: Matrix) -> list[Vector]:
    """Heel (and toe tip) in world space; `obj` is the evaluated armature."""
    pts = [foot_frame @ heel_local(obj, limb.end_bone, limb.foot_offset)]
    if limb.toe_bone and limb.toe_bone in obj.pose.bones:
        pts.append(obj.matrix_world @ obj.pose.bones[limb.toe_bone].tail)
    return pts


def translated(pose: ChainPose, offset: Vector) -> ChainPose:
    """The same chain moved rigidly by `offset` (what a pelvis translation does to its descendants)."""
    move = Matrix.Translation(offset)
    return ChainPose(
        frames=[move @ f for f in pose.frames],
        rotations=pose.rotations,
        tip_local=pose.tip_local,
        limits=pose.limits,
        end_frame=move @ pose.end_frame if pose.end_frame is not None else None,
        end_rotation=pose.end_rotation,
        end_limits=pose.end_limits,
    )


def plant_rig(obj: bpy.types.Object, settings: bpy.types.PropertyGroup, terrain: Terrain,
              depsgraph: Optional[bpy.types.Depsgraph] = None, frame: Optional[float] = None,
              dry: bool = False, pelvis_offset: Optional[float] = None, pelvis_shift: float = 0.0,
              foot_shift: Optional[dict[int, float]] = None) -> RigResult:
    """Solve every enabled limb of `obj` for its pose evaluated in `depsgraph` (a render's, a bake's or the
    viewport's; None reads the original object, which the active depsgraph keeps evaluated) at `frame`
    (the scene's current one by default) and write the rotations to the original bones.

    `dry`: write nothing, only find the pelvis offset (`RigResult.pelvis_offset`, and `pelvis_moved`).
    `pelvis_offset`: use this offset instead of this frame's own (the bake's, after the pelvis's speed
    limit over all frames, `model.pelvis_speed_limit`). `pelvis_shift`: added to this frame's own offset
    (what that limit did to this frame when it was last computed: live preview's fallback).
    `foot_shift`: per foot (by its index in the settings' limbs), added to its target's height: what the
    smoothing between contacts over all frames does to this frame (`model.swing_smoothing`; the bake's, or
    as the last frame cache had it for live preview's fallback)."""
    import bpy

    result = RigResult()
    src = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    scene = depsgraph.scene if depsgraph is not None else bpy.context.scene
    timing = (float(scene.frame_current) if frame is None else frame, fps_of(scene))

    def ev(other: bpy.types.Object) -> bpy.types.Object:
        return other.evaluated_get(depsgraph) if depsgraph is not None else other

    up = up_axis(src)
    base = floor_point(src, settings.floor_height)
    # Keyframed weights are evaluated in the depsgraph's copy of the settings.
    src_limbs = getattr(getattr(src, "contact_ik", None), "limbs", None)
    weights = {lb.as_pointer(): (src_limbs[i].weight if src_limbs is not None and i < len(src_limbs) else lb.weight)
               for i, lb in enumerate(settings.limbs)}
    limbs = [lb for lb in settings.limbs if lb.enabled and limb_is_usable(obj, lb)]
    feet = [lb for lb in limbs if lb.kind == "FOOT"]
    others = [lb for lb in limbs if lb.kind != "FOOT"]

    pelvis = settings.pelvis_bone if settings.pelvis_bone in obj.pose.bones else ""
    # The ground under the body first: the feet look for the terrain around its height, so a clip that
    # walks far up a slope or a flight of stairs still finds the ground under every step.
    body = None
    if pelvis and feet:
        leg_body = max(rest_leg_length(src, bone_names(lb)) for lb in feet)
        body = _body_ground(src, pelvis, terrain, up, base, leg_body)
    window = body if body is not None else 0.0

    plans = []
    for limb in feet:
        plan = _plan_foot(src, limb, terrain, up, base, timing, window)
        if plan is not None:
            plans.append(plan)

    offset = 0.0
    if pelvis and settings.body_follow and plans:
        # The pelvis's ground: the mean of the ground each foot stands on or travels between.
        offset = soft_reach_drop(sum(p.support for p in plans) / len(plans), plans, up)
        result.pelvis_moved = True
    if dry:
        result.pelvis_offset = offset
        index = {lb.as_pointer(): i for i, lb in enumerate(settings.limbs)}
        result.feet = {index[p.limb.as_pointer()]: (p.correction, p.floor, p.touch, p.pinned, p.reach) for p in plans}
        return result
    if foot_shift:
        index = {lb.as_pointer(): i for i, lb in enumerate(settings.limbs)}
        for p in plans:
            p.target = p.target + up * foot_shift.get(index[p.limb.as_pointer()], 0.0)
    if result.pelvis_moved:
        offset = pelvis_offset if pelvis_offset is not None else offset + pelvis_shift
        _move_bone(obj, src, pelvis, up * offset)
        result.written.append(pelvis)
    result.pelvis_offset = offset
    shift = up * offset if pelvis else Vector()

    for plan in plans:
        limb, pose, target, rotation = plan.limb, translated(plan.pose, shift), plan.target, plan.rotation
        pole = _pole(src, limb, ev)
        if pole is not None:
            pole = pole + shift
        elif limb.pole_mode == "AUTO":
            pole = fk_plane_pole(pose, foot=True)
        sol = solve_limb(pose, target, pole=pole, weight=weights[limb.as_pointer()], softness=settings.softness,
                         target_rotation=rotation)
        rig.write_solution(obj, plan.bones, sol, end_bone=limb.end_bone or None)
        result.written.extend(plan.bones + ([limb.end_bone] if limb.end_bone else []))
        result.limbs.append(LimbResult(limb.name, target, sol.error))

    for limb in others:
        target_info = _hand_target(limb, ev)
        if target_info is None:
            continue
        names = bone_names(limb)
        pose = translated(rig.read_chain(src, names, end_bone=limb.end_bone or None), shift)
        target, rotation = target_info
        pole = _pole(src, limb, ev)
        if pole is None and limb.pole_mode == "AUTO" and pose.bone_count == 2:
            pole = fk_plane_pole(pose)
        sol = solve_limb(pose, target, pole=pole, weight=weights[limb.as_pointer()],
                         target_rotation=rotation if limb.use_target_rotation else None)
        rig.write_solution(obj, names, sol, end_bone=limb.end_bone or None)
        result.written.extend(names + ([limb.end_bone] if limb.end_bone else []))
        result.limbs.append(LimbResult(limb.name, target, sol.error))
    return result


@dataclass
class _FootPlan:
    limb: bpy.types.PropertyGroup
    bones: list[str]
    pose: ChainPose
    hip: Vector
    target: Vector
    rotation: Optional[Quaternion]
    reach: float
    support: float = 0.0  # the pelvis's ground from this foot (see `_plan_foot`)
    extension: float = 1.0  # hip to ankle over the leg's length, as animated
    # For `model.swing_smoothing`: how far the target is lifted over the ground it follows (`correction`)
    # and how far it would be for the sole points to stand their animated heights over the terrain right
    # under them (`floor`, -inf if no ray hit) and to touch it (`touch`: no lower, or a sole goes through
    # it), and whether the foot is held where it is (`pinned`).
    correction: float = 0.0
    floor: float = -math.inf
    touch: float = -math.inf
    pinned: bool = True


def fk_plane_pole(pose: ChainPose, foot: bool = False) -> Optional[Vector]:
    """A pole in the plane the animation bends the limb in (hip, knee, ankle), a chain length out from the
    middle: the knee keeps pointing where the FK pointed it. For a leg (`foot`), the end bone's forward
    axis keeps the knee in front: a knee the animation overextends backwards is mirrored forward and a
    straight leg bends where the foot points, continuously (no switch, so no flip from frame to frame).
    For an arm with no bend there is no plane: None."""
    if pose.bone_count != 2:
        return None
    pts = pose.positions()
    hip, knee, tip = pts[0], pts[1], pts[-1]
    axis = tip - hip
    if axis.length == 0.0:
        return None
    a = axis.normalized()
    leg = pose.chain_length()
    perp = (knee - hip) - a * (knee - hip).dot(a)
    if foot and pose.end_frame is not None:
        fwd = pose.end_frame.to_3x3() @ Vector((0.0, 1.0, 0.0))
        fwd = fwd - a * fwd.dot(a)
        if fwd.length > 1e-9 * leg:
            f = fwd.normalized()
            along = perp.dot(f)
            # Only a nearly straight knee is corrected (fully when straight, not at all from a bend of
            # STRAIGHT x leg): a folded leg (a hop, a kneel) keeps its own plane whatever the foot does.
            t = min(1.0, perp.length / (STRAIGHT * leg))
            m = 1.0 - t * t * (3.0 - 2.0 * t)
            perp = perp + f * (m * (FORWARD_BIAS * leg - 2.0 * min(along, 0.0)))
    if perp.length < PLANE_EPS * leg:
        return None
    return (hip + tip) * 0.5 + perp.normalized() * leg


def _plan_foot(obj, limb, terrain: Terrain, up: Vector, base: Vector, timing: tuple[float, float],
               window: float = 0.0) -> Optional[_FootPlan]:
    """The foot's target and rotation. Rays search `reach` above and below the foot raised by `window`
    (the terrain height under the body), where the ground under the foot is expected."""
    names = bone_names(limb)
    if not limb.end_bone:
        return None
    pose = rig.read_chain(obj, names, end_bone=limb.end_bone)
    points = pose.positions()
    ankle, hip = points[-1], points[0]
    leg = max(pose.chain_length(), 1e-12)
    reach = limb.ray_length * world_scale(obj) if limb.ray_length > 0.0 else leg  # armature units to world
    assert pose.end_frame is not None
    soles = sole_points(obj, limb, pose.end_frame)
    heights = [(p - base).dot(up) for p in soles]
    lifted = max(0.0, min(heights))  # the sole's height in the animation, above its floor
    rest = rest_leg_length(obj, names)
    placed = None if object_moves(obj) else placed_locks(obj, limb, terrain, rest)
    lock = lock_at(limb, timing[0], timing[1], placed)
    arc: Optional[SwingLine] = None
    anchored = False  # the ground (almost) wholly from the contacts around (ANCHORED)
    if lock.point is not None or lock.down > 0.0 or lock.rise != 0.0 or lock.offset.length_squared > 0.0:
        # Foot locking: the ankle along the ground to the contact's lock point (or by the correction that
        # carries it between contacts), and the sole down onto the ground.
        if lock.point is not None:
            d = obj.matrix_world @ lock.point - ankle
        else:
            d = obj.matrix_world.to_3x3() @ lock.offset
        move = d - up * d.dot(up)
        ankle = ankle + move
        soles = [p + move for p in soles]
        heights = [h * (1.0 - lock.down) + lock.rise * world_scale(obj) for h in heights]
    clearance = max(0.0, min(heights))
    lift = up * window
    under = terrain_height(terrain, ankle + lift, up, base, reach)
    if under is None:
        return None  # the ray missed the terrain: the foot keeps its animated pose
    ground, normal = under
    if lock.anchors:
        # The ground height from the contacts around (the ground left and the ground landed on).
        blended, used = 0.0, 0.0
        for point, w in lock.anchors:
            if w <= 0.0:
                continue
            p = obj.matrix_world @ point  # the ray from the contact's own height, whatever the foot's
            hit = terrain_height(terrain, p + lift, up, base, reach)
            if hit is not None:
                blended += w * hit[0]
                used += w
        ground = blended + (1.0 - used) * ground
        anchored = used >= ANCHORED - 1e-9
        if len(lock.anchors) == 2 and used >= 1.0 - 1e-9:
            arc = _swing_line(obj, terrain, lock, ankle, soles, up, base, reach, lift, leg, timing[1])

    tilt = Quaternion()
    if limb.align_to_normal:
        contact = min(1.0, max(0.0, 1.0 - clearance / (ALIGN_FADE * leg)))
        full = up.rotation_difference(normal)
        angle = full.angle
        if angle > 1e-9 and contact > 0.0:
            allowed = min(angle, limb.max_align_angle)
            tilt = Quaternion().slerp(full, contact * allowed / angle)
    target = ankle + up * ground
    field_ = terrain.clearance(up, rest) if lock.swing > 0.0 else None

    bare: list[float] = []  # the deficits without the clearance (what the terrain right under needs)
    touching: list[float] = []  # what each sole point needs to touch the terrain right under it

    def deficits_of(moved: list[Vector]) -> list[Optional[float]]:
        """How far each sole point must rise to stand its height above the ground under it (None: missed)."""
        out: list[Optional[float]] = []
        bare.clear()
        touching.clear()
        for p, h in zip(moved, heights):
            below = terrain_height(terrain, p, up, base, reach)  # p is already at the ground's height
            if below is None:
                out.append(None)
                continue
            extra = 0.0
            if field_ is not None:
                # A lifted foot keeps clear of the terrain around it, not only of the point under it.
                gate = max(float(smoothstep(lifted / (SWING_LIFT * leg))), lock.free)
                extra = lock.swing * gate * float(clearance_extra(field_.height(np.asarray(p)) - base.dot(up) - below[0],
                                                                  rest))
            need = below[0] + max(0.0, h) - (p - base).dot(up)
            out.append(need + extra)
            bare.append(need)
            touching.append(below[0] - (p - base).dot(up))
        return out

    turn = tilt
    found = deficits_of([target + turn @ (p - ankle) for p in soles])
    if lock.weight == 0.0 and lock.pitch > 0.0 and len(soles) > 1:
        pitch = _toe_pitch(tilt @ (soles[0] - ankle), tilt @ (soles[-1] - ankle), found[0], found[-1], up, lock.pitch)
        if pitch is not None:
            turn = pitch @ tilt
            found = deficits_of([target + turn @ (p - ankle) for p in soles])
    moved = [target + turn @ (p - ankle) for p in soles]
    deficits = [d for d in found if d is not None]
    if arc is not None:
        # In mid-swing each sole point keeps its height above the swing's line (raised over what lies
        # between), not above the terrain right under it: a step edge passing under the foot does not
        # move it. A sole point that would still go through the terrain lifts the foot further. Faded in
        # and out at the swing's ends (ARC_RAMP), and while the animation still has the sole on its floor
        # (SWING_LIFT: a toe pivoting at lift-off stays on the terrain under it), though no longer once
        # the foot is well clear of its contacts in time (`Lock.free`): a sole the animation brushes on
        # its floor in mid-air does not switch the foot between the line and the terrain under it.
        over = max(arc.height(p) + max(0.0, h) - (p - base).dot(up) for p, h in zip(moved, heights))
        under_only = max(deficits) if deficits else over
        w = arc.ramp * max(float(smoothstep(lifted / (SWING_LIFT * leg))), lock.free)
        deficits.append(w * over + (1.0 - w) * under_only)
    floor = max(bare) if bare else -math.inf
    touch = max(touching) if touching else -math.inf
    correction = max(deficits) if deficits else 0.0
    target = target + up * correction
    pinned = (lock.weight > 0.0 or not limb.use_lock or not deficits or not anchored
              or (lifted <= SOLE_DOWN * leg and not correction > floor + SOLE_DOWN * leg))
    rotation = turn @ pose.end_frame.to_quaternion()
    # The pelvis's ground from this foot: the ground from its contacts around, lowered as the foot is
    # lowered under its animated height (its hover removed): in a contact by the hover of the frame, between
    # contacts by the hover the foot carries (`Lock.rise`, blended across the swing), not by how far its
    # sole happens to be over its floor in the animation (a toe brushing the floor in mid-swing jerked the
    # body up and down again).
    # Faded into the terrain under the body (`window`) before the first contact and after the last.
    held = min(1.0, sum(w for _p, w in lock.anchors))
    lowered = lifted if lock.weight > 0.0 else -lock.rise * world_scale(obj)
    support = held * (ground - lowered) + (1.0 - held) * window
    return _FootPlan(limb, names, pose, hip, target, rotation, leg, support, (points[-1] - hip).length / leg,
                     correction, floor, touch, pinned)


def _toe_pitch(heel: Vector, toe: Vector, heel_need: Optional[float], toe_need: Optional[float],
               up: Vector, weight: float = 1.0) -> Optional[Quaternion]:
    """The toe-up turn about the ankle (heel and toe relative to it) that brings the toe's need to rise
    down to the heel's, times `weight`; or None."""
    if heel_need is None or toe_need is None or toe_need <= heel_need:
        return None
    along = toe - heel
    along = along - up * along.dot(up)
    if along.length == 0.0:
        return None
    d = along.normalized()
    reach = (toe - up * toe.dot(up)).dot(d) + max(0.0, -(heel - up * heel.dot(up)).dot(d))
    if reach <= 0.0:
        return None
    angle = weight * math.asin(min(math.sin(MAX_PITCH), (toe_need - heel_need) / reach))
    return Quaternion(d.cross(up).normalized(), angle)


def placed_locks(obj: bpy.types.Object, limb: bpy.types.PropertyGroup, terrain: Terrain, leg: float) -> Optional[list[Vector]]:
    """The lock points (armature space) of `limb`'s contacts, each moved off any step edge its footprint
    straddles on `terrain` (see FOOT_EDGE); None without contacts. Computed once per terrain, rig
    placement and contacts, in numpy, the same for live preview and bake."""
    cs = list(limb.contacts)
    if not cs or not limb.use_lock:
        return None
    mw = obj.matrix_world
    key = ("footing", obj.name, limb.name, float(f"{leg:.6g}"), tuple(tuple(r) for r in mw),
           tuple((tuple(c.lock), tuple(c.heel), tuple(c.toe), c.width) for c in cs))
    return terrain.memo(key, lambda: _place(mw, cs, terrain, up_axis(obj), leg))  # type: ignore[no-any-return]


def _place(mw: Matrix, cs: list[Any], terrain: Terrain, up: Vector, leg: float) -> list[Vector]:
    m = np.array(mw, dtype=np.float64)
    u = np.array(up, dtype=np.float64)
    scale = float(np.abs(np.linalg.norm(m[:3, :3], axis=0)).mean())
    lock = np.array([tuple(c.lock) for c in cs], dtype=np.float64)
    heel = lock + np.array([tuple(c.heel) for c in cs], dtype=np.float64)
    toe = lock + np.array([tuple(c.toe) for c in cs], dtype=np.float64)
    width = np.array([c.width for c in cs], dtype=np.float64) * scale
    h, t = heel @ m[:3, :3].T + m[:3, 3], toe @ m[:3, :3].T + m[:3, 3]
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
    low, high = terrain.extent(up)
    rays = terrain.down_rays(up)

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
    todo = np.flatnonzero(has & ~is_level(heights(grid)))  # only footprints on a step edge are searched
    if len(todo):
        shifts = axis[todo, None] * kx[None, :, None] + side[todo, None] * ky[None, :, None]  # (C', K, 3)
        hh = heights(grid[todo, None] + shifts[:, :, None, None])  # (C', K, S, 3)
        level = is_level(hh)
        # Prefer the level the ankle itself stands over (where the animation put the weight), then any.
        under = heights(lock[todo] @ m[:3, :3].T + m[:3, 3])
        mean = np.where(level, np.where(np.isfinite(hh), hh, 0.0).mean(axis=(2, 3)), np.nan)
        same = level & (np.abs(mean - under[:, None]) <= FOOT_EDGE * leg)
        level = np.where(same.any(1)[:, None], same, level)
        first = level.argmax(1)
        move[todo] = np.where(level.any(1)[:, None], shifts[np.arange(len(todo)), first], 0.0)
    return [Vector(p) for p in lock + move @ np.linalg.inv(m[:3, :3]).T]


@dataclass
class SwingLine:
    """The ground a swinging foot keeps its height above, between two contacts: the straight line from
    the ground it left (`start`, height `h0`) to the ground it lands on (`h1`), at each point's place
    along it, raised by `lift` to clear what lies between; `ramp` fades it in and out at the swing's ends."""

    start: Vector
    direction: Vector
    length: float
    h0: float
    h1: float
    lift: float
    ramp: float

    def height(self, p: Vector) -> float:
        x = (p - self.start).dot(self.direction) / self.length  # extrapolated past the ends: exact on a plane
        return self.h0 + (self.h1 - self.h0) * x + self.lift


def _swing_line(obj, terrain: Terrain, lock, ankle: Vector, soles: list[Vector], up: Vector, base: Vector,
                reach: float, lift: Vector, leg: float, fps: float) -> Optional[SwingLine]:
    """The swing's ground line (`SwingLine`) at this moment, or None where its ends miss the terrain.
    Along the swing's path (heel to toe) the terrain's rise above the line is sampled; each rise lifts
    the line within ARC_WIDTH x leg of it, by a smooth window of the distance from the foot, so the
    foot rises before a step edge and comes down after it, in space: it arcs over a step instead of
    jumping onto it."""
    (pa, _wa), (pb, t) = lock.anchors
    a = obj.matrix_world @ pa
    b = obj.matrix_world @ pb
    ha = terrain_height(terrain, a + lift, up, base, reach)  # from the contacts' own heights
    hb = terrain_height(terrain, b + lift, up, base, reach)
    a = a - up * (a - ankle).dot(up)
    b = b - up * (b - ankle).dot(up)
    path = b - a
    if ha is None or hb is None or path.length == 0.0:
        return None
    plen = path.length
    direction = path / plen
    # The foot's extent along the path, heel to toe, relative to the ankle.
    front = max(0.0, max((p - ankle).dot(direction) for p in soles)) / plen
    back = max(0.0, max(-(p - ankle).dot(direction) for p in soles)) / plen
    here = min(1.0, max(0.0, (ankle - a).dot(direction) / plen))
    width = ARC_WIDTH * leg
    # Rays from a leg above the higher end of the swing: the same hits whatever the foot's height.
    top = max(ha[0], hb[0]) + leg
    span = abs(hb[0] - ha[0]) + 2.0 * leg
    level = base.dot(up) + top
    need = 0.0
    for k in range(1, ARC_SAMPLES + 1):
        # Samples fixed along the path, each weighted by its distance to the foot (heel to toe): the lift
        # changes as smoothly as the foot moves, never by a sample crossing a step edge.
        tau = k / (ARC_SAMPLES + 1)
        near = float(arc_window(max(0.0, tau - here - front, here - back - tau) * plen / width))
        if near <= 0.0:
            continue
        q = a + path * tau
        line = ha[0] + (hb[0] - ha[0]) * tau  # the line at the sample's own place
        hit = terrain_height(terrain, q + up * (level - span - q.dot(up)), up, base, span)  # from `level` down
        if hit is not None:
            need = max(need, (hit[0] - line) * near)
    ramp = float(arc_ramp(t, lock.gap, fps) * smoothstep(plen / (ARC_PATH * leg)))
    return SwingLine(a, direction, plen, ha[0], hb[0], need, ramp)


def _body_ground(obj, pelvis: str, terrain: Terrain, up: Vector, base: Vector, leg: float) -> Optional[float]:
    """Mean terrain height (above `base`, along `up`) over a disk under the pelvis, or None where the disk
    misses the terrain. Cast from above the whole terrain: the highest surface under each sample."""
    centre = obj.matrix_world @ obj.pose.bones[pelvis].head
    radius = BODY_RADIUS * leg
    # A horizontal frame at the pelvis for the ring of samples.
    side = up.orthogonal().normalized()
    fwd = up.cross(side)
    low, high = terrain.extent(up)
    heights = []
    for p in _disk_samples(centre, side, fwd, radius):
        h = p.dot(up)
        reach = max(abs(high - h), abs(h - low)) + leg
        hit = terrain_height(terrain, p, up, base, reach)
        if hit is not None:
            heights.append(hit[0])
    return sum(heights) / len(heights) if heights else None


def soft_reach_drop(offset: float, plans: list[_FootPlan], up: Vector) -> float:
    """`_reach_drop`, eased in: never higher than it, never a kink where a leg reaches its limit."""
    tight = [SOFT_REACH * (k / (SOFT_STEPS - 1) - SOFT_LOOSE) for k in range(SOFT_STEPS)]
    return sum(_reach_drop(offset, plans, up, t) for t in tight) / len(tight)


def _reach_drop(offset: float, plans: list[_FootPlan], up: Vector, tighten: float = 0.0) -> float:
    """The pelvis offset `offset` lowered where a leg could not otherwise reach its target, or only
    straighter than REACH_MARGIN or than the animation has it (EXT_SLACK)."""
    for plan in plans:
        hip = plan.hip + up * offset
        reach = (min(REACH_MARGIN, plan.extension + EXT_SLACK) - tighten) * plan.reach
        d = plan.target - hip
        if d.length > reach:
            # Lower the hip by the smallest x >= 0 with |d + up*x| <= reach; if no vertical move is
            # enough (the target is too far sideways), by the x that brings it closest.
            b = d.dot(up)
            disc = b * b - (d.length_squared - reach * reach)
            x = -b - math.sqrt(disc) if disc >= 0.0 else -b
            if x > 0.0:
                offset -= x
    return offset


def _disk_samples(centre: Vector, side: Vector, fwd: Vector, radius: float) -> list[Vector]:
    """The centre and three rings of twelve points, weighted evenly over the disk's area."""
    pts = [centre]
    for ring in (1, 2, 3):
        r = radius * ring / 3.0
        for k in range(12):
            a = 2.0 * math.pi * (k + 0.5 * ring) / 12.0
            pts.append(centre + (side * math.cos(a) + fwd * math.sin(a)) * r)
    return pts


def _move_bone(obj: bpy.types.Object, src: bpy.types.Object, name: str, world_delta: Vector) -> None:
    """Translate a pose bone of `obj` by `world_delta` (world space), through its location channels;
    `src` is the evaluated armature its current matrices are read from."""
    pb = src.pose.bones[name]
    parent_part = pb.matrix @ pb.matrix_basis.inverted_safe()
    arm_delta = src.matrix_world.to_3x3().inverted_safe() @ world_delta
    local = parent_part.to_3x3().inverted_safe() @ arm_delta
    target = obj.pose.bones[name]
    target.location = target.location + local


def _pole(obj, limb, ev) -> Optional[Vector]:
    """The pole position (world) for a limb; None lets the knee stay closest to its animated place."""
    if limb.pole_mode == "OBJECT" and limb.pole_object is not None:
        return ev(limb.pole_object).matrix_world.translation.copy()
    if limb.pole_mode == "BONE" and limb.pole_bone in obj.pose.bones:
        return obj.matrix_world @ obj.pose.bones[limb.pole_bone].head
    return None


def _hand_target(limb, ev) -> Optional[tuple[Vector, Quaternion]]:
    if limb.target_object is None:
        return None
    target = ev(limb.target_object)
    if limb.target_bone and target.type == "ARMATURE" and target.pose and limb.target_bone in target.pose.bones:
        m = target.matrix_world @ target.pose.bones[limb.target_bone].matrix
    else:
        m = target.matrix_world
    return m.translation.copy(), m.to_quaternion()
