"""Limb detection on synthetic skeletons of every naming convention the product promises, with
namespace prefixes, odd case and stray whitespace, twist and share bones beside the chain, the fallback
from hierarchy and geometry when names say nothing (also on real mocap skeletons with their names
erased), skeletons with no limbs at all, and the Detect Limbs operator on a real Blender armature."""

from __future__ import annotations

import math

import bpy
import harness
import pytest

detect = harness.module("core.detect")

# --- a standard biped in Blender's axes (Z up, facing -Y, its left on +X), metres ----------------------

_CENTRE_ROLES = ("hips", "spine", "chest", "neck", "head")
_SIDE_ROLES = ("thigh", "shin", "foot", "toe", "clavicle", "upperarm", "forearm", "hand",
               "index1", "index2", "middle1", "middle2", "thumb1")
_PARENT = {"spine": "hips", "chest": "spine", "neck": "chest", "head": "neck", "clavicle": "chest",
           "upperarm": "clavicle", "forearm": "upperarm", "hand": "forearm", "index1": "hand", "index2": "index1",
           "middle1": "hand", "middle2": "middle1", "thumb1": "hand", "thigh": "hips", "shin": "thigh",
           "foot": "shin", "toe": "foot"}


def _left_points(arm_down_degrees: float) -> dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]]:
    """Head and tail of the left side's bones; the arm turned down about the shoulder (0 = T-pose)."""
    a = math.radians(arm_down_degrees)
    u = (math.cos(a), 0.0, -math.sin(a))  # along the arm
    sx, sz = 0.15, 1.42  # shoulder joint

    def arm(d, dy=0.0, dz=0.0):
        return (sx + u[0] * d, dy, sz + u[2] * d + dz)

    return {
        "thigh": ((0.10, 0.0, 1.00), (0.10, -0.01, 0.55)),
        "shin": ((0.10, -0.01, 0.55), (0.10, 0.0, 0.10)),
        "foot": ((0.10, 0.0, 0.10), (0.10, -0.12, 0.02)),
        "toe": ((0.10, -0.12, 0.02), (0.10, -0.18, 0.02)),
        "clavicle": ((0.02, 0.0, 1.42), (sx, 0.0, sz)),
        "upperarm": (arm(0.0), arm(0.27)),
        "forearm": (arm(0.27), arm(0.52)),
        "hand": (arm(0.52), arm(0.60)),
        "index1": (arm(0.60, -0.015), arm(0.64, -0.015)),
        "index2": (arm(0.64, -0.015), arm(0.67, -0.015)),
        "middle1": (arm(0.60, 0.005), arm(0.645, 0.005)),
        "middle2": (arm(0.645, 0.005), arm(0.68, 0.005)),
        "thumb1": (arm(0.54, -0.03, -0.01), arm(0.58, -0.06, -0.02)),
    }


_CENTRE = {
    "hips": ((0.0, 0.0, 1.00), (0.0, 0.0, 1.10)),
    "spine": ((0.0, 0.0, 1.10), (0.0, 0.0, 1.30)),
    "chest": ((0.0, 0.0, 1.30), (0.0, 0.0, 1.45)),
    "neck": ((0.0, 0.0, 1.45), (0.0, 0.0, 1.55)),
    "head": ((0.0, 0.0, 1.55), (0.0, 0.0, 1.75)),
}


def _fill(template: str, side: str) -> str:
    return template.format(S=side, s=side.lower(), Side="Left" if side == "L" else "Right")


def biped(names, extras=(), prefix="", arm_down=0.0, extras_first=True):
    """BoneInfo list of a biped: pelvis, spine, chest, neck, head; per side clavicle, upper arm, forearm,
    hand with index, middle and thumb, thigh, shin, foot, toe. `names` maps a role to a name template
    ('{S}' = L/R, '{s}' = l/r, '{Side}' = Left/Right; roles left out get neutral names). `extras` are
    (name template, parent role or bone name, head, tail) per side, given for the left and mirrored,
    listed before the chain (or after it) so that bone order cannot pick the chain."""
    left = _left_points(arm_down)

    def name_of(role, side="L"):
        if role in _CENTRE:
            return prefix + names.get(role, f"c_{role}")
        return prefix + _fill(names.get(role, f"{role}_{{s}}9x"), side)

    chain, extra = [], []
    for role, (h, t) in _CENTRE.items():
        chain.append(detect.BoneInfo(name_of(role), name_of(_PARENT[role]) if role in _PARENT else None, h, t))
    for side in "LR":
        m = 1.0 if side == "L" else -1.0
        for role in _SIDE_ROLES:
            h, t = left[role]
            chain.append(detect.BoneInfo(name_of(role, side), name_of(_PARENT[role], side),
                                         (m * h[0], h[1], h[2]), (m * t[0], t[1], t[2])))
        for template, parent, h, t in extras:
            p = name_of(parent, side) if parent in _PARENT or parent in _CENTRE else parent
            extra.append(detect.BoneInfo(prefix + _fill(template, side), p, (m * h[0], h[1], h[2]), (m * t[0], t[1], t[2])))
    return extra + chain if extras_first else chain + extra


def _role_names(names, prefix=""):
    """{(role, side): bone name} of the limb roles."""
    return {(r, s): prefix + _fill(names[r], s) for r in ("thigh", "shin", "foot", "toe", "upperarm", "forearm", "hand")
            for s in "LR"}


def expect(found, names, toe=True, convention=None, rename=None):
    """All four limbs with exactly these bones; `rename` maps the expected names (nameless rigs)."""
    ren = rename or (lambda n: n)
    by = {lb.name: lb for lb in found}
    assert list(by) == ["Left Leg", "Right Leg", "Left Arm", "Right Arm"], detect.describe(found)
    for side, label in (("L", "Left"), ("R", "Right")):
        leg, arm = by[f"{label} Leg"], by[f"{label} Arm"]
        assert (leg.kind, leg.side, arm.kind, arm.side) == ("FOOT", side, "HAND", side)
        assert leg.bones == (ren(names["thigh", side]), ren(names["shin", side])), detect.describe(found)
        assert leg.end_bone == ren(names["foot", side]), detect.describe(found)
        assert leg.toe_bone == (ren(names["toe", side]) if toe else None), detect.describe(found)
        assert arm.bones == (ren(names["upperarm", side]), ren(names["forearm", side])), detect.describe(found)
        assert arm.end_bone == ren(names["hand", side]) and arm.toe_bone is None, detect.describe(found)
        if convention:
            assert leg.convention == arm.convention == convention, detect.describe(found)


# --- naming conventions ----------------------------------------------------------------------------------

CONVENTIONS = {
    "rigify": ("Rigify", {
        "hips": "spine", "spine": "spine.001", "chest": "spine.003", "neck": "spine.004", "head": "spine.006",
        "thigh": "thigh.{S}", "shin": "shin.{S}", "foot": "foot.{S}", "toe": "toe.{S}", "clavicle": "shoulder.{S}",
        "upperarm": "upper_arm.{S}", "forearm": "forearm.{S}", "hand": "hand.{S}", "index1": "f_index.01.{S}",
        "index2": "f_index.02.{S}", "middle1": "f_middle.01.{S}", "middle2": "f_middle.02.{S}",
        "thumb1": "thumb.01.{S}"}),
    "mixamo": ("Mixamo", {
        "hips": "mixamorig:Hips", "spine": "mixamorig:Spine", "chest": "mixamorig:Spine2", "neck": "mixamorig:Neck",
        "head": "mixamorig:Head", "thigh": "mixamorig:{Side}UpLeg", "shin": "mixamorig:{Side}Leg",
        "foot": "mixamorig:{Side}Foot", "toe": "mixamorig:{Side}ToeBase", "clavicle": "mixamorig:{Side}Shoulder",
        "upperarm": "mixamorig:{Side}Arm", "forearm": "mixamorig:{Side}ForeArm", "hand": "mixamorig:{Side}Hand",
        "index1": "mixamorig:{Side}HandIndex1", "index2": "mixamorig:{Side}HandIndex2",
        "middle1": "mixamorig:{Side}HandMiddle1", "middle2": "mixamorig:{Side}HandMiddle2",
        "thumb1": "mixamorig:{Side}HandThumb1"}),
    "motionbuilder": ("Mixamo/MotionBuilder", {
        "hips": "Hips", "spine": "Spine", "chest": "Spine1", "neck": "Neck", "head": "Head",
        "thigh": "{Side}UpLeg", "shin": "{Side}Leg", "foot": "{Side}Foot", "toe": "{Side}ToeBase",
        "clavicle": "{Side}Shoulder", "upperarm": "{Side}Arm", "forearm": "{Side}ForeArm", "hand": "{Side}Hand",
        "index1": "{Side}HandIndex1", "index2": "{Side}HandIndex2", "middle1": "{Side}HandMiddle1",
        "middle2": "{Side}HandMiddle2", "thumb1": "{Side}HandThumb1"}),
    "cmu_bvh": ("Mixamo/MotionBuilder", {  # the cgspeed CMU conversion: LHipJoint before the thigh (extras)
        "hips": "Hips", "spine": "LowerBack", "chest": "Spine1", "neck": "Neck", "head": "Head",
        "thigh": "{Side}UpLeg", "shin": "{Side}Leg", "foot": "{Side}Foot", "toe": "{Side}ToeBase",
        "clavicle": "{Side}Shoulder", "upperarm": "{Side}Arm", "forearm": "{Side}ForeArm", "hand": "{Side}Hand",
        "index1": "{Side}FingerBase", "index2": "{Side}HandIndex1", "middle1": "{S}Middle", "middle2": "{S}Middle2",
        "thumb1": "{S}Thumb"}),
    "3dsmax_bvh": ("3ds Max BVH", {
        "hips": "Hips", "spine": "lowerback", "chest": "Chest", "neck": "Neck", "head": "Head",
        "thigh": "{Side}Hip", "shin": "{Side}Knee", "foot": "{Side}Ankle", "toe": "{Side}Toe",
        "clavicle": "{Side}Collar", "upperarm": "{Side}Shoulder", "forearm": "{Side}Elbow", "hand": "{Side}Wrist",
        "index1": "{s}hand", "index2": "{S}Fingers", "middle1": "{S}Middle", "middle2": "{S}Middle2",
        "thumb1": "{S}Thumb"}),
    "cmu_asf": ("CMU ASF", {
        "hips": "root", "spine": "lowerback", "chest": "thorax", "neck": "lowerneck", "head": "head",
        "thigh": "{s}femur", "shin": "{s}tibia", "foot": "{s}foot", "toe": "{s}toes", "clavicle": "{s}clavicle",
        "upperarm": "{s}humerus", "forearm": "{s}radius", "hand": "{s}hand", "index1": "{s}fingers",
        "index2": "{s}fingers2", "middle1": "{s}middle", "middle2": "{s}middle2", "thumb1": "{s}thumb"}),
    "unreal": ("Unreal", {
        "hips": "pelvis", "spine": "spine_01", "chest": "spine_03", "neck": "neck_01", "head": "head",
        "thigh": "thigh_{s}", "shin": "calf_{s}", "foot": "foot_{s}", "toe": "ball_{s}", "clavicle": "clavicle_{s}",
        "upperarm": "upperarm_{s}", "forearm": "lowerarm_{s}", "hand": "hand_{s}", "index1": "index_01_{s}",
        "index2": "index_02_{s}", "middle1": "middle_01_{s}", "middle2": "middle_02_{s}", "thumb1": "thumb_01_{s}"}),
    "unity": ("Unity", {
        "hips": "Hips", "spine": "Spine", "chest": "Chest", "neck": "Neck", "head": "Head",
        "thigh": "UpperLeg_{S}", "shin": "LowerLeg_{S}", "foot": "Foot_{S}", "toe": "Toes_{S}",
        "clavicle": "Shoulder_{S}", "upperarm": "UpperArm_{S}", "forearm": "LowerArm_{S}", "hand": "Hand_{S}",
        "index1": "IndexProximal_{S}", "index2": "IndexIntermediate_{S}", "middle1": "MiddleProximal_{S}",
        "middle2": "MiddleIntermediate_{S}", "thumb1": "ThumbProximal_{S}"}),
    "unity_humanoid": ("Unity", {
        "hips": "Hips", "spine": "Spine", "chest": "Chest", "neck": "Neck", "head": "Head",
        "thigh": "{Side}UpperLeg", "shin": "{Side}LowerLeg", "foot": "{Side}Foot", "toe": "{Side}Toes",
        "clavicle": "{Side}Shoulder", "upperarm": "{Side}UpperArm", "forearm": "{Side}LowerArm", "hand": "{Side}Hand",
        "index1": "{Side}IndexProximal", "index2": "{Side}IndexIntermediate", "middle1": "{Side}MiddleProximal",
        "middle2": "{Side}MiddleIntermediate", "thumb1": "{Side}ThumbProximal"}),
    "vrm": ("VRM", {
        "hips": "J_Bip_C_Hips", "spine": "J_Bip_C_Spine", "chest": "J_Bip_C_Chest", "neck": "J_Bip_C_Neck",
        "head": "J_Bip_C_Head", "thigh": "J_Bip_{S}_UpperLeg", "shin": "J_Bip_{S}_LowerLeg", "foot": "J_Bip_{S}_Foot",
        "toe": "J_Bip_{S}_ToeBase", "clavicle": "J_Bip_{S}_Shoulder", "upperarm": "J_Bip_{S}_UpperArm",
        "forearm": "J_Bip_{S}_LowerArm", "hand": "J_Bip_{S}_Hand", "index1": "J_Bip_{S}_Index1",
        "index2": "J_Bip_{S}_Index2", "middle1": "J_Bip_{S}_Middle1", "middle2": "J_Bip_{S}_Middle2",
        "thumb1": "J_Bip_{S}_Thumb1"}),
    "character_creator": ("Character Creator", {
        "hips": "CC_Base_Hip", "spine": "CC_Base_Waist", "chest": "CC_Base_Spine02", "neck": "CC_Base_NeckTwist01",
        "head": "CC_Base_Head", "thigh": "CC_Base_{S}_Thigh", "shin": "CC_Base_{S}_Calf", "foot": "CC_Base_{S}_Foot",
        "toe": "CC_Base_{S}_ToeBase", "clavicle": "CC_Base_{S}_Clavicle", "upperarm": "CC_Base_{S}_Upperarm",
        "forearm": "CC_Base_{S}_Forearm", "hand": "CC_Base_{S}_Hand", "index1": "CC_Base_{S}_Index1",
        "index2": "CC_Base_{S}_Index2", "middle1": "CC_Base_{S}_Mid1", "middle2": "CC_Base_{S}_Mid2",
        "thumb1": "CC_Base_{S}_Thumb1"}),
    "3dsmax_biped": ("3ds Max Biped", {
        "hips": "Bip01 Pelvis", "spine": "Bip01 Spine", "chest": "Bip01 Spine2", "neck": "Bip01 Neck",
        "head": "Bip01 Head", "thigh": "Bip01 {S} Thigh", "shin": "Bip01 {S} Calf", "foot": "Bip01 {S} Foot",
        "toe": "Bip01 {S} Toe0", "clavicle": "Bip01 {S} Clavicle", "upperarm": "Bip01 {S} UpperArm",
        "forearm": "Bip01 {S} Forearm", "hand": "Bip01 {S} Hand", "index1": "Bip01 {S} Finger1",
        "index2": "Bip01 {S} Finger11", "middle1": "Bip01 {S} Finger2", "middle2": "Bip01 {S} Finger21",
        "thumb1": "Bip01 {S} Finger0"}),
    "3dsmax_biped_bip001": ("3ds Max Biped", {
        "hips": "Bip001 Pelvis", "thigh": "Bip001 {S} Thigh", "shin": "Bip001 {S} Calf", "foot": "Bip001 {S} Foot",
        "toe": "Bip001 {S} Toe0", "clavicle": "Bip001 {S} Clavicle", "upperarm": "Bip001 {S} UpperArm",
        "forearm": "Bip001 {S} Forearm", "hand": "Bip001 {S} Hand"}),
}

# Bones beside the chain, children of the chain bones as in the real rigs: twist and share bones,
# Unreal's IK helpers, Rigify's heel, the CMU hip joint between the pelvis and the thigh.
EXTRAS = {
    "unreal": [("thigh_twist_01_{s}", "thigh", (0.10, 0.0, 1.00), (0.10, 0.0, 0.80)),
               ("thigh_twist_02_{s}", "thigh", (0.10, 0.0, 0.80), (0.10, 0.0, 0.60)),
               ("calf_twist_01_{s}", "shin", (0.10, 0.0, 0.55), (0.10, 0.0, 0.35)),
               ("calf_twist_02_{s}", "shin", (0.10, 0.0, 0.35), (0.10, 0.0, 0.12)),
               ("upperarm_twist_01_{s}", "upperarm", (0.15, 0.0, 1.42), (0.28, 0.0, 1.42)),
               ("lowerarm_twist_01_{s}", "forearm", (0.55, 0.0, 1.42), (0.67, 0.0, 1.42)),
               ("ik_foot_{s}", "hips", (0.10, 0.0, 0.10), (0.10, -0.12, 0.10))],
    "character_creator": [("CC_Base_{S}_ThighTwist01", "thigh", (0.10, 0.0, 1.00), (0.10, 0.0, 0.78)),
                          ("CC_Base_{S}_ThighTwist02", "thigh", (0.10, 0.0, 0.78), (0.10, 0.0, 0.56)),
                          ("CC_Base_{S}_CalfTwist01", "shin", (0.10, 0.0, 0.55), (0.10, 0.0, 0.33)),
                          ("CC_Base_{S}_CalfTwist02", "shin", (0.10, 0.0, 0.33), (0.10, 0.0, 0.11)),
                          ("CC_Base_{S}_KneeShareBone", "shin", (0.10, 0.0, 0.55), (0.10, -0.05, 0.55)),
                          ("CC_Base_{S}_UpperarmTwist01", "upperarm", (0.15, 0.0, 1.42), (0.29, 0.0, 1.42)),
                          ("CC_Base_{S}_UpperarmTwist02", "upperarm", (0.29, 0.0, 1.42), (0.42, 0.0, 1.42)),
                          ("CC_Base_{S}_ForearmTwist01", "forearm", (0.42, 0.0, 1.42), (0.55, 0.0, 1.42)),
                          ("CC_Base_{S}_ForearmTwist02", "forearm", (0.55, 0.0, 1.42), (0.67, 0.0, 1.42)),
                          ("CC_Base_{S}_ElbowShareBone", "forearm", (0.42, 0.0, 1.42), (0.42, 0.05, 1.42))],
    "rigify": [("heel.02.{S}", "foot", (0.14, 0.05, 0.0), (0.06, 0.05, 0.0))],
}


def _with_hip_joint(bones, hips="Hips", joint="{S}HipJoint", thigh="{Side}UpLeg"):
    """The CMU skeleton's LHipJoint: the thigh hangs from it, not from the pelvis."""
    out = []
    for side in "LR":
        m = 1.0 if side == "L" else -1.0
        out.append(detect.BoneInfo(_fill(joint, side), hips, (0.0, 0.0, 1.0), (m * 0.10, 0.0, 1.0)))
    thighs = {_fill(thigh, s): _fill(joint, s) for s in "LR"}
    return out + [detect.BoneInfo(b.name, thighs.get(b.name, b.parent), b.head, b.tail) for b in bones]


def _bones_of(convention, prefix="", **kw):
    names = CONVENTIONS[convention][1]
    bones = biped(names, EXTRAS.get(convention, ()), prefix=prefix, **kw)
    if convention == "cmu_bvh":
        bones = _with_hip_joint(bones, hips=prefix + "Hips", joint=prefix + "{S}HipJoint", thigh=prefix + "{Side}UpLeg")
    return bones


@pytest.mark.parametrize("convention", list(CONVENTIONS))
def test_every_convention(convention):
    label, names = CONVENTIONS[convention]
    found = detect.detect_limbs(_bones_of(convention))
    expect(found, _role_names(names), convention=label)


@pytest.mark.parametrize("convention", list(CONVENTIONS))
def test_any_namespace_prefix(convention):
    label, names = CONVENTIONS[convention]
    found = detect.detect_limbs(_bones_of(convention, prefix="Character1:"))
    expect(found, _role_names(names, prefix="Character1:"), convention=label)


def _odd(name: str) -> str:
    """Case turned over and whitespace around the name and after a namespace: ' MIXAMORIG: lEFTuPlEG  '."""
    return "  " + name.swapcase().replace(":", ": ") + " \t"


@pytest.mark.parametrize("convention", list(CONVENTIONS))
def test_odd_case_and_stray_whitespace(convention):
    label, names = CONVENTIONS[convention]
    bones = [detect.BoneInfo(_odd(b.name), _odd(b.parent) if b.parent else None, b.head, b.tail)
             for b in _bones_of(convention)]
    expect(detect.detect_limbs(bones), {k: _odd(v) for k, v in _role_names(names).items()}, convention=label)


@pytest.mark.parametrize("convention", ["unreal", "character_creator", "rigify"])
def test_twist_share_and_helper_bones_are_never_the_chain_in_any_order(convention):
    label, names = CONVENTIONS[convention]
    for first in (True, False):
        bones = biped(names, EXTRAS[convention], extras_first=first)
        expect(detect.detect_limbs(bones), _role_names(names), convention=label)
    # Reversed bone order too: the first bone of a key is not taken on trust.
    expect(detect.detect_limbs(list(reversed(biped(names, EXTRAS[convention])))), _role_names(names))


def test_mixamo_shoulder_is_the_clavicle_but_the_3ds_max_shoulder_is_the_upper_arm():
    mix = {lb.name: lb for lb in detect.detect_limbs(_bones_of("mixamo"))}
    assert mix["Left Arm"].bones == ("mixamorig:LeftArm", "mixamorig:LeftForeArm")
    mx = {lb.name: lb for lb in detect.detect_limbs(_bones_of("3dsmax_bvh"))}
    assert mx["Left Arm"].bones == ("LeftShoulder", "LeftElbow") and mx["Left Arm"].end_bone == "LeftWrist"


def test_cmu_asf_full_skeleton_with_a_wrist_bone():
    # In the full ASF skeleton lradius > lwrist > lhand: the wrist is where the forearm ends.
    names = CONVENTIONS["cmu_asf"][1]
    bones = []
    for b in biped(names):
        if b.name in ("lhand", "rhand"):
            s = b.name[0]
            tip = (b.head[0] + (0.02 if s == "l" else -0.02), b.head[1], b.head[2])
            bones.append(detect.BoneInfo(f"{s}wrist", f"{s}radius", b.head, tip))
            bones.append(detect.BoneInfo(b.name, f"{s}wrist", b.head, b.tail))
        else:
            bones.append(b)
    by = {lb.name: lb for lb in detect.detect_limbs(bones)}
    assert by["Left Arm"].bones == ("lhumerus", "lradius") and by["Left Arm"].end_bone == "lwrist"
    assert by["Right Arm"].bones == ("rhumerus", "rradius") and by["Right Arm"].end_bone == "rwrist"


@pytest.mark.parametrize("marker", ["{Side}Thigh", "Thigh.{S}", "Thigh_{S}", "thigh_{s}", "{S}_Thigh", "{S} Thigh",
                                    "Thigh{Side}", "thigh-{s}", "Thigh_{Side}", "{Side}_Thigh", "Thigh{S}"])
def test_side_markers(marker):
    def m(part):
        return marker.replace("Thigh", part).replace("thigh", part.lower())

    names = {"thigh": m("Thigh"), "shin": m("Shin"), "foot": m("Foot"), "toe": m("Toe"), "upperarm": m("UpperArm"),
             "forearm": m("ForeArm"), "hand": m("Hand")}
    expect(detect.detect_limbs(biped(names)), _role_names(names), convention="Rigify")


@pytest.mark.parametrize("name, side, key", [
    ("mixamorig:LeftUpLeg", "L", "upleg"), ("mixamorig1:RightForeArm", "R", "forearm"),
    ("  MIXAMORIG: lEFTtOEbASE ", "L", "toebase"), ("thigh.L", "L", "thigh"), ("DEF-thigh.R", "R", "thigh"),
    ("thigh.L.001", "L", "thigh001"), ("calf_twist_01_l", "L", "calftwist01"), ("CC_Base_L_Thigh", "L", "thigh"),
    ("CC_Base_R_ThighTwist01", "R", "thightwist01"), ("J_Bip_L_UpperLeg", "L", "upperleg"),
    ("J_Bip_C_Hips", None, "hips"), ("Bip01 L Thigh", "L", "thigh"), ("Bip001 R Toe0", "R", "toe0"),
    ("lfemur", "L", "femur"), ("rhipjoint", "R", "hipjoint"), ("LHipJoint", "L", "hipjoint"), ("LThumb", None, "lthumb"),
    ("UpperLeg_L", "L", "upperleg"), ("LeftUpperArm", "L", "upperarm"), ("Hips", None, "hips"), ("Leg", None, "leg"),
    ("root", None, "root"), ("lowerback", None, "lowerback"), ("Bone.001", None, "bone001"), ("Bone", None, "bone"),
    ("HandR", "R", "hand"), ("Bip01", None, "bip01"),
])
def test_split_side(name, side, key):
    assert detect.split_side(name) == (side, key)


# --- from hierarchy and geometry when names say nothing -------------------------------------------------

def anonymise(bones):
    """Every bone renamed Blender's way: 'Bone', 'Bone.001', ...; and the map from the old names."""
    new = {b.name: ("Bone" if i == 0 else f"Bone.{i:03d}") for i, b in enumerate(bones)}
    out = [detect.BoneInfo(new[b.name], new.get(b.parent) if b.parent else None, b.head, b.tail) for b in bones]
    return out, new


NEUTRAL = {r: f"{r}_{{s}}9x" for r in _SIDE_ROLES}  # what `biped` calls roles it is given no names for


def _nameless(bones, toe=True):
    anon, new = anonymise(bones)
    assert all(detect.split_side(b.name)[0] is None for b in anon), "names must say nothing here"
    found = detect.detect_limbs(anon)
    assert all(lb.convention == "hierarchy" for lb in found), detect.describe(found)
    expect(found, _role_names(NEUTRAL), toe=toe, rename=new.__getitem__)


def test_nameless_t_pose():
    _nameless(biped(NEUTRAL))


@pytest.mark.parametrize("degrees", [20.0, 45.0, 55.0])
def test_nameless_a_pose_with_clavicles_and_fingers(degrees):
    _nameless(biped(NEUTRAL, arm_down=degrees))


def test_nameless_without_clavicles_or_toes():
    bones = [b for b in biped(NEUTRAL) if not b.name.startswith(("clavicle", "toe"))]
    bones = [detect.BoneInfo(b.name, "c_chest" if b.name.startswith("upperarm") else b.parent, b.head, b.tail)
             for b in bones]
    _nameless(bones, toe=False)


def test_nameless_with_twist_and_share_bones_beside_the_chain():
    twists = [(t.replace("CC_Base_{S}_", "x_").lower() + "_{s}", p, h, tl) for t, p, h, tl in EXTRAS["character_creator"]]
    for first in (True, False):
        _nameless(biped(NEUTRAL, twists, extras_first=first))


def test_nameless_with_a_long_prop_in_one_hand():
    sword = [("sword_{s}", "hand", (0.70, 0.0, 1.42), (0.70, -0.9, 1.42))]
    _nameless(biped(NEUTRAL, sword))


def _split(bones, role):
    """The role's bones split in two in a straight line (a twist segment inside the chain, as Daz rigs
    have): role > role_twist > the role's children."""
    split = {b.name for b in bones if b.name.startswith(role + "_")}
    out = []
    for b in bones:
        parent = b.parent + "_twist" if b.parent in split else b.parent
        if b.name in split:
            mid = tuple((h + t) / 2 for h, t in zip(b.head, b.tail))
            out += [detect.BoneInfo(b.name, parent, b.head, mid), detect.BoneInfo(b.name + "_twist", b.name, mid, b.tail)]
        else:
            out.append(detect.BoneInfo(b.name, parent, b.head, b.tail))
    return out


@pytest.mark.parametrize("role, left", [("thigh", ["Left Arm", "Right Arm"]), ("upperarm", ["Left Leg", "Right Leg"])])
def test_nameless_chain_with_a_bone_split_in_line_is_not_guessed(role, left):
    # thigh > thigh_twist > shin: neither (thigh_twist, shin) nor (thigh, thigh_twist) is the leg.
    anon, _new = anonymise(_split(biped(NEUTRAL), role))
    assert [lb.name for lb in detect.detect_limbs(anon)] == left


def test_nameless_cmu_hip_joints():
    bones = _with_hip_joint(biped(NEUTRAL), hips="c_hips", joint="hipjoint_{s}", thigh="thigh_{s}9x")
    _nameless(bones)


def test_nameless_rig_facing_plus_y_gets_its_sides_from_the_feet():
    # Turned half round: the character's left is now -X; the feet point +Y and say so.
    turned = [detect.BoneInfo(b.name, b.parent, (-b.head[0], -b.head[1], b.head[2]), (-b.tail[0], -b.tail[1], b.tail[2]))
              for b in biped(NEUTRAL)]
    _nameless(turned)


def test_nameless_rig_at_any_scale_and_place():
    moved = [detect.BoneInfo(b.name, b.parent, tuple(30.0 * v + o for v, o in zip(b.head, (5.0, -2.0, 40.0))),
                             tuple(30.0 * v + o for v, o in zip(b.tail, (5.0, -2.0, 40.0)))) for b in biped(NEUTRAL)]
    _nameless(moved)


def test_names_for_the_legs_only_and_the_arms_from_geometry():
    names = dict(NEUTRAL, thigh="{Side}UpLeg", shin="{Side}Leg", foot="{Side}Foot", toe="{Side}ToeBase")
    found = {lb.name: lb for lb in detect.detect_limbs(biped(names))}
    assert found["Left Leg"].convention == "Mixamo/MotionBuilder" and found["Left Leg"].bones == ("LeftUpLeg", "LeftLeg")
    assert found["Left Arm"].convention == "hierarchy"
    assert found["Left Arm"].bones == ("upperarm_l9x", "forearm_l9x") and found["Left Arm"].end_bone == "hand_l9x"
    assert found["Right Arm"].bones == ("upperarm_r9x", "forearm_r9x") and found["Right Arm"].end_bone == "hand_r9x"


def test_one_side_named_the_other_side_from_geometry_only_when_they_agree():
    names = dict(NEUTRAL, thigh="{S}_thigh", shin="{S}_shin", foot="{S}_foot")
    bones = [detect.BoneInfo(b.name.replace("R_", "q_"), b.parent.replace("R_", "q_") if b.parent else None, b.head, b.tail)
             for b in biped(names)]
    found = {lb.name: lb for lb in detect.detect_limbs(bones)}
    assert found["Left Leg"].bones == ("L_thigh", "L_shin") and found["Left Leg"].convention == "Rigify"
    assert found["Right Leg"].bones == ("q_thigh", "q_shin") and found["Right Leg"].end_bone == "q_foot"
    assert found["Right Leg"].convention == "hierarchy" and found["Right Leg"].toe_bone == "toe_r9x"


@pytest.mark.parametrize("clip, arms", [("cmu_12_01_walk.bvh", True), ("fair1_zombie_walk_zup.bvh", True),
                                        ("cmu_131_01_start_walk_stop_maxnames.bvh", False)])
def test_real_mocap_skeleton_with_its_names_erased(scene, clip, arms):
    kw = {"axis_up": "Z", "axis_forward": "Y"} if "zup" in clip else {}
    bpy.ops.import_anim.bvh(filepath=str(harness.MOCAP / clip), **kw)
    bones = detect.bones_from_armature(bpy.context.active_object)
    named = {(lb.kind, lb.side): lb for lb in detect.detect_limbs(bones)}
    anon, new = anonymise(bones)
    found = detect.detect_limbs(anon)
    # The 3ds Max clip's rest pose has the arms hanging down: not sideways, so not taken for arms.
    assert [lb.name for lb in found] == ["Left Leg", "Right Leg"] + (["Left Arm", "Right Arm"] if arms else [])
    for lb in found:
        ref = named[lb.kind, lb.side]
        assert lb.bones == tuple(new[n] for n in ref.bones) and lb.end_bone == new[ref.end_bone]
        assert lb.toe_bone == (new[ref.toe_bone] if ref.toe_bone else None)


# --- skeletons with no limbs: nothing, never a guess ----------------------------------------------------

def _line(names_points, parent=None):
    out = []
    for name, h, t in names_points:
        out.append(detect.BoneInfo(name, parent, h, t))
        parent = name
    return out


def test_single_bone_and_empty_skeleton_give_nothing():
    assert detect.detect_limbs([]) == []
    assert detect.detect_limbs([detect.BoneInfo("Bone", None, (0, 0, 0), (0, 0, 1))]) == []
    assert detect.detect_limbs([detect.BoneInfo("Bone", None, (0, 0, 0), (0, 0, 0))]) == []


def test_a_tail_chain_gives_nothing():
    tail = _line([("Bone", (0, 0, 1), (0, 0, 1.1))] + [
        (f"Bone.{i + 1:03d}", (0, 0.1 * i, 1 - 0.15 * i), (0, 0.1 * (i + 1), 1 - 0.15 * (i + 1))) for i in range(6)])
    assert detect.detect_limbs(tail) == []
    # A tail swinging to one side, and one hanging straight down: still nothing.
    side = _line([("Bone", (0, 0, 1), (0, 0, 1.1))] + [
        (f"Bone.{i + 1:03d}", (0.1 * i, 0, 1 - 0.15 * i), (0.1 * (i + 1), 0, 1 - 0.15 * (i + 1))) for i in range(6)])
    assert detect.detect_limbs(side) == []
    down = _line([("Bone", (0, 0, 1), (0, 0, 1.1))] + [
        (f"Bone.{i + 1:03d}", (0, 0, 1 - 0.2 * i), (0, 0, 1 - 0.2 * (i + 1))) for i in range(5)])
    assert detect.detect_limbs(down) == []


def test_one_sided_creature_gives_nothing():
    one = _line([("Root", (0, 0, 1), (0, 0, 1.1)), ("A", (0.1, 0, 1), (0.1, 0, 0.5)), ("B", (0.1, 0, 0.5), (0.1, 0, 0.1)),
                 ("C", (0.1, 0, 0.1), (0.1, -0.1, 0))])
    assert detect.detect_limbs(one) == []


def test_a_quadruped_two_legs_a_side_gives_no_legs():
    bones = [detect.BoneInfo("Bone", None, (0, 0.4, 0.8), (0, -0.4, 0.8))]
    for i, (x, y) in enumerate([(0.15, 0.35), (-0.15, 0.35), (0.15, -0.35), (-0.15, -0.35)]):
        bones += _line([(f"Bone.{i}01", (x, y, 0.8), (x, y, 0.45)), (f"Bone.{i}02", (x, y, 0.45), (x, y, 0.08)),
                        (f"Bone.{i}03", (x, y, 0.08), (x, y - 0.1, 0.0))], parent="Bone")
    assert detect.detect_limbs(bones) == []


def test_unequal_left_and_right_lines_give_nothing():
    # The right leg squashed to half its height: not a pair of legs (the arms still are a pair).
    legs = {_fill(NEUTRAL[r], "R") for r in ("thigh", "shin", "foot", "toe")}

    def squash(p, name):
        return (p[0], p[1], 0.5 * p[2]) if name in legs else p

    anon, _new = anonymise([detect.BoneInfo(b.name, b.parent, squash(b.head, b.name), squash(b.tail, b.name))
                            for b in biped(NEUTRAL)])
    assert [lb.name for lb in detect.detect_limbs(anon)] == ["Left Arm", "Right Arm"]


# --- the operator on a real armature --------------------------------------------------------------------

def _armature(bones, name="Char"):
    arm = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    arm.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    for b in bones:
        eb = arm.data.edit_bones.new(b.name)
        eb.head, eb.tail = b.head, b.tail
    for b in bones:
        if b.parent:
            arm.data.edit_bones[b.name].parent = arm.data.edit_bones[b.parent]
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def test_detect_limbs_operator_on_a_mixamo_armature(scene):
    arm = _armature(_bones_of("mixamo"))
    assert bpy.ops.contact_ik.detect_limbs() == {"FINISHED"}
    s = arm.contact_ik
    assert [(lb.name, lb.kind) for lb in s.limbs] == [("Left Leg", "FOOT"), ("Right Leg", "FOOT"),
                                                      ("Left Arm", "HAND"), ("Right Arm", "HAND")]
    for lb, side in zip(s.limbs, ("Left", "Right", "Left", "Right")):
        if lb.kind == "FOOT":
            bones, end, toe = [f"mixamorig:{side}UpLeg", f"mixamorig:{side}Leg"], f"mixamorig:{side}Foot", \
                f"mixamorig:{side}ToeBase"
            assert lb.length == pytest.approx(0.9, abs=1e-3)  # thigh and shin, measured on the rig
            assert lb.foot_offset == pytest.approx(0.08, abs=1e-4)  # the ankle above the toe tip
        else:
            bones, end, toe = [f"mixamorig:{side}Arm", f"mixamorig:{side}ForeArm"], f"mixamorig:{side}Hand", ""
            assert lb.length == pytest.approx(0.52, abs=1e-3)
        assert [b.bone for b in lb.bones] == bones
        assert (lb.end_bone, lb.toe_bone) == (end, toe)
    assert s.pelvis_bone == "mixamorig:Hips"
    assert s.active_limb == 0


def test_detect_limbs_operator_replaces_old_limbs_and_cancels_on_a_rig_without_limbs(scene):
    arm = _armature(_bones_of("mixamo"))
    assert bpy.ops.contact_ik.detect_limbs() == {"FINISHED"}
    assert bpy.ops.contact_ik.detect_limbs() == {"FINISHED"}
    assert len(arm.contact_ik.limbs) == 4  # replaced, not appended
    stick = _armature([detect.BoneInfo("Bone", None, (0, 0, 0), (0, 0, 1))], name="Stick")
    with pytest.raises(RuntimeError, match="add limbs by hand"):
        bpy.ops.contact_ik.detect_limbs()
    assert len(stick.contact_ik.limbs) == 0
