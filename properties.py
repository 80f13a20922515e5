"""Settings stored on armature objects (`Object.contact_ik`): terrain, live preview, and the limbs."""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    IntVectorProperty,
    PointerProperty,
    StringProperty,
)

from .core.rig import settings  # noqa: F401  (the settings of an object: `settings(obj)`)
from .core.tuning import REACH_MARGIN


def _live_preview_changed(self: bpy.types.PropertyGroup, context: bpy.types.Context) -> None:
    from .core import live

    live.sync_registry()
    obj = self.id_data
    if not self.live_preview and isinstance(obj, bpy.types.Object) and obj.pose is not None:
        live.restore_for_edit(obj)  # give back the animation's values in the channels that still hold ours
    elif context.scene is not None and isinstance(obj, bpy.types.Object):
        # Solve the whole frame range at once (fast scrubbing); frame by frame if that is not possible. In the
        # UI, this frame now and the whole range right after the click (`live.BUILD_LATER`).
        if live.BUILD_LATER:
            live.refresh(context.scene)
            live.build_soon()
        elif live.precompute(obj, context.scene) is None:
            live.refresh(context.scene)


def _settings_changed(self: bpy.types.PropertyGroup, context: bpy.types.Context) -> None:
    """A setting the solution depends on changed: live preview's frame cache is stale."""
    from .core import live

    live.settings_changed(self.id_data)


def _is_mesh(_self: bpy.types.PropertyGroup, obj: bpy.types.Object) -> bool:
    return obj.type == "MESH"


class ContactIKBone(bpy.types.PropertyGroup):
    """One bone of a limb's chain, named root to tip."""

    bone: StringProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Bone", description="Name of a bone of this limb's chain, root to tip",
    )


class ContactIKContact(bpy.types.PropertyGroup):
    """A foot contact: the frames the foot is down, and where it stays (its lock point)."""

    start: IntProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Start", description="First frame the foot is down"
    )
    end: IntProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="End", description="Last frame the foot is down"
    )
    lock: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Lock Point", size=3, subtype="XYZ",
        description="Where the ankle stays during the contact, in world space (the animation's mean "
        "ankle position over the contact; where the ball is held from the first frame, where the ankle is "
        "for the ball's mean position; set when contacts are detected or edited)",
    )
    enter: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ankle at Landing", size=3, subtype="XYZ",
        description="The animation's ankle position (world space) on the contact's first frame",
    )
    leave: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ankle at Lift-off", size=3, subtype="XYZ",
        description="The animation's ankle position (world space) on the contact's last frame",
    )
    drop_in: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Hover at Landing", subtype="DISTANCE",
        description="How high the animation's sole is above its floor on the contact's first frame",
    )
    drop_out: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Hover at Lift-off", subtype="DISTANCE",
        description="How high the animation's sole is above its floor on the contact's last frame",
    )
    heel: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Heel", size=3, subtype="XYZ",
        description="The heel end of the contact's footprint relative to the lock point (world space): the "
        "smallest rectangle holding the heel and toe tip of every frame of the contact, kept off step edges. "
        "With Toe, its centre line; with Footprint Width, its half width. Zero for none",
    )
    toe: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Toe", size=3, subtype="XYZ",
        description="The toe end of the contact's footprint relative to the lock point (world space)",
    )
    cut: IntProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Cut Before",
        description="A frame the animation jumps to between the foot's previous contact and this one (an NLA "
        "repeat's or a loop's seam snapping the body back; set when contacts are detected), 0 for none: the "
        "swing between them is planned on either side of the cut as if the body had not jumped",
    )
    jump: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Jump at the Cut", size=3, subtype="XYZ",
        description="How far the animation's ankle jumps at Cut Before (world space)",
    )
    width: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Footprint Width", subtype="DISTANCE", min=0.0,
        description="Half the width of the contact's footprint, either side of the line from Heel to Toe "
        "(world units)",
    )
    rolls: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Rolls over the Ball", default=False,
        description="The foot rolls over its ball: from Ball Down to Ball Up the ball, not the ankle, is held "
        "(set when contacts are detected or relocked)",
    )
    pivot: IntProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ball Down",
        description="First frame the ball is held in place (the foot flat or rolling over it), from Start on",
    )
    roll: IntProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ball Up",
        description="Last frame the ball is held in place, at or after End (the heel up, the foot rolling over "
        "its ball to toe-off)",
    )
    ball: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ball", size=3, subtype="XYZ",
        description="Where the ball is held, relative to the lock point (world space): where it is when the "
        "ankle is at the lock point on the frame before Ball Down",
    )
    ball_leave: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ball at Lift-off", size=3, subtype="XYZ",
        description="The ball's position (world space) on Ball Up for the animation's ankle, the foot turned "
        "by Turn at Lift-off",
    )
    holds_turn: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Holds the Turn", default=False,
        description="While the ankle is held, the foot's heading (its turn about the up axis) is held too, at "
        "Heading: a foot flat on the ground does not turn about its ankle and sweep its ball (set when contacts "
        "are detected or relocked)",
    )
    heading: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Heading", subtype="ANGLE",
        description="The heading (heel to toe tip, about the up axis) the foot keeps while its ankle is held: "
        "the animation's as it lands; where the animation turns it further than 20 degrees from it, it turns on "
        "beyond that",
    )
    turn_in: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Turn at Landing", subtype="ANGLE",
        description="How far the foot is turned from its animated heading on the contact's first frame",
    )
    turn_out: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Turn at Lift-off", subtype="ANGLE",
        description="How far the foot is turned from its animated heading when the ankle is let go; kept while "
        "the ball is held, and carried into the swing as the lock's correction is",
    )
    lands: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ball Lands First", default=False,
        description="The ball is down before the ankle comes to rest, and is held from Ball Lands (set when "
        "contacts are detected or relocked)",
    )
    land_heel: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Heel Lands First", default=False,
        description="Only the heel is down before the ankle comes to rest (a heel strike), and the heel, not the "
        "ball, is held from the frame in Ball Lands (set when contacts are detected or relocked)",
    )
    land: IntProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ball Lands",
        description="First frame the ball is held before Start: the ball is down (on the ground and still) while "
        "the ankle is still coming to rest, and is held where it is at Start from then on (set when contacts are "
        "detected or relocked; Start where the ball lands with the ankle)",
    )
    land_ball: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ball at Landing", size=3, subtype="XYZ",
        description="Where the ball is held from Ball Lands to Start, relative to the lock point (world space)",
    )
    land_shift: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Landing Shift", size=3, subtype="XYZ",
        description="How far the ball, held from Ball Lands, is from where the animation has it on Ball Lands, "
        "beyond the lock's correction at Start (world space): the swing's correction along the ground arrives "
        "at it by Ball Lands",
    )


class ContactIKLimb(bpy.types.PropertyGroup):
    """A foot, a hand or a generic chain that Contact IK solves."""

    name: StringProperty(name="Name", description="Label of this limb, e.g. 'Left Leg'")  # type: ignore[valid-type]
    enabled: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Enabled", description="Solve this limb", default=True,
    )
    kind: EnumProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Kind",
        description="What this limb does: a foot lands on the terrain, a hand reaches its target",
        items=(
            ("FOOT", "Foot", "Plant the end of this chain on the terrain"),
            ("HAND", "Hand", "Reach the target object or bone"),
            ("CHAIN", "Chain", "A generic chain that reaches its target"),
        ),
        default="FOOT",
    )
    bones: CollectionProperty(type=ContactIKBone, name="Bones", description="Chain bones, root to tip")  # type: ignore[valid-type]
    end_bone: StringProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="End Bone", description="The foot or hand bone at the chain's tip (its head is the tip)"
    )
    toe_bone: StringProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Toe Bone", description="Optional toe bone: its tip is also kept above the terrain",
    )
    control_bone: StringProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Control Bone",
        description="Drive this limb by moving this control (an IK foot control, e.g. Rigify's foot_ik.L) so the end "
                    "bone lands where planned, keeping the animation's offset between the two (its foot roll); the "
                    "chain and end bones are then only read (the rig's own IK moves them). Empty: the chain is solved",
    )
    weight: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Weight",
        description="Blend from the animation (0) to the IK solution (1); can be keyframed",
        default=1.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
    )
    pole_mode: EnumProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Pole",
        description="What sets the direction the knee or elbow points",
        items=(
            ("AUTO", "Automatic", "Keep the knee or elbow where the animation points it"),
            ("OBJECT", "Object", "Point the knee or elbow toward an object"),
            ("BONE", "Bone", "Point the knee or elbow toward a bone of this armature"),
        ),
        default="AUTO",
    )
    pole_object: PointerProperty(  # type: ignore[valid-type]
        update=_settings_changed, type=bpy.types.Object, name="Pole Object", description="Object the knee or elbow points toward",
    )
    pole_bone: StringProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Pole Bone", description="Bone of this armature the knee or elbow points toward",
    )
    target_object: PointerProperty(  # type: ignore[valid-type]
        update=_settings_changed, type=bpy.types.Object, name="Target", description="Object the hand reaches for",
    )
    target_bone: StringProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Target Bone", description="Bone of the target armature the hand reaches for (optional)",
    )
    use_target_rotation: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Match Target Rotation", description="Also turn the hand to the target's orientation", default=False
    )
    foot_offset: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Sole Height",
        description="Height of the ankle above the sole when standing; set from the rig when limbs are detected",
        default=0.0,
        min=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )
    ray_length: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Ray Length",
        description="How far above and below the foot the terrain is searched; set from the leg length when detected",
        default=0.0,
        min=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )
    align_to_normal: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Align to Ground", description="Turn the foot to the slope of the ground under it", default=True
    )
    max_align_angle: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Max Angle",
        description="Steepest ground slope the foot turns to follow",
        default=0.7853981633974483,
        min=0.0,
        max=1.5707963267948966,
        subtype="ANGLE",
    )
    contacts: CollectionProperty(  # type: ignore[valid-type]
        type=ContactIKContact, name="Contacts", description="Frames this foot is planted (detected from the animation)"
    )
    active_contact: IntProperty(name="Active Contact", default=0, min=0)  # type: ignore[valid-type]
    contact_range: IntVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Detected Over", size=2,
        description="The first and last frame contacts were detected over (set by Detect Contacts and Plant "
        "Feet). A swing that runs off either end, with no contact there to land on or lift off from, follows "
        "the line from its contact to the ground under the ankle at that end, as between two contacts. "
        "Equal: no such line (the ground right under the foot)",
    )
    range_ankles: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Ankle at the Ends", size=6,
        description="The animation's ankle position (world space) on the first and on the last frame of "
        "Detected Over",
    )
    use_lock: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Lock Feet", default=True,
        description="During a contact the foot stays where it landed, on the terrain (removes foot skate); "
        "it eases in before landing and out after lift-off",
    )
    length: FloatProperty(  # type: ignore[valid-type]
        name="Length", description="Chain length in the rest pose (measured at detection)", default=0.0, min=0.0,
        subtype="DISTANCE", unit="LENGTH",
    )
    hinge: FloatVectorProperty(  # type: ignore[valid-type]
        update=_settings_changed, name="Knee Hinge", size=3,
        description="The line the animation bends this leg's knee about, in its thigh bone's own frame, pointing "
        "so the knee bends forward across it (measured by Detect Contacts and Plant Feet). A nearly straight "
        "knee that must bend does so about it. Zero (or not a number): not measured, the knee bends where the foot "
        "points",
    )
    hinge_measured: BoolProperty(  # type: ignore[valid-type]
        name="Knee Hinge Measured", default=False,
        description="Detect Contacts or Plant Feet has measured this leg's knee hinge; with Knee Hinge zero, the "
        "knee never bends enough over the range to show one, and Plant Feet does not measure it again",
    )


class ContactIKSettings(bpy.types.PropertyGroup):
    """Contact IK settings of one armature."""

    terrain: PointerProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        type=bpy.types.Object, name="Terrain", description="Mesh the feet land on", poll=_is_mesh
    )
    terrain_collection: PointerProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        type=bpy.types.Collection, name="Terrain Collection", description="Meshes the feet land on (all meshes in it)"
    )
    live_preview: BoolProperty(  # type: ignore[valid-type]
        name="Live Preview",
        description="Solve the limbs on every frame change so scrubbing shows planted feet",
        default=False,
        update=_live_preview_changed,
    )
    floor_height: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Floor Height",
        description="Height (world Z) of the animation's own floor, in scene units, whatever the armature's "
        "rotation or scale (detected from where the feet rest when Plant Feet runs)",
        default=0.0,
        subtype="DISTANCE",
    )
    auto_floor: BoolProperty(  # type: ignore[valid-type]
        name="Detect Floor", description="Detect the animation's floor from the feet when Plant Feet runs", default=True
    )
    detect_cuts: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Detect Cuts",
        description="Treat a frame every foot jumps to faster than 20 leg lengths per second as a cut (a loop's "
        "seam or an NLA repeat snapping the body back): no foot is held and the body is not smoothed across it. "
        "Turn off when such a jump is a move or a glitch of the capture that should be followed, then click Detect "
        "Contacts",
        default=True,
    )
    pelvis_bone: StringProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Pelvis", description="The bone moved up and down so the body follows the terrain (the hips or root)"
    )
    body_follow: BoolProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Body Follows Ground",
        description="Raise and lower the pelvis with the terrain under the body, and lower it where a leg cannot reach",
        default=True,
    )
    limbs: CollectionProperty(  # type: ignore[valid-type]
        type=ContactIKLimb, name="Limbs", description="The legs and arms Contact IK solves (detected, or added by hand)")
    active_limb: IntProperty(name="Active Limb", default=0, min=0)  # type: ignore[valid-type]
    leg_stretch: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Leg Stretch",
        description="How straight a leg on the ground may be, as a fraction of its length, before the pelvis is "
        "lowered for it instead (Body Follows Ground). Lower keeps knees further from a snap straight; higher keeps "
        "a straight-legged stance straighter: the knees of an idle bend less",
        default=REACH_MARGIN,
        min=0.9,
        max=1.0,
        precision=3,
    )
    softness: FloatProperty(  # type: ignore[valid-type]
        update=_settings_changed,
        name="Soft IK",
        description="Fraction of the leg length over which reach eases in near full extension (0 = off)",
        default=0.0,
        min=0.0,
        max=0.5,
        subtype="FACTOR",
    )


classes = (ContactIKBone, ContactIKContact, ContactIKLimb, ContactIKSettings)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.Object.contact_ik = PointerProperty(type=ContactIKSettings)  # type: ignore[attr-defined]


def unregister() -> None:
    del bpy.types.Object.contact_ik  # type: ignore[attr-defined]
    _unregister_classes()

