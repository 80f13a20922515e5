"""Reading a rig's animation from its action without replaying it (`core/fkread.py`), in real Blender: the
arrays equal what a sweep of `frame_set` reads, in every rotation mode, over several chunks; and every rig
it cannot reproduce is declined with the reason, never read wrong."""

from __future__ import annotations

import bpy
import harness
import numpy as np
import pytest
from test_plant_feet import _fcurves, _walker

reader = harness.module("core.reader")
fkread = harness.module("core.fkread")
setup = harness.module("core.setup")
detect = harness.module("core.detect")
props = harness.module("properties")


def _readers(obj, first=-3, frames=60):
    """The rig read both ways over `frames` frames from `first`: (by a sweep, from the action, why not)."""
    scene = bpy.context.scene
    props.settings(obj).live_preview = False
    terrain = None
    a = reader.RigReader(obj, terrain, frames, first, 24.0)
    saved = scene.frame_current
    for i in range(frames):
        scene.frame_set(first + i)
        a.read(i)
    scene.frame_set(saved)
    b = reader.RigReader(obj, terrain, frames, first, 24.0)
    return a, b, fkread.read_rigs([b], scene)[0]


def _assert_same(a, b):
    for name in ("mw", "matrix", "quat", "euler", "aa", "loc", "scale"):
        x, y = getattr(a, name).astype(float), getattr(b, name).astype(float)
        assert x.shape == y.shape, name
        scale = max(1.0, float(np.abs(x).max()))
        assert np.abs(x - y).max() <= 1e-5 * scale, (name, float(np.abs(x - y).max()))
    for la, lb in zip(a.limbs, b.limbs):
        assert np.array_equal(la.weights, lb.weights)


def test_the_action_read_alone_equals_a_sweep_in_every_rotation_mode_and_over_chunks(monkeypatch):
    monkeypatch.setattr(fkread, "CHUNK", 7)  # several chunks over the 60 frames
    obj, _terrain, _leg = _walker("flat")
    pb = obj.pose.bones
    # Keys in Euler (two orders) and axis-angle on bones the solve reads, a keyed scale, a located pelvis,
    # and a Cycles modifier that repeats the walk beyond its keys (tagged, as the UI does).
    for name, mode in (("thigh.L", "YXZ"), ("shin.R", "AXIS_ANGLE"), ("foot.R", "ZXY")):
        pb[name].rotation_mode = mode
    for f, angle in ((1, 0.1), (20, -0.3), (40, 0.4)):
        pb["thigh.L"].rotation_euler = (angle, 0.5 * angle, -angle)
        pb["thigh.L"].keyframe_insert("rotation_euler", frame=f)
        pb["shin.R"].rotation_axis_angle = (1.0 + angle, 1.0, angle, 0.2)
        pb["shin.R"].keyframe_insert("rotation_axis_angle", frame=f)
        pb["foot.R"].rotation_euler = (angle, 0.0, 2 * angle)
        pb["foot.R"].keyframe_insert("rotation_euler", frame=f)
        pb["spine"].scale = (1.0 + 0.1 * angle,) * 3
        pb["spine"].keyframe_insert("scale", frame=f)
    for fc in _fcurves(obj):
        fc.modifiers.new("CYCLES")
    obj.animation_data.action.update_tag()
    bpy.context.view_layer.update()
    a, b, why = _readers(obj)
    assert why is None
    _assert_same(a, b)


def test_a_mocap_clip_read_from_its_action_equals_a_sweep():
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.import_anim.bvh(filepath=str(harness.MOCAP / "cmu_12_01_walk.bvh"), update_scene_duration=True)
    obj = bpy.context.object
    setup.apply_detection(obj, detect.detect_limbs(detect.bones_from_armature(obj)))
    assert props.settings(obj).limbs
    a, b, why = _readers(obj, first=1, frames=120)
    assert why is None
    _assert_same(a, b)


def _add_nla(obj):
    """A strip that adds itself over the action: NLA blending, replayed."""
    track = obj.animation_data.nla_tracks.new()
    track.strips.new("walk", 1, obj.animation_data.action).blend_type = "ADD"


def _add_driver(obj):
    obj.pose.bones["thigh.L"].driver_add("rotation_quaternion", 1).driver.expression = "0.1"


def _add_constraint(obj):
    obj.pose.bones["spine"].constraints.new("COPY_LOCATION").target = obj


def _ik_below(obj):
    target = bpy.data.objects.new("IK target", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (0.3, -0.2, 0.1)
    ik = obj.pose.bones["heel.02.L"].constraints.new("IK")  # a bone the solve does not read; moves its parents
    ik.target, ik.chain_count = target, 3


def _no_inherit(obj):
    obj.data.bones["shin.L"].use_inherit_rotation = False


def _stale(obj):
    for fc in _fcurves(obj):
        fc.modifiers.new("CYCLES")  # from Python, without `update_tag`: Blender still plays the old copy


def _moving_object(obj):
    """Moved by a parent that moves: more than its own keys."""
    parent = bpy.data.objects.new("Carrier", None)
    bpy.context.scene.collection.objects.link(parent)
    obj.parent = parent
    parent.keyframe_insert("location", frame=1)
    parent.location.x += 1.0
    parent.keyframe_insert("location", frame=30)


def _remapped(obj):
    bpy.context.scene.render.frame_map_new = 200


@pytest.mark.parametrize("change,reason", [
    (_add_nla, "NLA"), (_add_driver, "drivers"), (_add_constraint, "constraints"), (_ik_below, "IK constraint"),
    (_no_inherit, "does not inherit"), (_stale, "does not give the pose Blender evaluates"),
    (_moving_object, "object moves"), (_remapped, "remaps time"),
])
def test_what_the_action_alone_cannot_give_is_declined_with_the_reason(change, reason):
    obj, _terrain, _leg = _walker("flat")
    bpy.context.scene.frame_set(1)
    change(obj)
    bpy.context.view_layer.update()
    a, b, why = _readers(obj, first=1, frames=70)
    assert why is not None and reason in why, why
    assert not np.isnan(a.matrix).any()  # the sweep still reads the rig


def test_a_range_longer_than_the_limit_is_left_to_the_sweep(monkeypatch):
    monkeypatch.setattr(fkread, "MAX_FRAMES", 50)
    obj, _terrain, _leg = _walker("flat")
    _a, _b, why = _readers(obj, first=1, frames=51)
    assert why is not None and "longer than 50 frames" in why


def test_an_armature_object_and_targets_moved_by_their_own_keys_are_read_from_them():
    """Root motion on the object (location, rotation in a non-default order, scale) and a keyed hand target
    and pole: their world matrices from their F-curves equal what a sweep reads."""
    from test_bake import _four_limb_walker

    obj, _terrain, leg = _four_limb_walker("flat")
    scene = bpy.context.scene
    obj.rotation_mode = "ZXY"
    for f, x, yaw, k in ((1, 0.0, 0.0, 1.0), (25, 0.4 * leg, 0.3, 1.2), (48, 0.9 * leg, -0.2, 0.9)):
        obj.location = (x, 0.1 * x, 0.0)
        obj.rotation_euler = (0.05, 0.0, yaw)
        obj.scale = (k, k, k)
        for prop in ("location", "rotation_euler", "scale"):
            obj.keyframe_insert(prop, frame=f)
    s = props.settings(obj)
    pole = bpy.data.objects.new("Elbow pole", None)
    scene.collection.objects.link(pole)
    pole.rotation_mode = "QUATERNION"
    for f, y in ((1, 0.5), (48, 0.8)):
        pole.location = (0.3 * leg, y * leg, 1.0 * leg)
        pole.keyframe_insert("location", frame=f)
    s.limbs[2].pole_mode = "OBJECT"
    s.limbs[2].pole_object = pole
    bpy.context.view_layer.update()
    a, b, why = _readers(obj, first=1, frames=48)
    assert why is None, why
    assert not b.static_object and not b.limbs[2].static_target and not b.limbs[2].static_pole
    _assert_same(a, b)
    for la, lb in zip(a.limbs, b.limbs):
        for name in ("targets", "poles"):
            x, y = getattr(la, name), getattr(lb, name)
            assert (x is None) == (y is None) and (x is None or np.abs(x - y).max() <= 1e-5 * max(1.0, np.abs(x).max()))


@pytest.mark.parametrize("active", [False, True])
def test_an_animation_pushed_down_into_an_nla_strip_is_read_through_the_strips_timing(active):
    """The walk in one NLA strip, started later, slowed down and repeated one and a half times, held before
    it starts and after it ends; optionally an active action keying the pelvis over it."""
    obj, _terrain, leg = _walker("flat")
    ad = obj.animation_data
    walk = ad.action
    track = ad.nla_tracks.new()
    st = track.strips.new("walk", 8, walk)
    if hasattr(st, "action_slot"):
        st.action_slot = ad.action_slot
    st.scale = 1.25
    st.repeat = 1.5
    st.extrapolation = "HOLD"
    ad.action = None
    if active:
        over = bpy.data.actions.new("Pelvis over")
        obj.animation_data.action = over
        bpy.context.scene.frame_set(1)
        obj.pose.bones["spine"].location = (0.0, 0.05 * leg, 0.0)
        obj.pose.bones["spine"].keyframe_insert("location", frame=1)
        obj.pose.bones["spine"].location = (0.0, -0.05 * leg, 0.02 * leg)
        obj.pose.bones["spine"].keyframe_insert("location", frame=90)
    bpy.context.view_layer.update()
    last = st.frame_end
    a, b, why = _readers(obj, first=1, frames=int(last) + 10)  # before the strip, through it, and after
    assert why is None, why
    _assert_same(a, b)
    assert np.abs(a.matrix[20] - a.matrix[50]).max() > 1e-3  # it walks


def test_a_crowd_of_copies_sharing_one_action_is_read_once_and_each_equals_its_sweep():
    """Copies of one rig (`Object.copy()`: one armature, one action) are read together: what they share is
    computed once, and each still equals its own sweep, also the copy whose unkeyed pose differs and the
    copy placed elsewhere in the world."""
    obj, _terrain, _leg = _walker("flat")
    scene = bpy.context.scene
    props.settings(obj).live_preview = False
    copies = [obj]
    for _k in range(3):
        o = obj.copy()
        scene.collection.objects.link(o)
        copies.append(o)
    copies[1].location.x += 2.0
    copies[2].rotation_euler.z = 0.7
    keyed = {fc.data_path for fc in _fcurves(obj)}
    loose = next(pb for pb in copies[3].pose.bones
                 if f'pose.bones["{pb.name}"].location' not in keyed and pb.parent is not None and pb.name.startswith("thigh"))
    loose.location = (0.0, 0.05, 0.0)  # not keyed: this copy's own pose, so not shared with the others
    bpy.context.view_layer.update()
    frames, first = 40, 1
    by_sweep = [reader.RigReader(o, None, frames, first, 24.0) for o in copies]
    for i in range(frames):
        scene.frame_set(first + i)
        for r in by_sweep:
            r.read(i)
    scene.frame_set(first)
    calls = []
    fk = fkread._fk
    try:
        fkread._fk = lambda *a: calls.append(1) or fk(*a)
        read = [reader.RigReader(o, None, frames, first, 24.0) for o in copies]
        assert fkread.read_rigs(read, scene) == [None] * len(copies)
    finally:
        fkread._fk = fk
    for a, b in zip(by_sweep, read):
        _assert_same(a, b)
    assert not np.allclose(read[0].matrix, read[3].matrix, atol=1e-4)  # the loose copy is its own
    # Check frames and one chunk: once for the three that share, once for the loose copy (not 4 x 2).
    assert len(calls) == 4, len(calls)


def _copies(count):
    obj, _terrain, _leg = _walker("flat")
    scene = bpy.context.scene
    props.settings(obj).live_preview = False
    copies = [obj]
    for k in range(count - 1):
        o = obj.copy()
        scene.collection.objects.link(o)
        o.location.x += 2.0 * (k + 1)
        copies.append(o)
    bpy.context.view_layer.update()
    return copies


def test_copies_of_a_rig_are_checked_in_full_on_one_of_them_and_declined_with_it(monkeypatch):
    """A crowd of copies (one armature, one action, the same way of playing it): Blender evaluates each from
    the same inputs, so the first is compared with Blender on every check frame and the others on one;
    what the first declines (an action whose evaluated copy is stale, seen only on frames past its keys)
    every copy declines, though its own check frame agrees."""
    copies = _copies(4)
    scene = bpy.context.scene
    frames, first = 70, 1
    compared = []
    matrices = fkread._matrices
    monkeypatch.setattr(fkread, "_matrices", lambda o, b: compared.append(o.name) or matrices(o, b))
    read = [reader.RigReader(o, None, frames, first, 24.0) for o in copies]
    assert fkread.read_rigs(read, scene) == [None] * len(copies)
    assert compared.count(copies[0].name) == fkread.CHECKS
    assert all(compared.count(o.name) == 1 for o in copies[1:]), compared
    _stale(copies[0])  # every copy plays it
    bpy.context.view_layer.update()
    compared.clear()
    read = [reader.RigReader(o, None, frames, first, 24.0) for o in copies]
    why = fkread.read_rigs(read, scene)
    assert all(w is not None and "does not give the pose Blender evaluates" in w for w in why), why
    assert all(compared.count(o.name) == 1 for o in copies[1:]), compared  # declined with the first


def test_the_scenes_own_frame_is_a_check_frame_compared_as_blender_evaluated_it():
    """The check frames are spread over the range, both ends included, the inner one nearest to the scene's
    frame moved onto it: that frame is compared as Blender already evaluated it, with no `frame_set` (which
    would evaluate every rig of a crowd once more). A pose there that is not the action's (a bone turned by
    hand, not keyed, not evaluated) is seen, and the action is not read."""
    assert fkread._check_rows(100, 35) == [0, 20, 35, 59, 79, 99]
    assert fkread._check_rows(100, 0) == fkread._check_rows(100, None) == [0, 20, 40, 59, 79, 99]
    obj, _terrain, _leg = _walker("flat")
    scene = bpy.context.scene
    props.settings(obj).live_preview = False
    scene.frame_set(30)
    assert fkread.read_rigs([reader.RigReader(obj, None, 70, 1, 24.0)], scene) == [None]
    obj.pose.bones["thigh.L"].rotation_quaternion.x += 0.3  # keyed; by hand, as a user poses before keying
    why = fkread.read_rigs([reader.RigReader(obj, None, 70, 1, 24.0)], scene)[0]
    assert why is not None and "on frame 30" in why, why


def test_a_few_bones_read_one_by_one_equal_every_bone_read_at_once(monkeypatch):
    """`_pose` and `_matrices` read a rig's few bones one by one (`_few`: cheaper than `foreach_get` over
    every bone) and many bones at once: the same values either way, in the same order."""
    fkread = harness.module("core.fkread")
    obj, _terrain, _leg = _walker("flat")
    bpy.context.scene.frame_set(7)
    pbs = obj.pose.bones
    for bones in ([0], [len(pbs) - 1, 2, 5], list(range(len(pbs)))):
        few = fkread._few(obj, bones)
        a, m = fkread._pose(obj, bones), fkread._matrices(obj, bones)
        monkeypatch.setattr(fkread, "_few", lambda _o, _b, few=few: not few)
        b, n = fkread._pose(obj, bones), fkread._matrices(obj, bones)
        monkeypatch.undo()
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
        assert np.array_equal(m, n) and m.shape == (len(bones), 4, 4)
        assert np.allclose(m[0], np.array(pbs[bones[0]].matrix))
    assert fkread._few(obj, [0]) and not fkread._few(obj, list(range(len(pbs))))
