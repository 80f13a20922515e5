"""Bake: the live preview's result into a new action the armature then plays.

One sweep over the frame range serves every rig being baked: each frame is set once and each rig's pose
is read into arrays (`reader.RigReader`, with live preview paused, so nothing is written during the
sweep); then every rig is planted over all frames at once by the same computation live preview runs
(`batch.BatchRig.compute`). A rig whose live preview holds a valid frame cache over the range is not read
at all: that cache is this computation's result, so the bake copies it. A rig that only its own action
moves is read from the action's F-curves without setting a frame (`fkread`). `BakeReport.read` says which
of the three ran, and why a rig was replayed.
At the end each rig gets a copy of its action (`Walk [Contact IK]`) whose driven channels are replaced by
the baked keys, written in bulk (`keyframe_points.add` + `foreach_set`) in each bone's rotation mode,
continuous (no quaternion sign flips, no Euler wraps).
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

from . import anim, batch, checks, fkread, layer, live, model, state
from .checks import Channel, driven_channels, limb_is_usable  # noqa: F401  (Channel: the bake's channels)
from .contacts import fps_of
from .errors import UserError
from .ground import terrain_objects
from .rig import settings
from .state import FrameCache, caches

log = logging.getLogger(__name__)

BAKED_KEY = "contact_ik_baked"
SOURCE_KEY = "contact_ik_source"
SUFFIX = " [Contact IK]"
UNKEYED_KEY = "contact_ik_unkeyed"


# How a rig's baked values were obtained (`BakeReport.read`).
SWEEP = "replayed the animation frame by frame"
CACHE = "copied live preview's frame cache"

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
    action: Optional[bpy.types.Action] = None
    batch: Any = None  # its `batch.BatchRig`: the frames read, and the computation over them
    cached: Optional[FrameCache] = None  # live preview's valid frame cache over the range: copied, not read
    read: str = ""  # how its animation was read: CACHE, fkread.FCURVES or SWEEP (with why)
    unkeyed: dict[str, list[float]] = field(default_factory=dict)  # driven channels the source does not key


@dataclass
class BakeReport:
    obj_name: str
    action_name: str
    source_name: str
    frames: int
    seconds: float
    channels: int
    read: str = SWEEP  # how the animation was read: CACHE, fkread.FCURVES, or SWEEP and why


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

    def __init__(self, objs: list[bpy.types.Object], start: int, end: int, scene: Optional[bpy.types.Scene] = None):
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
                                     getattr(slot, "identifier", None), cached=_valid_cache(obj, chans, start, end)))
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
        # reaches, within the scene's frame range (`model.context_rows`), so a range bakes as it plays in live
        # preview's longer range.
        self.pad = model.context_rows(start, end, self.scene.frame_start, self.scene.frame_end, self.fps)
        # Rigs with a valid frame cache are not read; rigs only their action moves are read from its F-curves;
        # the others are read by setting each frame (when there is none, nothing is swept).
        self.read = range(start - self.pad[0], end + self.pad[1] + 1)
        for r in self.rigs:
            if r.cached is not None:
                r.read = CACHE
            else:
                r.batch = batch.BatchRig(r.obj, r.terrain, len(self.read), self.read[0], self.fps, context=self.pad)
        todo = [r for r in self.rigs if r.batch is not None]
        for r, why in zip(todo, fkread.read_rigs([r.batch for r in todo], self.scene)):
            r.read = fkread.FCURVES if why is None else f"{SWEEP}: {why}"
        self.swept = [r for r in self.rigs if r.read.startswith(SWEEP)]
        self.total = len(self.read) if self.swept else 0
        self.done = 0

    @property
    def progress(self) -> float:
        return self.done / self.total if self.total else 1.0

    def step(self, count: int) -> bool:
        """Read the next `count` frames; True when every frame is read."""
        scene = self.scene
        last = min(self.done + count, self.total)
        for i in range(self.done, last):
            scene.frame_set(self.read[i])
            for rig in self.swept:
                rig.batch.read(i)
            self.done = i + 1
        return self.done >= self.total

    def cancel(self) -> None:
        """Stop: nothing was written; the frame and live preview are as they were (its frame cache, dropped
        when the bake began, is built again)."""
        self._restore(rebuild=True)

    def finish(self) -> list[BakeReport]:
        if self.done < self.total:
            self.step(self.total - self.done)
        reports = []
        for rig in self.rigs:
            fill(rig, self.frames)
            make_continuous(rig)
            rig.action = write_action(rig, self.frames)
            reports.append(BakeReport(rig.obj.name, rig.action.name, rig.source.name if rig.source else "",
                                      len(self.frames), time.perf_counter() - self.started,
                                      len(rig.channels), rig.read))
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


def _valid_cache(obj: bpy.types.Object, channels: list[Channel], start: int, end: int) -> Optional[FrameCache]:
    """The rig's live preview frame cache when it holds every channel the bake writes over [start, end]. A
    cache exists only while nothing it depends on has changed since it was built (any edit drops it), and
    it was built by the computation the bake runs, over the preview's range and the frames around it."""
    if obj.name not in state.live_rigs:
        return None
    cache = caches.frames.get(obj.name)
    if not isinstance(cache, FrameCache) or not (cache.start <= start and end <= cache.end):
        return None
    if any((c.bone, c.prop) not in cache.values for c in channels):
        return None
    return cache


def fill(rig: RigBake, frames: range) -> None:
    """The rig's baked values over `frames`: copied from live preview's frame cache, or computed from the
    frames the job read."""
    if rig.cached is not None:
        _fill_from_cache(rig, frames)
    else:
        _fill_from_batch(rig)


def _fill_from_cache(rig: RigBake, frames: range) -> None:
    """The bake's values copied from live preview's frame cache: what the viewport showed on each frame."""
    cache = rig.cached
    assert cache is not None
    rows = slice(frames[0] - cache.start, frames[-1] - cache.start + 1)
    rig.values = np.concatenate([cache.values[(c.bone, c.prop)][rows] for c in rig.channels],
                                axis=1).astype(np.float64)


def _fill_from_batch(rig: RigBake) -> None:
    """The computed channel values, or the FK values where nothing was written."""
    values = rig.batch.channel_values(rig.batch.compute(), rig.channels)
    rig.values = np.concatenate([values[(c.bone, c.prop)][0] for c in rig.channels], axis=1).astype(np.float64)


def make_continuous(rig: RigBake) -> None:
    """No quaternion sign flips and no Euler wrap jumps from one frame to the next."""
    col = 0
    for c in rig.channels:
        layer.continuous(c.prop, rig.values[:, col:col + c.size])  # a view: made continuous in place
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
    unkeyed_back(obj, baked)
    return source


def unkeyed_back(obj: bpy.types.Object, baked: Optional[bpy.types.Action]) -> None:
    """Channels the source does not key would keep the bake's last values once the source plays: give them
    their values from before the bake (stored on the bake, `UNKEYED_KEY`)."""
    for key, values in dict(baked.get(UNKEYED_KEY, {}) if baked is not None else {}).items():
        bone, _sep, prop = str(key).rpartition("|")
        if bone in obj.pose.bones and prop in live.PROPS:  # stored in the file: only the channels Contact IK writes
            setattr(obj.pose.bones[bone], prop, list(values))

