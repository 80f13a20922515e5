"""What live preview keeps between frames, and the one way to take rigs out of it for a while.

Below every module that plants, bakes or measures: they all pause live preview through `paused`, and the
handlers, live preview and the bake share the caches here, so none of them imports another to do so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .ground import TerrainCache

if TYPE_CHECKING:
    import bpy

Key = tuple[str, str]  # (bone, channel property)
PROPS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle")

# Names of armature objects with live preview on (kept in step by the property's update and load_post).
live_rigs: set[str] = set()


class Caches:
    """Per-session caches: terrain BVH trees and the live preview's per-rig pose memory."""

    def __init__(self) -> None:
        self.terrain = TerrainCache()
        self.rigs: dict[str, Any] = {}  # per rig: its `RigMemory`
        self.frames: dict[str, Any] = {}  # live preview's per-rig frame caches (`FrameCache`)
        # Per rig: (first frame, per-frame change) made by the pelvis's speed limit when its frame cache was
        # last built (`model.pelvis_speed_limit`). The limit needs every frame, so live preview's fallback,
        # which runs while an edit's frame cache is rebuilt, applies the last one: exact when nothing it
        # depends on changed (undo, redo, an edit elsewhere); otherwise the cache is back a moment later.
        self.pelvis: dict[str, tuple[int, Any]] = {}
        # Per rig: (first frame, per foot by limb index: the per-frame change) made by the smoothing of the
        # feet between contacts (`model.swing_smoothing`), kept and used the same way.
        self.feet: dict[str, tuple[int, dict[int, Any]]] = {}
        # Per rig: (first frame, per foot by limb index: how fast its front moved along the ground, over the
        # frames around each, `model.front_speeds`), kept and used the same way (one frame has no frames around).
        self.fronts: dict[str, tuple[int, dict[int, Any]]] = {}
        # Per rig: live preview's fallback's set-up (`batch.BatchRig` over one frame: the limbs, soles, bone
        # indices and lock points read from the settings, the armature and the terrain), reused from frame to
        # frame until anything it read is edited (`drop_setups`).
        self.setups: dict[str, Any] = {}
        # Names of the rigs whose frame cache plays from their preview track (`layer`).
        self.layers: set[str] = set()

    def drop_setups(self) -> None:
        self.setups.clear()

    def reset(self) -> None:
        self.terrain.reset()
        self.rigs.clear()
        self.frames.clear()
        self.pelvis.clear()
        self.feet.clear()
        self.fronts.clear()
        self.layers.clear()
        self.drop_setups()


caches = Caches()


@dataclass
class FrameCache:
    """Solved channel values for every frame of [start, end], and the animation's values under them."""

    start: int
    end: int
    values: dict[Key, np.ndarray]  # (frames, size) float32, what live preview writes
    fk: dict[Key, np.ndarray]
    # The same values grouped by property for `foreach_set`: prop -> (pose bone indices, (frames, bones, size)).
    blocks: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    bone_count: int = 0
    written: list[str] = field(default_factory=list)  # the bones written, sorted


@dataclass
class RigMemory:
    """For each channel we wrote: the animation's values (fk) and the values we wrote (ours)."""

    fk: dict[Key, tuple[float, ...]] = field(default_factory=dict)
    ours: dict[Key, tuple[float, ...]] = field(default_factory=dict)
    # The last cached frame written (cache, row), entered into fk/ours only when they are needed
    # (`settle`): a cached frame change then costs no per-channel bookkeeping.
    pending: Optional[tuple[FrameCache, int]] = None

    def settle(self) -> None:
        if self.pending is None:
            return
        cache, i = self.pending
        self.pending = None
        for key, arr in cache.values.items():
            self.ours[key] = tuple(arr[i].tolist())
            self.fk[key] = tuple(cache.fk[key][i].tolist())


def restore_animation_values(obj: bpy.types.Object) -> bool:
    """Put back the animation's values in channels that still hold ours; True if any changed."""
    memory = caches.rigs.get(obj.name)
    if not isinstance(memory, RigMemory):
        return False
    memory.settle()
    changed = False
    bones = obj.pose.bones
    for (name, prop), ours in memory.ours.items():
        pb = bones.get(name)
        if pb is None:
            continue
        current = tuple(getattr(pb, prop))
        if current == ours:
            setattr(pb, prop, memory.fk[(name, prop)])
            changed = True
        else:
            memory.fk[(name, prop)] = current  # the animation (or the user) set a new value
    return changed


def restore_for_edit(obj: bpy.types.Object, update: bool = True) -> bool:
    """Give back the animation's values in every channel that still holds ours and forget them (before a
    limb is removed or changed, so no IK rotation is left behind in an un-keyed channel). With `update`
    what changed is evaluated at once; without, the caller evaluates it (`restore_all`: once for several
    rigs). True when something changed."""
    import bpy

    from . import layer

    caches.layers.discard(obj.name)
    detached = layer.detach(obj)  # with the rigs sharing its action: they go back on their tracks later
    caches.layers.difference_update(detached)
    changed = restore_animation_values(obj) or bool(detached)
    if changed and update and bpy.context.view_layer is not None:
        bpy.context.view_layer.update()
    forget(obj.name)
    return changed


def restore_all(objs: Iterable[bpy.types.Object]) -> None:
    """`restore_for_edit` for each of `objs`, then one view-layer update for all of them."""
    import bpy

    if any([restore_for_edit(obj, update=False) for obj in objs]) and bpy.context.view_layer is not None:
        bpy.context.view_layer.update()


def forget(obj_name: str) -> Any:
    caches.frames.pop(obj_name, None)
    caches.setups.pop(obj_name, None)
    return caches.rigs.pop(obj_name, None)


@contextmanager
def paused(objs: Optional[Iterable[bpy.types.Object]] = None, scene: Optional[bpy.types.Scene] = None,
           restore: bool = True) -> Iterator[None]:
    """Take rigs out of live preview while the block sweeps frames, and put them back after it.

    `objs`: the rigs paused (None: every live rig); with `restore` each of them first gets the animation's
    values back in the channels that still hold ours (`restore_for_edit`), so the sweep reads the animation.
    `scene`: its current frame is set again at the end, after the rigs are back (so they are planted there)."""
    if objs is None:
        names = set(live_rigs)
        objs = []
    else:
        objs = list(objs)
        names = {o.name for o in objs} & live_rigs
    frame = scene.frame_current if scene is not None else None
    live_rigs.difference_update(names)
    try:
        if restore:
            restore_all(objs)
        yield
    finally:
        live_rigs.update(names)
        if scene is not None and frame is not None:
            scene.frame_set(frame)
