"""Planting a rig on its terrain over a range of frames: the one implementation the bake, live preview's
frame cache and live preview's one-frame fallback (`plant_frame`) share.

`reader.RigReader` reads the rig into arrays (one `foreach_get` per channel and frame); `model` plans
every foot and the pelvis over all frames at once (down-rays in bulk), then the pelvis's speed limit and
the feet's smoothing between contacts, which need every frame; here every limb is then solved: two-bone
chains without IK limits in closed form over all frames (`solvers.solve_two_bone_batch`), any other
chain frame by frame (`solvers.solve_limb`, FABRIK and CCD within the limits), and the result turned into
channel values in each bone's own rotation mode, continuous with the FK values they replace.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
from mathutils import Euler, Matrix, Quaternion, Vector

from ..solvers import ChainPose, solve_limb
from ..solvers.rotations import (
    affine_inv,
    channel_quat,
    linear_inv,
    mat_to_quat,
    norm,
    q_between,
    qconj,
    qmat,
    qmul,
    qnormalize,
    qslerp,
    xform,
)
from ..solvers.soft import soft_distance
from ..solvers.two_bone import solve_two_bone_batch
from . import model
from .model import Foot, FootPlan, Placement, Rays
from .reader import LimbSpec, RigReader
from .state import caches
from .tuning import PELVIS_SPEED

if TYPE_CHECKING:
    import bpy

    from .checks import Channel
    from .ground import Terrain

# Most rows (frames x rigs) whose feet are planned in one pass (`_stage_all`): a crowd's rigs, a hundred at
# a time over a hundred frames, without the memory of one pass over a long range.
STACK_ROWS = 12_000
Channels = dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]  # (bone, property) -> (values (N, size), written (N,))
Poles = dict[int, tuple[Optional[np.ndarray], bool]]  # per job (by id): its pole per frame or None, and whether automatic


@dataclass
class Carried:
    """What the pelvis's speed limit and the feet's smoothing did to the frames planted, per frame, when they
    were last computed over a whole range: live preview's fallback, planting one frame, applies these."""

    pelvis: np.ndarray  # added to the pelvis offset (never above 0)
    feet: dict[int, np.ndarray]  # per foot (by its index in the settings' limbs), added to its target's height
    # Per foot (by limb index): how fast its front moved along the ground (`Foot.front_speed`, read over many
    # frames), in place of the one frame's (none: still).
    front: dict[int, np.ndarray] = field(default_factory=dict)


@dataclass
class _Staged:
    """One chunk's foot plans and pelvis offset, between `_stage_all` and `_finish_all`."""

    plans: list[tuple[LimbSpec, FootPlan]]
    offset: np.ndarray
    moved: np.ndarray
    step: np.ndarray
    at: Placement
    frame: np.ndarray  # `_frames`' bone frames
    root: Optional[np.ndarray] = None  # (N, 3) the pelvis bone's head, world space, as animated


@dataclass
class _Begun:
    """One chunk between `BatchRig._stage_begin` and `_stage_end`: what its feet's plan reads."""

    rig: BatchRig
    at: Placement
    frame: np.ndarray
    feet: list[LimbSpec]
    step: np.ndarray
    plan: list[Foot]  # each foot as `model.plan_feet` reads it
    centre: Optional[np.ndarray]  # (N, 3) the pelvis bone's head, world space, as animated (None: no pelvis)
    leg_body: Optional[np.ndarray]  # (N,) the longest leg, world units


@dataclass
class _Rows:
    """Two-bone limbs' rows for the closed-form solve (`BatchRig._closed_rows`, `_solve_closed_rows`): each
    limb's frames one after another."""

    f0: np.ndarray  # (R, 4, 4) the chain's first bone's frame (world), the pelvis's move in it
    f1: np.ndarray  # the second bone's
    end_frame: np.ndarray  # the end bone's
    r0: np.ndarray  # (R, 4) their rotation channels as quaternions
    r1: np.ndarray
    r_end: np.ndarray
    pole: Optional[np.ndarray]  # (R, 3) world, nan where a limb has none; None: no limb has one
    weight: np.ndarray  # (R,) in [0, 1]
    goal: np.ndarray  # (R, 3) the target, Soft IK's easing in it
    turned: np.ndarray  # (R,) bool: the end bone turned to `target_rot`
    target_rot: Optional[np.ndarray]  # (R, 4), or None: no limb turns its end bone
    active: np.ndarray  # (R,) bool: the rows solved


_Solved = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # rotations (chain 0, chain 1, end) and where written


@dataclass
class _Finishing:
    """One chunk between `BatchRig._finish_begin` and `_finish_end`."""

    out: Channels
    jobs: list[_Job]
    closed: list[_Job]  # solved in closed form, in `rows`
    rows: Optional[_Rows]
    frame: np.ndarray
    rots: np.ndarray
    shift: np.ndarray
    poles: Poles


@dataclass
class _Job:
    """A limb to solve toward its targets, in `BatchRig._finish_begin` and `_finish_end`."""

    limb: LimbSpec
    target: np.ndarray  # (N, 3) world
    target_rot: Optional[np.ndarray]  # (N, 4) the end bone's world rotation, or None: as the chain leaves it
    active: np.ndarray  # (N,) the frames solved (elsewhere the FK pose, nothing written)
    soft: bool  # Soft IK eases the target (a planned foot; not a hand's own target)
    pole_shift: bool  # the pelvis's move carries the limb's pole along


@dataclass
class RigResult:
    """What planting a frame did: the bones written, and per channel it changed (bone, property, the value
    before, the value after as the pose bone holds it)."""

    written: list[str] = field(default_factory=list)
    changed: list[tuple[str, str, tuple[float, ...], tuple[float, ...]]] = field(default_factory=list)


class BatchRig(RigReader):
    """A rig read over a range of frames (`RigReader`), and the computation over all of them."""

    def __init__(self, obj: bpy.types.Object, terrain: Optional[Terrain], frames: int, first: float = 1,
                 fps: float = 24.0, context: tuple[int, int] = (0, 0)):
        super().__init__(obj, terrain, frames, first, fps, context)
        # The terrain's ray engine, kept with the rig (live preview's fallback keeps the rig from frame to frame).
        self.rays = Rays(terrain) if terrain is not None else None
        # Set by `compute`: per frame, what the pelvis's speed limit changed (never above 0), or None.
        self.pelvis_delta: Optional[np.ndarray] = None
        # Per foot (by its index in the settings' limbs): what the smoothing changed in its target's height.
        self.foot_delta: dict[int, np.ndarray] = {}
        # Set by `compute` (`_front_speeds`): per foot (by limb index), `Foot.front_speed` over every row; and
        # what `Carried` gives in its place (live preview's fallback), or None.
        self.front_speed: dict[int, np.ndarray] = {}
        self.front_carried: Optional[dict[int, np.ndarray]] = None

    def compute(self, chunk: int = 1024, carried: Optional[Carried] = None) -> Channels:
        """Per driven bone and channel: (values (N, size), written (N,) bool). Computed in chunks, so memory
        stays bounded however long the range: first every chunk's targets and pelvis offset, then the
        pelvis's speed limit and the feet's smoothing over all frames at once (or what `carried` says they
        did), then the solves."""
        return compute_all([self], chunk, [carried])[0]

    def _chunks(self, chunk: int) -> list[tuple[BatchRig, int]]:
        """The rig's rows in chunks of `chunk` (`_slice`), with each one's first row."""
        return [(self._slice(slice(a, min(self.frames, a + chunk))), a) for a in range(0, self.frames, chunk)]

    def _settle(self, staged: list[_Staged], carried: Optional[Carried]) -> Optional[np.ndarray]:
        """`compute` once its chunks are staged (`_stage_all`): the pelvis's speed limit over all of them, in
        place; the rows the animation jumps to (`model.cuts`, None: not looked for), for the feet's
        smoothing (`_smooth_swings`). They are then finished (`_finish_all`, `_joined`)."""
        raw = np.concatenate([st.offset for st in staged])
        moved = np.concatenate([st.moved for st in staged])
        self.pelvis_delta = None
        # A cut in the animation (an NLA repeat or a loop snapping the body back): limits and smoothing hold
        # on either side of it, not across.
        cut = None
        if (self.detect_cuts and all(st.root is not None for st in staged) and staged
                and any(lb.kind == "FOOT" for lb in self.limbs)):
            rest = max(lb.rest_length for lb in self.limbs if lb.kind == "FOOT") * np.concatenate(
                [st.at.scale for st in staged])
            cut = model.cuts(np.concatenate([st.root for st in staged]), rest, self.fps)
        if self.pelvis >= 0 and (PELVIS_SPEED > 0.0 or carried is not None):
            if carried is not None:
                offset = np.where(moved, raw + carried.pelvis, raw)
            else:
                step = np.concatenate([st.step for st in staged])
                if cut is not None:  # no move to limit
                    step = np.where(cut, np.inf, step)
                offset = model.pelvis_speed_limit(raw, moved, step, self.fps)
            # What the limit changed, per frame (never above 0): live preview's fallback applies it while
            # the frame cache is rebuilt (`state.caches.pelvis`).
            self.pelvis_delta = np.where(moved, offset - raw, 0.0)
            at = 0
            for st in staged:
                st.offset = offset[at:at + len(st.offset)]
                at += len(st.offset)
        return cut

    def _joined(self, outs: list[Channels]) -> Channels:
        """The chunks' channels as one, less the rows read around the range."""
        out = outs[0] if len(outs) == 1 else {
            key: (np.concatenate([p[key][0] for p in outs]), np.concatenate([p[key][1] for p in outs])) for key in outs[0]}
        before, after = self.context
        if before <= 0 and after <= 0:
            return out
        keep = slice(before, self.frames - after)
        if self.pelvis_delta is not None:
            self.pelvis_delta = self.pelvis_delta[keep]
        self.foot_delta = {k: v[keep] for k, v in self.foot_delta.items()}
        self.front_speed = {k: v[keep] for k, v in self.front_speed.items()}
        return {key: (values[keep], written[keep]) for key, (values, written) in out.items()}

    def channel_values(self, out: Channels, channels: list[Channel]) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
        """Per channel, over the frames wanted (the rows read around them left out): (the values to write,
        the animation's own), the animation's where `compute` wrote nothing."""
        keep = slice(self.context[0], self.frames - self.context[1])
        fk = {"rotation_quaternion": self.quat, "rotation_euler": self.euler, "rotation_axis_angle": self.aa,
              "location": self.loc}
        values = {}
        for c in channels:
            key = (c.bone, c.prop)
            j: int = self.slot[self.obj.pose.bones.find(c.bone)]
            base = fk[c.prop][keep, j]
            values[key] = (out[key][0] if key in out else base, base)
        return values

    def _slice(self, sl: slice) -> BatchRig:
        """A view of rows `sl` (in float64) for one chunk of the computation."""
        part = copy.copy(self)
        part.frames = sl.stop - sl.start
        part.mw = self.mw[sl]
        for name in ("matrix", "quat", "euler", "aa", "loc", "scale"):
            setattr(part, name, getattr(self, name)[sl].astype(np.float64))
        if sl.start == 0 and sl.stop == len(self.mw):  # every row (one frame, a short range): the limbs as they are
            return part
        part.limbs = []
        for lb in self.limbs:
            c = copy.copy(lb)
            c.weights = lb.weights[sl] if lb.weights is not None else None
            c.targets = lb.targets[sl] if lb.targets is not None else None
            c.poles = lb.poles[sl] if lb.poles is not None else None
            part.limbs.append(c)
        return part

    def _stage_begin(self, start: int) -> _Staged | _Begun:
        """This chunk's part of `_stage_all` before the rays: its placement, frames and feet (`start`: the
        chunk's first row); the chunk's `_Staged` at once where there is nothing to plan."""
        n = self.frames
        at = Placement(self.mw, self.floor)
        world, frame = self._frames()
        feet = [lb for lb in self.limbs if lb.kind == "FOOT"]
        step = model.per_row(model.pelvis_step(max(lb.rest_length for lb in feet), at.scale, self.fps)
                             if feet else np.inf, n)
        if self.terrain is None or not feet:
            return _Staged([], np.zeros(n), np.zeros(n, dtype=bool), step, at, frame)
        # The ground under the body first: the feet look for the terrain around its height, so a clip that
        # walks far up a slope or a flight of stairs still finds the ground under every step.
        centre = leg_body = None
        if self.pelvis >= 0:
            centre = world[:, self.slot[self.pelvis], :3, 3]
            leg_body = max(lb.rest_length for lb in feet) * at.scale
        return _Begun(self, at, frame, feet, step, [self._foot(lb, world, frame, start) for lb in feet],
                      centre, leg_body)

    def _stage_end(self, begun: _Begun, window: np.ndarray, plans: list[FootPlan]) -> _Staged:
        """This chunk's part of `_stage_all` after the rays: the pelvis offset from the feet's plans (before
        the pelvis's speed limit)."""
        n = self.frames
        staged = list(zip(begun.feet, plans))
        offset, moved = np.zeros(n), np.zeros(n, dtype=bool)
        if self.pelvis >= 0:
            # The pelvis's ground: the mean of the ground each foot stands on or travels between (the terrain
            # under the body where a foot is not planned), lowered where a leg could not reach.
            support = np.add.reduce([np.where(p.planned, p.support, window) for _lb, p in staged], axis=0) / len(staged)
            offset, moved = model.soft_reach_drop([p for _lb, p in staged], support, begun.at.up, self.reach_margin)
        return _Staged(staged, offset, moved, begun.step, begun.at, begun.frame, begun.centre)

    def _foot(self, lb: LimbSpec, world: np.ndarray, frame: np.ndarray, start: int) -> Foot:
        """A foot limb's pose and settings as `model.plan_feet` reads them."""
        s = self.slot
        end_frame = frame[:, s[lb.end]]
        joints = [frame[:, s[b], :3, 3] for b in lb.chain] + [world[:, s[lb.end], :3, 3]]
        soles: list[np.ndarray] = []
        if lb.soles:  # every sole point at once (N, points, 3)
            at = xform(world[:, [s[b] for b, _p in lb.soles]], np.array([p for _b, p in lb.soles]))
            soles = [at[:, k] for k in range(len(lb.soles))]
        ball = world[:, s[lb.toe], :3, 3] if lb.toe >= 0 else (soles[lb.ball] if soles else None)
        return Foot(joints, end_frame, soles, lb.ray_length, lb.align, lb.max_align, lb.rest_length, lb.use_lock,
                    self.locks(lb, start, self.frames), ball=ball)

    def _finish_begin(self, staged: _Staged) -> _Finishing:
        """`_finish_all` for this chunk up to the closed-form solve: the pelvis moved by its offset, the limbs'
        jobs and poles, and the rows of its two-bone limbs (`_closed_rows`)."""
        n = self.frames
        mw = self.mw
        up, frame = staged.at.up, staged.frame
        rots = self._rotations()
        arm = self.arm
        offset, moved = staged.offset, staged.moved
        shift = up * offset[:, None] if self.pelvis >= 0 else np.zeros((n, 3))
        out: Channels = {}
        pbs = self.obj.pose.bones
        if self.pelvis >= 0:
            p = self.slot[self.pelvis]
            basis = np.zeros((n, 4, 4))
            basis[:, :3, :3] = qmat(rots[:, p]) * self.scale[:, p][:, None, :]
            basis[:, :3, 3] = self.loc[:, p]
            basis[:, 3, 3] = 1.0
            parent = arm[:, p] @ affine_inv(basis)
            arm_delta = np.einsum("nij,nj->ni", linear_inv(mw), shift)
            local = np.einsum("nij,nj->ni", linear_inv(parent), arm_delta)
            loc = np.where(moved[:, None], self.loc[:, p] + local, self.loc[:, p])
            out[(pbs[self.pelvis].name, "location")] = (loc, moved)
        jobs = [_Job(lb, plan.target, plan.rotation, plan.planned, soft=True, pole_shift=True)
                for lb, plan in staged.plans]
        for lb in self.limbs:
            if lb.kind == "FOOT" or lb.targets is None:
                continue
            tq = mat_to_quat(lb.targets) if lb.use_target_rotation else None
            jobs.append(_Job(lb, lb.targets[:, :3, 3], tq, np.ones(n, dtype=bool), soft=False, pole_shift=False))
        direct = [job for job in jobs if job.limb.control < 0]
        poles = self._poles(direct, frame, shift)
        # Two-bone limbs without IK limits in closed form over all frames at once; a single frame (live
        # preview's fallback) by `solvers.solve_limb`, the same closed form, cheaper than numpy on one row.
        closed = [job for job in direct if job.limb.closed_form and n > 1]
        rows = self._closed_rows(closed, frame, rots, shift, poles) if closed else None
        return _Finishing(out, jobs, closed, rows, frame, rots, shift, poles)

    def _finish_end(self, f: _Finishing, solved_rows: Optional[_Solved]) -> Channels:
        """`_finish_all` for this chunk after the closed-form solve: every limb written."""
        out, frame, rots, shift, poles = f.out, f.frame, f.rots, f.shift, f.poles
        solved = {}
        if f.closed and solved_rows is not None:
            n = self.frames
            q0, q1, end_q, ok = solved_rows
            solved = {id(job): ((q0[i:i + n], q1[i:i + n], end_q[i:i + n]), ok[i:i + n])
                      for job, i in zip(f.closed, range(0, n * len(f.closed), n))}
        for job in f.jobs:  # written in this order: a bone two limbs share is the later one's
            lb = job.limb
            if lb.control >= 0:
                self._drive(lb, frame, rots, shift, job.target, job.target_rot, job.active, out, soft=job.soft)
            elif id(job) in solved:
                quats, ok = solved[id(job)]
                self._emit([lb.chain[0], lb.chain[1], lb.end], np.stack(quats, 1), ok, out)
            else:
                self._solve_each(lb, frame, rots, shift, job.target, job.target_rot, job.active, out, job.soft,
                                 poles[id(job)])
        return out

    def _frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Every used bone's world matrix and `rig.bone_frame` (both (N, k, 4, 4)); sets `arm`, the bones'
        armature-space matrices."""
        arm = np.swapaxes(self.matrix, -1, -2)  # foreach_get gives matrices column by column
        self.arm = arm
        world = self.mw[:, None] @ arm
        if (self.scale == 1.0).all():
            return world, world
        sinv = np.zeros(self.scale.shape[:2] + (4, 4))
        safe = np.where((self.scale != 0.0) & np.isfinite(self.scale), self.scale, 1.0)
        for axis in range(3):
            sinv[..., axis, axis] = 1.0 / safe[..., axis]
        sinv[..., 3, 3] = 1.0
        return world, world @ sinv

    def _rotations(self) -> np.ndarray:
        """Every used bone's rotation channels as quaternions (N, k, 4), whatever its rotation mode."""
        modes = set(self.modes)
        if len(modes) == 1:  # every bone in one mode (the usual rig)
            return channel_quat(self.modes[0], self.quat, self.euler, self.aa)
        rots = np.empty(self.quat.shape[:2] + (4,))
        for mode in modes:  # the bones of each mode at once
            j = [k for k, m in enumerate(self.modes) if m == mode]
            rots[:, j] = channel_quat(mode, self.quat[:, j], self.euler[:, j], self.aa[:, j])
        return rots

    def _pole(self, lb: LimbSpec, shift: np.ndarray, pole_shift: bool) -> Optional[np.ndarray]:
        """The limb's pole per frame (world; a pelvis move carries a leg's), or None: the knee then stays
        closest to its animated place."""
        if lb.poles is not None:
            return lb.poles + (shift if pole_shift else 0.0)
        if lb.pole_bone >= 0:
            return xform(self.mw, self.arm[:, self.slot[lb.pole_bone], :3, 3]) + (shift if pole_shift else 0.0)
        return None

    def _closed_rows(self, jobs: list[_Job], frame: np.ndarray, rots: np.ndarray, shift: np.ndarray,
                     poles: Poles) -> _Rows:
        """What `_solve_closed_rows` solves for two-bone limbs without IK limits, in closed form over all their
        frames at once: the limbs' rows one after another (per call, numpy's cost outweighs its speed per row
        on the few rows of one frame, and on one rig's in a crowd)."""
        s = self.slot
        n, k = self.frames, len(jobs)

        def stacked(rows: list[np.ndarray]) -> np.ndarray:
            return rows[0] if k == 1 else np.concatenate(rows)

        move = np.zeros((n, 4, 4))
        move[:, :3, 3] = shift
        move = stacked([move] * k)
        f0 = stacked([frame[:, s[j.limb.chain[0]]] for j in jobs]) + move
        f1 = stacked([frame[:, s[j.limb.chain[1]]] for j in jobs]) + move
        end_frame = stacked([frame[:, s[j.limb.end]] for j in jobs]) + move
        r0 = stacked([rots[:, s[j.limb.chain[0]]] for j in jobs])
        r1 = stacked([rots[:, s[j.limb.chain[1]]] for j in jobs])
        r_end = stacked([rots[:, s[j.limb.end]] for j in jobs])
        given = [poles[id(j)][0] for j in jobs]
        pole: Optional[np.ndarray] = None
        if any(p is not None for p in given):
            pole = stacked([p if p is not None else np.full((n, 3), np.nan) for p in given])
        weights = []
        for j in jobs:
            assert j.limb.weights is not None
            weights.append(j.limb.weights)
        weight = stacked(weights)
        weight = np.minimum(np.maximum(np.where(np.isnan(weight), 0.0, weight), 0.0), 1.0)
        target = stacked([j.target for j in jobs])
        goal = target
        soft = np.repeat([j.soft for j in jobs], n)
        if self.softness > 0.0 and soft.any():
            tip = end_frame[:, :3, 3]
            hip, knee = f0[:, :3, 3], f1[:, :3, 3]
            chain = np.linalg.norm(knee - hip, axis=1) + np.linalg.norm(tip - knee, axis=1)
            goal = target.copy()
            goal[soft] = self._soft_goal(hip[soft], chain[soft], target[soft])
        turned = np.repeat([j.target_rot is not None for j in jobs], n)
        target_rot = None
        if turned.any():
            identity = np.zeros((n, 4))
            identity[:, 0] = 1.0
            target_rot = stacked([j.target_rot if j.target_rot is not None else identity for j in jobs])
        return _Rows(f0, f1, end_frame, r0, r1, r_end, pole, weight, goal, turned, target_rot,
                     stacked([j.active for j in jobs]))

    def _soft_goal(self, hip: np.ndarray, chain: np.ndarray, target: np.ndarray) -> np.ndarray:
        """The target eased toward the hip as the chain nears full stretch (Soft IK, `solvers.soft`)."""
        if self.softness <= 0.0:
            return target
        off = target - hip
        dist = np.linalg.norm(off, axis=1)
        eased = np.array([soft_distance(float(d), float(c), self.softness) for d, c in zip(dist, chain)])
        return np.where((dist > 0)[:, None], hip + off * (eased / np.where(dist > 0, dist, 1.0))[:, None], target)

    def _drive(self, lb: LimbSpec, frame: np.ndarray, rots: np.ndarray, shift: np.ndarray, target: np.ndarray,
               target_rot: Optional[np.ndarray], active: np.ndarray, out: Channels, soft: bool) -> None:
        """A limb driven through its control bone (an IK foot control: the rig's own IK moves the chain):
        the control moved, per frame, so the end bone lands at `target` turned to `target_rot` (world), the
        animation's own offset between the control and the end bone on that frame kept (a foot roll under
        the control stays as animated). Written as the control's location and rotation channels against its
        parent as the pelvis's move leaves it (`LimbSpec.control_follow`); the chain and end bones are only
        read. Where the limb is not `active` the control keeps its animated values."""
        s, n, mw = self.slot, self.frames, self.mw
        c, e = s[lb.control], s[lb.end]
        arm = self.arm
        inv_mw = affine_inv(mw)
        ctrl = mw @ arm[:, c]
        end = mw @ arm[:, e]
        held = affine_inv(ctrl) @ end  # the end bone in the control's frame, as animated
        joints = [frame[:, s[b], :3, 3] for b in lb.chain] + [end[:, :3, 3]]
        chain = sum(np.linalg.norm(b - a, axis=1) for a, b in zip(joints, joints[1:]))
        hip = joints[0] + shift
        goal = self._soft_goal(hip, np.asarray(chain), target) if soft else target
        placed = end.copy()
        if target_rot is not None:
            turn = qmat(qmul(qnormalize(target_rot), qconj(mat_to_quat(end))))
            placed[:, :3, :3] = turn @ end[:, :3, :3]
        placed[:, :3, 3] = np.where(np.isfinite(goal), goal, end[:, :3, 3])
        new_arm = inv_mw @ placed @ affine_inv(held)  # the control's new armature-space matrix
        basis = np.zeros((n, 4, 4))
        basis[:, :3, :3] = qmat(rots[:, c]) * self.scale[:, c][:, None, :]
        basis[:, :3, 3] = self.loc[:, c]
        basis[:, 3, 3] = 1.0
        parent = arm[:, c] @ affine_inv(basis)  # everything above the control's own channels
        if lb.control_follow:
            parent = parent.copy()
            parent[:, :3, 3] += lb.control_follow * np.einsum("nij,nj->ni", inv_mw[:, :3, :3], shift)
        local = affine_inv(parent) @ new_arm
        loc = local[:, :3, 3]
        q = mat_to_quat(local)
        assert lb.weights is not None
        weight = np.clip(np.nan_to_num(lb.weights, nan=0.0), 0.0, 1.0)
        blend = weight < 1.0
        if blend.any():
            loc = np.where(blend[:, None], self.loc[:, c] + (loc - self.loc[:, c]) * weight[:, None], loc)
            q = np.where(blend[:, None], qslerp(rots[:, c], q, weight), q)
        ok = active & (weight > 0.0) & np.isfinite(goal).all(1) & np.isfinite(loc).all(1) & np.isfinite(q).all(1)
        self._emit([lb.control], q[:, None], ok, out)
        name = self.obj.pose.bones[lb.control].name
        out[(name, "location")] = (np.where(ok[:, None], loc, self.loc[:, c]), ok)

    def _poles(self, jobs: list[_Job], frame: np.ndarray, shift: np.ndarray) -> Poles:
        """Per job (by id): its pole per frame (`_pole`), or for a two-bone limb with an automatic pole the FK
        plane's (`model.fk_plane_pole`, every such limb's frames in one call), and whether it is the latter."""
        s, n = self.slot, self.frames
        out = {id(j): (self._pole(j.limb, shift, j.pole_shift), False) for j in jobs}
        auto = [j for j in jobs if out[id(j)][0] is None and j.limb.auto_pole and len(j.limb.chain) == 2]
        if not auto:
            return out
        limbs = [j.limb for j in auto]
        last = np.concatenate([frame[:, s[lb.chain[-1]]] for lb in limbs])
        tip = np.concatenate([frame[:, s[lb.end], :3, 3] if lb.end >= 0 else
                              xform(frame[:, s[lb.chain[-1]]], np.array([0.0, lb.tail_length, 0.0])) for lb in limbs])
        end = np.concatenate([frame[:, s[lb.end if lb.end >= 0 else lb.chain[-1]]] for lb in limbs])
        moved = np.concatenate([shift] * len(limbs))
        # A leg's knee hinge carried by its thigh, frame by frame (NaN where not measured).
        hinge = None
        if any(lb.hinge is not None for lb in limbs):
            hinge = np.concatenate([_hinge_world(frame[:, s[lb.chain[0]], :3, :3], lb.hinge) for lb in limbs])
        pole = model.fk_plane_pole(np.concatenate([frame[:, s[lb.chain[0]], :3, 3] for lb in limbs]) + moved,
                                   last[:, :3, 3] + moved, tip + moved, end,
                                   foot=np.repeat([lb.kind == "FOOT" and lb.end >= 0 for lb in limbs], n),
                                   hinge=hinge)
        for k, j in enumerate(auto):
            out[id(j)] = (pole[k * n:(k + 1) * n], True)
        return out

    def _solve_each(self, lb: LimbSpec, frame, rots, shift, target, target_rot, active, out, soft: bool,  # type: ignore[no-untyped-def]
                    poles: tuple[Optional[np.ndarray], bool]) -> None:
        """`solvers.solve_limb` frame by frame: chains of any length, IK limits (FABRIK, then CCD within
        them), with the plan's targets."""
        s, n = self.slot, self.frames
        pole, auto = poles
        assert lb.weights is not None
        bones = list(lb.chain) + ([lb.end] if lb.end >= 0 else [])
        quats = rots[:, [s[b] for b in bones]]  # (N, bones, 4), a copy
        written = np.zeros(n, dtype=bool)
        for i in np.flatnonzero(active).tolist():
            # Rows handed to mathutils as lists: the same values, without numpy's per-element access.
            mats, quat = frame[i].tolist(), rots[i].tolist()
            move = Matrix.Translation(shift[i].tolist())
            frames = [move @ Matrix(mats[s[b]]) for b in lb.chain]
            if lb.end >= 0:
                m = mats[s[lb.end]]
                tip = move @ Vector((m[0][3], m[1][3], m[2][3]))
            else:
                tip = frames[-1] @ Vector((0.0, lb.tail_length, 0.0))
            pose = ChainPose(
                frames=frames, rotations=[Quaternion(quat[s[b]]) for b in lb.chain],
                tip_local=frames[-1].inverted_safe() @ tip, limits=list(lb.limits),
                end_frame=move @ Matrix(mats[s[lb.end]]) if lb.end >= 0 else None,
                end_rotation=Quaternion(quat[s[lb.end]]) if lb.end >= 0 else None, end_limits=lb.end_limits)
            p = Vector(pole[i].tolist()) if pole is not None and not (auto and np.isnan(pole[i, 0])) else None
            rot = Quaternion(target_rot[i].tolist()) if target_rot is not None else None
            sol = solve_limb(pose, Vector(target[i].tolist()), pole=p, weight=float(lb.weights[i]),
                             softness=self.softness if soft else 0.0, target_rotation=rot)
            if sol.method == "fk":
                continue  # weight 0 or a non-finite chain: the FK pose, nothing written
            written[i] = True
            for k, q in enumerate(sol.rotations):
                quats[i, k] = tuple(q)
            if lb.end >= 0 and sol.end_rotation is not None:
                quats[i, len(lb.chain)] = tuple(sol.end_rotation)
        self._emit(bones, quats, written, out)

    def _emit(self, bones: list[int], q: np.ndarray, written: np.ndarray, out: Channels) -> None:
        """Channel values of `bones` (their rotations `q`, (N, bones, 4)) in each bone's own rotation mode,
        continuous with the FK value it replaces: the quaternion bones' all at once."""
        js = [self.slot[b] for b in bones]
        quat = [k for k, j in enumerate(js) if self.modes[j] == "QUATERNION"]
        if quat:
            every = len(quat) == len(js)
            fk = self.quat[:, js if every else [js[k] for k in quat]]
            qq = q if every else q[:, quat]
            qq = np.where((np.einsum("nbi,nbi->nb", fk, qq) < 0.0)[..., None], -qq, qq)
            values = np.where(written[:, None, None], qq, fk)
        for k, j in enumerate(js):  # in the bones' order
            mode, name = self.modes[j], self.names[j]
            if mode == "QUATERNION":
                out[(name, "rotation_quaternion")] = (values[:, quat.index(k)], written)
            elif mode == "AXIS_ANGLE":
                vals = self.aa[:, j].copy()
                for i in np.flatnonzero(written):
                    axis, angle = Quaternion(q[i, k]).to_axis_angle()
                    vals[i] = (angle, axis[0], axis[1], axis[2])
                out[(name, "rotation_axis_angle")] = (vals, written)
            else:
                vals = self.euler[:, j].copy()
                for i in np.flatnonzero(written):
                    vals[i] = Quaternion(q[i, k]).to_euler(mode, Euler(self.euler[i, j]))
                out[(name, "rotation_euler")] = (vals, written)


def plant_frame(obj: bpy.types.Object, terrain: Optional[Terrain], depsgraph: Optional[bpy.types.Depsgraph],
                frame: float, fps: float, carried: Optional[Carried] = None) -> RigResult:
    """Live preview's fallback: the same computation over one frame, read from `depsgraph` (a render's or
    the viewport's; None reads the original object, which the active depsgraph keeps evaluated), written
    into the original bones. The pelvis's speed limit and the feet's smoothing need every frame: `carried`
    is what they did to this frame when the frame cache was last built (none: this frame's own plan)."""
    result = RigResult()
    rig = _fallback_rig(obj, terrain, frame, fps)
    if not rig.limbs:  # no enabled, usable limb (`reader.has_limbs`)
        return result
    src = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    rig.read(0, src, (lambda o: o.evaluated_get(depsgraph)) if depsgraph is not None else None)
    out = rig.compute(carried=carried)
    bones = obj.pose.bones
    for (name, prop), (values, written) in out.items():
        if written[0]:
            pb = bones[name]
            before = tuple(getattr(pb, prop))
            setattr(pb, prop, tuple(values[0].tolist()))
            after = tuple(getattr(pb, prop))
            result.written.append(name)
            if after != before:
                result.changed.append((name, prop, before, after))
    return result


def _fallback_rig(obj: bpy.types.Object, terrain: Optional[Terrain], frame: float, fps: float) -> BatchRig:
    """`plant_frame`'s rig over one frame: its set-up (limbs, soles, bone indices, lock points: what
    `RigReader` reads from the settings, the armature and the terrain) made once and reused from frame to
    frame (`state.caches.setups`), until an edit drops it (`state.caches.drop_setups`: any edit of an
    object, mesh, armature or action, a setting, undo, a file load) or the terrain, frame rate, object or
    bone count is not the one it was made for."""
    kept = caches.setups.get(obj.name)
    if (isinstance(kept, BatchRig) and kept.terrain is terrain and kept.fps == fps
            and kept.obj.as_pointer() == obj.as_pointer() and kept.count == len(obj.pose.bones)):
        kept.first = frame
        kept.pelvis_delta, kept.foot_delta = None, {}
        kept._static_done = False  # the channels nothing animates read again: a pose edit shows at once
        return kept
    rig = BatchRig(obj, terrain, 1, frame, fps)
    caches.setups[obj.name] = rig
    return rig


def compute_all(rigs: list[BatchRig], chunk: int = 1024, carried: Optional[list[Optional[Carried]]] = None) -> list[Channels]:
    """`BatchRig.compute` for several rigs at once (live preview's frame caches for a crowd): their chunks
    staged together (`_stage_all`), each rig's pelvis limited and feet smoothed on its own, then their
    chunks finished together (`_finish_all`). Each rig's result is exactly the one it computes alone."""
    carried = carried if carried is not None else [None] * len(rigs)
    for rig, c in zip(rigs, carried):
        rig.front_speed, rig.front_carried = {}, (c.front if c is not None else None)  # shared with its chunks
    chunks = [rig._chunks(chunk) for rig in rigs]
    staged = _stage_all([job for jobs in chunks for job in jobs])
    parts, settled, at = [], [], 0
    for rig, jobs, c in zip(rigs, chunks, carried):
        mine = staged[at:at + len(jobs)]
        settled.append((rig, mine, c, rig._settle(mine, c)))
        parts += [part for part, _start in jobs]
        at += len(jobs)
    _smooth_swings(settled)
    finished = _finish_all(list(zip(parts, staged)))
    out, at = [], 0
    for rig, jobs in zip(rigs, chunks):
        out.append(rig._joined(finished[at:at + len(jobs)]))
        at += len(jobs)
    return out


def _smooth_swings(settled: list[tuple[BatchRig, list[_Staged], Optional[Carried], Optional[np.ndarray]]]) -> None:
    """Every foot's height between its contacts smoothed over all its rig's frames (`model.swing_changes`:
    the feet of every rig at one frame rate in one call; or what a rig's `Carried` says it did), in the
    staged plans; what it changed per frame is kept in each rig's `foot_delta`. The pelvis keeps the offset
    it found for the targets before. `settled`: (rig, its staged chunks, carried, its cuts)."""
    todo: dict[float, list[tuple[tuple[int, int], model.SwingFoot]]] = {}  # by frame rate: (rig, foot), arguments
    shifts: dict[tuple[int, int], np.ndarray] = {}
    for n, (rig, staged, carried, cut) in enumerate(settled):
        rig.foot_delta = {}
        if not staged or not staged[0].plans:
            continue
        for k, (lb, _plan) in enumerate(staged[0].plans):
            if carried is not None:
                shifts[n, k] = carried.feet.get(lb.index, np.zeros(rig.frames))
                continue
            ps = [st.plans[k][1] for st in staged]
            joined = {name: np.concatenate([getattr(p, name) for p in ps])
                      for name in ("correction", "floor", "touch", "pinned", "leg", "dip", "held", "toe_off",
                                   "landing")}
            todo.setdefault(rig.fps, []).append(((n, k), model.SwingFoot(cut=cut, **joined)))
    for fps, feet in todo.items():
        for (key, _args), shift in zip(feet, model.swing_changes([args for _key, args in feet], fps)):
            shifts[key] = shift
    for n, (rig, staged, _carried, _cut) in enumerate(settled):
        if not staged or not staged[0].plans:
            continue
        up = np.concatenate([st.at.up for st in staged])
        for k, (lb, _plan) in enumerate(staged[0].plans):
            shift = rig.foot_delta[lb.index] = shifts[n, k]
            at = 0
            for st in staged:
                plan = st.plans[k][1]
                m = len(st.offset)
                plan.target = plan.target + up[at:at + m] * shift[at:at + m, None]
                at += m


def _batches(parts: list[tuple[int, BatchRig]], key: Any) -> list[list[int]]:
    """The indices of `parts` (index, chunk) in batches to compute in one pass: chunks with the same `key`,
    of different rigs (a rig's own chunks bound a long range's memory), up to STACK_ROWS rows."""
    out: list[list[int]] = []
    open_: dict[Any, tuple[list[int], set[int], list[int]]] = {}  # key -> (members, their rigs, [rows])
    for i, part in parts:
        k = key(part)
        batch = open_.get(k)
        rig = part.obj.as_pointer()
        if batch is None or batch[2][0] + part.frames > STACK_ROWS or rig in batch[1]:
            batch = open_[k] = ([], set(), [0])
            out.append(batch[0])
        batch[0].append(i)
        batch[1].add(rig)
        batch[2][0] += part.frames
    return out


def _finish_all(jobs: list[tuple[BatchRig, _Staged]]) -> list[Channels]:
    """Every chunk's limbs solved (`BatchRig._finish_begin`, `_finish_end`): the two-bone limbs of chunks of
    different rigs in closed form in one pass (`_solve_closed_rows`), their rows one after another."""
    begun = [part._finish_begin(st) for part, st in jobs]
    solved: list[Optional[_Solved]] = [None] * len(jobs)
    with_rows = [(i, jobs[i][0]) for i, f in enumerate(begun) if f.rows is not None]
    for batch in _batches(with_rows, lambda part: 0):
        for i, got in zip(batch, _solve_closed_rows([begun[i].rows for i in batch])):  # type: ignore[misc]
            solved[i] = got
    return [part._finish_end(f, got) for (part, _st), f, got in zip(jobs, begun, solved)]


def _hinge_world(thigh: np.ndarray, hinge: Optional[np.ndarray]) -> np.ndarray:
    """A knee's hinge (`LimbSpec.hinge`, in the thigh's frame) in world space on each frame of `thigh` (its
    world rotation and scale, (N, 3, 3)); NaN rows for none."""
    if hinge is None:
        return np.full((len(thigh), 3), np.nan)
    axes = thigh / np.maximum(norm(thigh, axis=1), 1e-12)[:, None, :]  # its columns unit: scale out
    return np.einsum("nij,j->ni", axes, hinge)  # type: ignore[no-any-return]


def _solve_closed_rows(parts: list[_Rows]) -> list[_Solved]:
    """`solvers.solve_limb` in closed form for the rows of `parts` (`BatchRig._closed_rows`) at once: per
    part, the chain's two rotations and the end bone's, and where they are written (its rows)."""
    if len(parts) == 1:
        r = parts[0]
    else:
        def cat(name: str, fill: Any) -> Any:
            got = [getattr(p, name) for p in parts]
            if all(g is None for g in got):
                return None
            return np.concatenate([g if g is not None else fill(len(p.weight)) for g, p in zip(got, parts)])

        def nan3(m: int) -> np.ndarray:
            return np.full((m, 3), np.nan)

        def identity(m: int) -> np.ndarray:
            q = np.zeros((m, 4))
            q[:, 0] = 1.0
            return q

        r = _Rows(*(cat(name, nan3 if name == "pole" else identity if name == "target_rot" else None)
                    for name in _Rows.__dataclass_fields__))
    f0, f1, end_frame = r.f0, r.f1, r.end_frame
    tip = end_frame[:, :3, 3]
    hip, knee = f0[:, :3, 3], f1[:, :3, 3]
    new_knee, new_tip, _case = solve_two_bone_batch(hip, knee, tip, r.goal, r.pole)
    inv0, inv1 = affine_inv(f0), affine_inv(f1)
    cl0 = xform(inv0, knee)
    cl1 = xform(inv1, tip)
    turn0 = q_between(cl0, xform(inv0, new_knee))
    q0 = qnormalize(qmul(r.r0, turn0))
    rows = len(f0)
    rot4 = np.zeros((rows, 4, 4))
    rot4[:, :3, :3] = qmat(turn0)
    rot4[:, 3, 3] = 1.0
    delta = f0 @ rot4 @ inv0
    cur1 = delta @ f1
    turn1 = q_between(cl1, xform(affine_inv(cur1), new_tip))
    q1 = qnormalize(qmul(r.r1, turn1))
    end_q = r.r_end
    if r.target_rot is not None and r.turned.any():
        rot4b = np.zeros((rows, 4, 4))
        rot4b[:, :3, :3] = qmat(turn1)
        rot4b[:, 3, 3] = 1.0
        new_end = cur1 @ rot4b @ inv1 @ end_frame
        turn = qmul(qconj(mat_to_quat(new_end)), qnormalize(r.target_rot))
        end_q = np.where(r.turned[:, None], qmul(r.r_end, turn), r.r_end)
    weight = r.weight
    blend = weight < 1.0
    if blend.any():
        q0 = np.where(blend[:, None], qslerp(r.r0, q0, weight), q0)
        q1 = np.where(blend[:, None], qslerp(r.r1, q1, weight), q1)
        end_q = np.where(blend[:, None], qslerp(r.r_end, end_q, weight), end_q)
    ok = r.active & (weight > 0.0) & np.isfinite(r.goal).all(1)
    out, at = [], 0
    for p in parts:
        m = len(p.weight)
        out.append((q0[at:at + m], q1[at:at + m], end_q[at:at + m], ok[at:at + m]))
        at += m
    return out


def _front_speeds(jobs: list[tuple[BatchRig, int]], begun: list[_Staged | _Begun]) -> None:
    """Each foot's `Foot.front_speed` (`model.front_speeds`) over all of its rig's rows, in place: the chunks
    of a rig (first row 0, then on, one after another in `jobs`) joined, so a frame's speed is the same
    wherever a chunk starts (a range bakes as the longer range of live preview plays it). Kept in the rig's
    `front_speed` (its chunks share it); where the rig has one carried (`Carried.front`: live preview's
    fallback over one frame, which has no frames around to read a speed over), that one."""
    rigs: list[list[_Begun]] = []
    for (_part, start), b in zip(jobs, begun):
        if start == 0:
            rigs.append([])
        if isinstance(b, _Begun) and rigs:
            rigs[-1].append(b)
    for parts in rigs:
        if not parts:
            continue
        rig = parts[0].rig
        up = np.concatenate([b.at.up for b in parts])
        for k in range(len(parts[0].plan)):
            feet = [b.plan[k] for b in parts]
            if any(f.ball is None and not f.soles for f in feet):
                continue  # no front to follow: taken as still
            index = parts[0].feet[k].index
            carried = rig.front_carried.get(index) if rig.front_carried is not None else None
            if carried is not None and len(carried) == len(up):
                speed = carried
            else:
                front = np.concatenate([f.ball if f.ball is not None else f.soles[-1] for f in feet])
                speed = model.front_speeds(front, up, rig.fps)
            rig.front_speed[index] = speed
            at = 0
            for b in parts:
                n = len(b.plan[k].joints[-1])
                b.plan[k].front_speed = speed[at:at + n]
                at += n


def _stage_all(jobs: list[tuple[BatchRig, int]]) -> list[_Staged]:
    """Every chunk's foot plans and pelvis offset (before the pelvis's speed limit): chunks (rig, first row)
    of different rigs on one terrain over as many frames at one frame rate have the ground under their bodies
    and their feet planned together, their rows one after another, up to STACK_ROWS rows at a time
    (`model.plan_feet`: one cast per step for all of them, where a rig at a time paid numpy's cost per call a
    hundred times for a crowd). A rig's own chunks stay apart: they bound the memory of a long range."""
    begun = [part._stage_begin(start) for part, start in jobs]
    _front_speeds(jobs, begun)
    out = [b if isinstance(b, _Staged) else None for b in begun]
    pending = {i: b for i, b in enumerate(begun) if isinstance(b, _Begun)}
    batches = _batches([(i, b.rig) for i, b in pending.items()],
                       lambda part: (id(part.rays.terrain) if part.rays is not None else 0, part.frames, part.fps))
    for members in batches:
        stage = [(i, pending[i]) for i in members]
        first = stage[0][1].rig
        rays, n, fps = first.rays, first.frames, first.fps
        assert rays is not None
        windows = [np.zeros(n)] * len(stage)
        body = [(k, b.centre, b.leg_body) for k, (_i, b) in enumerate(stage)
                if b.centre is not None and b.leg_body is not None]
        if body:
            ground = model.body_ground(rays, np.concatenate([c for _k, c, _l in body]),
                                       Placement.concat([stage[k][1].at for k, _c, _l in body]),
                                       np.concatenate([leg for _k, _c, leg in body]))
            for j, (k, _c, _l) in enumerate(body):
                windows[k] = ground[j * n:(j + 1) * n]
        plans = model.plan_feet([f for _i, b in stage for f in b.plan], [b.at for _i, b in stage for _f in b.plan],
                                rays, [w for (_i, b), w in zip(stage, windows) for _f in b.plan], fps)
        at = 0
        for (i, b), w in zip(stage, windows):
            out[i] = b.rig._stage_end(b, w, plans[at:at + len(b.plan)])
            at += len(b.plan)
    done = [st for st in out if st is not None]
    assert len(done) == len(out)
    return done
