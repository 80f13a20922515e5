"""Checks run before Contact IK touches a rig: each problem is one sentence saying what is wrong and how
to fix it. Errors refuse the operation (Plant Feet, Bake, the command line) and stop live preview;
warnings are reported and the work goes on."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

import bpy
import numpy as np
from mathutils import Vector

from .model import Rays
from .rig import UP, settings, world_scale

# Longest frame range Plant Feet samples at once (contacts are detected on every frame): 70 minutes at 24 fps.
MAX_PLANT_FRAMES = 100_000
# A scale below this (in any axis) collapses the armature: no pose can be solved in it.
MIN_SCALE = 1e-12
# A chain bone shorter than this fraction of its chain is a point: no rotation of it can be solved.
MIN_BONE = 1e-4
# Lengths and heights in the settings beyond this many times the rig's limb length are refused.
MAX_RATIO = 1000


def _finite(values: Iterable[float]) -> bool:
    return all(math.isfinite(v) for v in values)


def _fmt(values: Iterable[float]) -> str:
    return "(" + ", ".join(f"{v:g}" for v in values) + ")"


def transform_error(obj: bpy.types.Object) -> Optional[str]:
    """The armature object's own transform: finite numbers and no zero scale."""
    name = obj.name
    fix = "set it in Object Properties > Transform"
    rotation = obj.rotation_quaternion if obj.rotation_mode == "QUATERNION" else (
        obj.rotation_axis_angle if obj.rotation_mode == "AXIS_ANGLE" else obj.rotation_euler)
    for label, values, clear in (("location", obj.location, "Alt+G"), ("rotation", rotation, "Alt+R"),
                                 ("scale", obj.scale, "Alt+S"), ("delta location", obj.delta_location, None),
                                 ("delta scale", obj.delta_scale, None)):
        if not _finite(values):
            how = f"{fix} (or clear it with {clear})" if clear else fix
            return f"{name!r} has a {label} that is not a number {_fmt(values)}: {how}"
    scale = [obj.scale[i] * obj.delta_scale[i] for i in range(3)]
    if any(abs(s) < MIN_SCALE for s in scale):
        return (f"{name!r} has a zero scale {_fmt(scale)}: Contact IK cannot solve a collapsed armature; give it a "
                f"non-zero scale in Object Properties > Transform (Alt+S clears it to 1)")
    if any(s < 0.0 for s in scale) and (obj.matrix_world.to_3x3() @ Vector((0.0, 0.0, 1.0))).z < 0.0:
        return (f"{name!r} has a negative scale {_fmt(scale)} that turns it upside down (its up axis points down): "
                "feet are planted along the armature's own up axis, so make the scale of that axis positive in "
                "Object Properties > Transform (a mirror along X or Y is fine)")
    mw = obj.matrix_world
    if not _finite(v for row in mw for v in row):
        return (f"{name!r} has a world transform that is not a number (from its parent or constraints): fix the "
                "parent's transform or the object's constraints")
    if abs(mw.to_3x3().determinant()) < MIN_SCALE ** 3:
        return (f"{name!r} is collapsed to zero size in the world (a parent or constraint with zero scale): give it "
                "a non-zero scale")
    return None


def pose_error(obj: bpy.types.Object) -> Optional[str]:
    """The animated pose at the current frame: no bone may be given a transform that is not a number."""
    for pb in obj.pose.bones:
        if not _finite(v for row in pb.matrix for v in row):
            return (f"the animation gives bone {pb.name!r} of {obj.name!r} a transform that is not a number at frame "
                    f"{bpy.context.scene.frame_current}: fix its keys (Graph Editor) or the file it came from")
    return None


# (setting, label) of the numbers live preview and bake compute with.
_RIG_NUMBERS = (("floor_height", "Floor Height"), ("softness", "Soft IK"), ("leg_stretch", "Leg Stretch"))
_LIMB_NUMBERS = (("weight", "Weight"), ("ray_length", "Ray Length"), ("foot_offset", "Sole Height"),
                 ("max_align_angle", "Max Angle"), ("length", "Length"))


def settings_error(obj: bpy.types.Object) -> Optional[str]:
    """Settings that are not finite numbers (set from a script or a driver: the panel cannot type them)."""
    s = settings(obj)
    for attr, label in _RIG_NUMBERS:
        value = getattr(s, attr)
        if not math.isfinite(value):
            return f"{label} of {obj.name!r} is {value}, not a finite number: set it in the Contact IK panel"
    enabled = [lb for lb in s.limbs if lb.enabled]
    for limb in enabled:
        for attr, label in _LIMB_NUMBERS:
            value = getattr(limb, attr)
            if not math.isfinite(value):
                return (f"{label} of limb {limb.name!r} is {value}, not a finite number: set it in the Contact IK "
                        "panel (Limbs)")
    # Lengths far beyond the rig's size lose all precision in single-precision positions and rays.
    for limb in enabled:
        for attr, label in (("ray_length", "Ray Length"), ("foot_offset", "Sole Height")):
            value = getattr(limb, attr)
            if limb.length > 0.0 and value > MAX_RATIO * limb.length:
                return (f"{label} of limb {limb.name!r} is {value:.3g}, over {MAX_RATIO} times the limb's length "
                        f"({limb.length:.3g}): set it in the Contact IK panel (Limbs)")
    size = max((lb.length for lb in enabled), default=0.0) * world_scale(obj)
    above = s.floor_height - obj.matrix_world.translation.z
    if size > 0.0 and not abs(above) <= MAX_RATIO * size:
        return (f"Floor Height of {obj.name!r} is {s.floor_height:.3g}, over {MAX_RATIO} times the leg length "
                f"({size:.3g}) from the armature's own height ({obj.matrix_world.translation.z:.3g}): set it in the "
                "Contact IK panel (or turn on Detect Floor and run Plant Feet)")
    return None


def limb_error(obj: bpy.types.Object, limb: Any) -> Optional[str]:
    """A limb whose bones cannot be solved: empty slots, missing bones, or not a parent-child line."""
    bones = obj.data.bones
    fix = "fix its bones in the Limbs panel, or disable the limb"
    label = f"limb {limb.name!r}"
    names = [b.bone for b in limb.bones]
    if not names:
        return f"{label} has no chain bones: {fix}"
    if any(not n for n in names):
        return f"{label} has an empty bone slot: {fix}"
    for n in names + ([limb.end_bone] if limb.end_bone else []):
        if n not in bones:
            return f"{label}: no bone {n!r} in {obj.name!r}: {fix}"
    total = sum(bones[n].length for n in names)
    for n in names:
        if not bones[n].length > MIN_BONE * total:  # Blender keeps a bone shrunk to a point about 2e-6 long
            return (f"{label}: {n!r} has almost zero length ({bones[n].length:.3g}): give it a length in Edit Mode "
                    "(move its tail), or disable the limb")
    for parent, child in zip(names, names[1:]):
        if bones[child].parent is None or bones[child].parent.name != parent:
            return (f"{label}: {child!r} is not a child of {parent!r}; the chain bones must be a parent-child line, "
                    f"root to tip: {fix}")
    if limb.end_bone:
        end = bones[limb.end_bone]
        if names[-1] not in {p.name for p in end.parent_recursive}:
            return f"{label}: the end bone {limb.end_bone!r} is not below {names[-1]!r}, the chain's last bone: {fix}"
    elif limb.kind == "FOOT":
        return f"{label} is a foot without an end bone: pick the foot bone in the Limbs panel, or disable the limb"
    control = getattr(limb, "control_bone", "")
    if control:
        if control not in bones:
            return f"{label}: no control bone {control!r} in {obj.name!r}: {fix} (or clear Control Bone)"
        if not limb.end_bone:
            return f"{label} is driven through {control!r} but has no end bone to land: pick it in the Limbs panel"
        if control in names or control == limb.end_bone:
            return (f"{label}: its control bone {control!r} is one of its chain or end bones: pick the control that "
                    "moves the end bone (an IK foot control), or clear Control Bone")
    return None


def written_bones(limb: Any) -> list[str]:
    """The bones Contact IK writes for `limb`: its control bone alone when it has one (the chain and end
    bones, which the rig's own IK moves, are only read), else its chain and end bones."""
    control = getattr(limb, "control_bone", "")
    if control:
        return [control]
    return [b.bone for b in limb.bones if b.bone] + ([limb.end_bone] if limb.end_bone else [])


def limb_is_usable(obj: bpy.types.Object, limb: Any) -> bool:
    """Its bones exist and are a parent-child line (`limb_error`): a broken limb is skipped, never solved."""
    return limb_error(obj, limb) is None


@dataclass
class Channel:
    """A channel Contact IK writes: a bone's rotation in its own mode, or the location of the pelvis or of a
    limb's control bone."""

    bone: str
    prop: str  # rotation_quaternion, rotation_euler, rotation_axis_angle or location
    size: int

    @property
    def data_path(self) -> str:
        import bpy

        return f'pose.bones["{bpy.utils.escape_identifier(self.bone)}"].{self.prop}'


def driven_channels(obj: bpy.types.Object) -> list[Channel]:
    """The channels Contact IK writes on `obj`: chain and end bone rotations, a control bone's location and
    rotation (for a limb driven through one), and the pelvis location."""
    s = settings(obj)
    bones = obj.pose.bones
    names: list[str] = []
    controls: list[str] = []
    for limb in s.limbs:
        if limb.enabled and limb_is_usable(obj, limb):
            names += written_bones(limb)
            if limb.control_bone:
                controls.append(limb.control_bone)
    out = []
    for name in dict.fromkeys(names):
        if name in controls and name != s.pelvis_bone:
            out.append(Channel(name, "location", 3))
        mode = bones[name].rotation_mode
        if mode == "QUATERNION":
            out.append(Channel(name, "rotation_quaternion", 4))
        elif mode == "AXIS_ANGLE":
            out.append(Channel(name, "rotation_axis_angle", 4))
        else:
            out.append(Channel(name, "rotation_euler", 3))
    if s.body_follow and s.pelvis_bone in bones and any(lb.kind == "FOOT" for lb in s.limbs if lb.enabled):
        out.append(Channel(s.pelvis_bone, "location", 3))
    return out


def rig_error(obj: bpy.types.Object) -> Optional[str]:
    """The first reason Contact IK cannot plant `obj`, or None."""
    if obj.type != "ARMATURE" or obj.pose is None:
        return f"{obj.name!r} is not an armature: select the animated armature"
    error = transform_error(obj) or pose_error(obj) or settings_error(obj)
    if error:
        return error
    for limb in settings(obj).limbs:
        if limb.enabled:
            error = limb_error(obj, limb)
            if error:
                return error
    return None


def _driven_bones(obj: bpy.types.Object) -> dict[str, str]:
    """Bones Contact IK writes, with the limb (or 'pelvis') each belongs to."""
    s = settings(obj)
    out: dict[str, str] = {}
    for limb in s.limbs:
        if limb.enabled and limb_error(obj, limb) is None:
            for n in written_bones(limb):
                out.setdefault(n, limb.name)
    if s.body_follow and s.pelvis_bone in obj.pose.bones:
        out.setdefault(s.pelvis_bone, "pelvis")
    return out


def rig_warnings(obj: bpy.types.Object) -> list[str]:
    """Bones Contact IK writes whose result something else overrides: constraints and drivers."""
    warnings = []
    driven = _driven_bones(obj)
    pbs = obj.pose.bones
    for name, owner in driven.items():
        for c in pbs[name].constraints:
            if c.mute or not getattr(c, "enabled", True) or c.influence == 0.0:
                continue
            kind = c.bl_rna.name.replace(" Constraint", " constraint")
            warnings.append(f"{name!r} ({owner}) has a {kind} ({c.name!r}): it moves the bone after Contact IK, so "
                            "the result may not land where it should; mute or remove it (or apply it) first")
    ad = obj.animation_data
    for fc in (ad.drivers if ad is not None else []):
        if fc.mute or not fc.data_path.startswith('pose.bones["'):
            continue
        bone, _sep, prop = fc.data_path[len('pose.bones["'):].partition('"].')
        bone = bone.replace('\\"', '"').replace("\\\\", "\\")
        if bone in driven and prop.startswith(("rotation_", "location")):
            warnings.append(f"{bone!r} ({driven[bone]}) has a driver on {prop}: it overrides what Contact IK writes; "
                            "mute the driver (Drivers editor) to see the result")
    return warnings


def range_error(start: int, end: int) -> Optional[str]:
    """The range Plant Feet and Detect Contacts sample frame by frame (contacts are found on every frame)."""
    n = end - start + 1
    if n > MAX_PLANT_FRAMES:
        return (f"the scene's frame range {start}..{end} has {n} frames, more than Contact IK samples at once "
                f"({MAX_PLANT_FRAMES}): set the scene's Start and End to the animation's frames "
                "(Output Properties > Frame Range)")
    return None


def terrain_scene_error(objs: list[bpy.types.Object], scene: bpy.types.Scene) -> Optional[str]:
    """Terrain objects must be in the scene for Blender to evaluate them (modifiers and all)."""
    for o in objs:
        if o.name not in scene.objects:
            return (f"terrain {o.name!r} is not in the scene {scene.name!r}: link it to the scene (it may be hidden), "
                    "or pick another terrain")
    return None


def feet_over_terrain(obj: bpy.types.Object, s: Any, terrain: Any) -> bool:
    """True when some foot has terrain straight below or above it at the current frame (or there are no feet),
    by the ground model's own rays (`model.Rays`)."""
    feet = [lb for lb in s.limbs if lb.enabled and lb.kind == "FOOT" and limb_error(obj, lb) is None]
    if not feet:
        return True
    up = np.array(UP)
    low, high = terrain.extent(up)
    rays = Rays(terrain)
    for limb in feet:
        ankle = np.array(obj.matrix_world @ obj.pose.bones[limb.end_bone].head)
        h = float(ankle @ up)
        reach = max(abs(high - h), abs(h - low)) + max(limb.length, 1e-6)
        if rays.cast(ankle[None], reach, up[None]).hit[0]:
            return True
    return False
