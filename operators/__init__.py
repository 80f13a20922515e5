"""Operators: Detect Limbs and Plant Feet. Thin: they validate, call `core`, and report."""

from __future__ import annotations

import time

import bpy

from ..core import live, setup
from ..core.ground import TerrainError, terrain_objects
from ..core.handlers import caches
from ..properties import settings


def _armature_poll(cls: type[bpy.types.Operator], context: bpy.types.Context) -> bool:
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("Select an armature (the animated character) and make it active")
        return False
    if obj.library is not None:
        cls.poll_message_set("This armature is linked from a library: make a library override to edit it")
        return False
    return True


class CONTACT_IK_OT_detect_limbs(bpy.types.Operator):
    """Find the legs and arms of the active armature from its bone names and hierarchy"""

    bl_idname = "contact_ik.detect_limbs"
    bl_label = "Detect Limbs"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _armature_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..core import detect

        obj = context.active_object
        found = detect.detect_limbs(detect.bones_from_armature(obj))
        if not found:
            self.report({"ERROR"}, f"No legs or arms found in {obj.name!r} by bone names or hierarchy: "
                                   "add limbs by hand in the Contact IK panel")
            return {"CANCELLED"}
        setup.apply_detection(obj, found)
        self.report({"INFO"}, "Found " + detect.describe(found).replace("\n", "; "))
        return {"FINISHED"}


class CONTACT_IK_OT_plant_feet(bpy.types.Operator):
    """Plant the feet of the active armature on the terrain (the selected mesh) and turn on live preview"""

    bl_idname = "contact_ik.plant_feet"
    bl_label = "Plant Feet"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _armature_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        started = time.perf_counter()
        obj = context.active_object
        s = settings(obj)
        if not s.limbs:
            from ..core import detect

            found = detect.detect_limbs(detect.bones_from_armature(obj))
            if not found:
                self.report({"ERROR"}, f"No legs or arms found in {obj.name!r} by bone names or hierarchy: "
                                       "add limbs by hand in the Contact IK panel")
                return {"CANCELLED"}
            setup.apply_detection(obj, found)
        picked = [o for o in context.selected_objects if o.type == "MESH" and o is not obj]
        if picked:
            s.terrain = picked[0]
        if s.terrain is None and s.terrain_collection is None:
            self.report({"ERROR"}, "No terrain: select the ground mesh too (Ctrl+click it), or set Terrain "
                                   "in the Contact IK panel")
            return {"CANCELLED"}
        try:
            caches.terrain.get(terrain_objects(s), context.evaluated_depsgraph_get())
        except TerrainError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if s.auto_floor:
            s.floor_height = setup.detect_floor(obj, context.scene)
        s.live_preview = True
        results = live.refresh(context.scene)
        if obj.name not in results:
            self.report({"ERROR"}, f"Plant Feet failed on {obj.name!r}: see the system console")
            return {"CANCELLED"}
        n = len(results[obj.name].limbs)
        took = (time.perf_counter() - started) * 1000.0
        terrain_name = s.terrain.name if s.terrain else s.terrain_collection.name
        self.report({"INFO"}, f"Planted {n} limb(s) of {obj.name!r} on {terrain_name!r}; live preview on ({took:.0f} ms)")
        return {"FINISHED"}


classes = (CONTACT_IK_OT_detect_limbs, CONTACT_IK_OT_plant_feet)
register, unregister = bpy.utils.register_classes_factory(classes)
