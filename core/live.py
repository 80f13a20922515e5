"""Live preview: plant every rig that has it on, whenever the frame changes.

Idempotent: channels the animation does not key keep what we wrote on the previous frame (Blender
does not reset them), so before solving we put back the animation's own values of every channel we
wrote whose value is still ours. The pose at a frame is then the same however the frame was reached.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import bpy

from ..properties import settings
from .ground import TerrainError, terrain_objects
from .handlers import caches
from .plant import RigResult, plant_rig

log = logging.getLogger(__name__)

# Names of armature objects with live preview on (kept in step by the property's update and load_post).
live_rigs: set[str] = set()

Channels = tuple[tuple[float, ...], ...]


@dataclass
class RigMemory:
    """For each bone we wrote: the animation's values (fk) and the values we wrote (ours)."""

    fk: dict[str, Channels] = field(default_factory=dict)
    ours: dict[str, Channels] = field(default_factory=dict)


def _channels(pb: bpy.types.PoseBone) -> Channels:
    return (tuple(pb.location), tuple(pb.rotation_quaternion), tuple(pb.rotation_euler), tuple(pb.rotation_axis_angle))


def _set_channels(pb: bpy.types.PoseBone, ch: Channels) -> None:
    pb.location, pb.rotation_quaternion, pb.rotation_euler, pb.rotation_axis_angle = ch  # type: ignore[assignment]


def _sync_from_evaluated(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> None:
    evaluated = obj.evaluated_get(depsgraph).pose.bones
    for pb in obj.pose.bones:
        ch = _channels(evaluated[pb.name])
        if _channels(pb) != ch:
            _set_channels(pb, ch)


def plays_baked(obj: bpy.types.Object) -> bool:
    """True while the rig plays a Contact IK bake: its keys already hold the IK, so preview adds nothing."""
    ad = obj.animation_data
    return ad is not None and ad.action is not None and bool(ad.action.get("contact_ik_baked", False))


def sync_registry() -> None:
    live_rigs.clear()
    for obj in bpy.data.objects:
        if obj.type == "ARMATURE" and settings(obj).live_preview:
            live_rigs.add(obj.name)


def restore_animation_values(obj: bpy.types.Object) -> bool:
    """Put back the animation's values in channels that still hold ours; True if any changed."""
    memory = caches.rigs.get(obj.name)
    if not isinstance(memory, RigMemory):
        return False
    changed = False
    bones = obj.pose.bones
    for name, ours in memory.ours.items():
        pb = bones.get(name)
        if pb is None:
            continue
        current = _channels(pb)
        if current == ours:
            _set_channels(pb, memory.fk[name])
            changed = True
        else:
            memory.fk[name] = current  # the animation (or the user) set a new value
    return changed


def solve_and_remember(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> RigResult:
    """Plant `obj` for its pose evaluated in `depsgraph`, remembering what was there and what we wrote."""
    s = settings(obj)
    terrain = caches.terrain.get(terrain_objects(s), depsgraph)
    memory = caches.rigs.get(obj.name)
    if not isinstance(memory, RigMemory):
        memory = caches.rigs[obj.name] = RigMemory()
    bones = obj.pose.bones
    before = {pb.name: _channels(pb) for pb in bones}
    result = plant_rig(obj, s, terrain, depsgraph)
    for name in set(result.written):
        memory.fk[name] = before[name]
        memory.ours[name] = _channels(bones[name])
    return result


def refresh(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> dict[str, RigResult]:
    """Plant every live rig of `scene` for its current frame, evaluated in `depsgraph` (the one being
    updated: the viewport's, or a render's during F12), which is then updated with the result.
    Errors switch that rig's preview off."""
    rigs = [obj for obj in scene.objects if obj.name in live_rigs and obj.type == "ARMATURE" and not plays_baked(obj)]
    if not rigs:
        return {}
    if depsgraph is None:
        depsgraph = bpy.context.evaluated_depsgraph_get()
    if depsgraph.mode == "RENDER":
        # A render's depsgraph evaluates the animation into its own copies only: bring the frame's
        # animated values into the original bones first, or a re-evaluation would copy stale ones back.
        for obj in rigs:
            _sync_from_evaluated(obj, depsgraph)
    if any([restore_animation_values(obj) for obj in rigs]):
        depsgraph.update()
    results = {}
    for obj in rigs:
        try:
            results[obj.name] = solve_and_remember(obj, depsgraph)
        except Exception as exc:  # never raise into Blender: report once and stop this rig's preview
            _disable(obj, exc)
    depsgraph.update()
    return results


def _disable(obj: bpy.types.Object, exc: Exception) -> None:
    reason = str(exc) if isinstance(exc, (TerrainError, ValueError, KeyError)) else f"{type(exc).__name__}: {exc}"
    print(f"Contact IK: live preview turned off for {obj.name!r}: {reason}")
    log.debug("live preview failure", exc_info=True)
    live_rigs.discard(obj.name)
    try:
        settings(obj).live_preview = False
    except Exception:  # the object may be read-only (library data); the registry already dropped it
        pass


def on_frame_change(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
    try:
        refresh(scene, depsgraph)
    except Exception as exc:  # the handler never throws into Blender
        print(f"Contact IK: live preview error: {type(exc).__name__}: {exc}")


def restore_for_edit(obj: bpy.types.Object) -> None:
    """Give back the animation's values in every channel that still holds ours and forget them (before a
    limb is removed or changed, so no IK rotation is left behind in an un-keyed channel)."""
    if restore_animation_values(obj) and bpy.context.view_layer is not None:
        bpy.context.view_layer.update()
    forget(obj.name)


def forget(obj_name: str) -> Any:
    return caches.rigs.pop(obj_name, None)
