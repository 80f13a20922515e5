"""Operators: Detect Limbs, Plant Feet, and editing limbs by hand. Thin: they validate, call `core`, and report."""

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


class CONTACT_IK_OT_limb_add(bpy.types.Operator):
    """Add a limb by hand. In Pose Mode the active bone becomes its end (foot or hand) and its parents the chain"""

    bl_idname = "contact_ik.limb_add"
    bl_label = "Add Limb"
    bl_options = {"REGISTER", "UNDO"}

    kind: bpy.props.EnumProperty(  # type: ignore[valid-type]
        name="Kind",
        items=(
            ("FOOT", "Foot", "Plant the end of this chain on the terrain"),
            ("HAND", "Hand", "Reach a target object or bone"),
            ("CHAIN", "Chain", "A generic chain that reaches a target"),
        ),
        default="FOOT",
    )
    chain_length: bpy.props.IntProperty(  # type: ignore[valid-type]
        name="Chain Bones", description="Bones in the chain above the end bone (2 = thigh and shin)", default=2, min=1, max=32
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _armature_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        active = context.active_pose_bone if context.mode == "POSE" else None
        try:
            limb = setup.add_limb(obj, self.kind, active.name if active is not None else "", self.chain_length)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        chain = " > ".join([b.bone for b in limb.bones] + [limb.end_bone]) if limb.end_bone else "pick its bones below"
        self.report({"INFO"}, f"Added {limb.name!r}: {chain}")
        return {"FINISHED"}


class CONTACT_IK_OT_limb_remove(bpy.types.Operator):
    """Remove the active limb from the list (the bones and their animation are not touched)"""

    bl_idname = "contact_ik.limb_remove"
    bl_label = "Remove Limb"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _armature_poll(cls, context):
            return False
        s = settings(context.active_object)
        if not (0 <= s.active_limb < len(s.limbs)):
            cls.poll_message_set("No limb is selected in the list")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        s = settings(obj)
        name = s.limbs[s.active_limb].name
        live.restore_for_edit(obj)
        s.limbs.remove(s.active_limb)
        s.active_limb = max(0, min(s.active_limb, len(s.limbs) - 1))
        live.refresh(context.scene)
        self.report({"INFO"}, f"Removed limb {name!r}")
        return {"FINISHED"}


class CONTACT_IK_OT_limb_bone(bpy.types.Operator):
    """Add a bone slot to the active limb's chain, or remove its last one"""

    bl_idname = "contact_ik.limb_bone"
    bl_label = "Chain Bone"
    bl_options = {"REGISTER", "UNDO"}

    action: bpy.props.EnumProperty(  # type: ignore[valid-type]
        name="Action", items=(("ADD", "Add", "Add a bone slot at the tip"), ("REMOVE", "Remove", "Remove the last bone")),
        default="ADD",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _armature_poll(cls, context):
            return False
        s = settings(context.active_object)
        if not (0 <= s.active_limb < len(s.limbs)):
            cls.poll_message_set("No limb is selected in the list")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        s = settings(obj)
        limb = s.limbs[s.active_limb]
        if self.action == "ADD":
            limb.bones.add()
        elif len(limb.bones) <= 1:
            self.report({"ERROR"}, "A limb needs at least one chain bone above its end bone")
            return {"CANCELLED"}
        else:
            live.restore_for_edit(obj)
            limb.bones.remove(len(limb.bones) - 1)
        setup.measure_limb(obj, limb)
        live.refresh(context.scene)
        return {"FINISHED"}


classes = (
    CONTACT_IK_OT_detect_limbs,
    CONTACT_IK_OT_plant_feet,
    CONTACT_IK_OT_limb_add,
    CONTACT_IK_OT_limb_remove,
    CONTACT_IK_OT_limb_bone,
)
register, unregister = bpy.utils.register_classes_factory(classes)
