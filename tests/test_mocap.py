"""Real motion capture (the clips pinned in tests/data): limb detection on every clip, Plant Feet on a noise terrain."""

from __future__ import annotations

import bpy
import harness
import pytest
import scenes
from mathutils import Vector
from mathutils.bvhtree import BVHTree

detect = harness.module("core.detect")
setup = harness.module("core.setup")
props = harness.module("properties")

MB = (("LeftUpLeg", "LeftLeg"), "LeftFoot", "LeftToeBase", ("LeftArm", "LeftForeArm"), "LeftHand")
MAX = (("LeftHip", "LeftKnee"), "LeftAnkle", "LeftToe", ("LeftShoulder", "LeftElbow"), "LeftWrist")
CLIPS = {
    "cmu_12_01_walk.bvh": MB,
    "cmu_01_01_forward_jumps.bvh": MB,
    "cmu_131_01_start_walk_stop_maxnames.bvh": MAX,
    "cmu_131_03_start_hop_stop_maxnames.bvh": MAX,
    "fair1_jumping_zup.bvh": MB,
    "fair1_zombie_walk_zup.bvh": MB,
}


def _import(name: str) -> bpy.types.Object:
    harness.reset_scene()
    kw = {"axis_up": "Z", "axis_forward": "Y"} if "zup" in name else {}
    bpy.ops.import_anim.bvh(filepath=str(harness.MOCAP / name), update_scene_duration=True, **kw)
    return bpy.context.active_object


def _right(name: str) -> str:
    return name.replace("Left", "Right")


@pytest.mark.parametrize("clip", sorted(CLIPS))
def test_detection_finds_both_legs_and_arms_with_the_right_bones(clip):
    obj = _import(clip)
    legs, foot, toe, arms, hand = CLIPS[clip]
    found = {lb.name: lb for lb in detect.detect_limbs(detect.bones_from_armature(obj))}
    assert set(found) == {"Left Leg", "Right Leg", "Left Arm", "Right Arm"}
    for side, fix in (("Left", str), ("Right", _right)):
        leg, arm = found[f"{side} Leg"], found[f"{side} Arm"]
        assert leg.bones == tuple(fix(b) for b in legs) and leg.end_bone == fix(foot) and leg.toe_bone == fix(toe)
        assert arm.bones == tuple(fix(b) for b in arms) and arm.end_bone == fix(hand)


def test_rigify_metarig_detection():
    harness.reset_scene()
    obj = scenes.metarig()
    found = {lb.name: lb for lb in detect.detect_limbs(detect.bones_from_armature(obj))}
    assert found["Left Leg"].bones == ("thigh.L", "shin.L") and found["Left Leg"].toe_bone == "toe.L"
    assert found["Right Arm"].bones == ("upper_arm.R", "forearm.R") and found["Right Arm"].end_bone == "hand.R"


@pytest.mark.parametrize("clip", ["cmu_12_01_walk.bvh", "fair1_zombie_walk_zup.bvh"])
def test_plant_feet_on_mocap_leaves_no_sole_below_a_noise_terrain(clip):
    obj = _import(clip)
    scene = bpy.context.scene
    found = detect.detect_limbs(detect.bones_from_armature(obj))
    legs = [lb for lb in found if lb.kind == "FOOT"]
    setup.apply_detection(obj, legs)
    s = props.settings(obj)
    leg = max(lb.length for lb in s.limbs)  # the imported armature has unit object scale
    terrain = scenes.noise(leg, amplitude=0.1, segments=120, size=30.0)
    bpy.context.view_layer.objects.active = obj
    for o in scene.objects:
        o.select_set(o in (obj, terrain))
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    tree = BVHTree.FromObject(terrain, bpy.context.evaluated_depsgraph_get())
    step = max(1, (scene.frame_end - scene.frame_start) // 60)
    worst = 0.0
    for f in range(scene.frame_start + 1, scene.frame_end + 1, step):
        scene.frame_set(f)
        for limb in s.limbs:
            pts = [obj.matrix_world @ obj.pose.bones[limb.toe_bone].tail]
            foot = obj.pose.bones[limb.end_bone]
            pts.append(obj.matrix_world @ foot.matrix @ setup.heel_local(obj, limb.end_bone, limb.foot_offset))
            up = (obj.matrix_world.to_3x3() @ Vector((0, 0, 1))).normalized()
            for p in pts:
                loc, _n, _i, _d = tree.ray_cast(p + up * 10 * leg, -up)
                if loc is not None:
                    worst = min(worst, (p - loc).dot(up))
    assert worst >= -1e-3 * leg, f"a sole went {-worst / leg:.4%} of the leg length below the terrain"


def test_plant_feet_on_an_imported_bvh_with_no_settings_touched():
    # What a user does: File > Import > BVH with the importer's defaults (plus the scene's frame range
    # from the file), add a ground, select both, click Plant Feet. Nothing else is set.
    harness.reset_scene()
    bpy.ops.import_anim.bvh(filepath=str(harness.MOCAP / "cmu_12_01_walk.bvh"), update_scene_duration=True)
    obj = bpy.context.active_object
    scene = bpy.context.scene
    bpy.ops.mesh.primitive_plane_add(size=500.0, location=(0.0, 0.0, 0.0))
    ground = bpy.context.active_object
    ground.rotation_euler.x = 0.2  # a slope, so the feet must move to land on it
    bpy.ops.object.transform_apply(rotation=True)  # (so the BVH tree below is in world space)
    bpy.context.view_layer.objects.active = obj
    for o in scene.objects:
        o.select_set(o in (obj, ground))
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    s = props.settings(obj)
    feet = [lb for lb in s.limbs if lb.kind == "FOOT"]
    assert {lb.name for lb in feet} == {"Left Leg", "Right Leg"} and all(lb.contacts for lb in feet)
    leg = max(lb.length for lb in feet) * obj.matrix_world.to_scale().z
    tree = BVHTree.FromObject(ground, bpy.context.evaluated_depsgraph_get())
    up = Vector((0.0, 0.0, 1.0))
    lowest = []
    for f in range(scene.frame_start + 1, scene.frame_end + 1, 7):  # frame 1 of a cgspeed CMU file is a T-pose
        scene.frame_set(f)
        for limb in feet:
            pts = [obj.matrix_world @ obj.pose.bones[limb.toe_bone].tail,
                   obj.matrix_world @ obj.pose.bones[limb.end_bone].matrix
                   @ setup.heel_local(obj, limb.end_bone, limb.foot_offset)]
            heights = []
            for p in pts:
                loc, _n, _i, _d = tree.ray_cast(p + up * 10 * leg, -up)
                heights.append((p - loc).dot(up))
            lowest.append(min(heights))
    assert min(lowest) >= -1e-3 * leg, [round(x / leg, 3) for x in lowest]  # nothing below the ground
    assert sorted(lowest)[len(lowest) // 4] <= 0.01 * leg  # and planted on it (a quarter of samples on the ground)
