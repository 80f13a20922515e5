"""Solve, write the rotations to a real armature, let Blender evaluate, and check the tip is on target.

Covers bones with roll, parents turned by an arbitrary pose, an object transform on the armature,
every rotation mode (each bone keeping its own), two-bone and longer chains.
"""

from __future__ import annotations

import math

import bpy
import harness
import pytest
from mathutils import Euler, Matrix, Vector

solvers = harness.module("solvers")
rig = harness.module("core.rig")

MODES = ["QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE"]


def make_leg(scene, n_bones: int = 2, object_matrix: Matrix | None = None):
    """An armature: a rotated 'hips' parent and a chain of `n_bones` with rolls, plus a 'foot'."""
    arm = bpy.data.armatures.new("Leg")
    obj = bpy.data.objects.new("Leg", arm)
    scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    if object_matrix is not None:
        obj.matrix_world = object_matrix
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.edit_bones
    hips = eb.new("hips")
    hips.head, hips.tail, hips.roll = (0, 0, 1.0), (0, 0.05, 1.25), 0.3
    parent = hips
    head = Vector((0.1, 0.0, 1.0))
    names = []
    for i in range(n_bones):
        b = eb.new(f"seg{i}")
        b.head = head
        tail = head + Vector((0.0, 0.04 * (-1) ** i, -1.0 / n_bones))
        b.tail = tail
        b.roll = 0.4 * (i + 1)
        b.parent = parent
        b.use_connect = i > 0
        parent, head = b, tail
        names.append(b.name)
    foot = eb.new("foot")
    foot.head, foot.tail, foot.roll = head, head + Vector((0, -0.15, -0.05)), -0.2
    foot.parent, foot.use_connect = parent, True
    bpy.ops.object.mode_set(mode="POSE")
    pb = obj.pose.bones
    pb["hips"].rotation_mode = "XYZ"
    pb["hips"].rotation_euler = (0.3, -0.2, 0.5)
    pb["hips"].location = (0.05, -0.02, 0.01)
    for i, name in enumerate(names):
        pb[name].rotation_mode = "XYZ"
        pb[name].rotation_euler = (0.2 * (i + 1), 0.1, -0.15)
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.update()
    return obj, names


def evaluated_tip(obj, names):
    bpy.context.view_layer.update()
    return obj.matrix_world @ obj.pose.bones[names[-1]].tail


def object_transforms():
    return [
        None,
        Matrix.LocRotScale(Vector((1.5, -2.0, 0.3)), Euler((0.4, -0.7, 1.1)), Vector((1.7, 1.7, 1.7))),
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transform", [0, 1])
@pytest.mark.parametrize("n_bones", [2, 4])
def test_evaluated_tip_lies_on_target(scene, mode, transform, n_bones):
    obj, names = make_leg(scene, n_bones, object_transforms()[transform])
    pb = obj.pose.bones
    for name in names:
        # Switch mode keeping the same rotation, as a user's rig might have it.
        q = rig.rotation_of(pb[name])
        pb[name].rotation_mode = mode
        rig.set_rotation(pb[name], q)
    bpy.context.view_layer.update()
    pose = rig.read_chain(obj, names, end_bone="foot")
    start = pose.positions()
    chain = pose.chain_length()
    # A reachable target: the FK tip moved forward and up by a third of the chain.
    target = start[-1] + obj.matrix_world.to_3x3() @ Vector((0.0, -0.2, 0.25)).normalized() * (chain / 3)
    assert (target - start[0]).length < chain
    sol = solvers.solve_limb(pose, target, tolerance=1e-7 * chain, max_iterations=500)
    rig.write_solution(obj, names, sol)
    tip = evaluated_tip(obj, names)
    assert (tip - target).length <= 1e-5 * chain, (tip, target)
    for name in names:
        assert pb[name].rotation_mode == mode
    # Bone lengths in the evaluated pose are those of the rest pose.
    bpy.context.view_layer.update()
    for name in names:
        assert abs(pb[name].length - obj.data.bones[name].length) < 1e-6


@pytest.mark.parametrize("mode", MODES)
def test_each_bone_keeps_its_own_rotation_mode(scene, mode):
    obj, names = make_leg(scene, 2)
    pb = obj.pose.bones
    modes = {names[0]: mode, names[1]: MODES[(MODES.index(mode) + 3) % len(MODES)]}
    for name in names:
        q = rig.rotation_of(pb[name])
        pb[name].rotation_mode = modes[name]
        rig.set_rotation(pb[name], q)
    bpy.context.view_layer.update()
    pose = rig.read_chain(obj, names)
    p = pose.positions()
    target = p[-1].lerp(p[0], 0.25) + Vector((0.05, 0.05, 0.0))
    sol = solvers.solve_limb(pose, target)
    rig.write_solution(obj, names, sol)
    assert (evaluated_tip(obj, names) - target).length <= 1e-5 * pose.chain_length()
    assert {n: pb[n].rotation_mode for n in names} == modes


def test_end_effector_rotation_reaches_target_orientation(scene):
    obj, names = make_leg(scene, 2, object_transforms()[1])
    pose = rig.read_chain(obj, names, end_bone="foot")
    p = pose.positions()
    target = p[-1].lerp(p[0], 0.2) + Vector((0.05, 0.1, 0.0))
    wanted = Euler((0.1, 0.5, -0.3)).to_quaternion()
    sol = solvers.solve_limb(pose, target, target_rotation=wanted)
    rig.write_solution(obj, names, sol, end_bone="foot")
    bpy.context.view_layer.update()
    frame = rig.bone_frame(obj, obj.pose.bones["foot"])
    got = frame.to_quaternion()
    assert abs(abs(got.dot(wanted)) - 1.0) < 1e-5
    assert (evaluated_tip(obj, names) - target).length <= 1e-5 * pose.chain_length()


def test_weight_blends_between_fk_and_ik_in_blender(scene):
    obj, names = make_leg(scene, 2)
    pb = obj.pose.bones
    fk = [tuple(pb[n].rotation_euler) for n in names]
    pose = rig.read_chain(obj, names)
    target = pose.positions()[-1] + Vector((0.3, 0.0, 0.3))
    sol0 = solvers.solve_limb(pose, target, weight=0.0)
    rig.write_solution(obj, names, sol0)
    assert [tuple(pb[n].rotation_euler) for n in names] == fk
    half = solvers.solve_limb(pose, target, weight=0.5)
    full = solvers.solve_limb(pose, target, weight=1.0)
    d_half = (half.positions[-1] - pose.positions()[-1]).length
    d_full = (full.positions[-1] - pose.positions()[-1]).length
    assert 0.2 * d_full < d_half < 0.8 * d_full


def test_hinge_limits_from_pose_bone_settings_are_honoured(scene):
    obj, names = make_leg(scene, 2)
    knee = obj.pose.bones[names[1]]
    knee.lock_ik_y = knee.lock_ik_z = True
    knee.use_ik_limit_x = True
    knee.ik_min_x, knee.ik_max_x = 0.0, math.radians(120)
    pose = rig.read_chain(obj, names)
    lim = pose.limits[1]
    assert lim is not None and lim.lock == (False, True, True)
    for offset in (Vector((0, 0.3, 0.4)), Vector((0, -0.3, 0.4)), Vector((0.2, 0.0, 0.6))):
        sol = solvers.solve_limb(pose, pose.positions()[-1] + offset)
        assert lim.violation(sol.rotations[1]) <= 1e-5
