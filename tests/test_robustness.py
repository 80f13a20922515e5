"""The bad-input catalogue (issue 7): each case gives a clear message (what is wrong, how to fix it), the
right return set or exit code, and changes or loses nothing. docs/robustness.md lists every case.

Cases already covered elsewhere are not repeated here: the CLI's bad inputs (test_cli.py), a terrain
that loses its faces while live (test_plant_more.py), a terrain with modifiers (test_plant_more.py),
undo of a bake and a cancelled bake (test_bake.py), an armature with no limbs for Detect Limbs
(test_detect.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import pathlib
import tracemalloc

import bpy
import harness
import pytest
import scenes
from test_plant_feet import _sole_points, _walker

props = harness.module("properties")
setup = harness.module("core.setup")
anim = harness.module("core.anim")
bake = harness.module("core.bake")
live = harness.module("core.live")
batch = harness.module("core.batch")
model = harness.module("core.model")
tuning = harness.module("core.tuning")
cli = harness.module("cli")


# --------------------------------------------------------------------------------------------- helpers


def _select(active, *others):
    for o in bpy.context.scene.objects:
        o.select_set(o is active or o in others)
    bpy.context.view_layer.objects.active = active


def _op(name, capfd, **kwargs):
    """Run `bpy.ops.contact_ik.<name>` as a user would; (return set, every message it reported).

    An ERROR report (or a failed poll) makes Blender raise RuntimeError with the message: that is
    {'CANCELLED'} for the user, who sees the message in the status bar."""
    op = getattr(bpy.ops.contact_ik, name)
    try:
        result, error = op(**kwargs), ""
    except RuntimeError as exc:
        result, error = {"CANCELLED"}, str(exc)
    out, err = capfd.readouterr()
    assert "Traceback" not in err, err
    return result, error + "\n" + out


def _snapshot(obj, with_pose=True):
    """Everything a failed or refused operation must leave as it was (repr: NaN compares equal to itself).
    `with_pose` False leaves out the pose channels, for a pose that live preview solves again (to 1e-6)."""
    act = anim.action_of(obj)
    s = props.settings(obj)
    pose = {pb.name: [tuple(getattr(pb, p)) for p in ("location", "rotation_quaternion", "rotation_euler",
                                                      "rotation_axis_angle", "scale")] for pb in obj.pose.bones}
    return repr({
        "action": act.name if act else None,
        "keys": anim.channel_snapshot(act, anim.slot_of(obj)) if act else None,
        "actions": harness.user_actions(),
        "matrix": [tuple(r) for r in obj.matrix_world],
        "pose": pose if with_pose else None,
        "live": s.live_preview,
        "limbs": [(lb.name, [b.bone for b in lb.bones], lb.end_bone) for lb in s.limbs],
    })


def _pose_values(obj):
    return [v for pb in obj.pose.bones for p in ("location", "rotation_quaternion", "rotation_euler")
            for v in getattr(pb, p)]


def _all_finite(obj):
    return all(math.isfinite(v) for v in _pose_values(obj)) and all(
        math.isfinite(v) for pb in obj.pose.bones for row in pb.matrix for v in row)


def _joints(obj):
    return [(obj.matrix_world @ pb.head, obj.matrix_world @ pb.tail) for pb in obj.pose.bones]


def _gap(a, b):
    return max((p - q).length for ja, jb in zip(a, b) for p, q in zip(ja, jb))


def _fk_joints(obj, frames):
    """The animation's own pose at `frames` (live preview off)."""
    s = props.settings(obj)
    was = s.live_preview
    s.live_preview = False
    out = {}
    for f in frames:
        bpy.context.scene.frame_set(f)
        out[f] = _joints(obj)
    s.live_preview = was
    return out


def _sha(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


# ------------------------------------------------------------------------------ what the operator runs on


@pytest.mark.parametrize("op", ["plant_feet", "bake", "detect_limbs", "limb_add"])
def test_no_active_armature_is_refused_by_poll_with_a_reason(op, capfd):
    obj, terrain, _leg = _walker("flat")
    before = _snapshot(obj)
    for active in (None, terrain):  # nothing active, then the terrain mesh active
        _select(active, obj)
        result, msg = _op(op, capfd)
        assert result == {"CANCELLED"}
        assert "Select an armature" in msg and "make it active" in msg, msg
    assert _snapshot(obj) == before


def test_plant_feet_on_an_armature_without_limbs_says_to_add_them_by_hand(capfd):
    harness.reset_scene()
    arm = bpy.data.objects.new("Stick", bpy.data.armatures.new("Stick"))
    bpy.context.scene.collection.objects.link(arm)
    _select(arm)
    bpy.ops.object.mode_set(mode="EDIT")
    b = arm.data.edit_bones.new("Bone")
    b.head, b.tail = (0, 0, 0), (0, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    ground = scenes.flat(1.0)
    _select(arm, ground)
    before = _snapshot(arm)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"}
    assert "No legs or arms found in 'Stick'" in msg and "add limbs by hand" in msg, msg
    assert _snapshot(arm) == before
    assert props.settings(arm).terrain is None  # the selected mesh was not taken either


def _hand_limbs(obj, bones, end="foot.L", kind="FOOT"):
    s = props.settings(obj)
    s.limbs.clear()
    limb = s.limbs.add()
    limb.name, limb.kind, limb.end_bone = "Left Leg", kind, end
    for b in bones:
        limb.bones.add().bone = b
    setup.measure_limb(obj, limb)
    s.pelvis_bone = "spine"
    return limb


@pytest.mark.parametrize("bones,end,message", [
    (("thigh.L", "shin.R"), "foot.L", "'shin.R' is not a child of 'thigh.L'"),
    (("shin.L", "thigh.L"), "foot.L", "'thigh.L' is not a child of 'shin.L'"),
    (("thigh.L", "shin.L"), "hand.L", "'hand.L' is not below 'shin.L'"),
    (("thigh.L", "knee.L"), "foot.L", "no bone 'knee.L'"),
    (("thigh.L", ""), "foot.L", "an empty bone slot"),
])
def test_chain_bones_that_are_not_a_parent_child_line_are_refused(bones, end, message, capfd):
    obj, terrain, _leg = _walker("flat")
    _hand_limbs(obj, bones, end)
    _select(obj, terrain)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"}
    assert "'Left Leg'" in msg and message in msg and "Limbs panel" in msg, msg
    assert _snapshot(obj) == before
    # The bake refuses the same way (the rig is set up as Plant Feet would have left it).
    props.settings(obj).terrain = terrain
    result, msg = _op("bake", capfd)
    assert result == {"CANCELLED"} and message in msg, msg
    assert _snapshot(obj) == before


def test_a_broken_limb_edited_while_live_is_skipped_not_solved_into_garbage():
    obj, terrain, leg = _walker("noise")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    s = props.settings(obj)
    s.limbs[0].bones[1].bone = "shin.R"  # a typo in the panel while live preview is on
    s.live_preview = False
    bpy.context.scene.frame_set(5)
    fk = {n: tuple(obj.pose.bones[n].rotation_quaternion) for n in ("thigh.L", "shin.L", "foot.L")}
    right = obj.pose.bones["shin.R"].rotation_quaternion.copy()
    s.live_preview = True
    for f in (6, 5):
        bpy.context.scene.frame_set(f)
    assert _all_finite(obj) and s.live_preview
    # The broken left leg keeps its animated rotations; the right leg is still planted.
    assert {n: tuple(obj.pose.bones[n].rotation_quaternion) for n in fk} == fk
    assert right.rotation_difference(obj.pose.bones["shin.R"].rotation_quaternion).angle > 1e-3
    assert obj.name in live.live_rigs


def test_zero_length_chain_bone_is_refused(capfd):
    obj, terrain, leg = _walker("flat")
    _select(obj)
    bpy.ops.object.mode_set(mode="EDIT")
    eb = obj.data.edit_bones["shin.L"]
    eb.use_connect = False
    obj.data.edit_bones["foot.L"].use_connect = False
    # Made from a script (the UI does not let a bone shrink to a point). 20 micrometres: Blender 4.5
    # deletes a bone of zero length when Edit Mode ends, 5.0 keeps about 2e-6 of it.
    eb.tail = eb.head + (eb.tail - eb.head).normalized() * 2e-5
    bpy.ops.object.mode_set(mode="OBJECT")
    assert obj.data.bones["shin.L"].length < 1e-4
    _select(obj, terrain)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"}
    assert "limb 'Left Leg': 'shin.L' has almost zero length" in msg and "give it a length in Edit Mode" in msg, msg
    assert _snapshot(obj) == before


@pytest.mark.filterwarnings("error:overflow encountered:RuntimeWarning")
def test_a_zero_pose_scale_gives_a_finite_pose(capfd):
    """A leg collapsed to a point in the pose (or nearly): Plant Feet and Bake finish and every value is
    finite, with no overflow on the way (the swing's smoothing divided by the zero leg's length)."""
    obj, terrain, leg = _walker("noise")
    obj.pose.bones["shin.L"].scale = (0.0, 0.0, 0.0)  # a leg collapsed to a point in the pose
    obj.pose.bones["thigh.R"].scale = (1e-6, 1e-6, 1e-6)
    _select(obj, terrain)
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"}, msg
    for f in (1, 12, 30):
        bpy.context.scene.frame_set(f)
        assert _all_finite(obj), f
    assert _op("bake", capfd)[0] == {"FINISHED"}
    assert all(math.isfinite(k) for _p, _i, keys in anim.channel_snapshot(anim.action_of(obj), anim.slot_of(obj))
               for k in keys)


def _constrain(obj):
    pb = obj.pose.bones
    c = pb["shin.L"].constraints.new("COPY_ROTATION")
    c.target, c.subtarget = obj, "spine"
    child = pb["foot.R"].constraints.new("CHILD_OF")
    child.target = bpy.data.objects.new("Holder", None)
    bpy.context.scene.collection.objects.link(child.target)
    fc = obj.driver_add('pose.bones["thigh.R"].rotation_quaternion', 1)
    fc.driver.expression = "0.1"


def test_bones_moved_by_constraints_or_drivers_give_a_warning_not_silent_wrong_output(capfd):
    obj, terrain, _leg = _walker("flat")
    _constrain(obj)
    _select(obj, terrain)
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"}, msg
    assert "Warning" in msg, msg
    for needle in ("'shin.L'", "Copy Rotation constraint", "'foot.R'", "Child Of constraint",
                   "'thigh.R'", "driver", "mute"):
        assert needle in msg, (needle, msg)
    result, msg = _op("bake", capfd)
    assert result == {"FINISHED"} and "Copy Rotation constraint" in msg, msg
    # A muted constraint no longer warns.
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.contact_ik.use_source_action() == {"FINISHED"}
    obj.pose.bones["shin.L"].constraints[0].mute = True
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"} and "Copy Rotation" not in msg and "Child Of" in msg, msg


def test_constraint_warning_in_the_cli(tmp_path, capfd):
    obj, terrain, _leg = _walker("flat")
    _constrain(obj)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "c.blend"))
    code = cli.execute(["bake", str(tmp_path / "c.blend"), "--terrain", "Flat", "--report", str(tmp_path / "r.json")])
    _out, err = capfd.readouterr()
    assert "warning" in err and "Copy Rotation constraint" in err, err
    # The constraints move the bones after Contact IK: the result, measured as it plays, says so (exit 3).
    warnings = json.loads((tmp_path / "r.json").read_text())["clips"][0]["warnings"]
    assert code == 3 and warnings and all(w in err for w in warnings), err


# --------------------------------------------------------------------------------------------- terrain


def test_terrain_that_is_not_a_mesh_is_refused(capfd, tmp_path):
    obj, terrain, _leg = _walker("flat")
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    bpy.context.scene.collection.objects.link(cam)
    # Selected with the armature: not taken for the terrain.
    _select(obj, cam)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"} and "No terrain: select the ground mesh" in msg, msg
    assert _snapshot(obj) == before
    # Set from a script (the panel only offers meshes).
    props.settings(obj).terrain = cam
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"} and "terrain 'Camera' is a camera, not a mesh: pick a mesh object" in msg, msg
    assert _snapshot(obj) == before
    result, msg = _op("bake", capfd)
    assert result == {"CANCELLED"} and "not a mesh" in msg, msg
    assert _snapshot(obj) == before
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "cam.blend"))
    code = cli.execute(["bake", str(tmp_path / "cam.blend"), "--terrain", "Camera"])
    assert code == 2 and "is a camera, not a mesh: name a mesh object" in capfd.readouterr().err


def test_terrain_collection_without_meshes_is_refused(capfd):
    obj, terrain, _leg = _walker("flat")
    coll = bpy.data.collections.new("Nothing here")
    bpy.context.scene.collection.children.link(coll)
    props.settings(obj).terrain_collection = coll
    _select(obj)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"} and "The terrain collection 'Nothing here' holds no mesh" in msg, msg
    assert _snapshot(obj) == before


def test_empty_terrain_mesh_is_refused_by_plant_feet_and_bake(capfd):
    obj, terrain, _leg = _walker("flat")
    empty = bpy.data.objects.new("Empty Ground", bpy.data.meshes.new("Empty Ground"))
    bpy.context.scene.collection.objects.link(empty)
    _select(obj, empty)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"} and "terrain Empty Ground has no faces: give it a mesh with faces" in msg, msg
    props.settings(obj).terrain = None  # what Plant Feet took from the selection is all it changed
    assert _snapshot(obj) == before
    props.settings(obj).terrain = empty
    result, msg = _op("bake", capfd)
    assert result == {"CANCELLED"} and "has no faces" in msg, msg


@pytest.mark.parametrize("how", ["hide_set", "hide_viewport", "hide_render"])
def test_hidden_terrain_is_still_the_ground(how, capfd):
    obj, terrain, leg = _walker("flat")
    bpy.data.objects.remove(terrain)
    terrain = scenes.flat(leg, height=0.1 * leg)
    props.settings(obj).terrain = terrain  # hidden objects cannot be selected: the panel's Terrain field
    _select(obj)
    if how == "hide_set":
        terrain.hide_set(True)
    else:
        setattr(terrain, how, True)
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"}, msg
    offset = props.settings(obj).limbs[0].foot_offset
    lows = []
    for f in range(1, 25):
        bpy.context.scene.frame_set(f)
        lows.append(min(p.z for side in "LR" for p in _sole_points(obj, side, offset)))
    assert min(lows) == pytest.approx(0.1 * leg, abs=1e-3 * leg)


def test_terrain_deleted_while_live_turns_the_preview_off_and_gives_the_animation_back(capfd):
    obj, terrain, leg = _walker("flat")
    _unkey_left_leg(obj)
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    fk = _fk_joints(obj, [7])[7]
    props.settings(obj).live_preview = True
    bpy.ops.object.select_all(action="DESELECT")
    bpy.data.objects.remove(terrain)
    capfd.readouterr()
    for f in (6, 7, 8, 7):
        bpy.context.scene.frame_set(f)
    out, err = capfd.readouterr()
    assert "Traceback" not in err
    assert out.count("live preview turned off for 'metarig'") == 1 and "no terrain" in out, out
    s = props.settings(obj)
    assert not s.live_preview and obj.name not in live.live_rigs
    assert _gap(_joints(obj), fk) <= 1e-6 * leg  # no IK left behind, even in un-keyed channels
    _select(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"} and "No terrain" in msg


def test_terrain_unlinked_from_the_scene_is_refused(capfd):
    obj, terrain, _leg = _walker("flat")
    props.settings(obj).terrain = terrain
    bpy.context.scene.collection.objects.unlink(terrain)
    _select(obj)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"}, msg
    assert "'Flat' is not in the scene" in msg and "link it" in msg, msg
    assert _snapshot(obj) == before


def test_rays_that_miss_the_terrain_leave_the_feet_in_their_animated_pose(capfd):
    obj, terrain, leg = _walker("flat")
    bpy.data.objects.remove(terrain)
    far = scenes.flat(0.01 * leg)
    far.location = (100 * leg, 100 * leg, 0.0)
    frames = [1, 10, 20, 30]
    fk = _fk_joints(obj, frames)
    _select(obj, far)
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"}, msg
    assert "no ground under the feet" in msg.lower(), msg
    for f in frames:
        bpy.context.scene.frame_set(f)
        assert _gap(_joints(obj), fk[f]) <= 1e-5 * leg, f


# -------------------------------------------------------------------------------------- numbers and scale


def _unkey_left_leg(obj):
    fcurves = anim.fcurves(anim.action_of(obj), anim.slot_of(obj))
    for fc in list(fcurves):
        if '"thigh.L"' in fc.data_path or '"shin.L"' in fc.data_path:
            fcurves.remove(fc)


@pytest.mark.parametrize("what,value,message", [
    ("location", (math.nan, 0.0, 0.0), "location that is not a number"),
    ("rotation_euler", (0.0, math.nan, 0.0), "rotation that is not a number"),
    ("scale", (0.0, 0.0, 0.0), "zero scale"),
    ("scale", (1.0, 0.0, 1.0), "zero scale"),
])
def test_armature_transform_not_a_number_or_zero_scale_is_refused(what, value, message, capfd):
    obj, terrain, _leg = _walker("flat")
    setattr(obj, what, value)
    bpy.context.view_layer.update()
    _select(obj, terrain)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"} and f"'metarig' has a {message}" in msg, msg
    assert "Object Properties" in msg or "Alt+" in msg, msg
    assert _snapshot(obj) == before
    props.settings(obj).terrain = terrain
    result, msg = _op("bake", capfd)
    assert result == {"CANCELLED"} and message in msg, msg
    assert _snapshot(obj) == before


def test_armature_transform_broken_while_live_turns_the_preview_off(capfd):
    obj, terrain, leg = _walker("flat")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    obj.scale = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    capfd.readouterr()
    for f in (3, 4):
        bpy.context.scene.frame_set(f)
    out, _err = capfd.readouterr()
    assert "live preview turned off for 'metarig'" in out and "zero scale" in out, out
    assert not props.settings(obj).live_preview
    obj.scale = (1.0, 1.0, 1.0)
    bpy.context.scene.frame_set(5)
    assert _all_finite(obj)


def test_armature_mirrored_by_a_negative_scale_is_planted(capfd):
    obj, terrain, leg = _walker("flat")
    bpy.data.objects.remove(terrain)
    terrain = scenes.flat(leg, height=0.1 * leg)
    obj.scale = (-1.0, 1.0, 1.0)
    _select(obj, terrain)
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"}, msg
    offset = props.settings(obj).limbs[0].foot_offset
    lows = []
    for f in range(1, 25):
        bpy.context.scene.frame_set(f)
        lows.append(min(p.z for side in "LR" for p in _sole_points(obj, side, offset)))
        assert obj.pose.bones["shin.L"].length == pytest.approx(obj.data.bones["shin.L"].length, rel=1e-5)
    assert min(lows) == pytest.approx(0.1 * leg, abs=1e-3 * leg)


@pytest.mark.parametrize("scale", [(1.0, 1.0, -1.0), (-1.0, -1.0, -1.0)])
def test_armature_turned_upside_down_by_a_negative_scale_is_refused(scale, capfd):
    obj, terrain, leg = _walker("flat")
    obj.scale = scale
    bpy.context.view_layer.update()
    _select(obj, terrain)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"}
    assert "'metarig' has a negative scale" in msg and "upside down" in msg and "Object Properties" in msg, msg
    assert _snapshot(obj) == before


@pytest.mark.parametrize("setting,value,message", [
    ("floor_height", math.nan, "Floor Height"),
    ("softness", math.nan, "Soft IK"),
    ("leg_stretch", math.nan, "Leg Stretch"),
    ("limbs[0].ray_length", math.nan, "Ray Length"),
    ("limbs[0].foot_offset", math.nan, "Sole Height"),
    ("limbs[1].weight", math.nan, "Weight"),
    ("limbs[1].max_align_angle", math.nan, "Max Angle"),
])
def test_settings_that_are_not_numbers_are_refused(setting, value, message, capfd):
    obj, terrain, _leg = _walker("flat")
    s = props.settings(obj)
    s.auto_floor = False
    owner, attr = (s, setting) if "." not in setting else (s.limbs[int(setting[6])], setting.split(".")[1])
    setattr(owner, attr, value)
    _select(obj, terrain)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"}, msg
    assert message in msg and "not a finite number" in msg and "Contact IK panel" in msg, msg
    assert _snapshot(obj) == before
    s.terrain = terrain
    result, msg = _op("bake", capfd)
    assert result == {"CANCELLED"} and message in msg, msg


def test_a_setting_set_to_nan_while_live_never_writes_nan(capfd):
    for cached in (True, False):
        obj, terrain, leg = _walker("noise")
        _select(obj, terrain)
        assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
        live.USE_FRAME_CACHE = cached
        try:
            props.settings(obj).limbs[0].ray_length = math.nan
            if cached:
                live.precompute(obj, bpy.context.scene)
            for f in (2, 3):
                bpy.context.scene.frame_set(f)
                assert _all_finite(obj), (cached, f)
        finally:
            live.USE_FRAME_CACHE = True
        out, _err = capfd.readouterr()
        assert "Ray Length" in out and "live preview turned off" in out, out


@pytest.mark.parametrize("setting,value,message", [
    ("floor_height", math.inf, "Floor Height of 'metarig' is 3.4e+38, over 1000 times the leg length"),
    ("floor_height", -1e6, "Floor Height of 'metarig' is -1e+06, over 1000 times the leg length"),
    ("limbs[0].ray_length", 1e30, "Ray Length of limb 'Left Leg' is 1e+30, over 1000 times the limb's length"),
    ("limbs[1].foot_offset", 1e9, "Sole Height of limb 'Right Leg' is 1e+09, over 1000 times the limb's length"),
])
def test_huge_settings_are_refused_and_stop_live_preview(setting, value, message, capfd):
    """Blender stores infinity as 3.4e38; lengths that far beyond the rig lose all single-precision
    accuracy, so they are refused like NaN (a typed 1e38 is not a foot's sole height)."""
    obj, terrain, leg = _walker("noise")
    s = props.settings(obj)
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    s.auto_floor = False
    owner, attr = (s, setting) if "." not in setting else (s.limbs[int(setting[6])], setting.split(".")[1])
    setattr(owner, attr, value)
    capfd.readouterr()
    for f in (1, 5):
        bpy.context.scene.frame_set(f)
        assert _all_finite(obj), f
    out, _err = capfd.readouterr()
    assert "live preview turned off for 'metarig'" in out and message in out, out
    for op in ("plant_feet", "bake"):
        result, msg = _op(op, capfd)
        assert result == {"CANCELLED"} and message in msg and "Contact IK panel" in msg, msg


def test_huge_transform_gives_a_finite_pose(capfd):
    obj, terrain, leg = _walker("noise")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    obj.location = (1e9, -1e9, 1e9)
    obj.rotation_euler = (0.0, math.inf, 0.0)  # Blender stores the largest float instead of infinity
    bpy.context.view_layer.update()
    bpy.context.scene.frame_set(6)
    assert _all_finite(obj)
    # The floor is in world space: the armature is now 1e9 above it, which the bake refuses, saying how to fix it.
    result, msg = _op("bake", capfd)
    assert result == {"CANCELLED"} and "Floor Height of 'metarig'" in msg and "Contact IK panel" in msg, msg
    props.settings(obj).floor_height = obj.matrix_world.translation.z  # as the message says
    assert _op("bake", capfd)[0] == {"FINISHED"}
    keys = anim.channel_snapshot(anim.action_of(obj), anim.slot_of(obj))
    assert all(math.isfinite(k) for _p, _i, ks in keys for k in ks)


def test_hand_target_at_the_root_of_its_chain(capfd):
    obj, terrain, leg = _walker("flat")
    s = props.settings(obj)
    limb = s.limbs.add()
    limb.name, limb.kind, limb.end_bone = "Left Arm", "HAND", "hand.L"
    for b in ("upper_arm.L", "forearm.L"):
        limb.bones.add().bone = b
    setup.measure_limb(obj, limb)
    target = bpy.data.objects.new("Shoulder", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = obj.matrix_world @ obj.pose.bones["upper_arm.L"].head
    limb.target_object = target
    s.body_follow = False
    _select(obj, terrain)
    assert _op("plant_feet", capfd)[0] == {"FINISHED"}
    bpy.context.scene.frame_set(1)
    assert _all_finite(obj)
    pb = obj.pose.bones
    assert (pb["forearm.L"].tail - pb["forearm.L"].head).length == pytest.approx(
        obj.data.bones["forearm.L"].length, rel=1e-5)


# ------------------------------------------------------------------------------------------ frame ranges


def test_bake_of_a_single_frame(capfd):
    obj, terrain, leg = _walker("noise")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(9)
    planted = _joints(obj)
    result, msg = _op("bake", capfd, use_scene_range=False, frame_start=9, frame_end=9)
    assert result == {"FINISHED"} and "over 1 frames (9-9)" in msg, msg
    fcs = anim.fcurves(anim.action_of(obj), anim.slot_of(obj))
    fc = fcs.find('pose.bones["shin.L"].rotation_quaternion', index=0)
    assert [k.co[0] for k in fc.keyframe_points if k.co[0] == 9] == [9.0]
    scene.frame_set(9)
    assert _gap(_joints(obj), planted) <= 1e-5 * leg


def test_plant_feet_on_a_scene_of_one_frame(capfd):
    obj, terrain, leg = _walker("flat")
    scene = bpy.context.scene
    scene.frame_start = scene.frame_end = 4
    _select(obj, terrain)
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"}, msg
    scene.frame_set(4)
    assert _all_finite(obj)


def test_plant_feet_on_a_rig_playing_its_bake_says_to_switch_back(capfd):
    obj, terrain, _leg = _walker("flat")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="POSE")
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"}
    assert "'metarig' plays its baked action 'metarigAction [Contact IK]'" in msg and "Back to Source Action" in msg, msg
    assert _snapshot(obj) == before


def test_reversed_bake_range_is_refused(capfd):
    obj, terrain, _leg = _walker("flat")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    before = _snapshot(obj)
    result, msg = _op("bake", capfd, use_scene_range=False, frame_start=30, frame_end=10)
    assert result == {"CANCELLED"}
    assert "the frame range 30..10 is empty: set an end frame after the start frame" in msg, msg
    assert _snapshot(obj) == before


def test_a_million_frame_bake_starts_without_allocating_for_them_and_cancels(capfd):
    obj, terrain, leg = _walker("flat")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(5)
    before = _snapshot(obj, with_pose=False)
    joints = _joints(obj)
    tracemalloc.start()
    try:
        job = bake.BakeJob([obj], 1, 1_000_000, scene)
        assert not job.step(20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, f"{peak / 1e6:.0f} MB allocated to start a bake"
    # One sweep, which also reads the frames around the range that the feet's smoothing reaches, within the
    # scene's frame range (here the range holds the scene's: none).
    assert job.pad == model.context_rows(1, 1_000_000, scene.frame_start, scene.frame_end, scene.render.fps)
    assert job.total == 1_000_000 + sum(job.pad)
    assert job.progress == pytest.approx(20 / job.total)
    job.cancel()
    assert scene.frame_current == 5
    after = _snapshot(obj, with_pose=False)
    assert after == before, [(a, b) for a, b in zip(after.split("), "), before.split("), ")) if a != b][:5]
    assert obj.name in live.live_rigs
    assert _gap(_joints(obj), joints) <= 1e-6 * leg


def test_plant_feet_and_detect_contacts_on_a_million_frame_scene_are_refused(capfd):
    obj, terrain, _leg = _walker("flat")
    bpy.context.scene.frame_end = 1_000_000
    _select(obj, terrain)
    before = _snapshot(obj)
    result, msg = _op("plant_feet", capfd)
    assert result == {"CANCELLED"}, msg
    assert "1000000 frames" in msg and "set the scene's Start and End" in msg, msg
    assert _snapshot(obj) == before
    setup.apply_detection(obj, [])
    _hand_limbs(obj, ("thigh.L", "shin.L"))
    before = _snapshot(obj)
    result, msg = _op("detect_contacts", capfd)
    assert result == {"CANCELLED"} and "1000000 frames" in msg, msg
    assert _snapshot(obj) == before


# ------------------------------------------------------------------------- library data and shared actions


def _library(tmp_path):
    obj, terrain, leg = _walker("flat")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    lib = tmp_path / "character.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(lib))
    harness.reset_scene()
    with bpy.data.libraries.load(str(lib), link=True) as (src, dst):
        dst.objects = ["metarig", "Flat"]
    for o in dst.objects:
        bpy.context.scene.collection.objects.link(o)
    return lib, bpy.data.objects["metarig"], bpy.data.objects["Flat"]


def test_library_linked_armature_is_refused_and_the_library_never_changes(tmp_path, capfd):
    lib, obj, terrain = _library(tmp_path)
    digest, mtime = _sha(lib), lib.stat().st_mtime_ns
    assert obj.library is not None
    # Saved with live preview on: the linked copy is never written to (its pose is read-only).
    for f in (3, 4, 5):
        bpy.context.scene.frame_set(f)
    out, err = capfd.readouterr()
    assert "Traceback" not in err
    assert props.settings(obj).live_preview and obj.name not in live.live_rigs  # saved on, never applied here
    _select(obj, terrain)
    for op in ("plant_feet", "bake", "detect_limbs"):
        result, msg = _op(op, capfd)
        assert result == {"CANCELLED"}
        assert "linked from a library: make a library override" in msg, msg
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    assert _sha(lib) == digest and lib.stat().st_mtime_ns == mtime


def test_library_override_armature_plants_and_bakes_without_touching_the_library(tmp_path, capfd):
    lib, obj, terrain = _library(tmp_path)
    digest = _sha(lib)
    override = obj.override_create(remap_local_usages=True)
    assert override.override_library is not None and override.library is None
    _select(override, terrain)
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"}, msg
    result, msg = _op("bake", capfd)
    assert result == {"FINISHED"}, msg
    assert anim.action_of(override).name.endswith("[Contact IK]")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    assert _sha(lib) == digest


def test_an_action_shared_by_two_armatures_is_never_altered_for_the_other(capfd):
    obj, terrain, leg = _walker("stairs")
    twin = obj.copy()
    twin.data = obj.data.copy()
    twin.name = "Twin"
    bpy.context.scene.collection.objects.link(twin)
    twin.location.x += 2 * leg
    source = anim.action_of(obj)
    assert anim.action_of(twin) is source
    keys = anim.channel_snapshot(source, anim.slot_of(twin))
    twin_before = {f: _joints(twin) for f in (1, 20)}
    for f in (1, 20):
        bpy.context.scene.frame_set(f)
        twin_before[f] = _joints(twin)
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    assert _op("bake", capfd)[0] == {"FINISHED"}
    assert anim.action_of(obj) is not source and anim.action_of(twin) is source
    assert anim.channel_snapshot(source, anim.slot_of(twin)) == keys
    for f in (1, 20):
        bpy.context.scene.frame_set(f)
        assert _gap(_joints(twin), twin_before[f]) == 0.0, f


# ------------------------------------------------------------------------------------------ CLI inputs


@pytest.mark.parametrize("content", [b"BLENDER-v300 not really", b"", bytes(range(256)) * 40])
def test_cli_corrupt_blend_gives_exit_code_2(tmp_path, capfd, content):
    bad = tmp_path / "corrupt.blend"
    bad.write_bytes(content)
    code = cli.execute(["bake", str(bad)])
    _out, err = capfd.readouterr()
    assert code == 2, err
    assert "is not a readable .blend file" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.blend"]


def test_cli_truncated_blend_gives_exit_code_2(tmp_path, capfd):
    _walker("flat")
    good = tmp_path / "good.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(good))
    bad = tmp_path / "half.blend"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    code = cli.execute(["bake", str(bad)])
    _out, err = capfd.readouterr()
    assert code == 2, err
    assert "half.blend" in err and "not a readable .blend file" in err, err


@pytest.mark.parametrize("value", ["nan", "1e308", "x"])
def test_cli_corrupt_bvh_gives_exit_code_2(tmp_path, capfd, value):
    """A real skeleton (the CMU walk's hierarchy, read from tests/data, written to a temp file) whose motion
    is not numbers, or overflows."""
    text = (harness.MOCAP / "cmu_12_01_walk.bvh").read_text()
    hierarchy = text[: text.index("MOTION")]
    channels = sum(int(line.split()[1]) for line in hierarchy.splitlines() if line.strip().startswith("CHANNELS"))
    frame = " ".join([value] * channels)
    bvh = tmp_path / "bad.bvh"
    bvh.write_text(f"{hierarchy}MOTION\nFrames: 3\nFrame Time: 0.0333\n{frame}\n{frame}\n{frame}\n")
    code = cli.execute(["bake", str(bvh), "--output", str(tmp_path / "out.blend")])
    _out, err = capfd.readouterr()
    assert code == 2, err
    assert "bad.bvh" in err and "contact_ik: error:" in err, err
    assert {"nan": "a transform that is not a number at frame 1", "1e308": "not a number",
            "x": "could not be imported as BVH: ValueError: could not convert string to float"}[value] in err, err
    assert not (tmp_path / "out.blend").exists()


# ------------------------------------------------------------------------------------------------ security


def test_manifest_declares_only_the_files_permission_with_its_reason():
    import tomllib
    import zipfile

    manifest = tomllib.loads(zipfile.ZipFile(harness.built_zip()).read("blender_manifest.toml").decode())
    # Files only: the command line writes what it is told to; nothing uses the network, clipboard, camera...
    assert manifest["permissions"].keys() == {"files"}
    assert "where told" in manifest["permissions"]["files"]


def _listing(folder):
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in pathlib.Path(folder).iterdir()}


def test_cli_writes_only_where_it_is_told(tmp_path, monkeypatch, capfd):
    src_dir, out_dir, cwd = tmp_path / "in", tmp_path / "out", tmp_path / "cwd"
    for d in (src_dir, cwd):
        d.mkdir()
    _walker("flat")
    bpy.ops.wm.save_as_mainfile(filepath=str(src_dir / "walk.blend"))
    digest = _sha(src_dir / "walk.blend")
    inputs = _listing(src_dir)
    monkeypatch.chdir(cwd)
    code = cli.execute(["bake", str(src_dir / "walk.blend"), "--terrain", "Flat", "--output", str(out_dir / "o.blend"),
                        "--export", str(out_dir / "o.bvh"), "--report", str(out_dir / "r.json")])
    assert code == 0, capfd.readouterr().err
    assert sorted(p.name for p in out_dir.iterdir()) == ["o.blend", "o.bvh", "r.json"]
    assert _listing(src_dir) == inputs and _sha(src_dir / "walk.blend") == digest
    assert list(cwd.iterdir()) == []


def test_no_code_is_evaluated_from_data():
    """No eval/exec/compile/__import__ and no unpickling anywhere in the extension, and no shell."""
    import ast
    import zipfile

    archive = zipfile.ZipFile(harness.built_zip())
    for name in archive.namelist():
        if not name.endswith(".py"):
            continue
        tree = ast.parse(archive.read(name).decode(), name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"eval", "exec", "compile", "__import__"}, (name, node.lineno)
            if isinstance(node, ast.Call):
                assert not any(k.arg == "shell" for k in node.keywords), (name, node.lineno)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                assert not {"pickle", "marshal", "shelve", "dill"} & set(mods), (name, node.lineno)


def test_bone_names_with_quotes_and_brackets_are_data_not_code(capfd):
    """Names go into F-curve paths escaped: a bone named like a piece of a path is baked as that bone."""
    obj, terrain, leg = _walker("flat")
    odd = 'shin"].location; import os #\\.L'
    obj.data.bones["shin.L"].name = odd  # Blender renames the animation's paths with it
    props.settings(obj).limbs[0].bones[1].bone = odd
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    assert _op("bake", capfd)[0] == {"FINISHED"}
    fcs = anim.fcurves(anim.action_of(obj), anim.slot_of(obj))
    paths = [fc.data_path for fc in fcs if "import os" in fc.data_path]
    assert paths and all(obj.path_resolve(p) is not None for p in paths)
    assert {obj.path_resolve(p.rsplit(".", 1)[0]).name for p in paths} == {odd}


def test_cli_bad_inputs_through_a_real_process(tmp_path):
    """The same exit code and message from a separate process (the bpy-wheel runner), as a farm runs it."""
    from test_cli import run

    (tmp_path / "corrupt.blend").write_bytes(b"BLENDER-v300 not really")
    proc = run("bake", str(tmp_path / "corrupt.blend"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "is not a readable .blend file" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.blend"]


@pytest.mark.parametrize("breakage,message", [
    ("chain", "limb 'Left Leg': 'shin.R' is not a child of 'thigh.L'"),
    ("scale", "'metarig' has a zero scale"),
    ("setting", "Soft IK of 'metarig' is nan, not a finite number"),
])
def test_cli_refuses_a_broken_rig_with_exit_code_2(breakage, message, tmp_path, capfd):
    obj, terrain, _leg = _walker("flat")
    if breakage == "chain":
        props.settings(obj).limbs[0].bones[1].bone = "shin.R"
    elif breakage == "scale":
        obj.scale = (1.0, 0.0, 1.0)
    else:
        props.settings(obj).softness = math.nan
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "walk.blend"))
    code = cli.execute(["bake", str(tmp_path / "walk.blend"), "--terrain", "Flat"])
    err = capfd.readouterr().err
    assert code == 2, err
    assert f"contact_ik: error: walk.blend: {message}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.blend"]


def test_plant_feet_warns_when_no_ground_is_under_the_feet(capfd):
    """The check after Plant Feet casts the ground model's own rays: a terrain moved far to the side has
    nothing under the feet (a warning, the feet keep their pose); under them again, no warning."""
    obj, terrain, leg = _walker("flat")
    terrain.location.x += 100.0 * leg
    _select(obj, terrain)
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"}, msg
    assert "No ground under the feet of 'metarig'" in msg, msg
    terrain.location.x -= 100.0 * leg
    result, msg = _op("plant_feet", capfd)
    assert result == {"FINISHED"} and "No ground under the feet" not in msg, msg


def test_a_knee_hinge_that_is_not_a_number_is_taken_as_not_measured_and_plant_feet_measures_it_again(capfd):
    """`ContactIKLimb.hinge` set to NaN from a script: live preview and the bake read it as not measured (the
    knee bends where the foot points), never writing NaN; Plant Feet measures it again."""
    obj, terrain, _leg = _walker("flat")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    s = props.settings(obj)
    measured = tuple(s.limbs[0].hinge)
    assert math.isclose(math.hypot(*measured), 1.0, abs_tol=1e-4), measured
    s.limbs[0].hinge = (math.nan, math.nan, math.nan)
    for f in (2, 3):
        bpy.context.scene.frame_set(f)
        assert _all_finite(obj), f
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    assert tuple(s.limbs[0].hinge) == pytest.approx(measured, abs=1e-6)
