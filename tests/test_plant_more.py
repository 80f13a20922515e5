"""Plant Feet beyond the walk: hands reaching targets, keyed weights, terrain collections, the terrain
cache following edits and modifiers, limbs set by hand, errors in the live handler, and F12 renders."""

from __future__ import annotations

import math
import pathlib
import re

import bmesh
import bpy
import harness
import numpy as np
import pytest
import scenes
from mathutils import Euler, Matrix, Quaternion, Vector
from test_contacts import _panel_labels
from test_plant_feet import LEG_LIMBS, _plant, _sole_points, _walker

setup = harness.module("core.setup")
contacts = harness.module("core.contacts")
props = harness.module("properties")
handlers = harness.module("core.handlers")
live = harness.module("core.live")

ARM_LIMBS = [
    ("Left Arm", "HAND", ("upper_arm.L", "forearm.L"), "hand.L"),
    ("Right Arm", "HAND", ("upper_arm.R", "forearm.R"), "hand.R"),
]


def _walker_with_arms(kind="flat"):
    obj, terrain, leg = _walker(kind)
    s = props.settings(obj)
    for name, limb_kind, bones, end in ARM_LIMBS:
        limb = s.limbs.add()
        limb.name, limb.kind, limb.end_bone = name, limb_kind, end
        for b in bones:
            limb.bones.add().bone = b
        setup.measure_limb(obj, limb)
    return obj, terrain, leg


def _empty(name, location, rotation=(0.0, 0.0, 0.0)):
    e = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(e)
    e.location = location
    e.rotation_euler = rotation
    return e


def _world_head(obj, bone):
    return obj.matrix_world @ obj.pose.bones[bone].head


def test_hands_reach_animated_targets_and_match_their_rotation():
    obj, terrain, leg = _walker_with_arms()
    scene = bpy.context.scene
    s = props.settings(obj)
    arm = s.limbs[2].length
    targets = []
    for i, side in enumerate("LR"):
        shoulder = _world_head(obj, f"upper_arm.{side}")
        reach = Vector(((0.3 if side == "L" else -0.3) * arm, -0.6 * arm, 0.2 * arm))
        t = _empty(f"Ledge.{side}", shoulder + reach, rotation=(0.4, 0.2 * (i + 1), -0.3))
        # The target moves with the body (it is keyed), so the hand follows it frame by frame.
        for f in (1, 48):
            scene.frame_set(f)
            t.location = _world_head(obj, f"upper_arm.{side}") + reach
            t.keyframe_insert("location", frame=f)
        s.limbs[2 + i].target_object = t
        targets.append(t)
    s.limbs[3].use_target_rotation = True
    _plant(obj, terrain)
    for f in (1, 9, 30, 48):
        scene.frame_set(f)
        for side, t in zip("LR", targets):
            gap = (_world_head(obj, f"hand.{side}") - t.matrix_world.translation).length
            assert gap <= 1e-5 * arm, (f, side, gap)
        hand_rot = (obj.matrix_world @ obj.pose.bones["hand.R"].matrix).to_quaternion()
        angle = hand_rot.rotation_difference(targets[1].matrix_world.to_quaternion()).angle
        assert min(angle, 2 * math.pi - angle) < 1e-4, (f, angle)
    # The left hand does not match rotation: its forearm-to-hand rotation stays the animation's.
    fk_local = obj.pose.bones["hand.L"].rotation_quaternion.copy()
    s.limbs[2].use_target_rotation = False
    scene.frame_set(30)
    assert obj.pose.bones["hand.L"].rotation_quaternion == fk_local


def test_keyed_limb_weight_blends_from_animation_to_ik():
    obj, terrain, leg = _walker_with_arms()
    scene = bpy.context.scene
    s = props.settings(obj)
    arm = s.limbs[2].length
    shoulder = _world_head(obj, "upper_arm.L")
    target = _empty("Prop", shoulder + Vector((0.4 * arm, -0.5 * arm, -0.4 * arm)))
    s.limbs[2].target_object = target
    s.limbs[3].enabled = False
    s.body_follow = False  # the shoulder stays where the animation has it
    s.live_preview = False
    fk = {}
    for f in (1, 3, 5):
        scene.frame_set(f)
        fk[f] = _world_head(obj, "hand.L")
    s.limbs[2].weight = 0.0
    obj.keyframe_insert('contact_ik.limbs[2].weight', frame=1)
    s.limbs[2].weight = 1.0
    obj.keyframe_insert('contact_ik.limbs[2].weight', frame=5)
    _plant(obj, terrain)
    scene.frame_set(1)
    assert (_world_head(obj, "hand.L") - fk[1]).length < 1e-6 * arm  # weight 0: the animation, untouched
    scene.frame_set(5)
    assert (_world_head(obj, "hand.L") - target.location).length < 1e-5 * arm  # weight 1: on the target
    scene.frame_set(3)
    mid = _world_head(obj, "hand.L")
    assert 0.05 * arm < (mid - target.location).length < (fk[3] - target.location).length - 0.05 * arm


def _plane(name, x0, x1, z, leg):
    bm = bmesh.new()
    y0, y1 = -15 * leg, 5 * leg
    vs = [bm.verts.new(c) for c in ((x0, y0, z), (x1, y0, z), (x1, y1, z), (x0, y1, z))]
    bm.faces.new(vs)
    return scenes._mesh_object(name, bm)


def _planted_heights(obj, leg, frames):
    """Lowest sole point per (frame, side) at every frame where the source foot is planted."""
    offset = props.settings(obj).limbs[0].foot_offset
    out = {}
    for f in frames:
        bpy.context.scene.frame_set(f)
        for side in "LR":
            out[f, side] = min(p.z for p in _sole_points(obj, side, offset))
    return out


def test_terrain_collection_of_several_meshes():
    obj, flat, leg = _walker("flat")
    bpy.data.objects.remove(flat)
    coll = bpy.data.collections.new("Ground")
    bpy.context.scene.collection.children.link(coll)
    left = _plane("Left ground", 0.0, 5 * leg, 0.10 * leg, leg)
    right = _plane("Right ground", -5 * leg, 0.0, 0.05 * leg, leg)
    for o in (left, right):
        bpy.context.scene.collection.objects.unlink(o)
        coll.objects.link(o)
    s = props.settings(obj)
    s.terrain_collection = coll
    bpy.context.view_layer.objects.active = obj
    for o in bpy.context.scene.objects:
        o.select_set(o is obj)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    fk_planted = {f: side for f in range(1, 49) for side in "LR"}
    heights = _planted_heights(obj, leg, range(1, 49))
    for (f, side), z in heights.items():
        ground = 0.10 * leg if side == "L" else 0.05 * leg
        assert z >= ground - 1e-3 * leg, (f, side, z)
    # Each foot, when down, rests on its own mesh of the collection.
    for side, ground in (("L", 0.10 * leg), ("R", 0.05 * leg)):
        assert min(z for (f, sd), z in heights.items() if sd == side) == pytest.approx(ground, abs=1e-3 * leg)
    assert fk_planted


def test_terrain_cache_follows_moves_edits_and_modifiers_and_is_kept_otherwise():
    obj, terrain, leg = _walker("flat")
    _plant(obj, terrain)
    cache = handlers.caches.terrain
    builds = cache.builds
    heights = _planted_heights(obj, leg, range(1, 13))
    assert min(heights.values()) == pytest.approx(0.0, abs=1e-3 * leg)
    assert cache.builds == builds, "the terrain BVH was rebuilt although nothing changed"
    # Moving the terrain object.
    terrain.location.z = 0.1 * leg
    bpy.context.view_layer.update()
    heights = _planted_heights(obj, leg, range(1, 13))
    assert min(heights.values()) == pytest.approx(0.1 * leg, abs=1e-3 * leg)
    # Editing its vertices.
    for v in terrain.data.vertices:
        v.co.z = 0.05 * leg
    terrain.data.update()
    bpy.context.view_layer.update()
    heights = _planted_heights(obj, leg, range(1, 13))
    assert min(heights.values()) == pytest.approx(0.15 * leg, abs=1e-3 * leg)
    # A modifier: the evaluated mesh is what the feet land on (Displace without a texture lifts by
    # (1 - midlevel) x strength along the normal).
    mod = terrain.modifiers.new("Lift", "DISPLACE")
    mod.strength = 0.2 * leg
    mod.mid_level = 0.5
    bpy.context.view_layer.update()
    heights = _planted_heights(obj, leg, range(1, 13))
    assert min(heights.values()) == pytest.approx(0.25 * leg, abs=1e-3 * leg)
    rebuilt = cache.builds
    _planted_heights(obj, leg, range(1, 13))
    assert cache.builds == rebuilt


def test_limbs_added_and_removed_by_hand():
    harness.reset_scene()
    obj = scenes.metarig()
    scenes.author_walk(obj, frames=12)
    leg = scenes.leg_length(obj)
    terrain = scenes.flat(leg, height=0.1 * leg)
    s = props.settings(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    obj.data.bones.active = obj.data.bones["foot.L"]
    assert bpy.ops.contact_ik.limb_add(kind="FOOT") == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    assert len(s.limbs) == 1
    limb = s.limbs[0]
    assert [b.bone for b in limb.bones] == ["thigh.L", "shin.L"]
    assert (limb.end_bone, limb.toe_bone) == ("foot.L", "toe.L")
    assert limb.length == pytest.approx(leg)
    assert limb.foot_offset == pytest.approx(setup.foot_offset_at_rest(obj, "foot.L", "toe.L"))
    # Without a pose-mode bone: empty slots to fill in the panel.
    assert bpy.ops.contact_ik.limb_add(kind="HAND") == {"FINISHED"}
    assert [b.bone for b in s.limbs[1].bones] == ["", ""] and s.active_limb == 1
    assert bpy.ops.contact_ik.limb_bone(action="ADD") == {"FINISHED"}
    assert len(s.limbs[1].bones) == 3
    assert bpy.ops.contact_ik.limb_remove() == {"FINISHED"}
    assert len(s.limbs) == 1 and s.active_limb == 0
    # The hand-made leg plants (Plant Feet keeps limbs that exist instead of detecting).
    for o in bpy.context.scene.objects:
        o.select_set(o in (obj, terrain))
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    assert len(s.limbs) == 1
    heights = [min(p.z for p in _sole_points(obj, "L", limb.foot_offset))]
    assert heights[0] >= 0.1 * leg - 1e-3 * leg
    # Removing the limb while previewing gives the animation back in the bones it had moved.
    bpy.context.scene.frame_set(3)
    s.live_preview = False
    fk = obj.pose.bones["shin.L"].matrix.copy()
    s.live_preview = True
    assert obj.pose.bones["shin.L"].matrix != fk
    bpy.ops.contact_ik.limb_remove()
    assert all(abs(a - b) < 1e-6 for ra, rb in zip(obj.pose.bones["shin.L"].matrix, fk) for a, b in zip(ra, rb))
    # Too short a chain above the active bone says what to do.
    bpy.ops.object.mode_set(mode="POSE")
    obj.data.bones.active = obj.data.bones["spine"]
    with pytest.raises(RuntimeError, match="Chain Bones"):
        bpy.ops.contact_ik.limb_add(kind="FOOT")
    bpy.ops.object.mode_set(mode="OBJECT")


def test_live_handler_never_raises_and_turns_itself_off_once(capfd):
    obj, terrain, leg = _walker("flat")
    _plant(obj, terrain)
    s = props.settings(obj)
    # Break the terrain behind the handler's back: delete all its faces.
    bm = bmesh.new()
    bm.from_mesh(terrain.data)
    bmesh.ops.delete(bm, geom=list(bm.faces), context="FACES_ONLY")
    bm.to_mesh(terrain.data)
    bm.free()
    terrain.data.update()
    bpy.context.view_layer.update()
    for f in (2, 3, 4):
        bpy.context.scene.frame_set(f)  # must not raise
    out, _err = capfd.readouterr()
    assert out.count("live preview turned off") == 1, out
    assert "has no faces" in out
    assert not s.live_preview
    assert obj.name not in live.live_rigs


def _render(scene, path):
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(str(path) + ".png" if not str(path).endswith(".png") else str(path))
    px = np.empty(len(img.pixels), dtype=np.float32)
    img.pixels.foreach_get(px)
    bpy.data.images.remove(img)
    return px


def _render_animation(scene, folder, start, end):
    scene.frame_start, scene.frame_end = start, end
    scene.render.filepath = str(folder / "f_####")
    bpy.ops.render.render(animation=True)
    out = {}
    for f in range(start, end + 1):
        img = bpy.data.images.load(str(folder / f"f_{f:04d}.png"))
        px = np.empty(len(img.pixels), dtype=np.float32)
        img.pixels.foreach_get(px)
        bpy.data.images.remove(img)
        out[f] = px
    return out


def test_render_with_live_preview_shows_planted_feet(tmp_path: pathlib.Path):
    """F12 (still and animation) with live preview on renders the planted pose and does not crash."""
    obj, _terrain, leg = _walker("flat")
    bpy.data.objects.remove(_terrain)
    terrain = scenes.flat(leg, height=0.12 * leg)  # raised ground: planted feet move visibly
    scene = bpy.context.scene
    # Armatures do not render: give each foot a box that follows the bone.
    for side in "LR":
        bpy.ops.mesh.primitive_cube_add(size=0.08 * leg)
        box = bpy.context.active_object
        box.parent, box.parent_type, box.parent_bone = obj, "BONE", f"foot.{side}"
        box.location = (0.0, -obj.data.bones[f"foot.{side}"].length, 0.0)
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    cam.data.type, cam.data.ortho_scale = "ORTHO", 2.5 * leg
    cam.location = (4 * leg, -0.3 * leg, 0.2 * leg)
    cam.rotation_euler = Euler((math.pi / 2, 0.0, math.pi / 2))
    scene.camera = cam
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x = scene.render.resolution_y = 64
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    _plant(obj, terrain)
    s = props.settings(obj)
    seen = {}

    def record(scn, depsgraph=None):  # runs after Contact IK's handler: what the render evaluates
        if depsgraph is not None and depsgraph.mode == "RENDER":
            ev = obj.evaluated_get(depsgraph).pose.bones
            seen[scn.frame_current] = [ev[f"foot.{side}"].matrix.copy() for side in "LR"]

    bpy.app.handlers.frame_change_post.append(record)
    try:
        planted = _render_animation(scene, tmp_path / "on", 5, 6)
    finally:
        bpy.app.handlers.frame_change_post.remove(record)
    assert sorted(seen) == [5, 6]
    for f in (5, 6):
        scene.frame_set(f)
        for side, rendered in zip("LR", seen[f]):
            viewport = obj.pose.bones[f"foot.{side}"].matrix
            assert max(abs(a - b) for ra, rb in zip(rendered, viewport) for a, b in zip(ra, rb)) < 1e-6 * leg, (f, side)
    scene.frame_set(6)
    still = _render(scene, tmp_path / "still6")
    s.live_preview = False
    unplanted = _render_animation(scene, tmp_path / "off", 5, 6)
    for f in (5, 6):
        assert np.abs(planted[f] - unplanted[f]).max() > 0.2, f"frame {f}: the render shows no IK"
    # The animation render's frame 6 is the viewport's planted frame 6.
    assert np.abs(planted[6] - still).max() < 1e-3


def test_edits_drop_the_frame_cache_and_the_preview_follows_them():
    obj, terrain, leg = _walker("stairs")
    _plant(obj, terrain)
    scene = bpy.context.scene
    caches = handlers.caches
    assert obj.name in caches.frames  # Plant Feet solved the whole range at once
    s = props.settings(obj)
    # A setting: the cache goes, and the next frame shows the change.
    scene.frame_set(12)
    before = obj.pose.bones["spine"].matrix.copy()
    s.body_follow = False
    assert obj.name not in caches.frames
    scene.frame_set(12)
    assert obj.pose.bones["spine"].matrix != before
    # Rebuilt (the UI does it after a pause), then a key edited as an animator does it.
    assert live.precompute(obj, scene) is not None
    scene.frame_set(10)
    pb = obj.pose.bones["shin.L"]
    pb.rotation_quaternion = Quaternion((1, 0, 0), 0.4) @ pb.rotation_quaternion
    pb.keyframe_insert("rotation_quaternion", frame=10)
    bpy.context.view_layer.update()
    assert obj.name not in caches.frames
    scene.frame_set(11)
    scene.frame_set(10)
    slow = [m.copy() for m in (b.matrix for b in obj.pose.bones)]
    assert live.precompute(obj, scene) is not None
    scene.frame_set(11)
    scene.frame_set(10)
    fast = [b.matrix for b in obj.pose.bones]
    assert max(abs(a - b) for ma, mb in zip(slow, fast) for ra, rb in zip(ma, mb) for a, b in zip(ra, rb)) < 1e-5 * leg
    # The terrain moved: dropped as well.
    terrain.location.z += 0.05 * leg
    bpy.context.view_layer.update()
    assert obj.name not in caches.frames


def test_plant_feet_and_bake_report_what_they_did(capfd):
    obj, terrain, leg = _walker("stairs")
    scene = bpy.context.scene
    scene.unit_settings.system = "IMPERIAL"
    _plant(obj, terrain)
    out = capfd.readouterr().out
    frames = f"frames {scene.frame_start}-{scene.frame_end}"
    assert f"Planted 2 limb(s) of 'metarig' (Left Leg, Right Leg) on 'Stairs', {frames}" in out, out
    # The figures are measured as the rig plays (not the model's own), in the scene's units (imperial here).
    assert "worst under the terrain 0.00% of the leg (" in out and "'" in out.split("worst under the terrain")[1], out
    assert "of the leg over " in out and " source contacts (hover " in out, out
    # ... and how much of the hover is ours, not the capture's own (a figure that can only be 0 or more).
    assert re.search(r"\(hover \d+\.\d\d% above the source's own there\), knee and hip peak speed ", out), out
    assert "x the source's (measured as the rig plays, beside its source)" in out, out
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}
    out = capfd.readouterr().out
    n = scene.frame_end - scene.frame_start + 1
    assert f"Baked 2 limb(s) over {n} frames ({scene.frame_start}-{scene.frame_end}): 'metarig' -> " in out, out
    assert "(copied live preview's frame cache)" in out, out  # Plant Feet's live preview had just built it
    assert "worst under the terrain 0.00% of the leg" in out, out


def _baked_channels(obj):
    """The bake's channel values (frames x columns) by (bone, property), without writing an action."""
    bake = harness.module("core.bake")
    job = bake.BakeJob([obj], 1, 48, bpy.context.scene)
    job.step(job.total)
    bake.fill(job.rigs[0], job.frames)
    out, col = {}, 0
    for c in job.rigs[0].channels:
        out[(c.bone, c.prop)] = job.rigs[0].values[:, col:col + c.size].copy()
        col += c.size
    job.cancel()
    return out


def test_limbs_beyond_the_closed_form_are_planned_and_solved_by_the_same_model():
    """A leg with IK limits and a three-bone arm, which the closed-form solve does not cover: planned by the
    same model as every limb and solved frame by frame (`solvers.solve_limb`). A limit that never binds
    gives the closed form's result; a hinge on the forearm holds on every frame while the arm still
    reaches toward its target; live preview plays what the bake writes."""
    batch = harness.module("core.batch")
    rig_mod = harness.module("core.rig")
    obj, terrain, leg = _walker_with_arms("stairs")
    scene = bpy.context.scene
    s = props.settings(obj)
    arm = s.limbs[2]
    length = arm.length
    arm.bones.add().bone = obj.data.bones["upper_arm.L"].parent.name  # the shoulder: three bones
    arm.bones.move(len(arm.bones) - 1, 0)
    setup.measure_limb(obj, arm)
    reach = Vector((0.4 * length, -0.5 * length, -0.4 * length))
    target = _empty("Reach", (0, 0, 0))
    for f in (1, 48):
        scene.frame_set(f)
        target.location = _world_head(obj, "upper_arm.L") + reach
        target.keyframe_insert("location", frame=f)
    arm.target_object = target
    s.limbs.remove(3)  # the right arm: not needed here
    _plant(obj, terrain)
    free = _baked_channels(obj)

    shin = obj.pose.bones["shin.L"]
    shin.use_ik_limit_x, shin.ik_min_x, shin.ik_max_x = True, math.radians(-179), math.radians(179)
    forearm = obj.pose.bones["forearm.L"]
    forearm.lock_ik_y = forearm.lock_ik_z = True  # a hinge
    rig = batch.BatchRig(obj, None, 1, 1)
    closed = {lb.name: lb.closed_form for lb in rig.limbs}
    assert closed == {"Left Leg": False, "Right Leg": True, "Left Arm": False}, closed
    limited = _baked_channels(obj)
    for key in (("thigh.L", "rotation_quaternion"), ("shin.L", "rotation_quaternion"), ("spine", "location")):
        assert np.abs(limited[key] - free[key]).max() <= 1e-4, (key, np.abs(limited[key] - free[key]).max())
    assert any(bone == arm.bones[0].bone for bone, _prop in limited)  # the shoulder is solved too

    hinge = rig_mod.limits_of(forearm)
    fk_gap, ik_gap = [], []
    s.live_preview = False
    for f in (1, 12, 24, 36, 48):
        scene.frame_set(f)
        fk_gap.append((_world_head(obj, "hand.L") - target.matrix_world.translation).length)
    s.live_preview = True
    live.precompute(obj, scene)
    for i, f in enumerate((1, 12, 24, 36, 48)):
        scene.frame_set(f)
        q = Quaternion(limited[("forearm.L", "rotation_quaternion")][f - 1])
        assert hinge.violation(q) <= 1e-4, (f, hinge.violation(q))
        assert abs(forearm.rotation_quaternion.dot(q)) >= 1.0 - 1e-6  # live preview plays the bake's values
        ik_gap.append((_world_head(obj, "hand.L") - target.matrix_world.translation).length)
        assert math.isfinite(ik_gap[-1]) and ik_gap[-1] < fk_gap[i], (f, ik_gap[-1], fk_gap[i])


def _walker_on_ik_controls(kind):
    """The walk moved onto IK foot controls, as an animator with an IK rig has it: `foot_ctrl.L/R` (no
    parent) keyed where the walk puts each foot, the shin's IK constraint (chain of 2) and the foot's Copy
    Rotation following it; the limbs driven through those controls."""
    obj, terrain, leg = _walker(kind)
    scene = bpy.context.scene
    frames = range(scene.frame_start, scene.frame_end + 1)
    feet = {}
    for f in frames:
        scene.frame_set(f)
        feet[f] = {s: obj.pose.bones[f"foot.{s}"].matrix.copy() for s in "LR"}
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for s in "LR":
        src = obj.data.edit_bones[f"foot.{s}"]
        ctrl = obj.data.edit_bones.new(f"foot_ctrl.{s}")
        ctrl.head, ctrl.tail, ctrl.roll, ctrl.use_deform = src.head, src.tail, src.roll, False
    bpy.ops.object.mode_set(mode="OBJECT")
    pbs = obj.pose.bones
    for s in "LR":
        ik = pbs[f"shin.{s}"].constraints.new("IK")
        ik.target, ik.subtarget, ik.chain_count = obj, f"foot_ctrl.{s}", 2
        rot = pbs[f"foot.{s}"].constraints.new("COPY_ROTATION")
        rot.target, rot.subtarget = obj, f"foot_ctrl.{s}"
        pbs[f"foot_ctrl.{s}"].rotation_mode = "XYZ"  # any rotation mode: Eulers are written continuous
    for f in frames:
        for s in "LR":
            pb = pbs[f"foot_ctrl.{s}"]
            pb.matrix = feet[f][s]
            pb.keyframe_insert("location", frame=f)
            pb.keyframe_insert("rotation_euler", frame=f)
    for limb in props.settings(obj).limbs:
        limb.control_bone = f"foot_ctrl.{limb.end_bone[-1]}"
    scene.frame_set(scene.frame_start)
    return obj, terrain, leg


def test_a_leg_driven_through_an_ik_control_lands_on_the_terrain_and_only_its_control_is_written():
    """Control Bone on any rig: the shin's IK constraint follows the control Contact IK moves, so the soles
    rest on the terrain as when the chain itself is solved; the chain and foot bones are never written."""
    obj, terrain, leg = _walker_on_ik_controls("stairs")
    checks = harness.module("core.checks")
    written = {(c.bone, c.prop) for c in checks.driven_channels(obj)}
    assert written == {("foot_ctrl.L", "location"), ("foot_ctrl.L", "rotation_euler"), ("foot_ctrl.R", "location"),
                       ("foot_ctrl.R", "rotation_euler"), ("spine", "location")}, written
    scene = bpy.context.scene
    frames = range(scene.frame_start, scene.frame_end + 1)
    chain = ("thigh.L", "shin.L", "foot.L", "thigh.R", "shin.R", "foot.R")
    before = {}
    for f in frames:
        scene.frame_set(f)
        before[f] = {n: tuple(obj.pose.bones[n].rotation_quaternion) for n in chain}
    _plant(obj, terrain)
    s = props.settings(obj)
    from mathutils.bvhtree import BVHTree
    from test_plant_feet import _height_above

    tree = BVHTree.FromObject(terrain, bpy.context.evaluated_depsgraph_get())
    tol = 2e-3 * leg
    lowest = []
    for f in frames:
        scene.frame_set(f)
        for side in "LR":
            heights = [_height_above(tree, p, leg) for p in _sole_points(obj, side, s.limbs[0].foot_offset)]
            assert min(heights) >= -tol, (f, side, heights)
            lowest.append(min(heights))
        assert {n: tuple(obj.pose.bones[n].rotation_quaternion) for n in chain} == before[f]
    assert min(lowest) <= tol  # the feet stand on the stairs


def test_the_sole_from_a_skinned_mesh_is_measured_once_while_the_rig_moves(scene):
    """`anatomy.sole_of` is remembered by the mesh's place relative to the armature: root motion on the
    armature object (the mesh parented to it) keeps the sole measured once, as live preview's fallback reads
    it on every frame; a mesh moved against the armature is measured again."""
    anatomy = harness.module("core.anatomy")
    obj = scenes.metarig()
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    box = bpy.context.active_object
    fb = obj.data.bones["foot.L"]
    box.scale = (0.08, 0.25, 0.05)
    box.location = obj.matrix_world @ ((fb.head_local + obj.data.bones["toe.L"].tail_local) / 2)
    bpy.ops.object.transform_apply(location=True, rotation=True, scale=True)
    box.vertex_groups.new(name="foot.L").add([v.index for v in box.data.vertices], 1.0, "REPLACE")
    box.modifiers.new("Armature", "ARMATURE").object = obj
    box.parent = obj
    box.matrix_parent_inverse = obj.matrix_world.inverted()
    bpy.context.view_layer.update()
    first = anatomy.sole_of(obj, "foot.L", "toe.L")
    assert "skinned mesh" in first.source
    for x in (0.37, 1.91, -5.123, 12.5):
        obj.location = (x, 0.3 * x, obj.location.z)
        bpy.context.view_layer.update()
        assert anatomy.sole_of(obj, "foot.L", "toe.L") is first
    box.matrix_parent_inverse = Matrix.Translation((0.0, 0.0, -0.05)) @ box.matrix_parent_inverse
    bpy.context.view_layer.update()
    lowered = anatomy.sole_of(obj, "foot.L", "toe.L")
    assert lowered is not first and lowered.offset == pytest.approx(first.offset + 0.05 / obj.matrix_world.to_scale().z, rel=1e-3)


def test_a_toeless_foot_bone_hanging_under_the_ankle_marks_the_sole_height(scene):
    """Biovision skeletons without toes (cmu_10_01 in ../shared/mocap) end the foot at a point right under
    the ankle: the tail gives no toe tip (no reach along the ground) but it is where the foot meets the
    ground, so the sole is at its height, not at the ankle's (the feet went 8% of the leg under the terrain),
    and it is the point such a foot is held by as it turns or rolls (held by a tip estimated level with the
    ankle, the tail swept 2.5-3% of the leg as the foot pitched)."""
    anatomy = harness.module("core.anatomy")
    arm = bpy.data.armatures.new("Biovision")
    obj = bpy.data.objects.new("Biovision", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    joints = {"thigh": ((0, 0, 1.0), (0, 0.02, 0.55)), "shin": ((0, 0.02, 0.55), (0, 0, 0.1)),
              "foot": ((0, 0, 0.1), (0, 0, 0.02))}
    parent = None
    for name, (head, tail) in joints.items():
        eb = arm.edit_bones.new(name)
        eb.head, eb.tail = head, tail
        eb.parent, parent = parent, eb
        if eb.parent is not None:
            eb.use_connect = True
    bpy.ops.object.mode_set(mode="OBJECT")
    sole = anatomy.sole_of(obj, "foot", "")
    assert sole.offset == pytest.approx(0.08, abs=1e-6)  # from the ankle down to the tail
    lowest = min((obj.pose.bones[b].matrix @ p).z for b, p in sole.points)
    assert lowest == pytest.approx(0.02, abs=1e-6)
    # That tail is what the foot is held by on its front (its "ball"): as the foot pitches in a stance, the
    # point held is the one on the ground, not the estimated toe tip level with the ankle (held there, the
    # tail swept 2.5-3% of the leg: cmu_10_01's skate).
    # What the contacts hold as the ball (`contacts.sample_feet`) follows that tail as the foot pitches.
    limb = props.settings(obj).limbs.add()
    limb.name, limb.kind, limb.end_bone = "Leg", "FOOT", "foot"
    for name in ("thigh", "shin"):
        limb.bones.add().bone = name
    setup.measure_limb(obj, limb)
    foot = obj.pose.bones["foot"]
    foot.rotation_mode = "XYZ"
    scene = bpy.context.scene
    for f, deg in ((1, 0.0), (10, 25.0)):
        foot.rotation_euler = (math.radians(deg), 0.0, 0.0)
        foot.keyframe_insert("rotation_euler", frame=f)
    tails = []
    for f in range(1, 11):
        scene.frame_set(f)
        tails.append(np.array(obj.matrix_world @ foot.tail))
    ball = contacts.sample_feet(obj, scene, 1, 10)[0]["ball"]
    assert np.linalg.norm(ball - np.array(tails), axis=1).max() < 1e-6
    assert np.linalg.norm(tails[-1][:2] - tails[0][:2]) > 0.02  # the tail did sweep along the ground
    obj.animation_data_clear()
    foot.rotation_euler = (0.0, 0.0, 0.0)
    props.settings(obj).limbs.clear()
    # A tail hanging lower than an ankle stands is not taken for the ground (a bone of arbitrary length), nor
    # held: the toe tip is.
    bpy.ops.object.mode_set(mode="EDIT")
    arm.edit_bones["foot"].tail = (0, 0, -0.5)
    bpy.ops.object.mode_set(mode="OBJECT")
    long = anatomy.sole_of(obj, "foot", "")
    assert long.offset == pytest.approx(0.0, abs=1e-9)
    assert long.ball in (-1, len(long.points) - 1)


def test_the_floor_is_the_level_the_feet_hold_not_a_glitch_frame():
    """The animation's floor is the lowest level the feet stay at for MIN_CONTACT seconds: captures that open
    on a frame or two of garbage (the Daz-named CMU conversions start with the feet up to 1.3 legs under the
    floor they walk on) made the whole clip hover that far over the terrain. A dip held as long as a stance
    does count."""
    anim = harness.module("core.anim")
    obj, _terrain, leg = _walker("flat")
    scene = bpy.context.scene
    held = max(1, math.ceil(harness.module("core.tuning").MIN_CONTACT * scene.render.fps / scene.render.fps_base))
    clean = setup.detect_floor(obj, scene)

    def dip(frames):
        """The whole rig 0.3 leg down on the first `frames` frames of the range (constant keys)."""
        obj.location.z = 0.0
        obj.keyframe_insert("location", index=2, frame=scene.frame_start + frames)
        obj.location.z = -0.3 * leg
        for f in range(scene.frame_start, scene.frame_start + frames):
            obj.keyframe_insert("location", index=2, frame=f)
        for fc in anim.fcurves(anim.action_of(obj), anim.slot_of(obj)):
            if fc.data_path == "location":
                for k in fc.keyframe_points:
                    k.interpolation = "CONSTANT"
        return setup.detect_floor(obj, scene)

    assert dip(held - 1) == pytest.approx(clean, abs=1e-4 * leg)  # shorter than a stance: not the floor
    deep = []
    setup.detect_floor(obj, scene, deep=deep)  # ... but Plant Feet says so
    assert [f for f, _d in deep] == list(range(scene.frame_start, scene.frame_start + held - 1))
    assert deep[0][1] == pytest.approx(0.3, abs=0.05)
    assert "30% of the leg under the floor" in setup.deep_dip_warning(deep)
    assert dip(held) == pytest.approx(clean - 0.3 * leg, abs=0.02 * leg)  # held as long as a stance: the floor


def test_leg_stretch_keeps_a_standing_idle_straighter_in_live_preview_and_bake_alike():
    """Leg Stretch (the rig's `leg_stretch`, REACH_MARGIN by default): how straight a leg on the ground may be
    before the pelvis is lowered for it. The metarig standing (knees bent about 10 degrees) on flat ground at
    its soles: its feet are put down onto the ground (the heel's hover taken off), so the pelvis must come
    down, and the default bends its knees to about 28 degrees; at 1.0 they stay bent under 21, at 0.9 over 45.
    The setting takes at once in live preview, and the bake gives the pose live preview shows. Plant Feet says
    when the knees are held at the setting's bend, with how to straighten them."""
    bake = harness.module("core.bake")
    harness.reset_scene()
    obj = scenes.metarig()
    scenes.author_stance(obj)
    setup.apply_detection(obj, LEG_LIMBS)
    scene = bpy.context.scene
    scene.frame_set(10)
    source = scenes.knee_bend(obj, "L")
    soles = [(obj.matrix_world @ obj.pose.bones[f"toe.{side}"].tail).z for side in "LR"]
    terrain = scenes.flat(scenes.leg_length(obj), height=min(soles))
    _plant(obj, terrain)
    s = props.settings(obj)
    assert s.leg_stretch == pytest.approx(harness.module("core.tuning").REACH_MARGIN)
    bends = {}
    for value in (s.leg_stretch, 1.0, 0.9):
        s.leg_stretch = value
        scene.frame_set(11)
        scene.frame_set(10)
        bends[round(value, 2)] = scenes.knee_bend(obj, "L")
    assert 5.0 < source < 15.0 and bends[0.98] > source + 10.0, (source, bends)
    assert source < bends[1.0] < 21.0 and bends[1.0] < bends[0.98] - 5.0 and bends[0.9] > 45.0, (source, bends)
    # Plant Feet and Bake say so (`measure.summary`'s notes), with how to keep the stance straighter: at the
    # default, not at 1.0.
    measure = harness.module("core.measure")
    frames = list(range(scene.frame_start, scene.frame_end + 1))
    for value, said in ((0.98, True), (1.0, False)):
        s.leg_stretch = value
        _text, notes = measure.summary([obj], scene, frames)
        note = [n for n in notes if "Leg Stretch" in n]
        assert bool(note) == said, notes
        if said:
            assert "Left Leg: standing on the ground, its knee is bent 28 degrees where the animation has 10" in note[0]
            assert "raise Leg Stretch toward 1.0" in note[0] and "--leg-stretch" in note[0]
    s.leg_stretch = 1.0
    scene.frame_set(11)
    scene.frame_set(10)
    live_bend = scenes.knee_bend(obj, "L")
    bake.BakeJob([obj], scene.frame_start, scene.frame_end, scene).finish()
    assert bake.is_baked(obj.animation_data.action)
    s.live_preview = False  # the keys alone pose it
    scene.frame_set(11)
    scene.frame_set(10)
    assert scenes.knee_bend(obj, "L") == pytest.approx(live_bend, abs=1e-3)
    # Played as the measures play the source beside the bake: the knee the source does not key is the source's
    # (as before the bake), not the bake's last value (it read 28 degrees, so no note was given after a bake).
    with harness.module("core.metrics").playing_source(obj, scene):
        scene.frame_set(11)
        scene.frame_set(10)
        assert scenes.knee_bend(obj, "L") == pytest.approx(source, abs=1e-3)
    scene.frame_set(11)
    scene.frame_set(10)
    assert scenes.knee_bend(obj, "L") == pytest.approx(live_bend, abs=1e-3)  # and the bake plays again after


def _off_hinge(obj: bpy.types.Object, side: str) -> float:
    """How far (degrees) the metarig's knee on `side` bends off its own hinge as posed now: the angle between
    the normal of the plane of thigh and shin and the thigh's X axis (the metarig's knee hinge), either sign."""
    pb = obj.pose.bones
    thigh, shin = pb[f"thigh.{side}"].matrix.to_3x3(), pb[f"shin.{side}"].matrix.to_3x3()
    normal = thigh.col[1].cross(shin.col[1]).normalized()
    return math.degrees(math.acos(min(1.0, abs(normal.dot(thigh.col[0].normalized())))))


def test_a_straight_knee_made_to_bend_bends_about_its_own_hinge_not_where_the_foot_points():
    """A leg the animation keeps almost straight (the metarig standing, knees bent about 10 degrees) bends
    more once its foot is put down on the ground (the heel's hover taken off, the pelvis lowered). Its shins
    are twisted 40 degrees, so the feet point off to the side while the knees still bend straight ahead about
    their hinge (the thigh's X axis). Plant Feet measures that hinge (`ContactIKLimb.hinge`, in the thigh's
    own frame), and the knee bends about it: before, a nearly straight knee bent where its foot pointed, its
    shin turning sideways off the thigh's hinge (a skinned knee twists; on a standing idle capture the knee's
    turn was 4-6x the source's peak speed). With the hinge set to zero (not measured) it still does."""
    harness.reset_scene()
    obj = scenes.metarig()
    scenes.author_stance(obj)
    for side in "LR":
        shin = obj.pose.bones[f"shin.{side}"]
        shin.rotation_mode = "QUATERNION"
        shin.rotation_quaternion = Quaternion((0.0, 1.0, 0.0), math.radians(40.0))
        shin.keyframe_insert("rotation_quaternion", frame=1)
    setup.apply_detection(obj, LEG_LIMBS)
    scene = bpy.context.scene
    scene.frame_set(10)
    source = {side: scenes.knee_bend(obj, side) for side in "LR"}
    assert all(_off_hinge(obj, side) < 1.0 for side in "LR")  # the animation bends each knee about its hinge
    soles = [(obj.matrix_world @ obj.pose.bones[f"toe.{side}"].tail).z for side in "LR"]
    _plant(obj, scenes.flat(scenes.leg_length(obj), height=min(soles)))
    s = props.settings(obj)
    legs = {lb.name: lb for lb in s.limbs if lb.kind == "FOOT"}
    for lb in legs.values():  # measured: the thigh's X axis, pointing so the knee bends forward across it
        assert abs(Vector(lb.hinge).dot(Vector((1.0, 0.0, 0.0)))) > 0.99, tuple(lb.hinge)
        note = harness.module("core.rig").hinge_note(lb)  # the panel's line
        assert re.fullmatch(r"Knee hinge: [+-]1\.00, [+-]0\.0\d, [+-]0\.0\d \(the thigh's axes\)", note), note
    scene.frame_set(11)
    scene.frame_set(10)
    bent = {side: scenes.knee_bend(obj, side) for side in "LR"}
    off = {side: _off_hinge(obj, side) for side in "LR"}
    assert all(bent[side] > source[side] + 10.0 for side in "LR"), (source, bent)
    assert all(off[side] < 2.0 for side in "LR"), off
    for lb in legs.values():
        lb.hinge = (0.0, 0.0, 0.0)
    scene.frame_set(11)
    scene.frame_set(10)
    unmeasured = {side: _off_hinge(obj, side) for side in "LR"}
    assert all(unmeasured[side] > 15.0 for side in "LR"), unmeasured


STRAIGHTEN = math.radians(-8.0)  # about the shin's X axis: the metarig's knees, bent about 10 degrees at rest, straightened


def test_a_leg_whose_knee_never_bends_is_measured_once_and_not_swept_again(monkeypatch):
    """A two-bone leg whose knee never bends more than 5 degrees over the range has no hinge to measure
    (`ContactIKLimb.hinge` zero). Plant Feet measures that once (`hinge_measured`); with Detect Floor off and the
    contacts kept, a later Plant Feet does not sweep the range again for it, as it did on every run before. A
    leg never measured (a file from an earlier version) still is. The panel says which of the three a leg is."""
    harness.reset_scene()
    obj = scenes.metarig()
    scenes.author_stance(obj)
    scene = bpy.context.scene
    for side in "LR":  # the knees straightened to under 5 degrees
        shin = obj.pose.bones[f"shin.{side}"]
        shin.rotation_mode = "XYZ"
        shin.rotation_euler = Euler((STRAIGHTEN, 0.0, 0.0))
        shin.keyframe_insert("rotation_euler", frame=1)
    scene.frame_set(1)
    assert all(scenes.knee_bend(obj, side) < 4.0 for side in "LR"), [scenes.knee_bend(obj, s) for s in "LR"]
    setup.apply_detection(obj, LEG_LIMBS)
    soles = [(obj.matrix_world @ obj.pose.bones[f"toe.{side}"].tail).z for side in "LR"]
    terrain = scenes.flat(scenes.leg_length(obj), height=min(soles))
    _plant(obj, terrain)
    rig = harness.module("core.rig")
    legs = [lb for lb in props.settings(obj).limbs if lb.kind == "FOOT"]
    assert legs and all(lb.contacts for lb in legs)
    assert all(tuple(lb.hinge) == (0.0, 0.0, 0.0) and lb.hinge_measured for lb in legs)
    assert all(rig.hinge_note(lb).startswith("Knee hinge: none") for lb in legs), [rig.hinge_note(lb) for lb in legs]
    props.settings(obj).active_limb = list(props.settings(obj).limbs).index(legs[0])
    labels = _panel_labels(obj, "CONTACT_IK_PT_limbs")  # the Limbs sub-panel draws it under the pole
    assert rig.hinge_note(legs[0]) in labels, labels
    props.settings(obj).auto_floor = False
    sweeps = []
    sample = contacts.sample_feet
    monkeypatch.setattr(contacts, "sample_feet", lambda *a, **k: sweeps.append(1) or sample(*a, **k))
    _plant(obj, terrain)
    assert sweeps == []
    legs[0].hinge_measured = False  # as a file set up by an earlier version has it
    assert rig.hinge_note(legs[0]).startswith("Knee hinge: not measured")
    _plant(obj, terrain)
    assert sweeps == [1] and legs[0].hinge_measured
