"""Application handlers: live preview on frame change, terrain cache invalidation, reset on file load.

All caches live in one object whose `reset()` runs when a file loads. The frame handler costs one
set lookup when no rig has live preview on, and never raises into Blender.
"""

from __future__ import annotations

from typing import Any

import bpy

from .ground import TerrainCache


class Caches:
    """Per-session caches: terrain BVH trees and the live preview's per-rig pose memory."""

    def __init__(self) -> None:
        self.terrain = TerrainCache()
        self.rigs: dict[str, Any] = {}
        self.frames: dict[str, Any] = {}  # live preview's per-rig frame caches (`live.FrameCache`)

    def reset(self) -> None:
        self.terrain.reset()
        self.rigs.clear()
        self.frames.clear()


caches = Caches()


@bpy.app.handlers.persistent
def contact_ik_load_post(*_args: Any) -> None:
    from . import live

    caches.reset()
    live.sync_registry()


@bpy.app.handlers.persistent
def contact_ik_frame_change_post(scene: bpy.types.Scene, depsgraph: Any = None) -> None:
    from . import live

    if not live.live_rigs:
        return
    live.on_frame_change(scene, depsgraph)


@bpy.app.handlers.persistent
def contact_ik_depsgraph_update_post(_scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    from . import live

    if live.writing:
        return  # Contact IK's own writes
    watched = caches.terrain.names()
    if not watched and not caches.frames:
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
)


def register() -> None:
    for handler_list, fn in _handlers:
        if fn not in handler_list:
            handler_list.append(fn)
    from . import live

    live.sync_registry()


def unregister() -> None:
    for handler_list, fn in _handlers:
        while fn in handler_list:
            handler_list.remove(fn)
    from . import live

    live.live_rigs.clear()
    caches.reset()
