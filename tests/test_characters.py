"""The characters of tools/characters.py come in as users get them: a Y-up centimetre FBX (Mixamo's
convention) imports with its armature object turned 90 degrees about X and scaled 0.01, a glTF of the same
character too, and the in-place walk with root motion keeps its world motion. (docs/characters.md measures
them; this checks that the cases are what they claim to be.)"""

from __future__ import annotations

import math
import sys

import harness

sys.path.insert(0, str(harness.ROOT / "tools"))
import characters  # noqa: E402


def test_the_mixamo_style_fbx_comes_in_rotated_and_scaled(tmp_path):
    obj = characters.fbx_mixamo(tmp_path)
    assert [round(math.degrees(a), 3) for a in obj.rotation_euler] == [90.0, 0.0, 0.0]
    assert [round(s, 6) for s in obj.scale] == [0.01, 0.01, 0.01]
    assert any(m.type == "MESH" and any(md.type == "ARMATURE" for md in m.modifiers)
               for m in obj.children), "the skinned body came in bound to the armature"


def test_root_motion_on_the_object_moves_the_feet_as_the_walk_does(tmp_path):
    import bpy

    moved = characters.root_motion_object(tmp_path)
    scene = bpy.context.scene
    got = []
    for f in (1, 45):
        scene.frame_set(f)
        got.append(moved.matrix_world @ moved.pose.bones["spine"].head)
    ref = characters.walk(tmp_path)
    want = []
    for f in (1, 45):
        bpy.context.scene.frame_set(f)
        want.append(ref.matrix_world @ ref.pose.bones["spine"].head)
    assert (got[1] - got[0]).length > 1.0  # the hips travel, carried by the object
    assert ((got[1] - got[0]) - (want[1] - want[0])).length < 1e-4
