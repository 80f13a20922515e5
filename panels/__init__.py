"""The Contact IK tab of the 3D View sidebar (N-panel): Plant Feet, terrain, live preview, limbs."""

from __future__ import annotations

import bpy

from ..core import checks, contacts
from ..core.rig import hinge_note
from ..properties import settings


class CONTACT_IK_UL_limbs(bpy.types.UIList):
    """The rig's limbs, each with its enabled switch and weight."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):  # type: ignore[override]
        row = layout.row(align=True)
        row.prop(item, "enabled", text="")
        broken = item.enabled and checks.limb_error(data.id_data, item) is not None
        row.label(text=item.name or f"Limb {index + 1}", icon="ERROR" if broken else "BONE_DATA")
        row.prop(item, "weight", text="", slider=True)


class CONTACT_IK_UL_contacts(bpy.types.UIList):
    """A foot's contacts: the frames it is down."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):  # type: ignore[override]
        row = layout.row(align=True)
        inside = item.start <= context.scene.frame_current <= item.end
        row.label(text="", icon="KEYFRAME_HLT" if inside else "KEYFRAME")
        row.prop(item, "start", text="")
        row.prop(item, "end", text="")


class CONTACT_IK_PT_main(bpy.types.Panel):
    bl_label = "Contact IK"
    bl_idname = "CONTACT_IK_PT_main"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Contact IK"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
            layout.label(text="Select an armature", icon="INFO")
            return
        s = settings(obj)
        row = layout.row(align=True)
        row.operator("contact_ik.plant_feet", icon="MOD_ARMATURE")
        row.operator("contact_ik.bake", icon="KEYINGSET")
        action = obj.animation_data.action if obj.animation_data else None
        if action is not None and action.get("contact_ik_baked"):
            box = layout.box()
            box.label(text=f"Playing bake: {action.name}", icon="CHECKMARK")
            box.operator("contact_ik.use_source_action", icon="LOOP_BACK")
        col = layout.column(align=True)
        col.prop(s, "terrain")
        col.prop(s, "terrain_collection", text="Or Collection")
        layout.prop(s, "live_preview", toggle=True, icon="PLAY" if not s.live_preview else "PAUSE")
        body = layout.column(align=True)
        body.prop_search(s, "pelvis_bone", obj.data, "bones")
        body.prop(s, "body_follow")
        sub = body.row(align=True)
        sub.active = s.body_follow
        sub.prop(s, "leg_stretch")
        body.prop(s, "softness")
        row = layout.row(align=True)
        row.prop(s, "auto_floor")
        row.prop(s, "floor_height", text="Floor")
        layout.prop(s, "detect_cuts")
        cuts = contacts.cuts_found(obj)  # what Plant Feet said, kept in sight while it applies
        if cuts:
            shown = ", ".join(str(f) for f, _j in cuts[:6]) + (", ..." if len(cuts) > 6 else "")
            layout.label(text=f"Treated as {'a cut' if len(cuts) == 1 else 'cuts'}: frame {shown}", icon="INFO")


class CONTACT_IK_PT_limbs(bpy.types.Panel):
    bl_label = "Limbs"
    bl_idname = "CONTACT_IK_PT_limbs"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Contact IK"
    bl_parent_id = "CONTACT_IK_PT_main"

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        obj = context.active_object
        s = settings(obj)
        layout.operator("contact_ik.detect_limbs", icon="VIEWZOOM")
        row = layout.row()
        row.template_list("CONTACT_IK_UL_limbs", "", s, "limbs", s, "active_limb", rows=4)
        side = row.column(align=True)
        for kind, icon in (("FOOT", "ADD"), ("HAND", "VIEW_PAN")):
            side.operator("contact_ik.limb_add", text="", icon=icon).kind = kind
        side.operator("contact_ik.limb_remove", text="", icon="REMOVE")
        if not (0 <= s.active_limb < len(s.limbs)):
            return
        limb = s.limbs[s.active_limb]
        col = layout.column()
        col.prop(limb, "name")
        col.prop(limb, "kind")
        for item in limb.bones:
            col.prop_search(item, "bone", obj.data, "bones", text="Chain Bone")
        row = col.row(align=True)
        row.operator("contact_ik.limb_bone", text="Add Chain Bone", icon="ADD").action = "ADD"
        row.operator("contact_ik.limb_bone", text="", icon="REMOVE").action = "REMOVE"
        col.prop_search(limb, "end_bone", obj.data, "bones")
        col.prop_search(limb, "control_bone", obj.data, "bones")
        problem = checks.limb_error(obj, limb) if limb.enabled else None
        if problem:  # live preview skips this limb; Plant Feet and Bake refuse it
            col.label(text=problem, icon="ERROR")
        if limb.kind == "FOOT":
            box = layout.box()
            head = box.row(align=True)
            head.prop(limb, "use_lock")
            head.operator("contact_ik.detect_contacts", text="", icon="VIEWZOOM")
            row = box.row()
            row.template_list("CONTACT_IK_UL_contacts", "", limb, "contacts", limb, "active_contact", rows=3)
            side = row.column(align=True)
            side.operator("contact_ik.contact_add", text="", icon="ADD")
            side.operator("contact_ik.contact_remove", text="", icon="REMOVE")
            side.operator("contact_ik.contact_relock", text="", icon="PINNED")
            col = layout.column()
            col.prop_search(limb, "toe_bone", obj.data, "bones")
            col.prop(limb, "foot_offset")
            col.prop(limb, "ray_length")
            col.prop(limb, "align_to_normal")
            sub = col.column()
            sub.active = limb.align_to_normal
            sub.prop(limb, "max_align_angle")
        else:
            col.prop(limb, "target_object")
            if limb.target_object is not None and limb.target_object.type == "ARMATURE":
                col.prop_search(limb, "target_bone", limb.target_object.data, "bones")
            col.prop(limb, "use_target_rotation")
        col.prop(limb, "pole_mode")
        hinge = hinge_note(limb)
        if hinge:
            col.label(text=hinge)
        if limb.pole_mode == "OBJECT":
            col.prop(limb, "pole_object")
        elif limb.pole_mode == "BONE":
            col.prop_search(limb, "pole_bone", obj.data, "bones")


classes = (CONTACT_IK_UL_limbs, CONTACT_IK_UL_contacts, CONTACT_IK_PT_main, CONTACT_IK_PT_limbs)
register, unregister = bpy.utils.register_classes_factory(classes)
