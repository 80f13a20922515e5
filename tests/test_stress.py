"""Live preview under stress (issue 7): the add-on disabled and enabled, the file saved and reloaded, undo
and redo across Plant Feet and Bake, the terrain edited while playing, the armature deleted. None raises,
leaks a handler or leaves a half-written pose. (F12 renders with live preview on: test_plant_more.py.)"""

from __future__ import annotations

import addon_utils
import bpy
import harness
import pytest
from test_plant_feet import _sole_points, _walker
from test_robustness import _fk_joints, _gap, _joints, _select, _unkey_left_leg

props = harness.module("properties")
live = harness.module("core.live")
handlers = harness.module("core.handlers")
bake = harness.module("core.bake")


def _our_handlers():
    out = {}
    for name in dir(bpy.app.handlers):
        fns = getattr(bpy.app.handlers, name)
        if isinstance(fns, list):
            ours = [fn for fn in fns if "contact_ik" in getattr(fn, "__module__", "")]
            if ours:
                out[name] = len(ours)
    return out


EXPECTED = {"load_post": 1, "frame_change_post": 1, "depsgraph_update_post": 1, "undo_post": 1, "redo_post": 1,
            "save_pre": 1, "save_post": 1}


def _planted_walker(kind="flat", unkeyed=True):
    obj, terrain, leg = _walker(kind)
    if unkeyed:
        _unkey_left_leg(obj)  # channels the animation does not key keep whatever was written last
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    return obj, terrain, leg


def _poses(obj, frames):
    out = {}
    for f in frames:
        bpy.context.scene.frame_set(f)
        out[f] = _joints(obj)
    return out


def test_handlers_are_registered_once():
    assert _our_handlers() == EXPECTED


def test_disable_and_enable_while_live_gives_the_animation_back_and_comes_back_planted():
    obj, terrain, leg = _planted_walker()
    frames = [7, 8]
    fk = _fk_joints(obj, frames)
    planted = _poses(obj, frames)
    bpy.context.scene.frame_set(7)
    addon_utils.disable(harness.PACKAGE, default_set=True)
    try:
        assert _our_handlers() == {}
        assert _gap(_joints(obj), fk[7]) <= 1e-6 * leg  # no IK left in the un-keyed channels
        assert _gap(_poses(obj, [8])[8], fk[8]) <= 1e-6 * leg
    finally:
        addon_utils.enable(harness.PACKAGE, default_set=True)
    assert _our_handlers() == EXPECTED
    s = props.settings(obj)
    assert s.live_preview and len(s.limbs) == 2 and s.terrain == terrain
    assert obj.name in live.live_rigs
    again = _poses(obj, frames)
    for f in frames:
        assert _gap(again[f], planted[f]) <= 1e-5 * leg, f


def test_save_and_reload_brings_back_settings_and_live_preview(tmp_path):
    obj, terrain, leg = _planted_walker()
    frames = [9, 10]
    planted = _poses(obj, frames)
    fk = _fk_joints(obj, frames)
    contacts = [(c.start, c.end) for c in props.settings(obj).limbs[0].contacts]
    bpy.context.scene.frame_set(9)
    path = tmp_path / "live.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    assert _gap(_joints(obj), planted[9]) <= 1e-5 * leg  # still planted after saving
    bpy.ops.wm.open_mainfile(filepath=str(path))
    assert _our_handlers() == EXPECTED
    obj = bpy.data.objects["metarig"]
    s = props.settings(obj)
    assert s.live_preview and s.terrain.name == "Flat" and len(s.limbs) == 2
    assert [(c.start, c.end) for c in s.limbs[0].contacts] == contacts
    assert live.live_rigs == {"metarig"}
    again = _poses(obj, frames)
    for f in frames:
        assert _gap(again[f], planted[f]) <= 1e-5 * leg, f
    # The file holds the animation's values, not the IK (saved with the pose given back): live preview
    # off after loading shows the animation.
    s.live_preview = False
    for f in frames:
        assert _gap(_poses(obj, [f])[f], fk[f]) <= 1e-6 * leg, f


def test_undo_and_redo_across_plant_feet_and_bake():
    # Every channel keyed, as mocap is: undo restores un-keyed channels as they were at the undo step,
    # IK included (docs/robustness.md).
    obj, terrain, leg = _walker("stairs")
    _select(obj, terrain)
    frames = [5, 6]
    fk = _poses(obj, frames)
    bpy.ops.ed.undo_push(message="start")
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    planted = _poses(obj, frames)
    bpy.ops.ed.undo_push(message="Plant Feet")
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="Bake")
    source = bake.source_of(bpy.data.objects["metarig"].animation_data.action).name

    def check(state):
        obj = bpy.data.objects["metarig"]
        s = props.settings(obj)
        action = obj.animation_data.action
        poses = _poses(obj, frames)
        if state == "start":
            assert not s.live_preview and obj.name not in live.live_rigs
            assert action.name == source
            expected = fk
        else:
            assert s.live_preview and obj.name in live.live_rigs
            assert bake.is_baked(action) == (state == "baked")
            expected = planted
        for f in frames:
            assert _gap(poses[f], expected[f]) <= 1e-5 * leg, (state, f)

    check("baked")
    for op, state in ((bpy.ops.ed.undo, "planted"), (bpy.ops.ed.undo, "start"), (bpy.ops.ed.redo, "planted"),
                      (bpy.ops.ed.redo, "baked"), (bpy.ops.ed.undo, "planted")):
        assert op() == {"FINISHED"}
        check(state)
    assert _our_handlers() == EXPECTED


@pytest.mark.parametrize("cached", [True, False])
def test_terrain_edited_while_playing(cached):
    obj, terrain, leg = _planted_walker(unkeyed=False)
    scene = bpy.context.scene
    offset = props.settings(obj).limbs[0].foot_offset
    live.USE_FRAME_CACHE = cached
    try:
        lows = {}
        for f in range(1, 25):
            if f == 12:  # the ground rises under the character mid-play
                for v in terrain.data.vertices:
                    v.co.z = 0.1 * leg
                terrain.data.update()
                bpy.context.view_layer.update()
                if cached:
                    assert obj.name not in handlers.caches.frames
                    assert live.precompute(obj, scene) is not None  # what the UI does after a pause
            scene.frame_set(f)
            lows[f] = min(p.z for side in "LR" for p in _sole_points(obj, side, offset))
    finally:
        live.USE_FRAME_CACHE = True
    assert min(lows[f] for f in range(1, 12)) == pytest.approx(0.0, abs=1e-3 * leg)
    assert min(lows[f] for f in range(12, 25)) == pytest.approx(0.1 * leg, abs=1e-3 * leg)


def test_armature_deleted_while_live_leaves_nothing_behind():
    obj, terrain, leg = _planted_walker()
    scene = bpy.context.scene
    scene.frame_set(3)
    assert "metarig" in live.live_rigs and "metarig" in handlers.caches.layers  # Blender plays its track
    bpy.data.objects.remove(obj)
    for f in (4, 5, 4):
        scene.frame_set(f)
    bpy.context.view_layer.update()
    assert "metarig" not in live.live_rigs
    assert "metarig" not in handlers.caches.rigs and "metarig" not in handlers.caches.frames
    assert "metarig" not in handlers.caches.layers
    assert not [a for a in bpy.data.actions if a.get("contact_ik_preview") is not None]  # no orphan left
    assert _our_handlers() == EXPECTED
    # A new armature of the same name starts clean.
    obj, terrain, leg = _planted_walker()
    assert live.live_rigs == {"metarig"}
