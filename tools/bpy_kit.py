"""Small helpers for scripts that run Blender as a Python module (the tests, the demo, the quality
report): the Rigify metarig, a mesh object from a BMesh, and leaving the interpreter safely."""

from __future__ import annotations

import os
import sys

import addon_utils
import bmesh
import bpy


def metarig() -> bpy.types.Object:
    """The Rigify human metarig, added to the scene and active, in Object Mode."""
    addon_utils.enable("rigify", default_set=True)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.active_object
    bpy.ops.object.mode_set(mode="OBJECT")
    return obj


def mesh_object(name: str, bm: bmesh.types.BMesh) -> bpy.types.Object:
    """A mesh object made from `bm` (which is freed), linked to the scene's collection."""
    me = bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def leave_now_if_exit_is_broken(code: int) -> None:
    """On the Blender 4.2 and 4.5 `bpy` wheels, leave at once with `code` (os._exit, after flushing).

    Once Rigify has been enabled, 4.2.23 segfaults at interpreter exit (SpaceType::~SpaceType ->
    bpy_class_free after Python has finalized) and 4.5 hangs there (~GlobalState waiting on its
    delayed_close_thread_run thread). Both reproduce with a script that only enables Rigify, without
    Contact IK. On 5.0 this returns and the interpreter exits normally."""
    if bpy.app.version < (5, 0, 0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
