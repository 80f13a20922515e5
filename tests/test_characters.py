"""The characters of tools/characters.py come in as users get them: a Y-up centimetre FBX (Mixamo's
convention) imports with its armature object turned 90 degrees about X and scaled 0.01, a glTF of the same
character too, and the in-place walk with root motion keeps its world motion. (docs/characters.md measures
them; this checks that the cases are what they claim to be.)"""

from __future__ import annotations

import math
import sys

import harness
import pytest

sys.path.insert(0, str(harness.ROOT / "tools"))
import characters  # noqa: E402
import quality  # noqa: E402


def test_the_mixamo_style_fbx_comes_in_rotated_and_scaled(tmp_path):
    obj = characters.fbx_mixamo(tmp_path)
    assert [round(math.degrees(a), 3) for a in obj.rotation_euler] == [90.0, 0.0, 0.0]
    assert [round(s, 6) for s in obj.scale] == [0.01, 0.01, 0.01]
    assert any(m.type == "MESH" and any(md.type == "ARMATURE" for md in m.modifiers)
               for m in obj.children), "the skinned body came in bound to the armature"


@pytest.mark.parametrize("case,bone", [("root_motion_object", "spine"), ("root_motion_bone", "foot.L")])
def test_root_motion_moves_the_body_as_the_walk_does(case, bone, tmp_path):
    """The walk in place, its travel on the armature object or on a root bone, moves `bone` through the
    world exactly as the walk itself does (so the root motion cases measure what they claim)."""
    import bpy

    def track(rig: bpy.types.Object) -> list:  # `bone` in world space at frames 1 and 45
        out = []
        for f in (1, 45):
            bpy.context.scene.frame_set(f)
            out.append(rig.matrix_world @ rig.pose.bones[bone].head)
        return out

    moved = characters.BUILDERS[case](tmp_path)
    if case == "root_motion_bone":
        assert moved.pose.bones["spine"].parent.name == "root"
    got = track(moved)
    want = track(characters.walk(tmp_path))  # a new scene: `moved` is gone
    assert (got[1] - got[0]).length > 1.0  # it travels, carried by the object or the root bone
    assert all((g - w).length < 1e-4 for g, w in zip(got, want)), (got, want)


def test_the_rigify_rigs_walk_through_their_controls_as_the_metarig_does(tmp_path):
    """The generated rig, keyed on its controls (IK and FK), moves its deform feet where the metarig's walk
    puts the metarig's feet (so the Rigify case measures what it claims)."""
    import bpy

    ref = characters.walk(tmp_path)
    scene = bpy.context.scene
    want = {}
    for f in (10, 40):
        scene.frame_set(f)
        want[f] = {s: ref.matrix_world @ ref.pose.bones[f"foot.{s}"].head for s in "LR"}
    for mode in ("FK", "IK"):
        rig = characters._rigify(mode)
        assert rig.pose.bones["thigh_parent.L"]["IK_FK"] == (1.0 if mode == "FK" else 0.0)
        assert not [o for o in bpy.context.scene.objects if o.type == "ARMATURE" and o is not rig]
        for f in (10, 40):
            bpy.context.scene.frame_set(f)
            for s in "LR":
                got = rig.matrix_world @ rig.pose.bones[f"DEF-foot.{s}"].head
                assert (got - want[f][s]).length < 0.01, (mode, f, s, got, want[f][s])


def test_a_rigify_rig_is_driven_through_its_fk_controls_and_never_its_org_def_or_mch_bones(tmp_path):
    import bpy

    rig = characters._rigify("FK")
    setup = harness.module("core.setup")
    setup.ensure_limbs(rig)
    s = rig.contact_ik
    legs = [lb for lb in s.limbs if lb.kind == "FOOT"]
    assert [(tuple(b.bone for b in lb.bones), lb.end_bone, lb.toe_bone) for lb in legs] == [
        (("thigh_fk.L", "shin_fk.L"), "foot_fk.L", "toe_fk.L"), (("thigh_fk.R", "shin_fk.R"), "foot_fk.R", "toe_fk.R")]
    assert s.pelvis_bone == "torso"
    written = {c.bone for c in harness.module("core.checks").driven_channels(rig)}
    assert written and not [n for n in written if n.startswith(("ORG-", "DEF-", "MCH-"))], written
    # The sole comes from the body, weighted to the deform feet the controls move.
    sole = harness.module("core.anatomy").sole_of(rig, "foot_fk.L", "toe_fk.L", None)
    assert sole.source == "the skinned mesh 'Body'", sole.source
    assert bpy.context.scene.objects["Body"].modifiers["Armature"].object is rig


def _deform_feet(rig, frames):
    """The DEF feet's world heads at `frames`, as the scene plays them."""
    import bpy

    out = {}
    for f in frames:
        bpy.context.scene.frame_set(f)
        out[f] = [rig.matrix_world @ rig.pose.bones[f"DEF-foot.{s}"].head for s in "LR"]
    return out


def test_a_rigify_rig_in_ik_mode_is_driven_through_its_ik_feet_and_bakes_what_live_preview_shows(tmp_path):
    """A leg in IK mode: its joints read from its ORG bones, driven through foot_ik (location and rotation),
    the body through torso, nothing ORG, DEF or MCH written; live preview (the frame cache, and the
    frame-by-frame fallback) and the bake play the same deform feet."""
    import bpy

    rig = characters._rigify("IK")
    scene = bpy.context.scene
    path, leg = characters._feet_path(rig, scene)
    terrain = quality.build_terrain("stairs", path, leg)
    setup = harness.module("core.setup")
    checks = harness.module("core.checks")
    setup.ensure_limbs(rig)
    s = rig.contact_ik
    legs = [lb for lb in s.limbs if lb.kind == "FOOT"]
    assert [(tuple(b.bone for b in lb.bones), lb.end_bone, lb.toe_bone, lb.control_bone) for lb in legs] == [
        (("ORG-thigh.L", "ORG-shin.L"), "ORG-foot.L", "ORG-toe.L", "foot_ik.L"),
        (("ORG-thigh.R", "ORG-shin.R"), "ORG-foot.R", "ORG-toe.R", "foot_ik.R")]
    assert s.pelvis_bone == "torso"
    written = {(c.bone, c.prop) for c in checks.driven_channels(rig)}
    assert written == {("foot_ik.L", "location"), ("foot_ik.L", "rotation_quaternion"), ("foot_ik.R", "location"),
                       ("foot_ik.R", "rotation_quaternion"), ("torso", "location")}, written
    assert checks.rig_warnings(rig) == []
    sole = harness.module("core.anatomy").sole_of(rig, "ORG-foot.L", "ORG-toe.L", None)
    assert sole.source == "the skinned mesh 'Body'", sole.source
    # Planted: only the controls' (and torso's) channels change.
    before = {pb.name: (tuple(pb.location), tuple(pb.rotation_quaternion)) for pb in rig.pose.bones}
    characters._select([rig, terrain])
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    frames = [3, 17, 30, 44, 58, 71, 86]
    shown = _deform_feet(rig, frames)
    scene.frame_set(scene.frame_start)
    changed = {pb.name for pb in rig.pose.bones if (tuple(pb.location), tuple(pb.rotation_quaternion)) != before[pb.name]}
    assert changed and changed <= {"foot_ik.L", "foot_ik.R", "torso"}, changed
    source = _unplanted(rig, frames)
    moved = max((a - b).length for f in frames for a, b in zip(shown[f], source[f]))
    assert moved > 0.02 * leg, "the feet are planted (on stairs the feet move)"
    # The frame-by-frame fallback (an edit dropped the frame cache) shows the same.
    live = harness.module("core.live")
    live.USE_FRAME_CACHE = False
    try:
        live.caches.frames.clear()
        fallback = _deform_feet(rig, frames)
    finally:
        live.USE_FRAME_CACHE = True
    gap = max((a - b).length for f in frames for a, b in zip(fallback[f], shown[f]))
    assert gap <= 1e-4 * leg, gap
    characters._select([rig])
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}
    baked = _deform_feet(rig, frames)
    gap = max((a - b).length for f in frames for a, b in zip(baked[f], shown[f]))
    assert gap <= 1e-4 * leg, gap


def _unplanted(rig, frames):
    """The DEF feet as the source animation plays them (live preview paused)."""
    state = harness.module("core.state")
    with state.paused([rig]):
        return _deform_feet(rig, frames)


def test_a_rigify_ik_foot_under_the_torso_moves_with_the_body(tmp_path, monkeypatch):
    """With the IK feet's parent switched to the torso (IK_parent 2), the torso's move carries the feet's
    parent: the feet are placed against it and still land (as with the root as parent)."""
    reader = harness.module("core.reader")
    monkeypatch.setitem(characters.BUILDERS, "rigify_ik", lambda tmp: characters._rigify("IK", ik_parent=2))
    row = characters.run_case("rigify_ik", "stairs", tmp_path)
    assert not row.get("error"), row.get("traceback")
    import bpy

    rig = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    assert reader.pelvis_follow(rig, "foot_ik.L", "torso") == 1.0
    got = characters.verdict(row)
    assert got["penetration"] and got["skate"] and got["body intact"], (got, row["feet"])


# Issue 19's targets the model does not meet yet (docs/characters.md), by case and terrain. Strict: the day
# one passes, the test says so. None at present: the last, range_inside on stairs (knee 1.41x), went when a
# footprint on a step edge took the shortest move off it rather than the one that kept the ankle's level.
KNOWN: dict[tuple[str, str], set[str]] = {}


@pytest.mark.parametrize("kind", ["stairs", "noise"])
@pytest.mark.parametrize("case", characters.CASES)
def test_the_character_meets_the_targets_measured_as_a_user_sees_it(case, kind, tmp_path, request):
    """Plant Feet + Bake on each character as users bring it, measured independently of the model (the
    skeleton's ball and toe tip and the skinned sole against the terrain by ray cast, skate over the
    source's own contacts, the knee against the source's): penetration and skate <= 1% of the leg, knee
    <= 1.2x the source's, and Plant Feet's reported figure within 0.2% of the leg of the independent one."""
    row = characters.run_case(case, kind, tmp_path)
    assert not row.get("error"), row.get("traceback")
    assert row["plant_feet"] == ["FINISHED"] and row["bake"] == ["FINISHED"], row
    assert len(row["feet"]) == 2 and all(f["source_contacts"] >= 2 for f in row["feet"]), row["feet"]
    got = characters.verdict(row)
    figures = [{k: f[k] for k in ("penetration_skeleton_rel", "penetration_mesh_rel", "skate_max_rel", "knee_ratio")}
               for f in row["feet"]]
    known = KNOWN.get((case, kind), set())
    assert all(ok for k, ok in got.items() if k not in known), (got, figures)
    if known:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"not met yet: {', '.join(sorted(known))}"))
        assert all(got[k] for k in known), figures
