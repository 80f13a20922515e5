"""Bake: the live preview's result, frame by frame, into a new action the armature then plays.

One sweep over the frame range serves every rig being baked: each frame is set once, each rig is
planted from its pose evaluated at that frame (exactly as live preview does), the channels Contact IK
drives are read into arrays, and the animation's own values are put back at once so un-keyed
channels never accumulate. At the end each rig gets a copy of its action (`Walk [Contact IK]`) whose
driven channels are replaced by the baked keys, written in bulk (`keyframe_points.add` +
`foreach_set`) in each bone's rotation mode, continuous (no quaternion sign flips, no Euler wraps).
The source action is never written to; it keeps a fake user so it is never lost.
"""

from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Optional

import bpy
import numpy as np

from . import anim, batch, checks, live, model, state
from .checks import Channel, driven_channels, limb_is_usable  # noqa: F401  (Channel: the bake's channels)
from .contacts import fps_of
from .errors import UserError
from .ground import terrain_objects
from .plant import RigResult, plant_rig
from .rig import settings, world_scale
from .state import caches

log = logging.getLogger(__name__)

BAKED_KEY = "contact_ik_baked"
SOURCE_KEY = "contact_ik_source"
SUFFIX = " [Contact IK]"
UNKEYED_KEY = "contact_ik_unkeyed"
# Longest bake run on the vectorised fast path, whose arrays hold every frame at once (about 3 kB a frame);
# longer ones are baked frame by frame, so starting a very long bake allocates nothing for its frames.
FAST_MAX_FRAMES = 20_000
# Rows of baked values allocated at a time as the bake advances.
ROWS_CHUNK = 4096


# The bake cannot run; the message says how to fix it.
BakeError = UserError


@dataclass
class RigBake:
    obj: bpy.types.Object
    terrain: Any
    channels: list[Channel]
    values: np.ndarray  # frames x sum(channel sizes)
    source: Optional[bpy.types.Action]
    slot_identifier: Optional[str]
    results: list[RigResult] = field(default_factory=list)
    action: Optional[bpy.types.Action] = None
    batch: Any = None  # a `batch.BatchRig` when the fast path covers this rig
    unkeyed: dict[str, list[float]] = field(default_factory=dict)  # driven channels the source does not key
    # Frame by frame: (pelvis offset, whether it moves, the speed limit's step) per frame, from the first sweep.
    pelvis: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]] = None
    # Frame by frame, per foot (by limb index): (correction, floor, touch, pinned, leg length) per frame from the
    # first sweep (`RigResult.feet`), then what the smoothing between contacts (`model.swing_smoothing`) adds
    # to each frame's correction.
    feet: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    foot_shift: dict[int, np.ndarray] = field(default_factory=dict)
    rest_leg: float = 0.0  # the longest enabled leg, in armature units (0: no foot)


@dataclass
class BakeReport:
    obj_name: str
    action_name: str
    source_name: str
    frames: int
    seconds: float
    channels: int


def is_baked(action: Optional[bpy.types.Action]) -> bool:
    return action is not None and bool(action.get(BAKED_KEY, False))


def source_of(action: Optional[bpy.types.Action]) -> Optional[bpy.types.Action]:
    src = action.get(SOURCE_KEY) if action is not None else None
    return src if isinstance(src, bpy.types.Action) else None


def validate(obj: bpy.types.Object) -> None:
    if obj.type != "ARMATURE":
        raise BakeError(f"{obj.name!r} is a {obj.type.lower()}, not an armature: select the animated armature")
    if obj.library is not None:
        raise BakeError(f"{obj.name!r} is linked from a library: make a library override to bake it")
    error = checks.rig_error(obj)
    if error:
        raise BakeError(error)
    s = settings(obj)
    usable = [lb for lb in s.limbs if lb.enabled and limb_is_usable(obj, lb)]
    if not usable:
        raise BakeError(f"{obj.name!r} has no enabled limbs: run Detect Limbs or Plant Feet first")
    if any(lb.kind == "FOOT" for lb in usable) and not terrain_objects(s):
        raise BakeError(f"{obj.name!r} has no terrain: set Terrain in the Contact IK panel (or run Plant Feet "
                        "with the ground mesh selected)")
    if is_baked(anim.action_of(obj)):
        raise BakeError(f"{obj.name!r} already plays a baked action ({anim.action_of(obj).name!r}): switch back to "
                        "its source action to bake again")
    scene_error = checks.terrain_scene_error(terrain_objects(s), bpy.context.scene)
    if scene_error:
        raise BakeError(scene_error)


class BakeJob:
    """A bake of `objs` over [start, end], run in steps (for progress and Esc) or all at once."""

    def __init__(self, objs: list[bpy.types.Object], start: int, end: int, scene: Optional[bpy.types.Scene] = None,
                 fast: bool = True):
        self.scene = scene or bpy.context.scene
        if end < start:
            raise BakeError(f"the frame range {start}..{end} is empty: set an end frame after the start frame")
        if not objs:
            raise BakeError("no armature to bake: select the animated armature(s)")
        for obj in objs:
            validate(obj)
        self.warnings = [w for obj in objs for w in checks.rig_warnings(obj)]
        self.frames = range(start, end + 1)
        self.saved_frame = self.scene.frame_current
        self.started = time.perf_counter()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        self.rigs: list[RigBake] = []
        for obj in objs:
            s = settings(obj)
            terrain = caches.terrain.get(terrain_objects(s), depsgraph) if terrain_objects(s) else None
            chans = driven_channels(obj)
            width = sum(c.size for c in chans)
            slot = anim.slot_of(obj)
            self.rigs.append(RigBake(obj, terrain, chans, np.empty((0, width)), anim.action_of(obj),
                                     getattr(slot, "identifier", None)))
        # Live preview steps aside during the sweep; the animation's values go back into its channels.
        self.was_live = {r.obj.name for r in self.rigs if r.obj.name in state.live_rigs}
        self._pause = ExitStack()
        self._pause.enter_context(state.paused([r.obj for r in self.rigs]))
        for r in self.rigs:
            keyed = set()
            if r.source is not None:
                keyed = {fc.data_path for fc in anim.fcurves(r.source, anim.slot_of(r.obj)) or []}
            for c in r.channels:
                if c.data_path not in keyed:
                    r.unkeyed[f"{c.bone}|{c.prop}"] = list(getattr(r.obj.pose.bones[c.bone], c.prop))
        self.fps = fps_of(self.scene)
        # The frames read: the range and the frames around it that the feet's smoothing between contacts
        # reaches (`model.context_frames`), so a range bakes as it plays in live preview's longer range.
        self.pad = model.context_frames(self.fps)
        self.read = range(start - self.pad, end + self.pad + 1)
        for r in self.rigs:
            if fast and len(self.frames) <= FAST_MAX_FRAMES and batch.unsupported(r.obj) is None:
                r.batch = batch.BatchRig(r.obj, r.terrain, len(self.read), self.read[0], self.fps, context=self.pad)
        self._slow = any(r.batch is None for r in self.rigs)
        for r in self.rigs:
            if r.batch is None:
                s = settings(r.obj)
                r.rest_leg = max((sum(r.obj.data.bones[b.bone].length for b in lb.bones if b.bone)
                                  for lb in s.limbs if lb.kind == "FOOT" and lb.enabled and limb_is_usable(r.obj, lb)),
                                 default=0.0)
        # Rigs baked frame by frame take two sweeps: the first finds the pelvis offset and the feet's heights
        # of every frame, so that the pelvis's speed limit over all frames (`model.pelvis_speed_limit`) and
        # the smoothing of the feet between contacts (`model.swing_smoothing`) apply to them too.
        self.total = len(self.read) + (len(self.frames) if self._slow else 0)
        self.done = 0

    @property
    def progress(self) -> float:
        return self.done / self.total

    def step(self, count: int) -> bool:
        """Bake the next `count` frames (of both sweeps, for rigs baked frame by frame); True when done."""
        scene = self.scene
        n, n_read = len(self.frames), len(self.read)
        last = min(self.done + count, self.total)
        for rig in self.rigs:
            if rig.batch is None:
                _reserve(rig, min(max(0, last - n_read), n), n)
        for u in range(self.done, last):
            reading = u < n_read  # the first sweep (every frame read), then the solves frame by frame
            i = u if reading else u - n_read
            scene.frame_set(self.read[i] if reading else self.frames[i])
            depsgraph = bpy.context.evaluated_depsgraph_get() if self._slow else None
            for rig in self.rigs:
                if rig.batch is not None:
                    if reading:
                        rig.batch.read(i)
                elif reading:
                    self._pelvis_of_frame(rig, i, depsgraph)
                else:
                    self._bake_frame(rig, i, depsgraph)
            self.done = u + 1
            if self._slow and self.done == n_read:
                for rig in self.rigs:
                    if rig.pelvis is not None:
                        offset, moved, step = rig.pelvis
                        rig.pelvis = (model.pelvis_speed_limit(offset, moved, step), moved, step)
                    for k, (height, floor, touch, pinned, leg) in rig.feet.items():
                        rig.foot_shift[k] = model.swing_change(height, floor, touch, pinned, self.fps, leg)
        return self.done >= self.total

    def _pelvis_of_frame(self, rig: RigBake, row: int, depsgraph: bpy.types.Depsgraph) -> None:
        """The first sweep of a frame-by-frame bake (row `row` of the frames read): this frame's own pelvis
        offset and the feet's corrections, nothing written."""
        if rig.terrain is None or rig.rest_leg <= 0.0:
            return  # nothing moves the pelvis
        n = len(self.read)
        if rig.pelvis is None:
            rig.pelvis = (np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0))
        offset, moved, step = (_grown(a, row + 1, n) for a in rig.pelvis)
        rig.pelvis = (offset, moved, step)
        obj = rig.obj
        result = plant_rig(obj, settings(obj), rig.terrain, depsgraph, frame=self.read[row], dry=True)
        offset[row], moved[row] = result.pelvis_offset, result.pelvis_moved
        step[row] = model.pelvis_step(rig.rest_leg, world_scale(obj), self.fps)
        for k in result.feet:
            if k not in rig.feet:  # a foot unplanned so far: pinned (nan) on the rows before
                rig.feet[k] = (np.full(row, np.nan), np.full(row, -np.inf), np.full(row, -np.inf), np.ones(row, dtype=bool),
                               np.ones(row))
            rig.feet[k] = tuple(_grown(a, row + 1, n) for a in rig.feet[k])  # type: ignore[assignment]
        for k, (height, floor, touch, pinned, leg) in rig.feet.items():
            height[row], floor[row], touch[row], pinned[row], leg[row] = result.feet.get(k, (np.nan, -np.inf, -np.inf, True, 1.0))

    def _bake_frame(self, rig: RigBake, row: int, depsgraph: bpy.types.Depsgraph) -> None:
        obj = rig.obj
        bones = obj.pose.bones
        before = [tuple(getattr(bones[c.bone], c.prop)) for c in rig.channels]
        if rig.terrain is not None or not any(lb.kind == "FOOT" for lb in settings(obj).limbs):
            offset = None
            at = row + self.pad  # this frame's row in the first sweep's
            if rig.pelvis is not None and rig.pelvis[1][at]:
                offset = float(rig.pelvis[0][at])
            shift = {k: float(v[at]) for k, v in rig.foot_shift.items()}
            result = plant_rig(obj, settings(obj), rig.terrain, depsgraph, frame=self.frames[row], pelvis_offset=offset,
                               foot_shift=shift)
        else:
            result = RigResult()
        col = 0
        values = rig.values
        for c, old in zip(rig.channels, before):
            pb = bones[c.bone]
            values[row, col:col + c.size] = getattr(pb, c.prop)
            col += c.size
            if result.written:
                setattr(pb, c.prop, old)  # the animation's value back, so nothing piles up
        if row == 0 or row == len(self.frames) - 1:
            rig.results.append(result)

    def cancel(self) -> None:
        """Stop: nothing was written; the frame and live preview are as they were (its frame cache, dropped
        when the bake began, is built again)."""
        self._restore(rebuild=True)

    def finish(self) -> list[BakeReport]:
        if self.done < self.total:
            self.step(self.total - self.done)
        reports = []
        for rig in self.rigs:
            if rig.batch is not None:
                _fill_from_batch(rig)
            make_continuous(rig)
            rig.action = write_action(rig, self.frames)
            reports.append(BakeReport(rig.obj.name, rig.action.name, rig.source.name if rig.source else "",
                                      len(self.frames), time.perf_counter() - self.started,
                                      len(rig.channels)))
        self._restore()
        return reports

    def _restore(self, rebuild: bool = False) -> None:
        self._pause.close()
        objs = [r.obj for r in self.rigs if r.obj.name in self.was_live]
        if rebuild and objs:
            try:
                live.precompute_all(objs, self.scene)
            except Exception:  # the frame-by-frame preview still works without it
                log.debug("rebuilding the live preview's frame cache failed", exc_info=True)
        self.scene.frame_set(self.saved_frame)


def _reserve(rig: RigBake, rows: int, total: int) -> None:
    """Room for `rows` rows of baked values (`_grown`)."""
    rig.values = _grown(rig.values, rows, total)


def _grown(a: np.ndarray, rows: int, total: int) -> np.ndarray:
    """`a` with room for at least `rows` rows, grown a chunk at a time (never more than `total`); the rows
    it had are kept, the new ones are uninitialised."""
    have = len(a)
    if have >= rows:
        return a
    out = np.empty((min(total, max(rows, have + ROWS_CHUNK, 2 * have)),) + a.shape[1:], dtype=a.dtype)
    out[:have] = a
    return out


def _fill_from_batch(rig: RigBake) -> None:
    """The fast path's channel values, or the FK values where it wrote nothing."""
    b = rig.batch
    n = b.frames - 2 * b.context
    _reserve(rig, n, n)
    out = b.compute()
    col = 0
    keep = slice(b.context, b.context + n)  # the rows read around the range are left out
    fk = {"rotation_quaternion": b.quat[keep], "rotation_euler": b.euler[keep], "rotation_axis_angle": b.aa[keep],
          "location": b.loc[keep]}
    for c in rig.channels:
        vals = out.get((c.bone, c.prop))
        if vals is None:
            vals = (fk[c.prop][:, b.slot[b.bone_index[c.bone]]], None)
        rig.values[:, col:col + c.size] = vals[0]
        col += c.size


def make_continuous(rig: RigBake) -> None:
    """No quaternion sign flips and no Euler wrap jumps from one frame to the next."""
    col = 0
    v = rig.values
    for c in rig.channels:
        block = v[:, col:col + c.size]
        if c.prop == "rotation_quaternion" and len(block) > 1:
            dots = np.einsum("ij,ij->i", block[1:], block[:-1])
            signs = np.concatenate(([1.0], np.cumprod(np.where(dots < 0.0, -1.0, 1.0))))
            block *= signs[:, None]
        elif c.prop == "rotation_euler":
            block[:] = np.unwrap(block, axis=0)
        col += c.size


def write_action(rig: RigBake, frames: range | list[int]) -> bpy.types.Action:
    """A copy of the rig's action with its driven channels replaced by the baked keys; the rig plays it."""
    obj = rig.obj
    source = rig.source
    action: bpy.types.Action
    if source is not None:
        action = source.copy()  # type: ignore[assignment]
        action.name = source.name + SUFFIX
        source.use_fake_user = True  # the source stays one click away, and is saved with the file
        action.use_fake_user = False
    else:
        action = bpy.data.actions.new(obj.name + SUFFIX)  # type: ignore[assignment]
    action[BAKED_KEY] = True
    action[UNKEYED_KEY] = rig.unkeyed
    if source is not None:
        action[SOURCE_KEY] = source
    anim.assign(obj, action, rig.slot_identifier)
    owner = anim.channels(action, anim.slot_of(obj), create=True)
    f = np.asarray(frames, dtype=np.float64)
    start, end = frames[0], frames[-1]
    col = 0
    for c in rig.channels:
        for k in range(c.size):
            fc = anim.ensure_fcurve(owner, c.data_path, k, c.bone)
            for m in list(fc.modifiers):
                fc.modifiers.remove(m)  # the baked values already include what modifiers did
            kp = fc.keyframe_points
            old = np.empty(2 * len(kp))
            kp.foreach_get("co", old)
            old = old.reshape(-1, 2)
            keep = old[(old[:, 0] < start - 1e-6) | (old[:, 0] > end + 1e-6)]
            co = np.concatenate((keep, np.column_stack((f, rig.values[:, col + k]))))
            co = co[np.argsort(co[:, 0], kind="stable")]
            if len(kp):
                if hasattr(kp, "clear"):
                    kp.clear()
                else:  # before keyframe_points.clear() existed
                    owner.fcurves.remove(fc)
                    fc = anim.ensure_fcurve(owner, c.data_path, k, c.bone)
                    kp = fc.keyframe_points
            kp.add(len(co))
            kp.foreach_set("co", co.ravel())
            kp.foreach_set("interpolation", np.full(len(co), _LINEAR, dtype=np.int32))
            fc.update()
        col += c.size
    return action


_LINEAR = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value


def use_source(obj: bpy.types.Object) -> Optional[bpy.types.Action]:
    """Switch a rig playing a baked action back to its source action (live preview applies again)."""
    baked = anim.action_of(obj)
    source = source_of(baked)
    if source is None:
        return None
    anim.assign(obj, source, getattr(anim.slot_of(obj), "identifier", None))
    assert baked is not None
    baked.use_fake_user = True  # keep the bake too: one click away the other way
    # Channels the source does not key would keep the bake's last values: give them their values from
    # before the bake.
    for key, values in dict(baked.get(UNKEYED_KEY, {})).items():
        bone, _sep, prop = str(key).rpartition("|")
        if bone in obj.pose.bones and prop in live.PROPS:  # stored in the file: only the channels Contact IK writes
            setattr(obj.pose.bones[bone], prop, list(values))
    return source

