"""The demo (`make demo`), run quick into a temporary folder as its own process: it writes the baked
.blend, the before/after picture, the animation, the feet plot and its numbers; the source walk goes
through the terrain and the bake never does."""

from __future__ import annotations

import json
import sys

import bpy
import harness
import pytest
from PIL import Image

sys.path.insert(0, str(harness.ROOT / "tools"))
import demo  # noqa: E402


def test_quick_demo_writes_its_outputs_and_the_bake_keeps_the_feet_on_the_terrain(quick_demo):
    out, proc = quick_demo
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("demo.blend", "before_after.png", "demo.mp4", "feet.png", "feet.json"):
        assert str(out / name) in proc.stdout, name  # it says where its outputs are
    # Beside its own figure it prints the bake report's independent one, as the report has it.
    report = json.loads((out / "bake_report.json").read_text())["clips"][0]
    skeleton, mesh = demo.worst_independent(report)
    assert f"measured independently: {skeleton:.2%} at the skeleton's ball and toe tip, {mesh:.2%}" in proc.stdout

    # Pictures: real PNGs with something drawn on them.
    for name, min_size in (("before_after.png", (150, 150)), ("feet.png", (600, 400))):
        with Image.open(out / name) as img:
            assert img.format == "PNG"
            assert img.size[0] >= min_size[0] and img.size[1] >= min_size[1], (name, img.size)
            lo_hi = img.convert("L").getextrema()
            assert lo_hi[1] - lo_hi[0] > 100, (name, lo_hi)

    # The animation: an MP4 that Blender's own FFmpeg reads back with every rendered frame.
    video = out / "demo.mp4"
    assert video.read_bytes()[4:8] == b"ftyp"
    clip = bpy.data.movieclips.load(str(video))
    try:
        assert clip.frame_duration >= 20, clip.frame_duration
        assert tuple(clip.size) != (0, 0)
    finally:
        bpy.data.movieclips.remove(clip)

    # The .blend plays the bake and keeps the source action.
    with bpy.data.libraries.load(str(out / "demo.blend")) as (data_from, _data_to):
        actions = list(data_from.actions)
        objects = list(data_from.objects)
    assert "Walk" in actions and "Walk [Contact IK]" in actions, actions
    assert {"Walker", "Walker (source animation)", "Terrain", "Side camera"} <= set(objects), objects

    # The feet: the source goes through the stairs by a clear margin, the bake never sinks below 0.5 %
    # of the leg length, and the bake is not the source.
    feet = json.loads((out / "feet.json").read_text())
    leg = feet["leg_length"]
    frames = len(feet["frames"])
    assert frames >= 90 and leg > 0.5
    assert set(feet["feet"]) == {"foot.L", "foot.R"}
    for name, foot in feet["feet"].items():
        for key in ("terrain", "source_sole", "baked_sole", "source_clearance", "baked_clearance"):
            assert len(foot[key]) == frames, (name, key)
        assert min(foot["source_clearance"]) < -0.2 * leg, name  # the source foot deep in a step
        assert min(foot["baked_clearance"]) >= -0.005 * leg, (name, min(foot["baked_clearance"]))
        moved = max(abs(b - s) for b, s in zip(foot["baked_sole"], foot["source_sole"]))
        assert moved > 0.2 * leg, (name, moved)
        # Planted: on the terrain for much of the walk, not floating above it.
        on_ground = sum(1 for c in foot["baked_clearance"] if abs(c) <= 0.005 * leg)
        assert on_ground > 0.4 * frames, (name, on_ground)


@pytest.mark.parametrize("code, stderr, goes_on", [
    (0, "", True),
    (3, "contact_ik: warning: walk.blend: Right Leg: its ball or toe tip goes 1.47% of the leg under", True),
    (3, "", False),  # a 3 with no warning printed is not the README's "done, with a warning"
    (2, "contact_ik: error: no armature", False),
    (1, "Traceback ...", False),
])
def test_the_demo_goes_on_after_a_bake_that_warns_and_stops_on_any_other_failure(code, stderr, goes_on):
    """`make demo` is the README's first command: a bake that is done with a printed warning (exit 3) is
    shown with its warning, any other non-zero exit stops the demo."""
    assert demo.bake_went_through(code, stderr) is goes_on
