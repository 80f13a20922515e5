"""Limb detection on synthetic skeletons of every naming convention the product promises, with
namespace prefixes, odd case and whitespace, twist and share bones beside the chain, the fallback
from hierarchy and geometry when names say nothing, and skeletons with no limbs at all."""

from __future__ import annotations

import math

import bpy
import harness
import pytest

detect = harness.module("core.detect")
props = harness.module("properties")

# A biped in Blender's axes (Z up, facing -Y, its left on +X), T-pose, metres.
_L = {
    "thigh": ((0.10, 0.0, 1.00), (0.10, 0.0, 0.55)),
    "shin": ((0.10, 0.0, 0.55), (0.10, 0.0, 0.10)),
    "foot": ((0.10, 0.0, 0.10), (0.10, -0.12, 0.02)),
    "toe": ((0.10, -0.12, 0.02), (0.10, -0.18, 0.02)),
    "clavicle": ((0.02, 0.0, 1.42), (0.15, 0.0, 1.42)),
    "upperarm": ((0.15, 0.0, 1.42), (0.42, 0.0, 1.42)),
    "forearm": ((0.42, 0.0, 1.42), (0.67, 0.0, 1.42)),
    "hand": ((0.67, 0.0, 1.42), (0.75, 0.0, 1.42)),
    "index1": ((0.75, -0.01, 1.42), (0.79, -0.01, 1.42)),
    "index2": ((0.79, -0.01, 1.42), (0.82, -0.01, 1.42)),
    "thumb1": ((0.70, -0.03, 1.41), (0.73, -0.05, 1.40)),
}
_CENTRE = {
    "hips": ((0.0, 0.0, 1.00), (0.0, 0.0, 1.10)),
    "spine": ((0.0, 0.0, 1.10), (0.0, 0.0, 1.30)),
    "chest": ((0.0, 0.0, 1.30), (0.0, 0.0, 1.45)),
    "neck": ((0.0, 0.0, 1.45), (0.0, 0.0, 1.55)),
    "head": ((0.0, 0.0, 1.55), (0.0, 0.0, 1.75)),
}
_PARENT = {"spine": "hips", "chest": "spine", "neck": "chest", "head": "neck", "clavicle": "chest",
           "upperarm": "clavicle", "forearm": "upperarm", "hand": "forearm", "index1": "hand", "index2": "index1",
           "thumb1": "hand", "thigh": "hips", "shin": "thigh", "foot": "shin", "toe": "foot"}


def _mirror(p):
    return (-p[0], p[1], p[2])


def biped(names: dict[str, str], extras=(), prefix: str = "", first_extras: bool = True):
    """BoneInfo list: `names` maps a role to a name ('{S}' = L/R, '{s}' = l/r, '{Side}' = Left/Right);
    `extras` are (name, parent role, head, tail) added beside the chain (twist and share bones)."""
    out, chain = [], []

    def name_of(role, side):
        if role in _CENTRE:
            return prefix + names.get(role, f"c_{role}")
        if role not in names:
            return None
        return prefix + names[role].format(S=side, s=side.lower(), Side="Left" if side == "L" else "Right")

    for role, (h, t) in _CENTRE.items():
        parent = name_of(_PARENT[role], "L") if role in _PARENT else None
        chain.append(detect.BoneInfo(name_of(role, "L"), parent, h, t))
    for side in "LR":
        for role, (h, t) in _L.items():
            n = name_of(role, side)
            if n is None:
                continue
            p = _PARENT[role]
            if p == "clavicle" and "clavicle" not in names:
                p = "chest"
            parent = name_of(p, side)
            if side == "R":
                h, t = _mirror(h), _mirror(t)
            chain.append(detect.BoneInfo(n, parent, h, t))
        for n, prole, h, t in extras:
            if side == "R":
                h, t = _mirror(h), _mirror(t)
            out.append(detect.BoneInfo(prefix + n.format(S=side, s=side.lower(), Side="Left" if side == "L" else "Right"),
                                       name_of(prole, side), h, t))
    return out + chain if first_extras else chain + out


def _expect(found, names, toe=True, prefix=""):
    by = {lb.name: lb for lb in found}
    assert set(by) == {"Left Leg", "Right Leg", "Left Arm", "Right Arm"}, [lb.name for lb in found]
    for side in "LR":
        def n(role, side=side):
            return prefix + names[role].format(S=side, s=side.lower(), Side="Left" if side == "L" else "Right")
        label = "Left" if side == "L" else "Right"
        leg, arm = by[f"{label} Leg"], by[f"{label} Arm"]
        assert (leg.bones, leg.end_bone) == ((n("thigh"), n("shin")), n("foot")), leg
        assert leg.toe_bone == (n("toe") if toe else None), leg
        assert (arm.bones, arm.end_bone) == ((n("upperarm"), n("forearm")), n("hand")), arm
        assert leg.side == arm.side == side


CONVENTIONS = {
    "rigify": {"hips": "spine", "thigh": "thigh.{S}", "shin": "shin.{S}", "foot": "foot.{S}", "toe": "toe.{S}",
               "clavicle": "shoulder.{S}", "upperarm": "upper_arm.{S}", "forearm": "forearm.{S}", "hand": "hand.{S}",
               "index1": "f_index.01.{S}"},
    "mixamo": {"hips": "mixamorig:Hips", "thigh": "mixamorig:{Side}UpLeg", "shin": "mixamorig:{Side}Leg",
               "foot": "mixamorig:{Side}Foot", "toe": "mixamorig:{Side}ToeBase", "clavicle": "mixamorig:{Side}Shoulder",
               "upperarm": "mixamorig:{Side}Arm", "forearm": "mixamorig:{Side}ForeArm", "hand": "mixamorig:{Side}Hand",
               "index1": "mixamorig:{Side}HandIndex1", "index2": "mixamorig:{Side}HandIndex2"},
    "motionbuilder": {"hips": "Hips", "thigh": "{Side}UpLeg", "shin": "{Side}Leg", "foot": "{Side}Foot",
                      "toe": "{Side}ToeBase", "clavicle": "{Side}Shoulder", "upperarm": "{Side}Arm",
                      "forearm": "{Side}ForeArm", "hand": "{Side}Hand", "index1": "{Side}FingerBase"},
    "3dsmax_bvh": {"hips": "Hips", "thigh": "{Side}Hip", "shin": "{Side}Knee", "foot": "{Side}Ankle", "toe": "{Side}Toe",
                   "clavicle": "{Side}Collar", "upperarm": "{Side}Shoulder", "forearm": "{Side}Elbow",
                   "hand": "{Side}Wrist"},
    "cmu_asf": {"hips": "root", "thigh": "{s}femur", "shin": "{s}tibia", "foot": "{s}foot", "toe": "{s}toes",
                "clavicle": "{s}clavicle", "upperarm": "{s}humerus", "forearm": "{s}radius", "hand": "{s}hand",
                "index1": "{s}fingers", "thumb1": "{s}thumb"},
    "unreal": {"hips": "pelvis", "thigh": "thigh_{s}", "shin": "calf_{s}", "foot": "foot_{s}", "toe": "ball_{s}",
               "clavicle": "clavicle_{s}", "upperarm": "upperarm_{s}", "forearm": "lowerarm_{s}", "hand": "hand_{s}",
               "index1": "index_01_{s}", "index2": "index_02_{s}"},
    "unity": {"hips": "Hips", "thigh": "UpperLeg_{S}", "shin": "LowerLeg_{S}", "foot": "Foot_{S}", "toe": "Toes_{S}",
              "clavicle": "Shoulder_{S}", "upperarm": "UpperArm_{S}", "forearm": "LowerArm_{S}", "hand": "Hand_{S}"},
    "vrm": {"hips": "J_Bip_C_Hips", "thigh": "J_Bip_{S}_UpperLeg", "shin": "J_Bip_{S}_LowerLeg",
            "foot": "J_Bip_{S}_Foot", "toe": "J_Bip_{S}_ToeBase", "clavicle": "J_Bip_{S}_Shoulder",
            "upperarm": "J_Bip_{S}_UpperArm", "forearm": "J_Bip_{S}_LowerArm", "hand": "J_Bip_{S}_Hand"},
    "character_creator": {"hips": "CC_Base_Hip", "thigh": "CC_Base_{S}_Thigh", "shin": "CC_Base_{S}_Calf",
                          "foot": "CC_Base_{S}_Foot", "toe": "CC_Base_{S}_ToeBase", "clavicle": "CC_Base_{S}_Clavicle",
                          "upperarm": "CC_Base_{S}_Upperarm", "forearm": "CC_Base_{S}_Forearm", "hand": "CC_Base_{S}_Hand"},
    "3dsmax_biped": {"hips": "Bip01 Pelvis", "thigh": "Bip01 {S} Thigh", "shin": "Bip01 {S} Calf",
                     "foot": "Bip01 {S} Foot", "toe": "Bip01 {S} Toe0", "clavicle": "Bip01 {S} Clavicle",
                     "upperarm": "Bip01 {S} UpperArm", "forearm": "Bip01 {S} Forearm", "hand": "Bip01 {S} Hand"},
}

# Twist and share bones beside the chain: children of the chain bones, listed before the chain.
_TWIST = {
    "unreal": [("thigh_twist_01_{s}", "thigh", (0.1, 0, 0.9), (0.1, 0, 0.8)),
               ("calf_twist_01_{s}", "shin", (0.1, 0, 0.5), (0.1, 0, 0.4)),
               ("upperarm_twist_01_{s}", "upperarm", (0.2, 0, 1.42), (0.3, 0, 1.42)),
               ("lowerarm_twist_01_{s}", "forearm", (0.5, 0, 1.42), (0.6, 0, 1.42))],
    "character_creator": [("CC_Base_{S}_ThighTwist01", "thigh", (0.1, 0, 1.0), (0.1, 0, 0.8)),
                          ("CC_Base_{S}_CalfTwist01", "shin", (0.1, 0, 0.55), (0.1, 0, 0.35)),
                          ("CC_Base_{S}_KneeShareBone", "shin", (0.1, 0, 0.55), (0.1, -0.05, 0.55)),
                          ("CC_Base_{S}_UpperarmTwist01", "upperarm", (0.15, 0, 1.42), (0.3, 0, 1.42)),
                          ("CC_Base_{S}_ForearmTwist01", "forearm", (0.42, 0, 1.42), (0.55, 0, 1.42)),
                          ("CC_Base_{S}_ElbowShareBone", "forearm", (0.42, 0, 1.42), (0.42, 0.05, 1.42))],
}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_every_convention(convention):
    names = CONVENTIONS[convention]
    found = detect.detect_limbs(biped(names, _TWIST.get(convention, ())))
    _expect(found, names)


@pytest.mark.parametrize("convention", ["character_creator", "unreal"])
def test_twist_and_share_bones_are_never_the_chain_in_any_order(convention):
    names = CONVENTIONS[convention]
    for first in (True, False):
        _expect(detect.detect_limbs(biped(names, _TWIST[convention], first_extras=first)), names)


@pytest.mark.parametrize("convention", ["mixamo", "unity", "unreal", "rigify", "cmu_asf"])
def test_any_namespace_prefix(convention):
    names = CONVENTIONS[convention]
    _expect(detect.detect_limbs(biped(names, prefix="Character1:")), names, prefix="Character1:")


def test_odd_case_and_stray_whitespace():
    names = {"hips": " HIPS ", "thigh": " MIXAMORIG:{Side}UPLEG", "shin": "mixamorig:{Side}leg ",
             "foot": "  mixamorig:{Side}Foot", "toe": "mixamorig:{Side}TOEBASE", "clavicle": "mixamorig:{Side}shoulder",
             "upperarm": "mixamorig:{Side}ARM", "forearm": "MixamoRig:{Side}Forearm", "hand": "mixamorig: {Side}Hand"}
    _expect(detect.detect_limbs(biped(names)), names)


@pytest.mark.parametrize("marker", ["{Side}Thigh", "Thigh.{S}", "Thigh_{S}", "thigh_{s}", "{S}_Thigh", "{S} Thigh",
                                    "Thigh{Side}", "thigh-{s}"])
def test_side_markers(marker):
    def m(part):
        return marker.replace("Thigh", part).replace("thigh", part.lower())
    names = {"thigh": m("Thigh"), "shin": m("Shin"), "foot": m("Foot"), "toe": m("Toe"), "upperarm": m("UpperArm"),
             "forearm": m("ForeArm"), "hand": m("Hand")}
    _expect(detect.detect_limbs(biped(names)), names)


def test_nameless_skeleton_by_hierarchy_and_geometry():
    # Every bone a meaningless name (left and right differ by a letter no convention reads as a side).
    names = {r: (f"Bone{i:03d}" if r in _CENTRE else f"Bone{i:03d}" + "{s}9")
             for i, r in enumerate(list(_CENTRE) + list(_L))}
    bones = biped(names)
    assert all(detect.split_side(b.name)[0] is None for b in bones), "names must say nothing here"
    found = detect.detect_limbs(bones)
    assert all(lb.convention == "hierarchy" for lb in found)
    _expect(found, names)


def test_nameless_a_pose_with_clavicles_and_fingers():
    names = {r: f"joint{i}" + ("" if r in _CENTRE else "{s}x") for i, r in enumerate(list(_CENTRE) + list(_L))}
    # Arms down 40 degrees (A-pose): arm points turned about the shoulder.
    out = []
    for b in biped(names):
        role = next((r for r, n in names.items() if n.format(s=("l" if b.head[0] >= 0 else "r")) == b.name), None)
        if role in ("upperarm", "forearm", "hand", "index1", "index2", "thumb1"):
            sx = 0.15 if b.head[0] > 0 else -0.15

            def rot(p, sx=sx):
                dx, dz = p[0] - sx, p[2] - 1.42
                a = math.radians(-40 if sx > 0 else 40)
                return (sx + dx * math.cos(a) - dz * math.sin(a), p[1], 1.42 + dx * math.sin(a) + dz * math.cos(a))
            b = detect.BoneInfo(b.name, b.parent, rot(b.head), rot(b.tail))
        out.append(b)
    _expect(detect.detect_limbs(out), names)


def test_skeletons_without_limbs_give_nothing():
    assert detect.detect_limbs([detect.BoneInfo("Bone", None, (0, 0, 0), (0, 0, 1))]) == []
    tail = [detect.BoneInfo("Root", None, (0, 0, 1), (0, 0, 1.1))]
    for i in range(6):
        head, end = (0, 0.1 * i, 1 - 0.15 * i), (0, 0.1 * (i + 1), 1 - 0.15 * (i + 1))
        tail.append(detect.BoneInfo(f"Tail{i}", tail[-1].name, head, end))
    assert detect.detect_limbs(tail) == []
    # A one-sided creature (only a left leg by geometry) is not guessed at either.
    one = [detect.BoneInfo("Root", None, (0, 0, 1), (0, 0, 1.1)), detect.BoneInfo("A", "Root", (0.1, 0, 1), (0.1, 0, 0.5)),
           detect.BoneInfo("B", "A", (0.1, 0, 0.5), (0.1, 0, 0.1)), detect.BoneInfo("C", "B", (0.1, 0, 0.1), (0.1, -0.1, 0))]
    assert detect.detect_limbs(one) == []


def _armature(names: dict[str, str]):
    harness.reset_scene()
    arm = bpy.data.objects.new("Char", bpy.data.armatures.new("Char"))
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    infos = biped(names)
    for b in infos:
        eb = arm.data.edit_bones.new(b.name)
        eb.head, eb.tail = b.head, b.tail
    for b in infos:
        if b.parent:
            arm.data.edit_bones[b.name].parent = arm.data.edit_bones[b.parent]
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def test_detect_limbs_operator_fills_the_settings_and_reports():
    names = CONVENTIONS["mixamo"]
    arm = _armature(names)
    assert bpy.ops.contact_ik.detect_limbs() == {"FINISHED"}
    s = props.settings(arm)
    assert [lb.name for lb in s.limbs] == ["Left Leg", "Right Leg", "Left Arm", "Right Arm"]
    left = s.limbs[0]
    assert [b.bone for b in left.bones] == ["mixamorig:LeftUpLeg", "mixamorig:LeftLeg"]
    assert (left.end_bone, left.toe_bone) == ("mixamorig:LeftFoot", "mixamorig:LeftToeBase")
    assert left.length == pytest.approx(0.9, abs=1e-5)  # measured on the rig
    assert left.foot_offset == pytest.approx(0.08, abs=1e-5)  # ankle height above the toe tip
    assert s.pelvis_bone == "mixamorig:Hips"


def test_detect_limbs_operator_on_a_rig_with_no_limbs_says_what_to_do():
    harness.reset_scene()
    arm = bpy.data.objects.new("Stick", bpy.data.armatures.new("Stick"))
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones.new("Bone")
    eb.head, eb.tail = (0, 0, 0), (0, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(RuntimeError, match="add limbs by hand"):
        bpy.ops.contact_ik.detect_limbs()
