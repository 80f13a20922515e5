"""Application handlers: live preview on frame change, terrain cache invalidation, reset on file load.

All caches live in one object whose `reset()` runs when a file loads. The frame handler costs one
set lookup when no rig has live preview on, and never raises into Blender.
"""

from __future__ import annotations

from typing import Any

import bpy

from . import layer, live
from .state import caches


@bpy.app.handlers.persistent
def contact_ik_load_post(*_args: Any) -> None:
    caches.reset()
    _detach_everywhere()  # a file saved by a crash keeps its preview tracks: not the animation
    live.sync_registry()


@bpy.app.handlers.persistent
def contact_ik_save_pre(*_args: Any) -> None:
    """The file keeps the animation's values, not the IK: channels the animation does not key would
    otherwise be saved holding IK, which the next session would take for the animation."""
    caches.layers.clear()  # put back on their tracks by save_post's refresh
    _detach_everywhere()  # every track in the file, whoever it was built for
    for name in list(caches.rigs):
        obj = bpy.data.objects.get(name)
        try:
            if obj is not None and obj.pose is not None and obj.library is None:
                live.restore_animation_values(obj)
        except Exception as exc:  # noqa: BLE001  saving never fails because of Contact IK
            print(f"Contact IK: the pose of {name!r} was saved as it was: {type(exc).__name__}: {exc}")


@bpy.app.handlers.persistent
def contact_ik_save_post(*_args: Any) -> None:
    """After saving, the live rigs show their planted pose again."""
    if live.live_rigs and bpy.context.scene is not None:
        live.on_frame_change(bpy.context.scene)


@bpy.app.handlers.persistent
def contact_ik_undo_post(*_args: Any) -> None:
    """Undo and redo bring back older data: terrains and actions may differ from what the caches hold, and
    live preview may have been switched. The channel memory stays: a value still ours is still given back."""
    caches.terrain.reset()
    # The data brought back may hold a preview track built for other data, or none: every track goes, and
    # the frame caches are built again (in a moment, in the UI).
    caches.layers.clear()
    _detach_everywhere()
    live.invalidate_frames()
    caches.frames.clear()
    caches.drop_setups()
    live.sync_registry()
    _forget_removed()


def _detach_everywhere() -> list[str]:
    """`layer.detach_everywhere` from a handler, which never fails because of Contact IK (load, save, undo,
    unregister): the rigs taken off their tracks."""
    try:
        return layer.detach_everywhere()
    except Exception as exc:  # noqa: BLE001
        print(f"Contact IK: a preview track was not removed: {type(exc).__name__}: {exc}")
        return []


def _forget_removed() -> None:
    """Drop what is kept for armatures that no longer exist (deleted, or undone)."""
    names = {o.name for o in bpy.data.objects}
    for name in [n for n in live.live_rigs if n not in names]:
        live.live_rigs.discard(name)
    for cache in (caches.rigs, caches.frames, caches.pelvis, caches.feet, caches.fronts, caches.setups):
        for name in [n for n in cache if n not in names]:
            del cache[name]
    caches.layers.intersection_update(names)
    # A renamed rig keeps its track under its new name: off it (and its orphans' sources unmuted).
    caches.layers.difference_update(layer.detach_everywhere(keep=frozenset(caches.layers)))


@bpy.app.handlers.persistent
def contact_ik_frame_change_post(scene: bpy.types.Scene, depsgraph: Any = None) -> None:
    if not live.live_rigs or live.played(scene):
        return  # nothing live, or Blender plays every live rig from its preview track
    if any(n not in bpy.data.objects for n in live.live_rigs):
        _forget_removed()  # a live armature was deleted
    live.on_frame_change(scene, depsgraph)


@bpy.app.handlers.persistent
def contact_ik_depsgraph_update_post(_scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    if live.writing:
        return  # Contact IK's own writes
    objects = bpy.data.objects
    if any(n not in objects for n in live.live_rigs) or any(n not in objects for n in caches.rigs) \
            or any(n not in objects for n in caches.layers):
        _forget_removed()  # a deleted live armature leaves nothing behind
    watched = caches.terrain.names()
    if not watched and not caches.frames and not caches.setups:
        return
    changed = set()
    edited = False
    for update in depsgraph.updates:
        idb = update.id
        if isinstance(idb, bpy.types.Object) and (update.is_updated_geometry or update.is_updated_transform):
            edited = True
            name = getattr(idb, "original", idb).name
            if name in watched:
                changed.add(name)
        elif isinstance(idb, bpy.types.Mesh):
            edited = True
            changed.update(o.name for o in bpy.data.objects if o.data is getattr(idb, "original", idb) and o.name in watched)
        elif isinstance(idb, (bpy.types.Action, bpy.types.Armature, bpy.types.Collection)):
            edited = True
    if changed:
        caches.terrain.invalidate(changed)
    if edited:
        live.invalidate_frames()


_handlers = (
    (bpy.app.handlers.load_post, contact_ik_load_post),
    (bpy.app.handlers.frame_change_post, contact_ik_frame_change_post),
    (bpy.app.handlers.depsgraph_update_post, contact_ik_depsgraph_update_post),
    (bpy.app.handlers.undo_post, contact_ik_undo_post),
    (bpy.app.handlers.redo_post, contact_ik_undo_post),
    (bpy.app.handlers.save_pre, contact_ik_save_pre),
    (bpy.app.handlers.save_post, contact_ik_save_post),
)


def register() -> None:
    for handler_list, fn in _handlers:
        if fn not in handler_list:
            handler_list.append(fn)
    live.sync_registry()


def unregister() -> None:
    for handler_list, fn in _handlers:
        while fn in handler_list:
            handler_list.remove(fn)
    # Disabled while previewing: the animation's values go back into every channel that still holds ours.
    for name in list(caches.rigs):
        obj = bpy.data.objects.get(name)
        try:
            if obj is not None and obj.pose is not None:
                live.restore_for_edit(obj)
        except Exception as exc:  # noqa: BLE001  unregister never fails
            print(f"Contact IK: the pose of {name!r} was not restored: {type(exc).__name__}: {exc}")
    if _detach_everywhere() and bpy.context.view_layer is not None:
        try:
            bpy.context.view_layer.update()  # the animation's values, evaluated
        except Exception as exc:  # noqa: BLE001  unregister never fails
            print(f"Contact IK: the animation was not evaluated again: {type(exc).__name__}: {exc}")
    live.live_rigs.clear()
    caches.reset()
