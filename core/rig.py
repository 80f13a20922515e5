"""Reads limbs from pose bones into the solvers' plain values and writes solutions back.

Each bone keeps its own rotation mode: quaternions stay in the hemisphere of the current value,
Euler angles stay compatible with the current ones (no wrap jumps), axis-angle is written as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from mathutils import Matrix, Quaternion, Vector

from ..solvers import ChainPose, JointLimits, LimbSolution
from ..solvers._types import components
from . import anim
from .errors import UserError
from .tuning import HINGE_BEND

if TYPE_CHECKING:
    import bpy

    from ..properties import ContactIKSettings


def settings(obj: bpy.types.Object) -> ContactIKSettings:
    """The Contact IK settings of an object (`Object.contact_ik`)."""
    return obj.contact_ik  # type: ignore[attr-defined,no-any-return]


def leg_stretch(obj: bpy.types.Object) -> float:
    """The rig's Leg Stretch (`reach_drop`'s margin), to the 4th place: the setting is single precision, and
    its default is the model's own REACH_MARGIN to the last bit."""
    return round(float(settings(obj).leg_stretch), 4)


# Up is the scene's world Z, whatever the armature object's rotation, scale or parents and whatever the
# convention of the file it came from: the floor, contacts, rays and reports are all in world space.
UP = (0.0, 0.0, 1.0)


def local_up(obj: bpy.types.Object) -> Vector:
    """World up as a direction in the armature's own space (its rest pose's "up" for the sole)."""
    m = obj.matrix_world.to_3x3()
    try:
        return (m.inverted() @ Vector(UP)).normalized()
    except ValueError:  # a degenerate (zero-scale) object: its own Z
        return Vector(UP)


def world_scale(obj: bpy.types.Object) -> float:
    s = obj.matrix_world.to_scale()
    return (abs(s.x) + abs(s.y) + abs(s.z)) / 3.0


def heel_local(obj: bpy.types.Object, foot_bone: str, foot_offset: float) -> Vector:
    """The heel (the sole point under the ankle at rest) in the foot bone's own frame."""
    bone = obj.data.bones[foot_bone]
    rest = bone.matrix_local
    heel_arm = bone.head_local - local_up(obj) * foot_offset
    return rest.inverted_safe() @ heel_arm


def bone_names(limb: bpy.types.PropertyGroup) -> list[str]:
    """The limb's chain bones, root to tip (empty slots left out)."""
    return [b.bone for b in limb.bones if b.bone]


def measured_hinge(limb: bpy.types.PropertyGroup) -> Optional[Vector]:
    """A foot's measured knee hinge (`ContactIKLimb.hinge`, in its thigh's frame), unit; None where the leg is
    not of two bones or none is measured (zero, or not finite: a value set from a script)."""
    if limb.kind != "FOOT" or len(bone_names(limb)) != 2:
        return None
    h = Vector(tuple(limb.hinge))
    if not all(math.isfinite(v) for v in h) or h.length <= 0.5:
        return None
    return h.normalized()


def _hinge_unmeasured(limb: bpy.types.PropertyGroup) -> bool:
    """Never measured, or a value that is not a number (set from a script)."""
    return not limb.hinge_measured or not all(math.isfinite(v) for v in limb.hinge)


def hinge_to_measure(limb: bpy.types.PropertyGroup) -> bool:
    """Whether Plant Feet, keeping a foot's contacts, still measures its knee hinge: an enabled two-bone leg
    with none measured (`measured_hinge`) that was never measured, or whose value is not a number (set from a
    script). A leg measured and found without one (its knee never bent enough: zero) is not swept again."""
    if not limb.enabled or limb.kind != "FOOT" or len(bone_names(limb)) != 2 or measured_hinge(limb) is not None:
        return False
    return _hinge_unmeasured(limb)


def hinge_note(limb: bpy.types.PropertyGroup) -> str:
    """The panel's line on a leg's knee hinge, where it counts (a two-bone leg with the automatic pole): its
    axis in the thigh's frame, none found, or not measured yet; empty elsewhere."""
    if limb.kind != "FOOT" or limb.pole_mode != "AUTO" or len(bone_names(limb)) != 2:
        return ""
    h = measured_hinge(limb)
    if h is not None:
        return f"Knee hinge: {h.x:+.2f}, {h.y:+.2f}, {h.z:+.2f} (the thigh's axes)"
    if _hinge_unmeasured(limb):
        return "Knee hinge: not measured yet (Plant Feet measures it)"
    return f"Knee hinge: none (the knee never bends more than {math.degrees(HINGE_BEND):.0f} degrees)"


def chain_length(obj: bpy.types.Object, names: Sequence[str], end: str = "") -> float:
    """The chain's length at rest from its joints, armature units: joint to joint (hip, knee, ankle heads),
    the end bone's head closing it; a bone's own length only for the last one of a chain without an end
    bone (importers give bones at the ends of chains, and glTF's every bone, lengths that mean nothing)."""
    bones = obj.data.bones
    heads = [bones[n].head_local for n in names]
    if end and end in bones:
        heads.append(bones[end].head_local)
    total = sum(((b - a).length for a, b in zip(heads, heads[1:])), 0.0)
    return total if end and end in bones else total + (bones[names[-1]].length if names else 0.0)


def rest_leg_length(obj: bpy.types.Object, names: list[str], end: str = "") -> float:
    """The chain's length at rest (`chain_length`), in world units."""
    return chain_length(obj, names, end) * world_scale(obj)


def anim_paths(obj: bpy.types.Object) -> list[str]:
    """The data paths the object's action, NLA strips and drivers animate ('*' for an NLA strip that is no
    plain action strip: a meta strip or a transition may animate anything)."""
    ad = obj.animation_data
    if ad is None:
        return []
    paths = [d.data_path for d in ad.drivers]
    if ad.action is not None:
        paths += [fc.data_path for fc in anim.fcurves(ad.action, anim.slot_of(obj)) or []]
    for track in ad.nla_tracks:
        if track.mute:
            continue
        for strip in track.strips:
            fcs = anim.fcurves(strip.action, getattr(strip, "action_slot", None)) if strip.action is not None else None
            if strip.type != "CLIP" or fcs is None:
                paths.append("*")
            else:
                paths += [fc.data_path for fc in fcs]
    return paths


def object_moves(obj: bpy.types.Object, paths: Optional[list[str]] = None) -> bool:
    """True when something may change the armature object's own transform over time (its animation,
    drivers, NLA, a parent or a constraint); `paths`: its `anim_paths` when already read."""
    moving = ("location", "rotation_", "scale", "delta_")
    return (obj.parent is not None or bool(obj.constraints)
            or any(p == "*" or p.startswith(moving) for p in (anim_paths(obj) if paths is None else paths)))


def scale_inverse(scale: Vector | Sequence[float]) -> Matrix:
    return Matrix.Diagonal([1.0 / s if s != 0.0 and math.isfinite(s) else 1.0 for s in components(scale)] + [1.0])


def bone_frame(obj: bpy.types.Object, pb: bpy.types.PoseBone) -> Matrix:
    """World-space frame in which `pb`'s local rotation acts (its pose matrix without its own scale)."""
    return obj.matrix_world @ pb.matrix @ scale_inverse(pb.scale)


def rotation_of(pb: bpy.types.PoseBone) -> Quaternion:
    """The bone's local rotation as a unit quaternion, whatever its rotation mode."""
    mode = pb.rotation_mode
    if mode == "QUATERNION":
        q = pb.rotation_quaternion.copy()
        return q.normalized() if q.magnitude > 0.0 else Quaternion()
    if mode == "AXIS_ANGLE":
        aa: Sequence[float] = pb.rotation_axis_angle  # type: ignore[assignment]
        axis = Vector((aa[1], aa[2], aa[3]))
        return Quaternion(axis.normalized(), aa[0]) if axis.length > 0.0 else Quaternion()
    return pb.rotation_euler.to_quaternion()


def set_rotation(pb: bpy.types.PoseBone, q: Quaternion) -> None:
    """Write `q` into the bone in its own rotation mode, continuous with the value it replaces."""
    mode = pb.rotation_mode
    if mode == "QUATERNION":
        if pb.rotation_quaternion.dot(q) < 0.0:
            q = q.copy()
            q.negate()
        pb.rotation_quaternion = q
    elif mode == "AXIS_ANGLE":
        axis, angle = q.to_axis_angle()
        pb.rotation_axis_angle = (angle, axis.x, axis.y, axis.z)  # type: ignore[assignment]
    else:
        pb.rotation_euler = q.to_euler(mode, pb.rotation_euler)


def limits_of(pb: bpy.types.PoseBone) -> Optional[JointLimits]:
    """The bone's IK locks and limits (Bone Properties > Inverse Kinematics), or None if it has none."""
    lock = (pb.lock_ik_x, pb.lock_ik_y, pb.lock_ik_z)
    use = (pb.use_ik_limit_x, pb.use_ik_limit_y, pb.use_ik_limit_z)
    if not any(lock) and not any(use):
        return None
    return JointLimits(
        lock=lock,
        use_limit=use,
        minimum=(pb.ik_min_x, pb.ik_min_y, pb.ik_min_z),
        maximum=(pb.ik_max_x, pb.ik_max_y, pb.ik_max_z),
    )


def _pose_bones(obj: bpy.types.Object) -> bpy.types.bpy_prop_collection:
    if obj.pose is None:
        raise UserError(f"{obj.name!r} is not an armature: select the armature whose limbs to solve")
    return obj.pose.bones


def read_chain(
    obj: bpy.types.Object,
    bone_names: Sequence[str],
    end_bone: Optional[str] = None,
    use_limits: bool = True,
) -> ChainPose:
    """The chain's current evaluated pose. Its tip is `end_bone`'s head, or the last bone's tail."""
    bones = _pose_bones(obj)
    chain = [bones[name] for name in bone_names]
    frames = [bone_frame(obj, pb) for pb in chain]
    last_inv = frames[-1].inverted_safe()
    end_pb = bones[end_bone] if end_bone else None
    tip_world = obj.matrix_world @ (end_pb.head if end_pb is not None else chain[-1].tail)
    return ChainPose(
        frames=frames,
        rotations=[rotation_of(pb) for pb in chain],
        tip_local=last_inv @ tip_world,
        limits=[limits_of(pb) if use_limits else None for pb in chain],
        end_frame=bone_frame(obj, end_pb) if end_pb is not None else None,
        end_rotation=rotation_of(end_pb) if end_pb is not None else None,
        end_limits=limits_of(end_pb) if (end_pb is not None and use_limits) else None,
    )


def write_solution(
    obj: bpy.types.Object,
    bone_names: Sequence[str],
    solution: LimbSolution,
    end_bone: Optional[str] = None,
) -> None:
    """Set the chain's (and the end bone's) local rotations from a solve.

    A solve at weight 0 is the FK pose: nothing is written, so the bones stay the same bit for bit.
    """
    if solution.method == "fk":
        return
    bones = _pose_bones(obj)
    for name, q in zip(bone_names, solution.rotations):
        set_rotation(bones[name], q)
    if end_bone and solution.end_rotation is not None:
        set_rotation(bones[end_bone], solution.end_rotation)
