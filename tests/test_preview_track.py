"""Live preview played by Blender itself (issue 21): the frame cache on an NLA track above the animation.

What Blender evaluates equals the frame cache; the track comes and goes without a trace (live preview off,
an edit, frames outside the range, a save, undo, a deleted rig, the extension disabled); rigs the track
cannot play over (an action shared with another rig, a strip being tweaked) are planted by the handler.
"""

from __future__ import annotations

import addon_utils
import bpy
import harness
import numpy as np
import pytest
from test_plant_feet import _fcurves, _plant, _walker

anim = harness.module("core.anim")
live = harness.module("core.live")
layer = harness.module("core.layer")
handlers = harness.module("core.handlers")


def _tracks(obj):
    return [t.name for t in obj.animation_data.nla_tracks] if obj.animation_data else []


def _muted(obj):
    return sorted((fc.data_path, fc.array_index) for fc in _fcurves(obj) if fc.mute)


def _preview_actions():
    return [a.name for a in bpy.data.actions if a.get(layer.MARK) is not None]


def _evaluated(obj, keys):
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).pose.bones
    return {k: np.array(getattr(ev[k[0]], k[1])) for k in keys}


def _gap_to_cache(obj, frame):
    cache = live.caches.frames[obj.name]
    got = _evaluated(obj, cache.values)
    return max(float(np.abs(got[k] - cache.values[k][frame - cache.start]).max()) for k in got)


def _between_frames(obj, cache, frames):
    """At subframe 0.25 after each of `frames`: (how far the pose is from the straight line between that frame
    and the next, how far the pose moves between the two), worst over the frames."""
    scene = bpy.context.scene
    between = moving = 0.0
    for f in frames:
        scene.frame_set(f)
        a = _evaluated(obj, cache.values)
        scene.frame_set(f + 1)
        b = _evaluated(obj, cache.values)
        scene.frame_set(f, subframe=0.25)
        mid = _evaluated(obj, cache.values)
        between = max(between, max(float(np.abs(mid[k] - (0.75 * a[k] + 0.25 * b[k])).max()) for k in mid))
        moving = max(moving, max(float(np.abs(b[k] - a[k]).max()) for k in mid))
    return between, moving


def _planted(kind="noise"):
    obj, terrain, leg = _walker(kind)
    _plant(obj, terrain)
    bpy.context.scene.frame_set(bpy.context.scene.frame_start)
    return obj, terrain, leg


def test_live_preview_plays_its_frame_cache_from_a_track_blender_evaluates_without_the_handler():
    obj, _terrain, _leg = _planted()
    scene = bpy.context.scene
    assert obj.name in live.caches.frames and obj.name in live.caches.layers
    assert _tracks(obj) == [layer.TRACK] and obj.animation_data.nla_tracks[-1].lock
    assert len(_preview_actions()) == 1
    cache = live.caches.frames[obj.name]
    keyed = {(fc.data_path, fc.array_index) for fc in _fcurves(obj)}
    channel = harness.module("core.checks").Channel
    solved = {(channel(b, p, v.shape[1]).data_path, j) for (b, p), v in cache.values.items() for j in range(v.shape[1])}
    assert keyed & solved and _muted(obj) == sorted(keyed & solved)  # the keyed solved channels, muted
    # Blender alone plays it: the frame change handler is taken out and every frame is still the cache's.
    lst = bpy.app.handlers.frame_change_post
    lst.remove(handlers.contact_ik_frame_change_post)
    try:
        worst = 0.0
        for f in range(cache.start, cache.end + 1):
            scene.frame_set(f)
            worst = max(worst, _gap_to_cache(obj, f))
        # Between frames (motion blur, subframe playback) the track interpolates linearly, as linear keys do.
        between, _moving = _between_frames(obj, cache, range(cache.start, cache.end, 7))
    finally:
        lst.append(handlers.contact_ik_frame_change_post)
    assert worst < 1e-6
    assert between < 1e-6
    # The cache is not the animation: live preview off, the same frame is another pose.
    values, start = cache.values, cache.start
    harness.module("properties").settings(obj).live_preview = False
    scene.frame_set(10)
    got = _evaluated(obj, values)
    assert max(float(np.abs(got[k] - values[k][10 - start]).max()) for k in got) > 1e-3


def test_live_preview_off_gives_everything_back_and_keeps_the_users_mutes_and_tracks():
    obj, terrain, leg = _walker("stairs")
    scene = bpy.context.scene
    src = obj.animation_data.action
    # The user's own: a muted F-curve of a solved bone, and an NLA track (below) moving a bone not solved.
    user_muted = next(fc for fc in _fcurves(obj) if fc.data_path.startswith('pose.bones["shin.L"]'))
    user_muted.mute = True
    extra = bpy.data.actions.new("Spine sway")
    extra_slot = extra.slots.new(id_type="OBJECT", name=obj.name) if anim.LAYERED else None
    owner = anim.channels(extra, extra_slot, create=True)
    fc = anim.ensure_fcurve(owner, 'pose.bones["spine.003"].location', 0, "spine.003")
    fc.keyframe_points.insert(1, 0.0)
    fc.keyframe_points.insert(48, 0.05)
    track = obj.animation_data.nla_tracks.new()
    track.name = "User track"
    strip = track.strips.new("sway", 1, extra)
    if extra_slot is not None:
        strip.action_slot = extra_slot
    strip.blend_type = "ADD"
    before = (anim.channel_snapshot(src, anim.slot_of(obj)), _muted(obj), harness.user_actions(), _tracks(obj))
    _plant(obj, terrain)
    assert _tracks(obj) == ["User track", layer.TRACK]
    scene.frame_set(48)
    assert abs(obj.pose.bones["spine.003"].location[0] - 0.05) < 1e-6  # the user's track still plays
    assert _gap_to_cache(obj, 48) < 1e-6
    assert user_muted.mute
    props = harness.module("properties")
    props.settings(obj).live_preview = False
    assert (anim.channel_snapshot(src, anim.slot_of(obj)), _muted(obj), harness.user_actions(), _tracks(obj)) == before
    assert _preview_actions() == [] and user_muted.mute


def test_an_edit_takes_the_rig_off_its_track_until_the_cache_is_built_again():
    obj, _terrain, leg = _planted("stairs")
    scene = bpy.context.scene
    thigh = next(fc for fc in _fcurves(obj) if fc.data_path == 'pose.bones["thigh.L"].rotation_quaternion'
                 and fc.array_index == 1)
    assert thigh.mute
    thigh.keyframe_points[1].co.y += 0.2  # an edit of the animation
    thigh.update()
    obj.animation_data.action.update_tag()
    bpy.context.view_layer.update()  # the edit is evaluated (as the UI does at once): frame by frame now
    scene.frame_set(12)
    assert obj.name not in live.caches.frames and obj.name not in live.caches.layers
    assert layer.TRACK not in _tracks(obj) and _preview_actions() == [] and not _muted(obj)
    by_frame = _evaluated(obj, [("thigh.L", "rotation_quaternion"), ("shin.L", "rotation_quaternion")])
    assert live.precompute(obj, scene) is not None
    assert obj.name in live.caches.layers and _tracks(obj) == [layer.TRACK]
    scene.frame_set(12)
    again = _evaluated(obj, by_frame)
    assert max(float(np.abs(again[k] - by_frame[k]).max()) for k in by_frame) < 1e-5
    assert _gap_to_cache(obj, 12) < 1e-6


def test_frames_outside_the_cached_range_are_solved_frame_by_frame_and_the_track_comes_back():
    obj, _terrain, _leg = _planted()
    scene = bpy.context.scene
    end = live.caches.frames[obj.name].end
    scene.frame_set(end + 3)
    assert layer.TRACK not in _tracks(obj) and obj.name not in live.caches.layers and not _muted(obj)
    assert obj.name in live.caches.frames  # still valid: only played by the handler here
    scene.frame_set(end - 3)
    assert obj.name in live.caches.layers and _gap_to_cache(obj, end - 3) < 1e-6


def test_a_saved_file_holds_no_track_and_reopens_as_the_users_animation(tmp_path):
    obj, _terrain, _leg = _planted()
    path = str(tmp_path / "shot.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert _tracks(obj) == [layer.TRACK]  # back after the save
    harness.reset_scene()
    with bpy.data.libraries.load(path) as (data_from, _data_to):
        saved_actions = list(data_from.actions)
    assert saved_actions == ["metarigAction"]
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["metarig"]
    assert _tracks(obj) == [] and not _muted(obj) and _preview_actions() == []
    assert obj.contact_ik.live_preview and obj.name in live.live_rigs


def test_undo_leaves_no_track_built_for_other_data():
    obj, _terrain, _leg = _planted()
    bpy.ops.ed.undo_push(message="planted")
    live.invalidate_frames()
    assert live.precompute(obj, bpy.context.scene) is not None
    bpy.ops.ed.undo_push(message="rebuilt")
    bpy.ops.ed.undo()
    obj = bpy.data.objects["metarig"]
    assert _tracks(obj) == [] and not _muted(obj) and _preview_actions() == []
    assert live.caches.frames == {} and live.caches.layers == set()
    bpy.context.scene.frame_set(5)  # frame by frame until the cache is built again
    assert obj.name in live.live_rigs


def test_a_deleted_rig_leaves_no_preview_action_and_its_action_unmuted():
    obj, _terrain, _leg = _planted()
    src = obj.animation_data.action
    src.use_fake_user = True
    assert any(fc.mute for fc in anim.fcurves(src, anim.slot_of(obj)))
    bpy.data.objects.remove(obj)
    bpy.context.scene.frame_set(3)
    bpy.context.view_layer.update()
    assert _preview_actions() == []
    assert not any(fc.mute for bag in [anim.channels(src, src.slots[0]) if anim.LAYERED else src]
                   for fc in bag.fcurves)


def test_disabling_the_extension_removes_the_track():
    obj, _terrain, _leg = _planted()
    addon_utils.disable(harness.PACKAGE, default_set=True)
    try:
        assert _tracks(obj) == [] and not _muted(obj) and _preview_actions() == []
    finally:
        addon_utils.enable(harness.PACKAGE, default_set=True)


@pytest.mark.parametrize("why", ["shared action", "tweak mode"])
def test_a_rig_the_track_cannot_play_over_is_planted_by_the_handler(why):
    obj, terrain, leg = _walker("noise")
    scene = bpy.context.scene
    if why == "shared action":
        other = obj.copy()  # the same action, played by a rig without live preview
        scene.collection.objects.link(other)
        other.location.x += 3 * leg
    else:
        ad = obj.animation_data
        track = ad.nla_tracks.new()
        strip = track.strips.new("walk", 1, ad.action)
        if anim.LAYERED:
            strip.action_slot = ad.action_slot
        ad.action = None
        track.strips[0].select = True
        ad.use_tweak_mode = True
    assert (layer.why_not(obj) is not None) == (why == "tweak mode")
    _plant(obj, terrain)
    assert layer.TRACK not in _tracks(obj) and not _muted(obj) and obj.name not in live.caches.layers
    scene.frame_set(20)
    assert obj.name in live.caches.frames and _gap_to_cache(obj, 20) < 1e-6  # written from the cache


def test_rigs_sharing_an_action_play_from_tracks_together_and_leave_them_together():
    obj, terrain, leg = _walker("noise")
    scene = bpy.context.scene
    other = obj.copy()  # the same action, and the same settings
    scene.collection.objects.link(other)
    other.location.x += 3 * leg
    _plant(obj, terrain)
    assert obj.name not in live.caches.layers  # the other rig still plays the action: nothing muted
    assert not _muted(obj)
    _plant(other, terrain)  # a setting changed: every cache dropped, built again together (as the UI does)
    live.precompute_all([obj, other], scene)
    scene.frame_set(20)
    assert {obj.name, other.name} <= live.caches.layers and _muted(obj)
    assert _gap_to_cache(obj, 20) < 1e-6 and _gap_to_cache(other, 20) < 1e-6
    cache = live.caches.frames[obj.name]
    harness.module("properties").settings(other).live_preview = False
    assert not live.caches.layers and not _muted(obj) and _preview_actions() == []
    scene.frame_set(21)  # still planted, by the handler
    got = _evaluated(obj, cache.values)
    assert obj.name not in live.caches.layers
    assert max(float(np.abs(got[k] - cache.values[k][21 - cache.start]).max()) for k in got) < 1e-4


def test_in_the_ui_the_switch_plants_this_frame_at_once_and_builds_the_cache_right_after(monkeypatch):
    obj, _terrain, _leg = _planted()
    scene = bpy.context.scene
    s = harness.module("properties").settings(obj)
    s.live_preview = False
    monkeypatch.setattr(live, "BUILD_LATER", True)  # as in the UI (background Blender builds it at once)
    if bpy.app.timers.is_registered(live._rebuild):
        bpy.app.timers.unregister(live._rebuild)
    s.live_preview = True
    try:
        assert obj.name not in live.caches.frames and bpy.app.timers.is_registered(live._rebuild)
        assert obj.name in live.caches.rigs  # this frame planted by the handler meanwhile
    finally:
        if bpy.app.timers.is_registered(live._rebuild):
            bpy.app.timers.unregister(live._rebuild)
    live._rebuild()  # what the timer runs
    assert obj.name in live.caches.frames and obj.name in live.caches.layers
    scene.frame_set(7)
    assert _gap_to_cache(obj, 7) < 1e-6


@pytest.mark.parametrize("how", ["track deleted", "rig renamed"])
def test_a_track_deleted_by_hand_or_a_renamed_rig_leaves_no_mute_behind(how, tmp_path):
    obj, _terrain, _leg = _planted()
    scene = bpy.context.scene
    assert _muted(obj)
    if how == "track deleted":
        ad = obj.animation_data
        ad.nla_tracks.remove(ad.nla_tracks[layer.TRACK])
    else:
        obj.name = "Hero"
    bpy.context.view_layer.update()
    scene.frame_set(4)
    live.invalidate_frames()  # the next edit, at the latest
    assert not _muted(obj) and _preview_actions() == [] and layer.TRACK not in _tracks(obj)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "after.blend"))
    harness.reset_scene()
    with bpy.data.libraries.load(str(tmp_path / "after.blend")) as (data_from, _data_to):
        assert all(not name.startswith(layer.TRACK) for name in data_from.actions)


def test_a_rig_whose_action_is_also_stashed_in_its_own_nla_plays_from_its_track():
    """Imports and the Action Editor stash actions in muted NLA tracks of the same rig: one more user of the
    action, but no other rig loses its channels."""
    obj, terrain, _leg = _walker("noise")
    ad = obj.animation_data
    stash = ad.nla_tracks.new()
    stash.name = "[Action Stash]"
    strip = stash.strips.new("walk", 1, ad.action)
    if hasattr(strip, "action_slot"):
        strip.action_slot = ad.action_slot
    stash.mute = True
    assert ad.action.users - int(ad.action.use_fake_user) == 2
    _plant(obj, terrain)
    bpy.context.scene.frame_set(9)
    assert obj.name in live.caches.layers and _tracks(obj) == ["[Action Stash]", layer.TRACK]
    assert _gap_to_cache(obj, 9) < 1e-6
    harness.module("properties").settings(obj).live_preview = False
    assert _tracks(obj) == ["[Action Stash]"] and not _muted(obj)


def test_a_range_before_frame_zero_plays_between_frames_as_linear_keys_do():
    """Before frame 0 the track keeps keys (Blender interpolates a sampled curve's negative subframes toward
    the wrong neighbour): what plays between two frames is still the straight line between them."""
    obj, terrain, _leg = _walker("noise")
    scene = bpy.context.scene
    shift = 30
    for fc in _fcurves(obj):
        for k in fc.keyframe_points:
            k.co.x -= shift
            k.handle_left.x -= shift
            k.handle_right.x -= shift
        fc.update()
    # (The scene's range cannot start before frame 0; the preview range can, and live preview plays it.)
    scene.use_preview_range = True
    scene.frame_preview_start, scene.frame_preview_end = scene.frame_start - shift, scene.frame_end - shift
    bpy.context.view_layer.update()
    _plant(obj, terrain)
    scene.frame_set(scene.frame_preview_start)
    cache = live.caches.frames[obj.name]
    assert obj.name in live.caches.layers and cache.start < -10
    between, moving = _between_frames(obj, cache, range(cache.start, -2, 3))
    assert moving > 1e-3  # the pose moves from frame to frame there, so a wrong neighbour would show
    assert between < 1e-6


def test_the_cache_build_leaves_the_user_on_their_frame_whether_it_succeeds_or_fails(monkeypatch):
    """The build sets the check frames and then the user's frame once (the reader does not set it back first):
    the user stays on their frame, planted from the cache; and when the build fails half way, on their frame
    still, with the error raised, not reported as a built cache."""
    obj, _terrain, _leg = _planted("flat")
    scene = bpy.context.scene
    scene.frame_set(17)
    sets = []

    def record(sc, *_args):
        sets.append(sc.frame_current)

    bpy.app.handlers.frame_change_pre.append(record)
    try:
        assert obj.name in live.precompute_all([obj], scene)
    finally:
        bpy.app.handlers.frame_change_pre.remove(record)
    assert scene.frame_current == 17 and sets[-1] == 17 and sets.count(17) == 1, sets  # not set back by the reader too
    assert _gap_to_cache(obj, 17) < 1e-6
    batch = harness.module("core.batch")

    def broken(*args, **kwargs):
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(batch, "compute_all", broken)
    with pytest.raises(RuntimeError, match="broken on purpose"):
        live.precompute_all([obj], scene)
    assert scene.frame_current == 17
    assert obj.name not in live.caches.frames


def test_a_crowd_planned_in_one_pass_gives_each_rig_what_it_computes_alone(monkeypatch):
    """`batch.compute_all` (live preview's frame caches for many rigs) plans the feet of rigs on one terrain
    together and solves their legs together, their rows one after another: each rig's channels are exactly
    the ones it computes alone, whatever the others are (placed elsewhere, turned, scaled, on another floor)."""
    batch, fkread = harness.module("core.batch"), harness.module("core.fkread")
    props = harness.module("properties")
    obj, terrain, leg = _walker("stairs")
    scene = bpy.context.scene
    _plant(obj, terrain)
    props.settings(obj).live_preview = False
    rigs = [obj]
    for _k in range(3):
        o = obj.copy()
        scene.collection.objects.link(o)
        rigs.append(o)
    rigs[1].location.x += 1.5 * leg
    rigs[2].rotation_euler.z = 0.7
    rigs[2].location.y -= 2.0 * leg
    rigs[3].scale = (1.3,) * 3
    props.settings(rigs[3]).floor_height += 0.05 * leg
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()

    def read(o):
        rig = batch.BatchRig(o, live.caches.terrain.get(live.terrain_objects(live.settings(o)), depsgraph), 60, -2,
                             24.0, context=(3, 3))
        assert fkread.read_rigs([rig], scene) == [None]
        return rig

    alone = [read(o).compute() for o in rigs]
    calls = []
    plan_feet = batch.model.plan_feet
    monkeypatch.setattr(batch.model, "plan_feet", lambda *a: calls.append(len(a[0])) or plan_feet(*a))
    solves = []
    solve = batch._solve_closed_rows
    monkeypatch.setattr(batch, "_solve_closed_rows", lambda parts: solves.append(len(parts)) or solve(parts))
    together = batch.compute_all([read(o) for o in rigs])
    assert calls == [2 * len(rigs)]  # every rig's two feet planned in one pass
    assert solves == [len(rigs)]  # and their legs solved in one
    for a, b in zip(alone, together):
        assert a.keys() == b.keys() and a
        for key in a:
            assert np.array_equal(a[key][0], b[key][0]) and np.array_equal(a[key][1], b[key][1]), key
    # The rigs differ: the test compares something.
    key = next(k for k in alone[0] if k[1] == "rotation_quaternion")
    assert all(not np.allclose(alone[0][key][0], x[key][0]) for x in alone[1:])


def test_a_pass_never_holds_two_chunks_of_one_rig_nor_more_than_its_rows():
    """`batch._batches`: chunks of different rigs with the same key share a pass, up to STACK_ROWS rows; a
    rig's own chunks (a long range cut to bound memory) never do; other keys go apart."""
    batch = harness.module("core.batch")

    class Obj:
        def __init__(self, p):
            self.p = p

        def as_pointer(self):
            return self.p

    class Part:
        def __init__(self, rig, frames, key):
            self.obj, self.frames, self.key = Obj(rig), frames, key

    rows = batch.STACK_ROWS
    parts = [Part(1, 100, "a"), Part(1, 100, "a"), Part(2, 100, "a"), Part(3, 100, "b"),
             Part(4, rows - 150, "a"), Part(5, 100, "a")]
    got = batch._batches(list(enumerate(parts)), lambda p: p.key)
    assert sorted(i for b in got for i in b) == list(range(len(parts)))  # every chunk, once
    for b in got:
        assert len({parts[i].key for i in b}) == 1
        assert len({parts[i].obj.p for i in b}) == len(b)  # no rig twice
        assert sum(parts[i].frames for i in b) <= rows
    assert [2] not in got and len(got) == 4  # a chunk of another rig joins a pass: [[0], [1, 2], [3], [4, 5]]
