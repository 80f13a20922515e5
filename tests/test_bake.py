"""Bake in real Blender: equal to live preview frame for frame, non-destructive, one undo step,
rotation modes kept and continuous, cancellable without a trace."""

from __future__ import annotations

import math

import bpy
import harness
import numpy as np
import pytest
import scenes
from mathutils import Vector
from mathutils.bvhtree import BVHTree
from test_plant_feet import _fcurves, _height_above, _plant, _sole_points, _walker
from test_plant_more import _empty, _walker_with_arms, _world_head

props = harness.module("properties")
anim = harness.module("core.anim")
bake = harness.module("core.bake")
live = harness.module("core.live")
batch = harness.module("core.batch")
model = harness.module("core.model")
tuning = harness.module("core.tuning")


def _joints(obj):
    mw = obj.matrix_world
    return [(mw @ pb.head, mw @ pb.tail) for pb in obj.pose.bones]


def _max_gap(a, b):
    """Largest joint distance between two sequences (or frame-keyed dicts) of poses."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        a, b = [a[k] for k in sorted(a)], [b[k] for k in sorted(a)]
    return max((p - q).length for pa, pb in zip(a, b) for ja, jb in zip(pa, pb) for p, q in zip(ja, jb))


def _four_limb_walker(kind="noise"):
    obj, terrain, leg = _walker_with_arms(kind)
    s = props.settings(obj)
    arm = s.limbs[2].length
    scene = bpy.context.scene
    for i, side in enumerate("LR"):
        reach = Vector(((0.35 if side == "L" else -0.35) * arm, -0.5 * arm, -0.3 * arm))
        t = _empty(f"Rail.{side}", (0, 0, 0), rotation=(0.3, 0.0, 0.2 * (i + 1)))
        for f in (scene.frame_start, scene.frame_end):
            scene.frame_set(f)
            t.location = _world_head(obj, f"upper_arm.{side}") + reach
            t.keyframe_insert("location", frame=f)
        s.limbs[2 + i].target_object = t
    s.limbs[3].use_target_rotation = True
    return obj, terrain, leg


def _live_poses(obj):
    scene = bpy.context.scene
    poses = {}
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        poses[f] = _joints(obj)
    return poses


def test_bake_equals_live_preview_and_keeps_the_source():
    obj, terrain, leg = _four_limb_walker("stairs")
    _plant(obj, terrain)
    scene = bpy.context.scene
    source = obj.animation_data.action
    source_keys = anim.channel_snapshot(source, anim.slot_of(obj))
    preview = _live_poses(obj)
    scene.frame_set(7)
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}
    assert scene.frame_current == 7  # the current frame is given back
    baked = obj.animation_data.action
    assert baked is not source and baked.name == f"{source.name} [Contact IK]"
    assert bake.is_baked(baked) and bake.source_of(baked) == source
    assert source.use_fake_user  # never lost, even with no user left
    assert anim.channel_snapshot(source, anim.slot_of(obj)) == source_keys  # untouched
    # Every joint, every frame, equals the live preview (within 1e-5 x leg length), and live preview
    # (still on) does not add IK on top of the baked keys a second time.
    assert props.settings(obj).live_preview
    after = _live_poses(obj)
    assert _max_gap(after, preview) <= 1e-5 * leg
    # The baked channels are ordinary keys: one per frame, on the driven bones and the pelvis.
    paths = {(fc.data_path, fc.array_index): len(fc.keyframe_points) for fc in _fcurves(obj)}
    assert paths[('pose.bones["shin.L"].rotation_quaternion', 0)] == 48
    assert paths[('pose.bones["forearm.R"].rotation_quaternion', 3)] == 48
    assert paths[('pose.bones["hand.R"].rotation_quaternion', 1)] == 48
    assert paths[('pose.bones["spine"].location', 2)] == 48
    # Back to the source: the animation plays with live preview applied again, exactly as before.
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.contact_ik.use_source_action() == {"FINISHED"}
    assert obj.animation_data.action == source
    assert _max_gap(_live_poses(obj), preview) <= 1e-6 * leg
    assert baked.use_fake_user  # the bake stays one click away too


def _keys(obj):
    """Every baked F-curve's key values (frames x 2: frame, value), by (data path, index)."""
    return {(fc.data_path, fc.array_index): np.array([tuple(k.co) for k in fc.keyframe_points]) for fc in _fcurves(obj)}


def test_a_bake_copies_a_valid_live_cache_or_reads_the_action_and_equals_a_bake_that_replays_it(monkeypatch):
    fkread = harness.module("core.fkread")
    obj, terrain, leg = _walker("stairs")
    _plant(obj, terrain)
    scene = bpy.context.scene
    start, end = scene.frame_start, scene.frame_end
    assert obj.name in live.caches.frames  # Plant Feet built live preview's frame cache

    def baked(first, last):
        job = bake.BakeJob([obj], first, last, scene)
        swept = job.total
        (report,) = job.finish()
        keys, poses = _keys(obj), _live_poses(obj)
        assert bake.use_source(obj) is not None
        return report.read, swept, keys, poses

    # With the cache valid over the range, nothing is replayed: the cache is copied.
    read, swept, copied, copied_poses = baked(start, end)
    assert (read, swept) == (bake.CACHE, 0)
    # Without a cache (an edit drops it), only the action moves this rig: its F-curves are read, no frame set.
    live.caches.frames.pop(obj.name, None)  # as an edit does (switching back to the source did already)
    read, swept, sampled, sampled_poses = baked(start, end)
    assert (read, swept) == (fkread.FCURVES, 0)
    # And where the action cannot be read alone, the animation is replayed frame by frame: all three agree.
    live.caches.frames.pop(obj.name, None)
    monkeypatch.setattr(fkread, "why_not", lambda reader, scene: "forced by the test")
    read, swept, replayed, replayed_poses = baked(start, end)
    assert read == f"{bake.SWEEP}: forced by the test" and swept > end - start
    monkeypatch.undo()
    for other, poses in ((copied, copied_poses), (sampled, sampled_poses)):
        assert other.keys() == replayed.keys()
        assert max(float(np.abs(other[k] - replayed[k]).max()) for k in other) <= 1e-5
        assert _max_gap(poses, replayed_poses) <= 1e-5 * leg
    # A part of the range is copied from the cache too (what live preview showed on those frames).
    live.precompute(obj, scene)
    read, swept, part, _poses = baked(start + 5, end - 5)
    assert (read, swept) == (bake.CACHE, 0)
    for k, v in part.items():
        inside = (v[:, 0] >= start + 5) & (v[:, 0] <= end - 5)
        assert inside.sum() == end - start - 9
        rows = (copied[k][:, 0] >= start + 5) & (copied[k][:, 0] <= end - 5)
        assert np.abs(v[inside] - copied[k][rows]).max() <= 1e-6


def test_a_rig_with_a_target_moved_by_a_parent_is_replayed_and_the_bake_says_why():
    obj, terrain, leg = _four_limb_walker("stairs")  # its hands reach for keyed empties
    carrier = _empty("Carrier", (0, 0, 0))
    carrier.keyframe_insert("location", frame=1)
    carrier.location.z += 0.1 * leg
    carrier.keyframe_insert("location", frame=40)
    props.settings(obj).limbs[2].target_object.parent = carrier
    _plant(obj, terrain)
    live.caches.frames.pop(obj.name)
    scene = bpy.context.scene
    job = bake.BakeJob([obj], scene.frame_start, scene.frame_end, scene)
    assert job.total > 0
    (report,) = job.finish()
    assert report.read.startswith(f"{bake.SWEEP}: Left Arm's target moves by more than its own keys"), report.read


@pytest.mark.parametrize("how", ["keyed object", "NLA strip"])
def test_keyed_targets_an_armature_object_or_an_nla_strip_are_read_from_their_keys_and_bake_as_a_replay_does(
        monkeypatch, how):
    fkread = harness.module("core.fkread")
    obj, terrain, leg = _four_limb_walker("noise")  # its hands reach for keyed empties
    if how == "keyed object":
        obj.keyframe_insert("location", frame=1)
        obj.location.x += 0.2 * leg
        obj.keyframe_insert("location", frame=48)
    else:  # the walk pushed down into an NLA strip, slowed down
        scenes.push_to_strip(obj, scale=1.5)
    _plant(obj, terrain)
    scene = bpy.context.scene
    baked = {}
    for forced in (False, True):
        live.caches.frames.pop(obj.name, None)
        if forced:
            monkeypatch.setattr(fkread, "why_not", lambda *_a: "forced")
        job = bake.BakeJob([obj], scene.frame_start, scene.frame_end, scene)
        assert (job.total > 0) == forced
        (report,) = job.finish()
        assert report.read == (f"{bake.SWEEP}: forced" if forced else fkread.FCURVES)
        baked[forced] = _keys(obj)
        if how == "NLA strip":  # a bake laid over the strip: without it the strip plays again
            laid = obj.animation_data.action
            obj.animation_data.action = None
            for key, values in dict(laid[bake.UNKEYED_KEY]).items():  # as use_source gives them back
                bone, _sep, prop = key.rpartition("|")
                setattr(obj.pose.bones[bone], prop, list(values))
        else:
            assert bake.use_source(obj) is not None
    assert baked[False].keys() == baked[True].keys()
    worst = max((float(np.abs(baked[False][k] - baked[True][k]).max()), k) for k in baked[False])
    assert worst[0] <= 1e-5, worst


def test_a_setting_changed_after_the_cache_was_built_is_baked_from_the_animation_not_the_cache():
    obj, terrain, leg = _walker("noise")
    _plant(obj, terrain)
    scene = bpy.context.scene
    assert obj.name in live.caches.frames
    props.settings(obj).limbs[0].enabled = False  # an edit: the cache no longer holds what the bake must write
    job = bake.BakeJob([obj], scene.frame_start, scene.frame_end, scene)
    (report,) = job.finish()
    assert report.read != bake.CACHE
    # The left foot, disabled, is baked as animated: its shin keeps the source's rotation.
    source = bake.source_of(obj.animation_data.action)
    assert source is not None


def test_bake_is_one_undo_step():
    obj, terrain, leg = _walker("flat")
    _plant(obj, terrain)
    source_name = obj.animation_data.action.name
    actions = harness.user_actions()
    bpy.ops.ed.undo_push(message="before bake")
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="after bake")
    assert obj.animation_data.action.name.endswith("[Contact IK]")
    bpy.ops.ed.undo()
    obj = bpy.data.objects["metarig"]
    assert obj.animation_data.action.name == source_name
    assert harness.user_actions() == actions


def test_bake_keeps_rotation_modes_and_is_continuous():
    obj, terrain, leg = _walker("noise")
    # thigh.L un-keyed and in Euler, shin.R in axis-angle: keys are written in each bone's own mode.
    fcurves = _fcurves(obj)
    for fc in list(fcurves):
        if '"thigh.L"' in fc.data_path or '"shin.R"' in fc.data_path:
            fcurves.remove(fc)
    pb = obj.pose.bones
    pb["thigh.L"].rotation_mode = "YXZ"
    pb["thigh.L"].rotation_euler = (math.radians(170), 0.0, math.radians(179))  # near the wrap
    pb["shin.R"].rotation_mode = "AXIS_ANGLE"
    _plant(obj, terrain)
    preview = _live_poses(obj)
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}
    curves = {(fc.data_path, fc.array_index): fc for fc in _fcurves(obj)}
    assert ('pose.bones["thigh.L"].rotation_euler', 2) in curves
    assert ('pose.bones["thigh.L"].rotation_quaternion', 0) not in curves
    assert ('pose.bones["shin.R"].rotation_axis_angle', 3) in curves

    def values(path, n):
        out = []
        for i in range(n):
            kp = curves[(path, i)].keyframe_points
            out.append([k.co[1] for k in kp])
        return list(zip(*out))

    euler = values('pose.bones["thigh.L"].rotation_euler', 3)
    assert max(abs(b - a) for ea, eb in zip(euler, euler[1:]) for a, b in zip(ea, eb)) < 0.5  # no 2 pi jumps
    for bone in ("thigh.R", "shin.L", "foot.L"):
        q = values(f'pose.bones["{bone}"].rotation_quaternion', 4)
        assert all(sum(a * b for a, b in zip(qa, qb)) > 0.0 for qa, qb in zip(q, q[1:])), bone  # no sign flips
    assert _max_gap(_live_poses(obj), preview) <= 1e-5 * leg


def test_cancelled_bake_leaves_everything_as_it_was(monkeypatch):
    # A bake that replays the animation (here forced: this rig's action alone moves it) can be cancelled.
    monkeypatch.setattr(harness.module("core.fkread"), "why_not", lambda reader, scene: "forced by the test")
    obj, terrain, leg = _walker("stairs")
    _plant(obj, terrain)
    scene = bpy.context.scene
    scene.frame_set(5)
    before_pose = _joints(obj)
    source = obj.animation_data.action
    keys = anim.channel_snapshot(source, anim.slot_of(obj))
    actions = len(bpy.data.actions)
    live.caches.frames.pop(obj.name)  # as after an edit: with a valid frame cache nothing would be swept
    job = bake.BakeJob([obj], 1, 48, scene)
    assert not job.step(10)
    # The range, and the frames around it the feet's smoothing reaches within the scene's range (none here).
    assert job.pad == (0, 0) and job.total == 48
    assert job.progress == pytest.approx(10 / job.total)
    job.cancel()
    assert scene.frame_current == 5
    assert obj.animation_data.action == source and len(bpy.data.actions) == actions
    assert anim.channel_snapshot(source, anim.slot_of(obj)) == keys
    assert obj.name in live.live_rigs  # live preview is back on
    assert _max_gap([_joints(obj)], [before_pose]) <= 1e-6 * leg


def test_bad_bake_input_says_how_to_fix_it():
    obj, terrain, leg = _walker("flat")
    props.settings(obj).limbs.clear()
    bpy.context.view_layer.objects.active = obj
    assert not bpy.ops.contact_ik.bake.poll()  # no limbs yet
    _plant(obj, terrain)
    props.settings(obj).terrain = None
    with pytest.raises(RuntimeError, match="no terrain"):
        bpy.ops.contact_ik.bake()
    with pytest.raises(bake.BakeError, match="empty"):
        bake.BakeJob([obj], 10, 5)
    props.settings(obj).terrain = terrain
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}
    assert not bpy.ops.contact_ik.bake.poll()  # plays its bake: switch back first


def test_bake_follows_an_animated_armature_object():
    """The armature object itself moves (object-level keys): the bake reads its matrix on every frame, so
    the baked soles rest on the terrain in every contact and never go through it."""
    obj, terrain, leg = _walker("slope")
    obj.location = (0.0, 0.0, 0.0)
    obj.keyframe_insert("location", frame=1)
    obj.location = (0.3 * leg, 0.0, 0.1 * leg)
    obj.keyframe_insert("location", frame=48)
    _plant(obj, terrain)
    scene = bpy.context.scene
    live.caches.frames.pop(obj.name)  # the sweep is what reads the object (a valid frame cache is copied)
    job = bake.BakeJob([obj], 1, 48, scene)
    assert not job.rigs[0].batch.static_object
    job.finish()
    s = props.settings(obj)
    contacts = harness.module("core.contacts")
    tree = BVHTree.FromObject(terrain, bpy.context.evaluated_depsgraph_get())
    tol = 1e-3 * leg
    planted = 0
    for f in range(1, 49):
        scene.frame_set(f)
        for i, side in enumerate("LR"):
            heights = [_height_above(tree, p, leg) for p in _sole_points(obj, side, s.limbs[i].foot_offset)]
            assert min(heights) >= -tol, (f, side, heights)
            # In a contact: the sole put down (a ball may be held on after it, as the foot lifts off).
            if contacts.locks_over(s.limbs[i], f, 1, scene.render.fps).down[0] == 1.0:
                assert abs(min(heights)) <= tol, (f, side, heights)
                planted += 1
    assert planted >= 20  # most frames have a foot in a contact


@pytest.mark.parametrize("seed", range(6))
def test_pelvis_speed_limit_is_the_highest_slow_curve_under_the_offset(seed):
    """`model.pelvis_speed_limit`: never above the offset, never faster than the step, and the highest such
    curve (the closed form min_j offset[j] + steps between), where the pelvis moves; untouched elsewhere."""
    rng = np.random.default_rng(seed)
    n = 300
    offset = np.cumsum(rng.normal(0.0, 1.0, n)) + np.where(rng.random(n) < 0.05, rng.normal(0.0, 20.0, n), 0.0)
    moved = rng.random(n) < 0.9
    step = rng.uniform(0.2, 1.0, n)
    y = model.pelvis_speed_limit(offset, moved, step)
    assert np.array_equal(y[~moved], offset[~moved])
    assert np.all(y[moved] <= offset[moved] + 1e-9)
    cum = np.concatenate(([0.0], np.cumsum(step[1:])))  # steps between frames i and j: |cum[i] - cum[j]|
    idx = np.flatnonzero(moved)
    for i in idx:
        best = min(offset[j] + abs(cum[i] - cum[j]) for j in idx)
        assert y[i] == pytest.approx(best, abs=1e-9)
    for a, b in zip(idx, idx[1:]):
        assert abs(y[b] - y[a]) <= abs(cum[b] - cum[a]) + 1e-9
    assert np.any(y[moved] < offset[moved] - 1e-6)  # the spikes were cut


def test_pelvis_follows_a_lasting_climb_faster_than_the_limit():
    """A body running up stairs climbs 1.5 leg per second, faster than the pelvis speed limit (1 leg per
    second): under the plain limit the pelvis fell ever further behind (its legs folded, the knee 3.12x the
    source's on the 30 fps run on stairs). The limit now holds only the departures from the climb's trend:
    the pelvis stays within a step's height of its offset, never above it; a climb slower than the trend's
    free share is limited exactly as before."""
    fps, leg, n = 30.0, 1.0, 240
    step = np.full(n, model.pelvis_step(leg, 1.0, fps))
    t = np.arange(n) / fps
    riser, tread_time = 0.15 * leg, 0.1  # a riser every 0.1 s: 1.5 leg per second
    offset = riser * np.floor(t / tread_time)
    moved = np.ones(n, dtype=bool)
    plain = model.pelvis_speed_limit(offset, moved, step)
    followed = model.pelvis_speed_limit(offset, moved, step, fps)
    assert np.all(followed <= offset + 1e-9)
    mid = slice(n // 4, 3 * n // 4)
    assert (offset - plain)[mid].max() > 0.5 * leg  # the plain limit lags by half a leg and more
    assert (offset - followed)[mid].max() < 2.0 * riser
    # A walk up the same stairs, a riser every 0.5 s (0.3 leg per second): as before (the trend plays no part;
    # with a frame rate, the bend's limit applies to the speed limit's curve as it is).
    slow = riser * np.floor(t / 0.5)
    bend = tuning.PELVIS_BEND / tuning.PELVIS_SPEED / fps * step[0]
    assert np.allclose(model.pelvis_speed_limit(slow, moved, step, fps),
                       model.pelvis_bend_limit(model.pelvis_speed_limit(slow, moved, step), bend))


@pytest.mark.parametrize("seed", range(6))
def test_pelvis_bend_limit_is_the_highest_curve_under_the_offset_that_bends_down_slowly(seed):
    """`model.pelvis_bend_limit`: never above the curve; its slope falls by at most `bend` from one row to the
    next except across a single row's rise and return, which is kept as it is; each stretch it lowers is a
    parabola bending down at exactly `bend` from where it leaves the curve to where it meets it again (so
    it lowers no further than it must); a curve moving at most a step per row still does."""
    rng = np.random.default_rng(seed)
    n, v, bend = 400, 1.0, 0.05
    y = np.cumsum(np.clip(np.cumsum(rng.normal(0.0, 0.3, n)), -v, v))  # slopes within [-v, v]
    y[rng.choice(np.arange(5, n - 5), 6, replace=False)] += rng.uniform(0.2, 0.9, 6)  # single rows' rises
    y = model.pelvis_speed_limit(y, np.ones(n, dtype=bool), np.full(n, v))  # moves at most v per row
    out = model.pelvis_bend_limit(y, bend)
    assert np.all(out <= y + 1e-9)
    assert np.all(np.abs(np.diff(out)) <= v + 1e-9)
    lowered = out < y - 1e-9
    assert lowered.any() and not lowered.all()
    d2 = np.r_[0.0, out[2:] - 2.0 * out[1:-1] + out[:-2], 0.0]  # the slope's change at each row
    for i in np.flatnonzero(d2 < -bend - 1e-9):  # only a single row's rise, kept with its neighbours
        assert not lowered[i - 1:i + 2].any() and y[i] > (y[i - 1] + y[i + 1]) / 2.0, i
    assert (d2 < -bend - 1e-9).any()  # some single rows' rises were kept
    for i in np.flatnonzero(lowered):  # a parabola: lowered no more than it must be
        assert d2[i] == pytest.approx(-bend, abs=1e-9), i
    assert np.allclose(model.pelvis_bend_limit(out, bend), out, rtol=0.0, atol=1e-9)  # nothing more to lower


def test_pelvis_climbing_out_of_a_drop_slows_over_frames_not_at_once():
    """The pelvis climbed out of a drop at the speed limit (1 leg per second) and slowed to the stairs' 0.3 leg
    per second from one frame to the next (and went into it the same way); the standing knee took the
    difference (pymo_av8 over stairs: 1.40x the source's peak, 1.21x now). With a frame rate the limit's
    curve now slows by at most PELVIS_BEND per second, over several frames, and still never rises above the
    offset or moves faster than the limit."""
    fps, leg, n = 120.0, 1.0, 240
    step = np.full(n, model.pelvis_step(leg, 1.0, fps))
    t = np.arange(n) / fps
    offset = 0.3 * leg * t  # the stairs' own climb ...
    offset[100] -= 0.1 * leg  # ... and a drop at one frame (a leg at its reach)
    moved = np.ones(n, dtype=bool)
    plain = model.pelvis_speed_limit(offset, moved, step)
    limited = model.pelvis_speed_limit(offset, moved, step, fps)
    bend = tuning.PELVIS_BEND * leg / fps / fps  # per row, per row
    slow_down = -np.diff(np.diff(plain))
    assert slow_down.max() > 3.0 * bend  # the speed limit alone: 1 leg/s slower from one frame to the next
    assert np.all(-np.diff(np.diff(limited)) <= bend * (1.0 + 1e-6))
    assert np.all(limited <= plain + 1e-12) and np.all(np.abs(np.diff(limited)) <= step[1:] * (1.0 + 1e-9))
    assert np.allclose(limited[:60], offset[:60]) and np.allclose(limited[-60:], offset[-60:])


def test_pelvis_limit_holds_on_either_side_of_a_cut_not_across_it():
    """An NLA repeat snaps the body back 2 m at its seam; on stairs the ground under it jumps by a leg. That
    is a cut, not a move (`model.cuts`: the body faster than CUT_SPEED): the limit used to pull the pelvis
    down for a second before the seam to meet it (the knee 8x the source's there); now each side of the cut
    is limited on its own, and a real move as fast is still limited."""
    fps, leg, n = 24.0, 1.0, 96
    root = np.zeros((n, 3))
    root[:, 1] = np.arange(n) * 1.4 * leg / fps  # walking at 1.4 leg/s
    root[48:, 1] -= 2.0 * leg  # the seam: snapped back 2 legs between rows 47 and 48
    cut = model.cuts(root, leg, fps)
    assert cut.tolist() == [i == 48 for i in range(n)]
    step = np.full(n, model.pelvis_step(leg, 1.0, fps))
    offset = np.where(np.arange(n) < 48, 0.0, -1.0 * leg)
    moved = np.ones(n, dtype=bool)
    across = model.pelvis_speed_limit(offset, moved, step)
    assert across[47] < -0.5 * leg  # the old way: dropped ahead of the seam
    kept = model.pelvis_speed_limit(offset, moved, np.where(cut, np.inf, step), fps)
    assert np.allclose(kept, offset)
    # Within a piece the limit still holds.
    bump = offset.copy()
    bump[20] -= 0.5 * leg
    limited = model.pelvis_speed_limit(bump, moved, np.where(cut, np.inf, step), fps)
    assert limited[19] < -0.4 * leg and np.allclose(limited[48:], offset[48:])


def _swing_case(seed, n=400, fps=120.0):
    """Random corrections of a foot (in leg lengths): contacts pinned, a floor under every frame (the sole
    points at their animated heights over the terrain) and the touch under it (on the terrain), and the
    clearance's switches (steps of up to 0.06 leg) between them, some right at a contact's ends."""
    rng = np.random.default_rng(seed)
    floor = np.cumsum(rng.normal(0.0, 0.002, n))
    touch = floor - rng.uniform(0.0, 0.03, n)
    lift = np.where(rng.random(n) < 0.5, 0.0, rng.uniform(0.0, 0.06, n))
    lift = np.repeat(lift[::8], 8)[:n]  # held for 8 frames, then switched: the jumps to smooth
    pinned = np.zeros(n, dtype=bool)
    for start in rng.integers(0, n - 30, 5):
        pinned[start:start + 25] = True
    correction = floor + np.where(pinned, 0.0, lift)
    return correction, floor, touch, pinned, fps


@pytest.mark.parametrize("seed", range(4))
def test_swing_smoothing_keeps_contacts_and_touch_and_spreads_the_jumps(seed):
    """`model.swing_smoothing`: pinned frames (contacts) exactly as they were, never below the touch (the
    sole points on the terrain under them), and the clearance's jumps spread over several frames, those
    next to a contact as well as those well away from one."""
    correction, floor, touch, pinned, fps = _swing_case(seed)
    y = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0)
    assert np.array_equal(y[pinned], correction[pinned])
    assert np.all(y >= touch - 1e-12)
    free = ~pinned[1:] | ~pinned[:-1]  # every step into, out of or between free frames
    jumps = np.abs(np.diff(correction))[free]
    smoothed = np.abs(np.diff(y))[free]
    assert jumps.max() > 0.03
    assert smoothed.max() <= 0.5 * jumps.max(), (smoothed.max(), jumps.max())
    # Well away from contacts (both frames 8 or more from one), as much as before the contacts' own were.
    far = free & (np.convolve(pinned, np.ones(2 * 8 + 1), "same")[1:] == 0)
    assert np.abs(np.diff(y))[far].max() <= 0.4 * np.abs(np.diff(correction))[far].max()
    assert np.any(np.abs(y - correction) > 1e-3)


@pytest.mark.parametrize("fps", [60.0, 120.0])  # at 30 fps its 0.03 s is under a frame: little to spread over
def test_swing_smoothing_spreads_a_jump_at_lift_off_and_at_landing(fps):
    """A clearance that switches on the frame after a contact ends, or off the frame before one starts: the
    foot leaves and meets the contact exactly where it is, and the jump is spread over the frames around
    (it was left whole when the smoothing narrowed to nothing near contacts). The touch may let it go under
    the animation's floor, never under the terrain."""
    n = int(fps)  # one second: contact, swing, contact
    pinned = np.zeros(n, dtype=bool)
    pinned[:n // 4] = True
    pinned[3 * n // 4:] = True
    floor = np.zeros(n)
    correction = np.where(pinned, 0.0, 0.06)
    touch = np.full(n, -0.03)
    y = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0)
    assert np.array_equal(y[pinned], correction[pinned])
    assert np.abs(np.diff(correction)).max() == pytest.approx(0.06)
    assert np.abs(np.diff(y)).max() <= 0.35 * 0.06, np.abs(np.diff(y)).max()
    assert np.all(y >= touch)
    # A touch above what the Gaussian gives holds it up: never below the terrain under the soles.
    high = np.where(pinned, -np.inf, 0.05)
    y2 = model.swing_smoothing(correction, floor, high, pinned, fps, 1.0)
    assert np.all(y2[~pinned] >= 0.05) and np.array_equal(y2[pinned], correction[pinned])


@pytest.mark.parametrize("fps", [60.0, 120.0])
def test_swing_smoothing_comes_up_to_a_touch_that_jumps_gradually(fps):
    """A toe crossing a riser's edge a few frames after its contact ends: the touch (the sole points on the
    terrain right under them) jumps up by the riser there. The foot comes up to it over the frames before,
    instead of being clamped onto it in one frame (the knee 3x the source's on stairs); it is never under
    the touch, and the contact is kept as it is."""
    n = int(fps)
    pinned = np.zeros(n, dtype=bool)
    pinned[:n // 4] = True
    edge = n // 4 + max(2, int(round(0.04 * fps)))
    floor = np.zeros(n)
    touch = np.where(np.arange(n) >= edge, 0.06, -np.inf)
    correction = np.where(pinned, 0.0, np.maximum(0.01, touch))
    y = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0)
    assert np.array_equal(y[pinned], correction[pinned])
    assert np.all(y >= touch)
    rise = edge - n // 4 + 1  # the frames from the contact's last to the edge's
    steps = np.abs(np.diff(y))
    assert steps.max() <= 1.4 * 0.06 / rise, (steps.max(), 0.06 / rise)  # it was 1.9x (60 fps) and 3.3x (120)


def test_swing_smoothing_holds_on_either_side_of_a_cut_not_across():
    """A loop's seam snaps the body back (`model.cuts`): the heights before it belong to a place a body away
    from those after. Each side is smoothed on its own: after a seam where nothing lifts the foot its swing
    is the animation's, and before it as if the clip ended there. Across it, the foot lifted before the seam
    raised it after (loop_cycles on stairs: the knee 2.9x the source's)."""
    fps, n, seam = 24.0, 60, 30
    floor = np.where(np.arange(n) < seam, 0.2, -0.2)
    correction = floor.copy()
    correction[seam - 3:seam] += 0.016  # the clearance lifts the foot on the last frames before the seam
    touch = np.full(n, -np.inf)
    pinned = np.zeros(n, dtype=bool)
    cut = np.zeros(n, dtype=bool)
    cut[seam] = True
    across = model.swing_change(correction, floor, touch, pinned, fps, 1.0)
    assert np.abs(across[seam:]).max() > 1e-3  # what the test is about: smoothing across moves the far side
    got = model.swing_change(correction, floor, touch, pinned, fps, 1.0, cut)
    assert np.array_equal(got[seam:], np.zeros(n - seam))
    alone = model.swing_change(correction[:seam], floor[:seam], touch[:seam], pinned[:seam], fps, 1.0)
    assert np.array_equal(got[:seam], alone) and np.abs(alone).max() > 1e-4
    # A seam a few frames from the range's end (a cyclic clip read past its last frame) leaves a stretch
    # shorter than the Gaussian: smoothed on its own all the same (numpy's "same" convolution gave the
    # Gaussian's length there, and the build failed).
    short = np.zeros(n, dtype=bool)
    short[n - 3] = True
    tail = model.swing_change(correction, floor, touch, pinned, fps, 1.0, short)
    assert tail.shape == (n,) and np.all(np.isfinite(tail))
    assert np.array_equal(tail[:n - 3], model.swing_change(correction[:n - 3], floor[:n - 3], touch[:n - 3],
                                                           pinned[:n - 3], fps, 1.0))
    lifted = floor[:3] + np.array([0.0, 0.02, 0.0])
    y = model.swing_smoothing(lifted, floor[:3], touch[:3], pinned[:3], fps, 1.0)
    assert y.shape == (3,) and y[1] < lifted[1]


def test_many_feet_smoothed_in_one_call_each_get_what_they_get_alone():
    """`model.swing_changes` (every foot of a crowd in one call, `batch._smooth_swings`): each foot, and each
    stretch between its cuts, comes out exactly as when passed alone, whatever lies beside it in the call;
    and it is the smoothing the tests above check (the same foot through `swing_smoothing`)."""
    rng = np.random.default_rng(11)
    fps = 30.0
    feet = []
    for k in range(40):
        n = int(rng.integers(1, 120))
        correction = rng.normal(0.0, 0.05, n)
        correction[rng.random(n) < 0.05] = np.nan
        floor = np.where(rng.random(n) < 0.2, -np.inf, correction - np.abs(rng.normal(0.0, 0.01, n)))
        touch = np.where(rng.random(n) < 0.3, -np.inf, correction - 0.03)
        pinned = rng.random(n) < rng.random()
        leg = rng.uniform(0.5, 1.5, n) if k % 2 else 0.9
        cut = rng.random(n) < 0.04 if k % 3 else None
        feet.append((correction, floor, touch, pinned, leg, cut))
    together = model.swing_changes(feet, fps)
    moved = 0
    for foot, got in zip(feet, together):
        assert np.array_equal(got, model.swing_change(*foot[:4], fps, foot[4], foot[5]))
        correction, floor, touch, pinned, leg, cut = foot
        if cut is None:
            smoothed = model.swing_smoothing(correction, floor, touch, pinned, fps, leg)
            assert np.array_equal(got, np.where(np.isfinite(correction), smoothed - correction, 0.0))
        else:  # each stretch between cuts on its own
            bounds = [0, *np.flatnonzero(cut[1:]) + 1, len(correction)]
            for a, b in zip(bounds, bounds[1:]):
                alone = model.swing_change(correction[a:b], floor[a:b], touch[a:b], pinned[a:b], fps,
                                           leg if np.ndim(leg) == 0 else leg[a:b])
                assert np.array_equal(got[a:b], alone)
        moved += int(np.abs(got).max() > 1e-6) if len(got) else 0
    assert moved > 10  # the smoothing changed something: the comparison is not of zeros


def _toe_off_case(lift=0.04, fps=120.0, n=160):
    """A contact (frames 0-49), its ball held through toe-off (50-59), then a swing whose plan lifts the foot by
    `lift` (x leg) at once from Ball Up (60) to the next contact (130-): the jump the smoothing spreads."""
    pinned = np.zeros(n, dtype=bool)
    pinned[:50] = pinned[130:] = True
    toe_off = np.zeros(n, dtype=bool)
    toe_off[50:60] = True
    correction = np.where((np.arange(n) >= 60) & (np.arange(n) < 130), lift, 0.0)
    return correction, np.zeros(n), np.full(n, -1.0), pinned, toe_off, fps


def test_swing_smoothing_keeps_a_ball_held_through_toe_off_on_its_ground():
    """Issue 20 (hover): the smoothing spreads a swing's lift over the frames before it, and those include the
    frames the ball is still held after the ankle's contact (toe-off): it lifted the held ball off its ground
    inside the source's contact (fair1_jumping from standing up stairs: 3.35% of the leg). Held frames
    (`toe_off`) stay within HELD_RISE of their correction, the contact and the frames before are as they were,
    and the foot comes away after Ball Up no faster than HELD_SPEEDUP times the smoothing alone."""
    correction, floor, touch, pinned, toe_off, fps = _toe_off_case()
    alone = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0)
    held = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0, toe_off=toe_off)
    assert alone[59] > 2.0 * tuning.HELD_RISE  # without it the held ball is lifted well before Ball Up
    assert (held[toe_off] <= correction[toe_off] + tuning.HELD_RISE + 1e-12).all(), held[toe_off]
    assert (held[toe_off] >= correction[toe_off] - 1e-12).all()
    assert np.array_equal(held[:50], alone[:50]) and np.array_equal(held[130:], alone[130:])
    assert np.abs(np.diff(held)).max() <= tuning.HELD_SPEEDUP * np.abs(np.diff(alone)).max() + 1e-12
    assert held[60] > held[59] and held[75] > 0.9 * correction[75]  # it does come away, and up to the lift


@pytest.mark.parametrize("fps", [30.0, 120.0])
def test_swing_smoothing_keeps_a_ball_held_before_start_no_higher_than_its_correction(fps):
    """Issue 20 (hover at landings): a ball held before its contact's Start (`landing`: it landed before the
    ankle came to rest) is on its ground in the animation, but the smoothing spread the swing coming down
    before it over those frames: the ball was left up to 3.2% of the leg over the tread it landed on, inside
    the source's contact (cmu_10_01 and fair1_zombie at 30 fps, over stairs). Such a frame is kept no higher
    than its correction, lower where the smoothing puts it lower; the contacts are as they were, and the frames
    before come down to it with no jump (no faster than to the contact's first frame without it)."""
    n = int(160 * fps / 120.0)
    a, b = n // 2, n // 2 + max(2, int(0.05 * fps))  # the landing's frames before Start (b)
    pinned = np.zeros(n, dtype=bool)
    pinned[:n // 4] = pinned[b:] = True
    correction = np.where((np.arange(n) >= n // 4) & (np.arange(n) < a), 0.04, 0.0)
    correction[a:b] = np.linspace(0.004, -0.002, b - a)  # on its ground, a little over and under it
    landing = np.zeros(n, dtype=bool)
    landing[a:b] = True
    floor, touch = np.zeros(n), np.full(n, -1.0)
    alone = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0)
    held = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0, landing=landing)
    assert alone[a] > correction[a] + 0.005  # without it the ball is still coming down from the swing
    assert np.array_equal(held[landing], np.minimum(alone[landing], correction[landing]))
    assert (held[a:b] < alone[a:b]).any() and (held[a:b] <= alone[a:b]).all()
    assert np.array_equal(held[pinned], alone[pinned])
    # The swing comes down to it: no faster than (twice) the smoothing alone comes down to the contact.
    assert np.abs(np.diff(held)).max() <= 2.0 * np.abs(np.diff(alone)).max() + 1e-12
    assert held[n // 4 + 2 : a - 2].max() > 0.9 * 0.04  # and still lifts the swing


@pytest.mark.parametrize("why", ["contact", "touch"])
def test_swing_smoothing_lets_a_held_ball_go_where_the_foot_must_come_away_at_once(why):
    """...but not where a frame kept as it is follows Ball Up within a few frames (here a contact two frames
    on), or where holding the ball makes the foot come away more than HELD_SPEEDUP times as fast as the
    smoothing alone (here the sole must touch the lifted height from Ball Up, a toe at a riser's edge):
    holding it down jerked the knee (xia_old over rings: 1.68x -> 5.45x the source's peak). Those held frames
    are smoothed as without `toe_off`."""
    correction, floor, touch, pinned, toe_off, fps = _toe_off_case()
    if why == "contact":
        pinned[62:] = True
    else:
        touch[60:130] = correction[60:130]
    alone = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0)
    held = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0, toe_off=toe_off)
    assert alone[59] > 2.0 * tuning.HELD_RISE
    assert np.allclose(held, alone, atol=1e-12, rtol=0.0)


def test_swing_smoothing_of_a_swing_with_no_contact_at_all():
    """No pinned frame anywhere (a clip without contacts): the jumps are smoothed all the same."""
    correction, floor, touch, _pinned, fps = _swing_case(2)
    y = model.swing_smoothing(correction, floor, touch, np.zeros(len(correction), dtype=bool), fps, 1.0)
    assert np.all(np.isfinite(y)) and np.all(y >= touch - 1e-12)
    assert np.abs(np.diff(y)).max() <= 0.5 * np.abs(np.diff(correction)).max()


def test_swing_smoothing_leaves_a_foot_that_follows_the_terrain_as_it_is():
    """Where nothing lifts the foot over the terrain under its soles (correction == floor), its swing is
    the animation's, whatever its shape: only the clearance's switches are smoothed."""
    rng = np.random.default_rng(7)
    n = 300
    floor = np.cumsum(rng.normal(0.0, 0.01, n))  # a rough path: the Gaussian would change it
    pinned = np.zeros(n, dtype=bool)
    pinned[100:130] = True
    assert np.array_equal(model.swing_smoothing(floor, floor, floor - 0.02, pinned, 120.0, 1.0), floor)
    # No frame rate (a scene without one): nothing to smooth over.
    correction, floor2, touch2, pinned2, _fps = _swing_case(1)
    assert np.array_equal(model.swing_smoothing(correction, floor2, touch2, pinned2, 0.0, 1.0), correction)


@pytest.mark.parametrize("fps", [24.0, 120.0])
def test_swing_smoothing_of_a_range_needs_only_the_context_frames_around_it(fps):
    """Rows `model.context_frames` either side of a range are all it reads: the range comes out as it does
    in the whole (what lets a bake of part of the scene match live preview over all of it)."""
    correction, floor, touch, pinned, _fps = _swing_case(3, n=600, fps=fps)
    toe_off = _toe_offs(pinned, fps)
    pad = model.context_frames(fps)
    # A ball held before each contact's Start, too (`landing`): the frames before each pinned run.
    landing = np.zeros(len(pinned), dtype=bool)
    for start in np.flatnonzero(~pinned[:-1] & pinned[1:]) + 1:
        landing[max(0, start - max(1, int(0.04 * fps))):start] = True
    landing &= ~toe_off
    for held, land in ((None, None), (toe_off, None), (toe_off, landing)):
        whole = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0, toe_off=held, landing=land)
        for a, b in ((150, 203), (300, 301), (300, 480)):
            sl = slice(a - pad, b + pad)
            part = model.swing_smoothing(correction[sl], floor[sl], touch[sl], pinned[sl], fps, 1.0,
                                         toe_off=None if held is None else held[sl],
                                         landing=None if land is None else land[sl])
            assert np.allclose(part[pad:-pad], whole[a:b], atol=1e-12, rtol=0.0), (a, b)
        # Fewer frames around it than that and the range's ends come out differently.
        a, b = 300, 480
        sl = slice(a - 1, b + 1)
        short = model.swing_smoothing(correction[sl], floor[sl], touch[sl], pinned[sl], fps, 1.0,
                                      toe_off=None if held is None else held[sl],
                                      landing=None if land is None else land[sl])
        assert not np.allclose(short[1:-1], whole[a:b], atol=1e-9, rtol=0.0)


def _toe_offs(pinned, fps, seconds=(0.02, 0.25), seed=0):
    """Per row, a ball held through toe-off after each contact (`pinned` run) for a random time in `seconds`."""
    rng = np.random.default_rng(seed)
    toe_off = np.zeros(len(pinned), dtype=bool)
    for end in np.flatnonzero(pinned[:-1] & ~pinned[1:]) + 1:
        toe_off[end:end + max(1, int(rng.uniform(*seconds) * fps))] = True
    return toe_off & ~pinned


@pytest.mark.parametrize("kind", ["stairs", "noise"])
def test_a_bake_of_part_of_the_range_matches_the_whole_where_the_feet_are_smoothed(kind):
    """The feet's smoothing between contacts reaches a few frames around each frame; a bake reads them
    (`BakeJob.read`), so baking part of the range gives the frames the whole range (and live preview)
    gives."""
    obj, terrain, leg = _walker(kind)
    _plant(obj, terrain)
    scene = bpy.context.scene
    live.caches.frames.pop(obj.name)  # both bakes sweep (a valid frame cache would be copied)
    whole = bake.BakeJob([obj], 1, 48, scene)
    whole.step(whole.total)
    bake._fill_from_batch(whole.rigs[0])
    delta = np.max([np.abs(v) for v in whole.rigs[0].batch.foot_delta.values()], 0)
    assert len(delta) == 48 and delta.max() > 3e-4 * leg  # the smoothing does something on this walk
    at = int(np.argmax(delta)) + 1
    a, b = max(1, at - 3), min(48, at + 3)
    part = bake.BakeJob([obj], a, b, scene)
    part.step(part.total)
    bake._fill_from_batch(part.rigs[0])
    col = 0
    for c in part.rigs[0].channels:
        va, vb = part.rigs[0].values[:, col:col + c.size], whole.rigs[0].values[a - 1:b, col:col + c.size]
        tol = 1e-5 * leg if c.prop == "location" else 1e-4
        assert abs(va - vb).max() <= tol, (c.bone, c.prop, abs(va - vb).max())
        col += c.size
        part.cancel()
    whole.cancel()


def test_a_jump_beside_which_frames_are_kept_is_found_within_each_foot_planned_together():
    """`model.beside_jump` over several feet's rows one after another (`plan_feet`): each foot's frames on
    their own. The step from one foot's last frame to the next foot's first is no jump, and a jump at the end
    of one foot marks none of the next foot's frames (the right foot of a rig planned with others came out
    up to 1.3e-5 different from the same rig planned alone)."""
    flat = np.zeros(8)
    high = np.full(8, 1.0)
    assert not model.beside_jump(np.concatenate([flat, high]), 0.5, runs=2).any()
    assert model.beside_jump(np.concatenate([flat, high]), 0.5)[6:10].all()  # as one run: the boundary jumps
    end = flat.copy()
    end[-1] = 1.0  # a jump into the last frame of the first foot
    got = model.beside_jump(np.concatenate([end, flat]), 0.5, runs=2)
    assert got[5:8].all() and not got[:5].any() and not got[8:].any()
    assert np.array_equal(got[:8], model.beside_jump(end, 0.5))


def _baked_on_stairs(clip: str):
    """`clip` from tests/data baked over stairs as make quality bakes it: the armature and the terrain."""
    import sys

    sys.path.insert(0, str(harness.ROOT / "tools"))
    import quality

    handlers = harness.module("core.handlers")
    built = {}
    build = quality.build_terrain

    def keep(*a, **k):
        built["terrain"] = build(*a, **k)
        return built["terrain"]

    quality.build_terrain = keep
    try:
        quality.run_clip(harness.MOCAP / clip, "stairs")
    finally:
        quality.build_terrain = build
    obj = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE" and o.contact_ik.limbs)
    return obj, handlers.caches.terrain.get([built["terrain"]], bpy.context.evaluated_depsgraph_get())


def _source_read(obj, terrain):
    """A `BatchRig` over the scene's range read from what `obj` plays (inside `measure.playing_source`: its
    source)."""
    fkread, contacts = harness.module("core.fkread"), harness.module("core.contacts")
    scene = bpy.context.scene
    start, end = scene.frame_start, scene.frame_end
    rig = batch.BatchRig(obj, terrain, end - start + 1, start, contacts.fps_of(scene))
    if fkread.read_rigs([rig], scene, restore=False)[0] is not None:  # else read by the sweep
        for i, f in enumerate(range(start, end + 1)):
            scene.frame_set(f)
            rig.read(i)
    return rig


@pytest.mark.parametrize("clip", ["cmu_12_01_walk.bvh", "fair1_jumping_zup.bvh"])
def test_a_range_computes_the_same_in_whatever_chunks(clip):
    """`BatchRig.compute` works through a long range in chunks (memory bounded). What the plan reads across
    frames (`Foot.front_speed`: how fast the front of the foot moves, over several frames) is taken over the
    rig's whole range, so every frame comes out the same however the range is cut: a range baked on its own
    is cut elsewhere than live preview's longer range. (Taken over each chunk's own rows, a chunk's first and
    last frames read a one-sided speed: cmu_01_01 over stairs in chunks of 20 frames moved a foot 0.4 rad.)"""
    measure = harness.module("core.measure")
    obj, terrain = _baked_on_stairs(clip)
    out = {}
    for chunk in (10 ** 6, 20):
        live.restore_all([obj])
        with measure.playing_source(obj, bpy.context.scene):  # the source, as Plant Feet reads it
            rig = _source_read(obj, terrain)
        out[chunk] = rig.compute(chunk=chunk)
    assert out[20].keys() == out[10 ** 6].keys()
    worst = max(float(np.abs(out[20][key][0] - values).max()) for key, (values, _w) in out[10 ** 6].items())
    assert worst == 0.0, worst


@pytest.mark.parametrize("clip", ["cmu_12_01_walk.bvh", "fair1_jumping_zup.bvh"])
def test_live_previews_fallback_plants_a_frame_as_the_whole_range_does(clip):
    """Live preview's fallback plants one frame at a time (while a frame cache is rebuilt after an edit, or
    with the cache off). What needs the frames around is carried from the last cache built
    (`live._carried`): the pelvis's speed limit, the feet's smoothing, and how fast each foot's front moves
    along the ground (`Foot.front_speed`, read over several frames: a front sliding along the ground is on
    its way and clears the terrain around it). With nothing carried for that speed, one frame read its
    front as still, and a foot beside a riser came out turned up to 0.44 rad from the bake (cmu_12_01 over
    stairs, Right Foot, frame 182; fair1_jumping: 0.27 rad)."""
    measure = harness.module("core.measure")
    obj, terrain = _baked_on_stairs(clip)
    scene = bpy.context.scene
    start, end = scene.frame_start, scene.frame_end
    worst, at = 0.0, None
    live.restore_all([obj])
    with measure.playing_source(obj, scene):  # the source, as Plant Feet reads it
        rig = _source_read(obj, terrain)
        fps = rig.fps
        whole = rig.compute()
        live._store(obj, rig, whole, start, end)  # what a frame cache keeps for the fallback
        try:
            for i, f in enumerate(range(start, end + 1)):
                scene.frame_set(f)
                one = batch.BatchRig(obj, terrain, 1, f, fps)
                one.read(0)
                out = one.compute(carried=live._carried(obj.name, f))
                for key, (values, _w) in whole.items():
                    d = float(np.abs(out[key][0][0] - values[i]).max())
                    if d > worst:
                        worst, at = d, (f, key)
        finally:
            live.invalidate_frames()
    assert worst < 1e-4, (worst, at)  # radians, and scene units for the pelvis's location


def test_frames_left_out_of_the_scene_range_are_not_read_into_the_bake():
    """Issue 20 (kind e, pops in the range's first frames): the frames a user leaves out of the scene's frame
    range (a leading T-pose, a capture's garbage frames, as the command line leaves them out) are not motion,
    and the frames read around a range for the feet's smoothing stop at the scene's range
    (`model.context_rows`): garbling them changes nothing in the bake, live preview or not. Before, they were
    read into the range's first frames (cmu_02_01 over rings: knee 1.68x the source's from its five glitch
    frames, 1.22x without them)."""
    obj, terrain, leg = _walker("stairs")
    scene = bpy.context.scene
    scene.frame_start = 9  # frames 1-8 left out: all within the frames read around a range at 24 fps
    assert model.context_frames(24.0) >= 8
    _plant(obj, terrain)
    source = obj.animation_data.action

    def baked():
        job = bake.BakeJob([obj], scene.frame_start, scene.frame_end, scene)
        job.finish()
        keys = _keys(obj)
        assert bake.use_source(obj) is not None
        assert obj.animation_data.action == source
        return keys

    cached = baked()  # from live preview's frame cache
    live.caches.frames.pop(obj.name, None)
    read = baked()  # reading the action
    # A glitch in the frames left out: the body thrown up and the legs folded.
    for f in range(1, 9):
        scene.frame_set(f)
        pb = obj.pose.bones
        pb["spine"].location = pb["spine"].location + Vector((0.0, 0.4 * leg, 0.0))
        pb["spine"].keyframe_insert("location", frame=f)
        for name in ("shin.L", "shin.R"):
            pb[name].rotation_quaternion = (0.7071, 0.7071, 0.0, 0.0)
            pb[name].keyframe_insert("rotation_quaternion", frame=f)
    live.caches.frames.pop(obj.name, None)
    garbled = baked()
    # The bake's keys over the range (the action keeps the source's own outside it, glitch and all).
    def inside(keys):
        return {k: v[v[:, 0] >= scene.frame_start] for k, v in keys.items()}

    cached, read, garbled = inside(cached), inside(read), inside(garbled)
    assert all(len(v) == scene.frame_end - scene.frame_start + 1 for v in cached.values())
    for other in (read, garbled):
        assert other.keys() == cached.keys()
        assert max(float(np.abs(other[k] - cached[k]).max()) for k in cached) <= 1e-5


def test_a_jump_of_the_whole_body_moves_every_foot_with_it_and_feet_thrown_about_a_body_are_none():
    """`model.cuts` with the feet (`contacts.body_jumps`, by which Plant Feet tells a seam from a glitch): the
    body faster than CUT_SPEED with every ankle jumping with it (within CUT_RIGID of its own step: a loop's pose
    need not match across its seam) is a jump of the whole body; the same feet thrown about a body that barely
    moves (a capture's glitch), or one foot left behind, is not."""
    fps, leg, n = 120.0, 1.0, 40
    root = np.zeros((n, 3))
    root[:, 1] = np.arange(n) * 1.4 * leg / fps
    left, right = root + [0.1, 0.0, -0.9], root + [-0.1, 0.0, -0.9]
    seam = [root.copy(), left.copy(), right.copy()]
    for p in seam:
        p[20:, 1] -= 1.5 * leg  # the whole body snapped back
    seam[1][20:, 1] += 0.4 * leg  # the left foot's pose off by 0.4 leg across the seam: still a cut
    assert model.cuts(seam[0], leg, fps, seam[1:]).tolist() == [i == 20 for i in range(n)]
    assert model.cuts(seam[0], leg, fps).tolist() == [i == 20 for i in range(n)]  # the body alone, as before
    glitch = [root.copy(), left.copy(), right.copy()]
    glitch[0][20:, 2] -= 0.14 * leg  # the pelvis drops 14% of the leg: 16.8 legs per second
    glitch[0][20:, 1] -= 0.12 * leg  # ... and 0.18 leg in all: 21 legs per second
    for p in glitch[1:]:
        p[20:, :2] -= 0.4 * leg  # the ankles 0.66 leg, 0.57 of it off the body's step
    assert model.cuts(glitch[0], leg, fps)[20]  # the body alone is fast enough
    assert not model.cuts(glitch[0], leg, fps, glitch[1:]).any()
    behind = [p.copy() for p in seam]
    behind[2][20:, 1] += 1.5 * leg  # the right foot stays where it was
    assert not model.cuts(behind[0], leg, fps, behind[1:]).any()


@pytest.mark.parametrize("fps", [60.0, 120.0])
def test_swing_smoothing_lifts_a_sole_dipping_under_its_floor_gradually_and_leaves_a_held_ball_alone(fps):
    """A capture's toe dragged through its floor just after toe-off: the plan lifts the foot by the dip to put
    the toe back on the terrain, and the dip is its floor too, so before nothing smoothed it: the foot jumped
    up by it in one frame (pymo_av8 over flat ground, the knee 1.46x the source's peak speed). Told how much of
    the correction is such a dip (`dip`), the smoothing lifts the foot over the frames around, never under the
    touch; the frames whose ball is still held (`held`) keep exactly what they had, as do contacts."""
    n = int(fps)
    pinned = np.zeros(n, dtype=bool)
    pinned[: n // 5] = True  # the contact
    held = np.zeros(n, dtype=bool)
    held[n // 5: n // 5 + n // 10] = True  # its ball held through toe-off, not pinned up the up axis
    dip = np.zeros(n)
    at = n // 5 + n // 10 + max(2, n // 40)  # the toe dips through the floor a few frames after Ball Up
    dip[at: at + max(2, n // 30)] = 0.03
    correction = dip.copy()  # lifted by the dip there; elsewhere on the terrain as animated
    floor = correction.copy()  # the plan's floor: the animated heights with the dip's clamp in it
    touch = dip.copy()
    before = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0)
    assert np.array_equal(before, correction)  # unsmoothed: a jump of the whole dip in one frame
    y = model.swing_smoothing(correction, floor, touch, pinned, fps, 1.0, dip=dip, held=held)
    assert np.all(y >= touch - 1e-12)
    assert np.array_equal(y[pinned | held], correction[pinned | held])
    assert np.abs(np.diff(y)).max() <= 0.5 * 0.03, np.abs(np.diff(y)).max()
    assert y[at - 1] > 0.0  # it comes up before the dip
    # The same through `swing_changes`, which the plan calls with the dip and the held frames after the cut.
    change = model.swing_changes([(correction, floor, touch, pinned, 1.0, None, dip, held)], fps)[0]
    assert np.allclose(correction + change, y)
