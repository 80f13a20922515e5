"""The bake's fast path: `plant.plant_rig` for every frame at once, in numpy.

During the sweep each frame costs one `frame_set` and a few `foreach_get` reads of the pose; the
ground model and the solve then run vectorised over all frames: down-rays in bulk
(`heightfield.DownRays`), the closed-form two-bone solve (`solvers.solve_two_bone_batch`), the
write-back to local rotations and the FK/IK blend. It computes exactly what `plant_rig` computes
frame by frame (the bake test compares them at 1e-5 x leg length); rigs it does not cover (chains of
3+ bones, IK limits) are baked frame by frame instead.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
from mathutils import Euler, Quaternion, Vector

from ..solvers.rotations import (
    affine_inv,
    channel_quat,
    mat_to_quat,
    q_between,
    qconj,
    qmat,
    qmul,
    qnormalize,
    qrot,
    qslerp,
    xform,
)
from ..solvers.soft import soft_distance
from ..solvers.two_bone import solve_two_bone_batch
from . import rig
from .checks import limb_is_usable
from .contacts import locks_over
from .heightfield import DownHits
from .model import (
    arc_ramp,
    arc_window,
    clearance_extra,
    pelvis_speed_limit,
    pelvis_step,
    smoothstep,
    swing_change,
)
from .plant import placed_locks
from .rig import anim_paths, heel_local, object_moves, rest_leg_length, settings
from .rig import bone_names as _names
from .tuning import (
    ALIGN_FADE,
    ANCHORED,
    ARC_PATH,
    ARC_SAMPLES,
    ARC_WIDTH,
    BODY_RADIUS,
    EXT_SLACK,
    FORWARD_BIAS,
    MAX_PITCH,
    PELVIS_SPEED,
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

    from .ground import Terrain


@dataclass
class _Staged:
    """One chunk's foot plans and pelvis offset, between `BatchRig._stage` and `_finish`."""

    plans: list[Any]
    # Per foot plan, for `swing_smoothing`: (its correction, floor, touch, pinned, leg length), as
    # `plant._FootPlan` has them.
    floors: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    offset: np.ndarray
    moved: np.ndarray
    step: Any


def _fk_plane_pole(hip: np.ndarray, knee: np.ndarray, tip: np.ndarray, end_frame: np.ndarray,
                   foot: bool) -> np.ndarray:
    """`plant.fk_plane_pole` over arrays (NaN rows where there is none: the solver then ignores them)."""
    axis = tip - hip
    alen = np.linalg.norm(axis, axis=1)
    a = axis / np.where(alen > 0, alen, 1.0)[:, None]
    leg = np.linalg.norm(knee - hip, axis=1) + np.linalg.norm(tip - knee, axis=1)
    kh = knee - hip
    perp = kh - a * np.einsum("ni,ni->n", kh, a)[:, None]
    if foot:
        fwd = end_frame[:, :3, 1]
        fwd = fwd - a * np.einsum("ni,ni->n", fwd, a)[:, None]
        flen = np.linalg.norm(fwd, axis=1)
        has = flen > 1e-9 * leg
        f = fwd / np.where(has, flen, 1.0)[:, None]
        along = np.einsum("ni,ni->n", perp, f)
        t = np.minimum(1.0, np.linalg.norm(perp, axis=1) / (STRAIGHT * leg))
        m = 1.0 - t * t * (3.0 - 2.0 * t)
        bent = perp + f * (m * (FORWARD_BIAS * leg - 2.0 * np.minimum(along, 0.0)))[:, None]
        perp = np.where(has[:, None], bent, perp)
    plen = np.linalg.norm(perp, axis=1)
    ok = (alen > 0) & (plen >= PLANE_EPS * leg)
    pole = (hip + tip) * 0.5 + perp / np.where(plen > 0, plen, 1.0)[:, None] * leg[:, None]
    return np.where(ok[:, None], pole, np.nan)


def _toe_pitch(heel: np.ndarray, toe: np.ndarray, heel_need: np.ndarray, toe_need: np.ndarray,
               up: np.ndarray, weight: Any = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """`plant._toe_pitch` over arrays: (turns, which rows have one)."""
    along = toe - heel
    along = along - up * np.einsum("ni,ni->n", along, up)[:, None]
    length = np.linalg.norm(along, axis=1)
    d = along / np.where(length > 0.0, length, 1.0)[:, None]
    flat = lambda v: v - up * np.einsum("ni,ni->n", v, up)[:, None]  # noqa: E731
    reach = np.einsum("ni,ni->n", flat(toe), d) + np.maximum(0.0, -np.einsum("ni,ni->n", flat(heel), d))
    both = np.isfinite(heel_need) & np.isfinite(toe_need)  # a ray that missed has no need (-inf)
    gap = np.where(both, toe_need, 0.0) - np.where(both, heel_need, 0.0)
    has = both & (gap > 0.0) & (length > 0.0) & (reach > 0.0)
    angle = weight * np.arcsin(np.minimum(math.sin(MAX_PITCH), np.where(has, gap, 0.0) / np.where(reach > 0.0, reach, 1.0)))
    axis = np.cross(d, up)
    axis = axis / np.where(np.linalg.norm(axis, axis=1) > 0.0, np.linalg.norm(axis, axis=1), 1.0)[:, None]
    q = np.concatenate((np.cos(0.5 * angle)[:, None], axis * np.sin(0.5 * angle)[:, None]), 1)
    return q, has


def _static(obj: Any) -> bool:
    """True for an object whose transform nothing changes over time (no animation, parent, constraint)."""
    return (obj is not None and obj.animation_data is None and obj.parent is None and not obj.constraints
            and obj.type != "ARMATURE")


def _scale_animated(obj: bpy.types.Object) -> bool:
    return any(p == "*" or p.endswith(".scale") for p in anim_paths(obj))


def _weights_animated(obj: bpy.types.Object) -> bool:
    return any(p == "*" or p.startswith("contact_ik.") for p in anim_paths(obj))


def unsupported(obj: bpy.types.Object) -> Optional[str]:
    """Why this rig needs the frame-by-frame bake, or None when the fast path covers it."""
    s = settings(obj)
    pbs = obj.pose.bones
    if not any(lb.enabled and limb_is_usable(obj, lb) for lb in s.limbs):
        return "no limb is enabled"  # nothing to solve: nothing to vectorise
    for lb in s.limbs:
        if not (lb.enabled and limb_is_usable(obj, lb)):
            continue
        names = [b.bone for b in lb.bones if b.bone]
        if len(names) != 2 or not lb.end_bone:
            return f"limb {lb.name!r} is not a two-bone chain with an end bone"
        if any(rig.limits_of(pbs[n]) is not None for n in names + [lb.end_bone]):
            return f"limb {lb.name!r} has IK limits"
    return None


# ------------------------------------------------------------------------------------------ the rig


@dataclass
class _Limb:
    index: int
    name: str
    kind: str
    chain: tuple[int, int]  # pose-bone indices
    end: int
    toe: int  # -1 without
    pole_bone: int
    heel: np.ndarray  # heel point in the end bone's frame
    toe_length: float
    ray_length: float
    align: bool
    max_align: float
    use_target_rotation: bool
    pole_object: Any = None
    target_object: Any = None
    target_bone: str = ""
    auto_pole: bool = False
    rest_length: float = 0.0  # chain length at rest, armature units
    lock: Optional[dict[str, np.ndarray]] = None  # foot locking per frame (`contacts.locks_over`)
    use_lock: bool = True
    static_target: bool = False  # not animated, parented or constrained: read once
    static_pole: bool = False
    weights: Optional[np.ndarray] = None
    targets: Optional[np.ndarray] = None  # (N, 4, 4) world target matrices
    poles: Optional[np.ndarray] = None  # (N, 3)


@dataclass
class BatchRig:
    """Everything `plant_rig` reads, for every frame of a bake, and the computation over all of them."""

    obj: bpy.types.Object
    terrain: Optional[Terrain]
    frames: int
    first: int = 1  # frame number of the first frame
    fps: float = 24.0
    # Rows read before and after the frames wanted (`context_frames`), which `compute` leaves out of what
    # it returns: the frames wanted then come out as they do in any longer range.
    context: int = 0
    bone_index: dict[str, int] = field(default_factory=dict)
    limbs: list[_Limb] = field(default_factory=list)

    def __post_init__(self) -> None:
        obj, n = self.obj, self.frames
        s = settings(obj)
        pbs = obj.pose.bones
        self.bone_index = {pb.name: i for i, pb in enumerate(pbs)}
        self.count = len(pbs)
        self.pelvis = self.bone_index.get(s.pelvis_bone, -1) if s.body_follow else -1
        self.floor = s.floor_height
        self.softness = s.softness
        idx = self.bone_index
        for i, lb in enumerate(s.limbs):
            if not (lb.enabled and limb_is_usable(obj, lb)):
                continue
            names = [b.bone for b in lb.bones if b.bone]
            toe = idx.get(lb.toe_bone, -1) if lb.toe_bone else -1
            self.limbs.append(_Limb(
                i, lb.name, lb.kind, (idx[names[0]], idx[names[1]]), idx[lb.end_bone], toe,
                idx.get(lb.pole_bone, -1) if lb.pole_mode == "BONE" else -1,
                np.array(heel_local(obj, lb.end_bone, lb.foot_offset)),
                obj.data.bones[lb.toe_bone].length if toe >= 0 else 0.0,
                lb.ray_length, lb.align_to_normal, lb.max_align_angle, lb.use_target_rotation,
                pole_object=lb.pole_object if lb.pole_mode == "OBJECT" else None,
                target_object=lb.target_object, target_bone=lb.target_bone,
                weights=np.empty(n), targets=np.empty((n, 4, 4)) if lb.target_object is not None else None,
                poles=np.empty((n, 3)) if (lb.pole_mode == "OBJECT" and lb.pole_object is not None) else None,
            ))
        for lb in self.limbs:
            prop = s.limbs[lb.index]
            lb.auto_pole = prop.pole_mode == "AUTO"
            lb.rest_length = sum(obj.data.bones[b.bone].length for b in prop.bones if b.bone)
            if lb.kind == "FOOT":
                placed = None
                if self.terrain is not None and not object_moves(obj):
                    placed = placed_locks(obj, prop, self.terrain, rest_leg_length(obj, _names(prop)))
                lb.lock = locks_over(prop, self.first, n, self.fps, placed)
                lb.use_lock = prop.use_lock
            lb.static_target = _static(lb.target_object) and not lb.target_bone
            lb.static_pole = _static(lb.pole_object)
        used = {self.pelvis} | {b for lb in self.limbs for b in (*lb.chain, lb.end, lb.toe, lb.pole_bone)}
        self.used = np.array(sorted(u for u in used if u >= 0), dtype=np.int64)
        self.slot = {b: k for k, b in enumerate(self.used)}
        k = len(self.used)
        self.mw = np.empty((n, 4, 4))
        self.matrix = np.empty((n, k, 4, 4))
        self.quat = np.empty((n, k, 4))
        self.euler = np.empty((n, k, 3))
        self.aa = np.empty((n, k, 4))
        self.loc = np.empty((n, k, 3))
        self.scale = np.empty((n, k, 3))
        self.modes = [pbs[int(b)].rotation_mode for b in self.used]
        self.has_basis = self.pelvis >= 0
        # Read per frame only what can change and is needed: matrices, the rotation channels of the
        # modes in use, the pelvis location, and scales only when something animates them.
        modes = set(self.modes)
        reads = [("matrix", self.matrix, 16)]
        if "QUATERNION" in modes:
            reads.append(("rotation_quaternion", self.quat, 4))
        if "AXIS_ANGLE" in modes:
            reads.append(("rotation_axis_angle", self.aa, 4))
        if modes - {"QUATERNION", "AXIS_ANGLE"}:
            reads.append(("rotation_euler", self.euler, 3))
        self.scale_animated = _scale_animated(obj)
        if self.scale_animated:
            reads.append(("scale", self.scale, 3))
        self._reads = []
        for name, dest, size in reads:
            buf = np.empty(self.count * size, dtype=np.float32)
            self._reads.append((name, buf, buf.reshape(self.count, size), dest))
        self._static_done = False
        # The armature object itself not animated, parented or constrained: its matrix is read once.
        self.static_object = not object_moves(obj)
        self._settings = s
        self._animated_weights = _weights_animated(obj)
        # Set by `compute`: per frame, what the pelvis's speed limit changed (never above 0), or None.
        self.pelvis_delta: Optional[np.ndarray] = None
        # Per foot (by its index in the settings' limbs): what `swing_smoothing` changed in its target's
        # height, per frame (`compute`).
        self.foot_delta: dict[int, np.ndarray] = {}

    # -- the sweep: one call per frame

    def read(self, row: int) -> None:
        obj = self.obj
        pbs = obj.pose.bones
        used = self.used
        if row == 0 or not self.static_object:
            self.mw[row] = obj.matrix_world
        else:
            self.mw[row] = self.mw[0]
        for name, buf, view, dest in self._reads:
            pbs.foreach_get(name, buf)
            dest[row] = view[used].reshape(dest.shape[1:])
        if self.pelvis >= 0:
            self.loc[row, self.slot[self.pelvis]] = pbs[self.pelvis].location
        if not self._static_done:
            # Values nothing animates: read once (scales, rotation channels of modes not read per frame).
            for name, dest, size in (("scale", self.scale, 3), ("rotation_quaternion", self.quat, 4),
                                     ("rotation_axis_angle", self.aa, 4), ("rotation_euler", self.euler, 3),
                                     ("location", self.loc, 3)):
                if any(r[0] == name for r in self._reads):
                    continue
                buf = np.empty(self.count * size, dtype=np.float32)
                pbs.foreach_get(name, buf)
                dest[:] = buf.reshape(self.count, size)[used]
            self._static_done = True
        limbs = self._settings.limbs
        for lb in self.limbs:
            assert lb.weights is not None
            if self._animated_weights or row == 0:
                lb.weights[row] = limbs[lb.index].weight
            else:
                lb.weights[row] = lb.weights[0]
            if lb.targets is not None and (row == 0 or not lb.static_target):
                t = lb.target_object
                m = t.matrix_world
                if lb.target_bone and t.type == "ARMATURE" and t.pose and lb.target_bone in t.pose.bones:
                    m = m @ t.pose.bones[lb.target_bone].matrix
                lb.targets[row] = m
            elif lb.targets is not None:
                lb.targets[row] = lb.targets[0]
            if lb.poles is not None:
                lb.poles[row] = lb.pole_object.matrix_world.translation if (row == 0 or not lb.static_pole) else lb.poles[0]

    # -- the computation

    def compute(self, chunk: int = 1024) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
        """Per driven bone and channel: (values (N, size), written (N,) bool). Computed in chunks, so memory
        stays bounded however long the bake: first every chunk's targets and pelvis offset, then the
        pelvis's speed limit over all frames at once (`pelvis_speed_limit`), then the solves."""
        slices = [self._slice(slice(start, min(self.frames, start + chunk))) for start in range(0, self.frames, chunk)]
        staged = [part._stage() for part in slices]
        self.pelvis_delta = None
        if self.pelvis >= 0 and PELVIS_SPEED > 0.0:
            raw = np.concatenate([st.offset for st in staged])
            moved = np.concatenate([st.moved for st in staged])
            step = np.concatenate([st.step for st in staged])
            offset = pelvis_speed_limit(raw, moved, step)
            # What the limit changed, per frame (never above 0): live preview's frame-by-frame fallback
            # applies it while the frame cache is rebuilt (`handlers.caches.pelvis`).
            self.pelvis_delta = np.where(moved, offset - raw, 0.0)
            at = 0
            for st in staged:
                st.offset = offset[at:at + len(st.offset)]
                at += len(st.offset)
        self._smooth_swings(staged)
        parts = [part._finish(st) for part, st in zip(slices, staged)]
        if len(parts) == 1:
            out = parts[0]
        else:
            out = {key: (np.concatenate([p[key][0] for p in parts]), np.concatenate([p[key][1] for p in parts]))
                   for key in parts[0]}
        if self.context <= 0:
            return out
        keep = slice(self.context, self.frames - self.context)
        if self.pelvis_delta is not None:
            self.pelvis_delta = self.pelvis_delta[keep]
        self.foot_delta = {k: v[keep] for k, v in self.foot_delta.items()}
        return {key: (values[keep], written[keep]) for key, (values, written) in out.items()}

    def _smooth_swings(self, staged: list[_Staged]) -> None:
        """Every foot's height between its contacts smoothed over all frames (`swing_smoothing`), in the
        staged plans; what it changed per frame is kept in `foot_delta` for live preview's fallback. The
        pelvis keeps the offset it found for the targets before (as `plant.plant_rig` does)."""
        self.foot_delta = {}
        if not staged or not staged[0].plans:
            return
        mw = self.mw
        up = mw[:, :3, 2] / np.linalg.norm(mw[:, :3, 2], axis=1)[:, None]
        for k, plan in enumerate(staged[0].plans):
            correction, floor, touch, pinned, leg = (np.concatenate([st.floors[k][i] for st in staged]) for i in range(5))
            shift = swing_change(correction, floor, touch, pinned, self.fps, leg)
            self.foot_delta[plan[0].index] = shift
            at = 0
            for st in staged:
                m = len(st.offset)
                p = list(st.plans[k])
                p[2] = p[2] + up[at:at + m] * shift[at:at + m, None]
                st.plans[k] = tuple(p)
                at += m

    def _slice(self, sl: slice) -> BatchRig:
        part = copy.copy(self)
        part.frames = sl.stop - sl.start
        for name in ("mw", "matrix", "quat", "euler", "aa", "loc", "scale"):
            setattr(part, name, getattr(self, name)[sl])
        part.limbs = []
        for lb in self.limbs:
            c = copy.copy(lb)
            c.weights = lb.weights[sl] if lb.weights is not None else None
            c.targets = lb.targets[sl] if lb.targets is not None else None
            c.poles = lb.poles[sl] if lb.poles is not None else None
            c.lock = {k: v[sl] for k, v in lb.lock.items()} if lb.lock is not None else None
            part.limbs.append(c)
        return part

    def _stage(self) -> _Staged:
        """Every foot's target and the pelvis offset, frame by frame (before the pelvis's speed limit)."""
        n = self.frames
        mw = self.mw
        up = mw[:, :3, 2] / np.linalg.norm(mw[:, :3, 2], axis=1)[:, None]
        base = mw[:, :3, 3] + mw[:, :3, 2] * self.floor
        world_scale = np.abs(np.linalg.norm(mw[:, :3, :3], axis=1)).mean(1)
        world, frame = self._frames()

        feet = [lb for lb in self.limbs if lb.kind == "FOOT"]
        window = np.zeros(n)
        if self.pelvis >= 0 and feet and self.terrain is not None:
            leg_body = max(lb.rest_length for lb in feet) * world_scale
            window = self._body_ground(world, up, base, leg_body)
        plans, floors = [], []
        for lb in feet:
            if self.terrain is not None:
                plan, floor = self._plan_foot(lb, frame, world, up, base, world_scale, window)
                plans.append((lb, *plan))
                floors.append(floor)
        offset = np.zeros(n)
        moved = np.zeros(n, dtype=bool)
        if self.pelvis >= 0 and plans:
            # `plant.plant_rig`: the mean of the feet's support (the terrain under the body where unplanned).
            support = np.mean([np.where(p[1], p[-1], window) for p in plans], 0)
            offset, moved = self._reach_drop([p[:-1] for p in plans], support, up)
        step = pelvis_step(max(lb.rest_length for lb in feet), world_scale, self.fps) if feet else np.inf
        return _Staged(plans, floors, offset, moved, np.broadcast_to(step, (n,)))

    def _finish(self, staged: _Staged) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
        """The pelvis moved by its offset and every limb solved (`plant_rig`'s solves)."""
        n = self.frames
        mw = self.mw
        up = mw[:, :3, 2] / np.linalg.norm(mw[:, :3, 2], axis=1)[:, None]
        _world, frame = self._frames()
        rots = self._rotations()
        arm = self.arm
        plans, offset, moved = staged.plans, staged.offset, staged.moved
        shift = up * offset[:, None] if self.pelvis >= 0 else np.zeros((n, 3))

        out: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        pbs = self.obj.pose.bones
        if self.pelvis >= 0:
            p = self.slot[self.pelvis]
            basis = np.zeros((n, 4, 4))
            basis[:, :3, :3] = qmat(rots[:, p]) * self.scale[:, p][:, None, :]
            basis[:, :3, 3] = self.loc[:, p]
            basis[:, 3, 3] = 1.0
            parent = arm[:, p] @ affine_inv(basis)
            arm_delta = np.einsum("nij,nj->ni", affine_inv(mw)[:, :3, :3], up * offset[:, None])
            local = np.einsum("nij,nj->ni", affine_inv(parent)[:, :3, :3], arm_delta)
            loc = np.where(moved[:, None], self.loc[:, p] + local, self.loc[:, p])
            out[(pbs[self.pelvis].name, "location")] = (loc, moved)

        for lb, planned, target, rotation, _hip, _leg, _e, _s in plans:
            self._solve(lb, frame, rots, shift, target, rotation, planned, out, soft=True)
        for lb in self.limbs:
            if lb.kind == "FOOT" or lb.targets is None:
                continue
            tq = mat_to_quat(lb.targets)
            self._solve(lb, frame, rots, shift, lb.targets[:, :3, 3], tq if lb.use_target_rotation else None,
                        np.ones(n, dtype=bool), out, soft=False, pole_shift=False)
        return out

    def _frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Every used bone's world matrix and `rig.bone_frame` (both (N, k, 4, 4)); sets `arm`, the bones'
        armature-space matrices."""
        mw = self.mw
        sinv = np.zeros(self.scale.shape[:2] + (4, 4))
        safe = np.where((self.scale != 0.0) & np.isfinite(self.scale), self.scale, 1.0)
        for axis in range(3):
            sinv[..., axis, axis] = 1.0 / safe[..., axis]
        sinv[..., 3, 3] = 1.0
        arm = np.swapaxes(self.matrix, -1, -2)  # foreach_get gives matrices column by column
        self.arm = arm
        world = mw[:, None] @ arm
        return world, (world if np.all(self.scale == 1.0) else world @ sinv)

    def _rotations(self) -> np.ndarray:
        """Every used bone's rotation channels as quaternions (N, k, 4), whatever its rotation mode."""
        return np.stack([channel_quat(m, self.quat[:, j], self.euler[:, j], self.aa[:, j])
                         for j, m in enumerate(self.modes)], 1)

    def _plan_foot(self, lb: _Limb, frame, world, up, base, world_scale, window):  # type: ignore[no-untyped-def]
        s = self.slot
        f0, f1 = frame[:, s[lb.chain[0]]], frame[:, s[lb.chain[1]]]
        hip, knee = f0[:, :3, 3], f1[:, :3, 3]
        ankle = world[:, s[lb.end], :3, 3]
        leg = np.linalg.norm(knee - hip, axis=1) + np.linalg.norm(ankle - knee, axis=1)
        leg = np.maximum(leg, 1e-12)
        ext = np.linalg.norm(ankle - hip, axis=1) / leg  # how straight the animation has the leg
        reach = lb.ray_length * world_scale if lb.ray_length > 0.0 else leg
        end_frame = frame[:, s[lb.end]]
        soles = [xform(end_frame, lb.heel)]
        if lb.toe >= 0:
            soles.append(xform(world[:, s[lb.toe]], np.array([0.0, lb.toe_length, 0.0])))
        heights = np.stack([np.einsum("ni,ni->n", p - base, up) for p in soles], 1)
        lifted = np.maximum(0.0, heights.min(1))  # `plant._plan_foot`
        arc = None
        anchored = np.zeros(self.frames, dtype=bool)  # the ground (almost) wholly from the contacts around
        w_all, ground_support = np.zeros(self.frames), np.zeros(self.frames)
        lk = lb.lock
        if lk is not None and (lk["weight"].any() or lk["down"].any() or lk["offset"].any() or lk["rise"].any()):
            # Foot locking (`plant._plan_foot`): to the lock point in a contact, by the carried correction
            # between contacts, and the sole down onto the ground.
            pinned = lk["weight"] > 0.0
            d = np.where(pinned[:, None], xform(self.mw, lk["point"]) - ankle,
                         np.einsum("nij,nj->ni", self.mw[:, :3, :3], lk["offset"]))
            move = d - up * np.einsum("ni,ni->n", d, up)[:, None]
            ankle = ankle + move
            soles = [p + move for p in soles]
            heights = heights * (1.0 - lk["down"])[:, None] + (lk["rise"] * world_scale)[:, None]
        clearance = np.maximum(0.0, heights.min(1))
        lift = up * window[:, None]
        under = self._cast(ankle + lift, reach, up)
        planned = under.hit
        ground = under.height - np.einsum("ni,ni->n", base, up)
        if lk is not None and (lk["w0"].any() or lk["w1"].any()):
            # `plant._plan_foot`: the ground height from the contacts around.
            blended = np.zeros(self.frames)
            used = np.zeros(self.frames)
            for key in ("0", "1"):
                w = lk["w" + key]
                at = xform(self.mw, lk["a" + key])  # the ray from the contact's own height, whatever the foot's
                p = at - up * np.einsum("ni,ni->n", at - ankle, up)[:, None]
                hit = self._cast(at + lift, reach, up)
                ok = hit.hit & (w > 0.0)
                hh = hit.height - np.einsum("ni,ni->n", base, up)
                blended += np.where(ok, w * np.nan_to_num(hh), 0.0)
                used += np.where(ok, w, 0.0)
                if key == "0":
                    ga = np.where(ok, hh, np.nan)
                    pa = p
                else:
                    gb = np.where(ok, hh, np.nan)
                    pb = p
            ground = blended + (1.0 - used) * ground
            anchored = used >= ANCHORED - 1e-9
            w_all, ground_support = lk["w0"] + lk["w1"], ground.copy()
            two = (lk["w0"] > 0.0) & (lk["w1"] > 0.0) & (used >= 1.0 - 1e-9)
            if two.any():
                arc = self._swing_line(two, pa, pb, ga, gb, lk["w1"], lk["gap"], ankle, soles, up, base, leg)
        tilt = np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (self.frames, 1))
        if lb.align:
            contact = np.clip(1.0 - clearance / (ALIGN_FADE * leg), 0.0, 1.0)
            normal = np.where(planned[:, None], under.normal, up)
            full = q_between(up, normal)
            angle = 2.0 * np.arccos(np.clip(np.abs(full[:, 0]), 0.0, 1.0))
            allowed = np.minimum(angle, lb.max_align)
            frac = np.where((angle > 1e-9) & (contact > 0.0), contact * allowed / np.where(angle > 1e-9, angle, 1.0), 0.0)
            tilt = qslerp(np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (self.frames, 1)), full, frac)
        target = ankle + up * np.where(planned, ground, 0.0)[:, None]
        def needs(turn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            """`plant._plan_foot`'s deficits: (N, sole points), -inf where a ray missed; with the clearance,
            without it (what the sole points need over the terrain right under them), and what they need to
            touch it."""
            deficits, bare, touching = [], [], []
            for p, h in zip(soles, heights.T):
                m = target + qrot(turn, p - ankle)
                below = self._cast(m, reach, up)  # m is already at the ground's height
                bh = below.height - np.einsum("ni,ni->n", base, up)
                extra = 0.0
                if lk is not None and lk["swing"].any():
                    # `plant._plan_foot`: a lifted foot keeps clear of the terrain around it.
                    rest = lb.rest_length * world_scale
                    rise = self._clearance(m, up, rest) - np.einsum("ni,ni->n", base, up) - bh
                    gate = np.maximum(smoothstep(lifted / (SWING_LIFT * leg)), lk["free"])
                    extra = lk["swing"] * gate * clearance_extra(rise, rest)
                need = bh + np.maximum(0.0, h) - np.einsum("ni,ni->n", m - base, up)
                deficits.append(np.where(below.hit, need + extra, -np.inf))
                bare.append(np.where(below.hit, need, -np.inf))
                touching.append(np.where(below.hit, bh - np.einsum("ni,ni->n", m - base, up), -np.inf))
            return np.stack(deficits, 1), np.stack(bare, 1), np.stack(touching, 1)

        turn = tilt
        found, bare, touching = needs(turn)
        if len(soles) > 1:
            # `plant._toe_pitch`: a foot in the air turns toe-up rather than lift its ankle for its toe.
            loose = (lk["weight"] == 0.0) & (lk["pitch"] > 0.0) if lk is not None else np.ones(self.frames, dtype=bool)
            pitch, has = _toe_pitch(qrot(tilt, soles[0] - ankle), qrot(tilt, soles[-1] - ankle),
                                    found[:, 0], found[:, -1], up, lk["pitch"] if lk is not None else 1.0)
            sel = loose & has
            if sel.any():
                turn = np.where(sel[:, None], qmul(pitch, tilt), tilt)
                found, bare, touching = needs(turn)
        best = np.max(found, 1)
        if arc is not None:

            # `plant._plan_foot`: in mid-swing each sole point keeps its height above the swing's line.
            idx, start, direction, plen, h0, h1, raise_, ramp = arc
            overs = []
            for p, h in zip(soles, heights.T):
                m = (target + qrot(turn, p - ankle))[idx]
                x = np.einsum("ni,ni->n", m - start, direction) / plen  # `plant.SwingLine.height`
                line = h0 + (h1 - h0) * x + raise_
                overs.append(line + np.maximum(0.0, h[idx]) - np.einsum("ni,ni->n", m - base[idx], up[idx]))
            over = np.max(np.stack(overs, 1), 1)
            under_only = np.where(np.isfinite(best[idx]), best[idx], over)
            free = lk["free"][idx] if lk is not None else 0.0  # `Lock.free`
            w = ramp * np.maximum(smoothstep(lifted[idx] / (SWING_LIFT * leg[idx])), free)
            best[idx] = np.maximum(best[idx], w * over + (1.0 - w) * under_only)
        floor = np.max(bare, 1)  # `plant._plan_foot`'s floor: the sole points their height over the terrain under them
        touch = np.max(touching, 1)  # and touching it
        target = target + up * np.where(np.isfinite(best), best, 0.0)[:, None]
        rotation = qmul(turn, mat_to_quat(end_frame))
        # `plant._plan_foot`'s support: the ground from the contacts around, lowered as the foot is lowered
        # under its animated height (the hover it carries between contacts), faded into the terrain under the
        # body without contacts around.
        held = np.minimum(1.0, w_all)
        lowered = np.where(lk["weight"] > 0.0, lifted, -lk["rise"] * world_scale) if lk is not None else 0.0
        support = held * (ground_support - lowered) + (1.0 - held) * window
        down = (lifted <= SOLE_DOWN * leg) & ~(best > floor + SOLE_DOWN * leg)  # `plant._plan_foot`
        pinned = ~planned | ~np.isfinite(best) | ~anchored | down
        pinned |= lk["weight"] > 0.0 if lk is not None and lb.use_lock else True
        return (planned, target, rotation, hip, leg, ext, support), (best, floor, touch, pinned, leg)

    def _cast(self, points: np.ndarray, reach: np.ndarray, up: np.ndarray):  # type: ignore[no-untyped-def]
        """Down-rays grouped by the armature's up axis (one group unless the armature turns)."""
        assert self.terrain is not None
        reach = np.broadcast_to(reach, (len(points),))
        if np.all(up == up[0]):  # the usual case: the armature does not turn
            return self.terrain.down_rays(up[0]).cast(points, reach)
        uniq, inv = np.unique(np.round(up, 12), axis=0, return_inverse=True)
        hit = np.zeros(len(points), dtype=bool)
        height = np.full(len(points), np.nan)
        normal = np.full((len(points), 3), np.nan)
        for g, u in enumerate(uniq):
            sel = np.flatnonzero(inv.ravel() == g)
            r = self.terrain.down_rays(u).cast(points[sel], reach[sel])
            hit[sel], height[sel], normal[sel] = r.hit, r.height, r.normal
        return DownHits(hit, height, normal)

    def _clearance(self, points: np.ndarray, up: np.ndarray, leg: np.ndarray) -> np.ndarray:
        """The clearance field's height under `points` (`heightfield.ClearanceField`), per row's up axis
        and leg length."""
        assert self.terrain is not None
        leg = np.broadcast_to(np.asarray(leg, dtype=np.float64), (len(points),))
        if np.all(up == up[0]) and np.all(leg == leg[0]):  # the usual case: one field for every row
            return self.terrain.clearance(up[0], float(leg[0])).height(points)  # type: ignore[no-any-return]
        out = np.full(len(points), -np.inf)
        keys = np.column_stack((np.round(up, 12), leg))  # `Terrain.clearance` rounds them for its cache
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        for g, key in enumerate(uniq):
            sel = np.flatnonzero(inv.ravel() == g)
            out[sel] = self.terrain.clearance(key[:3], float(key[3])).height(points[sel])
        return out

    def _swing_line(self, rows, a, b, ga, gb, t, gap, ankle, soles, up, base, leg):  # type: ignore[no-untyped-def]
        """`plant._swing_line` for the frames in `rows` whose ends hit the terrain: (rows' indices, start,
        direction, length, h0, h1, lift, ramp), one entry per row."""
        path = b - a
        plen = np.linalg.norm(path, axis=1)
        idx = np.flatnonzero(rows & (plen > 0.0) & np.isfinite(ga) & np.isfinite(gb))
        a, ga, gb, t, plen = a[idx], ga[idx], gb[idx], t[idx], plen[idx]
        path, u, lg = path[idx], up[idx], leg[idx]
        direction = path / plen[:, None]
        along = np.stack([np.einsum("ni,ni->n", p[idx] - ankle[idx], direction) for p in soles], 1)
        front = np.maximum(0.0, along.max(1)) / plen  # `plant._swing_line`: the foot's extent along the path
        back = np.maximum(0.0, -along.min(1)) / plen
        here = np.clip(np.einsum("ni,ni->n", ankle[idx] - a, direction) / plen, 0.0, 1.0)
        width = ARC_WIDTH * lg
        base_h = np.einsum("ni,ni->n", base[idx], u)
        # Rays from a leg above the higher end of the swing: the same hits whatever the foot's height.
        top = np.maximum(ga, gb) + lg
        rc = np.abs(gb - ga) + 2.0 * lg
        need = np.zeros(len(idx))
        for k in range(1, ARC_SAMPLES + 1):
            tau = k / (ARC_SAMPLES + 1)
            near = arc_window(np.maximum(0.0, np.maximum(tau - here - front, here - back - tau)) * plen / width)
            q = a + path * tau
            line = ga + (gb - ga) * tau  # the line at the sample's own place
            start = q + u * (base_h + top - rc - np.einsum("ni,ni->n", q, u))[:, None]  # rays from `top` down
            hit = self._cast(start, rc, u)
            hh = hit.height - base_h
            need = np.where(hit.hit & (near > 0.0), np.maximum(need, (hh - line) * near), need)
        return idx, a, direction, plen, ga, gb, need, arc_ramp(t, gap[idx], self.fps) * smoothstep(plen / (ARC_PATH * lg))

    def _body_ground(self, world, up, base, leg):  # type: ignore[no-untyped-def]
        """`plant._body_ground` over all frames (0 where the disk misses the terrain)."""
        n = self.frames
        assert self.terrain is not None
        centre = world[:, self.slot[self.pelvis], :3, 3]
        radius = BODY_RADIUS * leg
        side = np.empty((n, 3))
        if np.all(up == up[0]):
            side[:] = Vector(up[0]).orthogonal().normalized()
        else:
            for i in range(n):
                side[i] = Vector(up[i]).orthogonal().normalized()
        fwd = np.cross(up, side)
        samples = [centre]
        for ring in (1, 2, 3):
            r = radius * ring / 3.0
            for k in range(12):
                a = 2.0 * math.pi * (k + 0.5 * ring) / 12.0
                samples.append(centre + (side * math.cos(a) + fwd * math.sin(a)) * r[:, None])
        pts = np.stack(samples, 1)  # (N, 37, 3)
        m = pts.shape[1]
        ups = np.repeat(up, m, axis=0)
        flat = pts.reshape(-1, 3)
        h = np.einsum("ni,ni->n", flat, ups)
        if np.all(up == up[0]):
            low, high = self.terrain.extent(up[0])
            reach = np.maximum(np.abs(high - h), np.abs(h - low)) + np.repeat(leg, m)
        else:
            ext = np.array([self.terrain.extent(u) for u in ups])
            reach = np.maximum(np.abs(ext[:, 1] - h), np.abs(h - ext[:, 0])) + np.repeat(leg, m)
        hits = self._cast(flat, reach, ups)
        hh = hits.height.reshape(n, -1) - np.einsum("ni,ni->n", base, up)[:, None]
        got = hits.hit.reshape(n, -1)
        count = got.sum(1)
        return np.where(count > 0, np.where(got, hh, 0.0).sum(1) / np.maximum(count, 1), 0.0)

    def _reach_drop(self, plans, window, up):  # type: ignore[no-untyped-def]
        """`plant.soft_reach_drop` over all frames: (offset, whether the pelvis moves)."""
        drops = [self._reach_drop_at(plans, window, up, SOFT_REACH * (k / (SOFT_STEPS - 1) - SOFT_LOOSE))
                 for k in range(SOFT_STEPS)]
        return sum(d[0] for d in drops) / len(drops), drops[0][1]

    def _reach_drop_at(self, plans, window, up, tighten):  # type: ignore[no-untyped-def]
        """`plant._reach_drop` over all frames: (offset, whether the pelvis moves)."""
        any_plan = np.zeros(self.frames, dtype=bool)
        offset = window.copy()
        for _lb, planned, target, _r, hip, lg, ext in plans:
            any_plan |= planned
            hp = hip + up * offset[:, None]
            reach_l = (np.minimum(REACH_MARGIN, ext + EXT_SLACK) - tighten) * lg
            d = target - hp
            dl = np.linalg.norm(d, axis=1)
            b = np.einsum("ni,ni->n", d, up)
            disc = b * b - (dl * dl - reach_l * reach_l)
            x = np.where(disc >= 0.0, -b - np.sqrt(np.maximum(disc, 0.0)), -b)
            offset = np.where(planned & (dl > reach_l) & (x > 0.0), offset - x, offset)
        return np.where(any_plan, offset, 0.0), any_plan

    def _solve(self, lb: _Limb, frame, rots, shift, target, target_rot, active, out, soft: bool,  # type: ignore[no-untyped-def]
               pole_shift: bool = True) -> None:
        """`solvers.solve_limb` (two bones, no limits) over the frames where the limb is `active`."""
        s = self.slot
        n = self.frames
        move = np.zeros((n, 4, 4))
        move[:, :3, 3] = shift
        f0 = frame[:, s[lb.chain[0]]] + move
        f1 = frame[:, s[lb.chain[1]]] + move
        end_frame = frame[:, s[lb.end]] + move
        r0, r1, r_end = rots[:, s[lb.chain[0]]], rots[:, s[lb.chain[1]]], rots[:, s[lb.end]]
        tip = end_frame[:, :3, 3]
        hip, knee = f0[:, :3, 3], f1[:, :3, 3]
        pole = None
        if lb.poles is not None:
            pole = lb.poles + (shift if pole_shift else 0.0)
        elif lb.pole_bone >= 0:
            pole = xform(self.mw, self.arm[:, s[lb.pole_bone], :3, 3]) + (shift if pole_shift else 0.0)
        if pole is None and lb.auto_pole:
            pole = _fk_plane_pole(hip, knee, tip, end_frame, foot=lb.kind == "FOOT")
        assert lb.weights is not None
        weight = np.clip(np.nan_to_num(lb.weights, nan=0.0), 0.0, 1.0)
        chain = np.linalg.norm(knee - hip, axis=1) + np.linalg.norm(tip - knee, axis=1)
        goal = target
        if soft and self.softness > 0.0:
            off = goal - hip
            dist = np.linalg.norm(off, axis=1)
            eased = np.array([soft_distance(float(d), float(c), self.softness) for d, c in zip(dist, chain)])
            goal = np.where((dist > 0)[:, None], hip + off * (eased / np.where(dist > 0, dist, 1.0))[:, None], goal)
        new_knee, new_tip, _case = solve_two_bone_batch(hip, knee, tip, goal, pole)
        inv0, inv1 = affine_inv(f0), affine_inv(f1)
        cl0 = xform(inv0, knee)
        cl1 = xform(inv1, tip)
        turn0 = q_between(cl0, xform(inv0, new_knee))
        q0 = qnormalize(qmul(r0, turn0))
        rot4 = np.zeros((n, 4, 4))
        rot4[:, :3, :3] = qmat(turn0)
        rot4[:, 3, 3] = 1.0
        delta = f0 @ rot4 @ inv0
        cur1 = delta @ f1
        turn1 = q_between(cl1, xform(affine_inv(cur1), new_tip))
        q1 = qnormalize(qmul(r1, turn1))
        end_q = r_end
        if target_rot is not None:
            rot4b = np.zeros((n, 4, 4))
            rot4b[:, :3, :3] = qmat(turn1)
            rot4b[:, 3, 3] = 1.0
            new_end = cur1 @ rot4b @ inv1 @ end_frame
            turn = qmul(qconj(mat_to_quat(new_end)), qnormalize(target_rot))
            end_q = qmul(r_end, turn)
        blend = weight < 1.0
        if blend.any():
            q0 = np.where(blend[:, None], qslerp(r0, q0, weight), q0)
            q1 = np.where(blend[:, None], qslerp(r1, q1, weight), q1)
            end_q = np.where(blend[:, None], qslerp(r_end, end_q, weight), end_q)
        ok = active & (weight > 0.0) & np.isfinite(goal).all(1)
        for b, q in ((lb.chain[0], q0), (lb.chain[1], q1), (lb.end, end_q)):
            self._emit(b, q, ok, out)

    def _emit(self, bone: int, q: np.ndarray, written: np.ndarray, out) -> None:  # type: ignore[no-untyped-def]
        """Channel values in the bone's own rotation mode, continuous with the FK value it replaces."""
        j = self.slot[bone]
        mode = self.modes[j]
        name = self.obj.pose.bones[bone].name
        if mode == "QUATERNION":
            fk = self.quat[:, j]
            q = np.where((np.einsum("ni,ni->n", fk, q) < 0.0)[:, None], -q, q)
            out[(name, "rotation_quaternion")] = (np.where(written[:, None], q, fk), written)
        elif mode == "AXIS_ANGLE":
            vals = self.aa[:, j].copy()
            for i in np.flatnonzero(written):
                axis, angle = Quaternion(q[i]).to_axis_angle()
                vals[i] = (angle, axis[0], axis[1], axis[2])
            out[(name, "rotation_axis_angle")] = (vals, written)
        else:
            vals = self.euler[:, j].copy()
            for i in np.flatnonzero(written):
                vals[i] = Quaternion(q[i]).to_euler(mode, Euler(self.euler[i, j]))
            out[(name, "rotation_euler")] = (vals, written)
