"""Motion quality on real mocap, guarded in CI: the issue's targets on two clips (a 120 fps CMU walk and a
30 fps Z-up FAIR walk with heavy foot skate) over two terrains, and pops on every clip pinned in tests/data
over four terrains, with no per-clip tuning. The whole table (the broad corpus of ../shared/mocap, four
terrains) is `make quality` -> docs/quality.md."""

from __future__ import annotations

import subprocess
import sys
from typing import Optional

import harness
import pytest

sys.path.insert(0, str(harness.ROOT / "tools"))
import compare  # noqa: E402
import corpus  # noqa: E402
import quality  # noqa: E402

CLIPS = ["cmu_12_01_walk.bvh", "fair1_zombie_walk_zup.bvh"]
_rows: dict[tuple[str, str], dict] = {}


def _row(clip: str, terrain: str) -> dict:
    if (clip, terrain) not in _rows:
        _rows[clip, terrain] = quality.run_clip(harness.MOCAP / clip, terrain)
    return _rows[clip, terrain]


@pytest.mark.parametrize("terrain", ["flat", "noise"])
@pytest.mark.parametrize("clip", CLIPS)
def test_contacts_penetration_hover_skate_and_bone_lengths(clip, terrain):
    row = _row(clip, terrain)
    assert len(row["feet"]) == 2
    for foot in row["feet"]:
        ours, source = foot["ours"], foot["source"]
        assert ours["contacts"] >= 3, foot  # contacts were found in the animation
        assert ours["penetration_max_rel"] <= quality.TARGETS["penetration"], foot
        assert ours["hover_max_rel"] <= quality.TARGETS["hover"], foot
        assert ours["skate_max_rel"] <= quality.TARGETS["skate"], foot
        assert ours["bone_length_error"] <= quality.TARGETS["length"], foot
        # The source really had something to fix: it hovers or skates during its contacts.
        assert source["hover_max_rel"] > quality.TARGETS["hover"] or source["skate_max_rel"] > quality.TARGETS["skate"]


def test_a_ball_landing_before_its_ankle_rests_does_not_slide():
    """Issue 20 (b), measured as a user sees it (`core/measure.py`: contacts from the source animation, the
    skeleton's ball by ray cast): the right foot of cmu_01_01 lands on its ball a few frames before its ankle
    comes to rest, and its ball slid there, held by nothing, 1.4% of the leg (the source's own 4.7%). Held from
    its landing, it slides within the 1% target; the source had that much to fix."""
    row = _row("cmu_01_01_forward_jumps.bvh", "flat")
    foot = next(f for f in row["feet"] if f["limb"] == "Right Leg")["independent"]
    assert foot["source_skate_max_rel"] > quality.TARGETS["skate"], foot
    assert foot["skate_max_rel"] <= quality.TARGETS["skate"], foot


# The clips pinned in tests/data (the six development clips). The broad corpus of ../shared/mocap is
# measured by `make quality` (docs/quality.md lists its misses); it is not gated here.
ALL_CLIPS = sorted(p.name for p in harness.MOCAP.glob("*.bvh"))


# The terrains the gate has held since issue 5; the concentric stairs (issue 20) are measured by make quality.
GATED_TERRAINS = ("flat", "slope", "stairs", "noise")


@pytest.mark.parametrize("terrain", GATED_TERRAINS)
@pytest.mark.parametrize("clip", ALL_CLIPS)
def test_no_pops(clip, terrain):
    """Knee and hip angular velocity stay within 1.2x the source's own maximum, on every pinned clip and
    terrain. The closest run (131_01 on stairs, 1.19x) reads the same to four digits on
    Blender 4.2, 4.5 and 5.0."""
    for foot in _row(clip, terrain)["feet"]:
        assert foot["knee_ratio"] <= quality.TARGETS["pops"], foot
        assert foot["hip_ratio"] <= quality.TARGETS["pops"], foot


def test_quality_table_is_generated_from_rows():
    rows = [_row(CLIPS[0], "flat")]
    text = quality.markdown(rows, 1.0)
    assert text.startswith("# Motion quality on real motion capture")
    assert CLIPS[0] in text and "Do not edit" in text
    assert "| penetration | 1 of 1 |" in text
    # Pops: the peak speed over the source's (the target), its peak acceleration over the source's beside it.
    q = rows[0]["feet"][0]["independent"]
    assert q["knee_acceleration_source"] > 0.0 and q["hip_acceleration_source"] > 0.0
    assert (f"| {q['knee_ratio']:.2f}x / {q['knee_acceleration_ratio']:.2f}x | "
            f"{q['hip_ratio']:.2f}x / {q['hip_acceleration_ratio']:.2f}x |") in text
    # The identity is judged on flat ground only: a stairs run neither meets nor misses it.
    stairs = dict(rows[0], terrain="stairs")
    met = quality.verdict_independent(rows[0])["identity"]
    assert f"| identity (flat runs) | {int(met)} of 1 |" in quality.markdown(rows + [stairs], 1.0)
    # Where the source itself hovers inside its contacts on frames the identity judges, hover and identity
    # contradict each other: cmu_12_01's feet stand up to 3% of the leg over its floor there.
    both = quality.contradicted(rows[0])
    assert set(both) == {"Left Leg", "Right Leg"} and all(v > quality.CONTRADICTION for v in both.values())
    assert "Hover and identity contradict each other where the source itself hovers: on 1 of 1 tuning half flat runs" \
        in text
    assert quality.contradicted(stairs) == {}  # the identity is not judged there
    assert "Where the identity misses lie" in quality.markdown(rows + [stairs], 1.0)


def test_a_foot_without_source_contacts_is_not_counted_as_meeting_hover_and_skate():
    """A foot the independent detector finds no contact for has nothing to measure hover and skate on (its
    figures read 0): the run misses those targets instead of passing them (cmu_07_12 in ../shared/mocap)."""
    foot = {"penetration_rel": 0.0, "hover_max_rel": 0.0, "skate_max_rel": 0.0, "knee_ratio": 1.0, "hip_ratio": 1.0,
            "identity_max_rel": 0.0, "source_contacts": 3}
    row = {"terrain": "flat", "feet": [{"independent": foot}, {"independent": dict(foot)}]}
    assert all(quality.verdict_independent(row).values())
    row["feet"][1]["independent"]["source_contacts"] = 0
    v = quality.verdict_independent(row)
    assert not v["hover"] and not v["skate"]
    assert v["penetration"] and v["pops"] and v["identity"]


def test_the_guard_can_fail():
    """The corpus guard (tests/test_corpus.py, which runs where ../shared/mocap is): `quality.lost` names a
    target a run met and misses now, and nothing within the margin."""
    foot = {"penetration_rel": 0.0, "hover_max_rel": 0.004, "skate_max_rel": 0.009, "knee_ratio": 1.0,
            "hip_ratio": 1.1, "identity_max_rel": 0.02, "source_contacts": 3}
    row = {"clip": "x.bvh", "terrain": "flat", "feet": [{"limb": "Left Leg", "independent": dict(foot)}]}
    base = quality.baseline([row])["runs"]["x.bvh|flat"]
    assert quality.lost(base, row) == []
    assert not base["met"]["identity"]  # missed already: not held
    row["feet"][0]["independent"].update(skate_max_rel=0.0101, hip_ratio=1.3, identity_max_rel=0.5)
    gone = quality.lost(base, row)
    assert gone == ["Left Leg: pops knee_ratio 1 -> 1, hip_ratio 1.1 -> 1.3, source contacts 3 -> 3 (target 1.2)"]
    # skate within the margin, identity missed before
    row["feet"][0]["independent"].update(skate_max_rel=0.0103, source_contacts=0)
    assert len(quality.lost(base, row)) == 3  # hover and skate unmeasured, pops


def test_diagnose_prints_where_a_run_of_make_quality_stands_frame_by_frame():
    """`tools/diagnose.py` bakes a clip over a terrain as make quality does and prints, per foot, the same
    independent figures as make quality's row (knee and hip ratios to three places), the source's contacts
    beside the model's, and each frame asked for, with the knee's bend beside the source's."""
    import os
    import re
    import subprocess

    clip, terrain = "fair1_zombie_walk_zup.bvh", "noise"
    env = dict(os.environ)
    env.pop("BLENDER_USER_RESOURCES", None)  # its own private Blender user folder
    proc = subprocess.run([sys.executable, str(harness.ROOT / "tools" / "diagnose.py"), clip, terrain,
                           "--frames", "45", "48"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    row = _row(clip, terrain)
    for foot in row["feet"]:
        line = next(ln for ln in out.splitlines() if ln.startswith(f"{foot['limb']}: hover"))
        assert f"knee {foot['knee_ratio']:.3f}x, hip {foot['hip_ratio']:.3f}x" in line, (line, foot["knee_ratio"])
    assert out.count("source contacts (independent detector)") == len(row["feet"]) == 2
    printed = re.findall(r"^\s+(\d+)\s+(?:outside|contact|ball)\s", out, flags=re.M)
    assert printed == ["45", "46", "47", "48"] * 2, printed
    # Inside a source contact a frame shows the ball's drift in it, ours beside the source's; outside, none
    # (the Right foot's contact ends on frame 46).
    seen = set()
    for block in (b for b in out.split("\n\n") if "source contacts" in b):
        spans = re.search(r"source contacts \(independent detector\)[^:]*: (.*)", block).group(1)
        inside = {f for a, b in re.findall(r"(\d+)-(\d+) \d+/\d+", spans) for f in range(int(a), int(b) + 1)}
        for frame, tail in re.findall(r"^\s+(\d+)\s+(?:outside|contact|ball)\s.*?\((?:\s*[+-]\d+\.\d\d){3}\)(.*)$",
                                      block, flags=re.M):
            shows = re.fullmatch(r"\s+\d+\.\d\d \(\s*\d+\.\d\d\)", tail) is not None
            assert shows == (int(frame) in inside) and (shows or not tail.strip()), (frame, tail, spans)
            seen.add(shows)
    assert seen == {True, False}  # frames of both kinds were printed
    # Beside the speeds, how far the knee is bent on the frame (degrees), ours and the source's.
    assert out.count("knee angle (src)") == 2
    bends = re.findall(r"^\s+\d+\s+(?:outside|contact|ball)\s+\d+ \(\s*\d+\)\s+\d+ \(\s*\d+\)\s+(\d+\.\d) \(\s*(\d+\.\d)\)",
                       out, flags=re.M)
    assert len(bends) == 8 and all(0.0 <= float(v) <= 180.0 for pair in bends for v in pair), bends


def test_diagnose_shows_where_a_flat_run_moves_a_foot_furthest_from_the_source():
    """On flat ground, where a foot misses the identity, `tools/diagnose.py` prints the frames around its largest
    move from the source (`FootQuality.identity_frame`), with the figure make quality's row has, and what the
    model held the foot on there."""
    import os
    import re
    import subprocess

    clip = "fair1_zombie_walk_zup.bvh"
    env = dict(os.environ)
    env.pop("BLENDER_USER_RESOURCES", None)
    proc = subprocess.run([sys.executable, str(harness.ROOT / "tools" / "diagnose.py"), clip, "flat", "--window", "1"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = _row(clip, "flat")
    missed = [f["independent"] for f in row["feet"] if f["independent"]["identity_max_rel"] > 0.005]
    assert missed  # this walk moves its feet on flat ground (the hover the capture carries taken off)
    shown = re.findall(r"identity: moved (\d+\.\d\d)% from the source \((outside|contact|ball)\):\n.*\n"
                       r"\s+(\d+) .*\n\s+(\d+) .*\n\s+(\d+) ", proc.stdout)
    assert len(shown) == len(missed), proc.stdout[-3000:]
    first = int(re.search(r"frames (\d+)-", proc.stdout).group(1))
    for q, (figure, held, a, b, c) in zip(missed, shown):
        assert figure == f"{q['identity_max_rel'] * 100:.2f}" and held == q["identity_held"]
        assert int(b) == first + q["identity_frame"] and int(a) == int(b) - 1 and int(c) == int(b) + 1


def test_diagnose_reads_a_knee_bend_alike_whatever_the_sign_of_its_quaternion():
    """`tools/diagnose.py`'s knee bend column (`diagnose.angles`): a quaternion and its negation are the same
    rotation, and a pose's sign may flip from one frame to the next; both read as the bend, 0-180 degrees (the
    negated one read 331.7 for a bend of 28.3: reactidle_003's left knee seemed to flip on frames 17-18)."""
    import math

    import diagnose
    from mathutils import Quaternion

    q = Quaternion((1.0, 0.0, 0.0), math.radians(28.3))
    got = diagnose.angles([q, -q, Quaternion((0.0, 0.0, 1.0), math.radians(179.0))])
    assert abs(got[0] - 28.3) < 1e-4 and abs(got[1] - 28.3) < 1e-4 and abs(got[2] - 179.0) < 1e-4, got


def _synthetic(clip: str, terrain: str, hover: float = 0.004, knee: float = 1.0, identity: float = 0.002,
               own: Optional[float] = None) -> dict:
    """A run of make quality with one foot: `knee` its knee peak over the source's by the independent measure,
    `own` by the model's own (`core.metrics`; the same unless given)."""
    foot = {"penetration_rel": 0.0, "hover_max_rel": hover, "skate_max_rel": 0.003, "knee_ratio": knee,
            "hip_ratio": 1.0, "identity_max_rel": identity, "source_contacts": 3, "pop_frame": 40,
            "pop_where": "landing"}
    own = knee if own is None else own
    ours = {"penetration_max_rel": 0.0, "hover_max_rel": 0.0, "skate_max_rel": 0.0, "knee_ratio": own,
            "hip_ratio": 1.0, "bone_length_error": 0.0}
    return {"clip": clip, "terrain": terrain, "feet": [{"limb": "Left Leg", "independent": foot, "ours": ours,
                                                         "knee_ratio": own, "hip_ratio": 1.0}]}


def test_the_identity_misses_are_counted_by_what_the_model_held_at_the_largest_move():
    """docs/quality.md's identity table (`quality.identity_table`): per half, the feet of flat runs missing the
    identity, by what the model held at the largest move, and of them those where the source's own hover
    contradicts the identity; feet within it, and runs on other terrains, are not counted."""
    tune, check = corpus.TUNING[0], corpus.CHECK[0]

    def run(clip: str, terrain: str, identity: float, held: str, hover: float = 0.0) -> dict:
        row = _synthetic(clip, terrain, identity=identity)
        row["feet"][0]["independent"].update(identity_held=held, source_hover_judged_rel=hover)
        return row

    rows = [run(tune, "flat", 0.03, "outside", hover=0.02), run(tune, "flat", 0.02, "contact"),
            run(tune, "flat", 0.004, "ball"), run(tune, "stairs", 0.5, "ball"), run(check, "flat", 0.01, "ball")]
    table = quality.identity_table(rows)
    assert table[2:] == ["| tuning | 2 | 1 | 1 | 0 | 1 |", "| check | 1 | 0 | 0 | 1 | 0 |"], table


def test_standing_knees_bent_beyond_the_sources_are_counted_per_half():
    """docs/quality.md's standing-knee line (`quality.straight_knee_lines`): per half, the runs with a foot
    whose knee, where the source stands straight in a contact, is bent more than BEND_NOTE degrees beyond it,
    the flat runs among them, and the largest such bend on flat ground, ours beside the source's."""
    tune, check = corpus.TUNING[0], corpus.CHECK[0]

    def run(clip: str, terrain: str, ours: float, source: float) -> dict:
        row = _synthetic(clip, terrain)
        row["feet"][0]["independent"].update(straight_knee_extra_deg=ours - source, straight_knee_deg=ours,
                                             straight_knee_source_deg=source)
        return row

    rows = [run(tune, "flat", 28.0, 10.0), run(tune, "stairs", 90.0, 5.0), run(tune, "noise", 20.0, 10.0),
            run(check, "flat", 12.0, 10.0)]
    (line,) = quality.straight_knee_lines(rows)
    assert "tuning half: 2 of 3 runs (1 of 1 flat runs); on flat ground at most 28 degrees where the source's is 10" \
        in line, line
    assert "check half: 0 of 1 runs (0 of 1 flat runs); on flat ground at most 12 degrees" in line, line


def test_compare_counts_each_half_and_names_every_run_that_moved():
    """`tools/compare.py` (two runs of make quality): per declared half, the runs meeting each target before
    and after (the identity on flat runs only), each run that starts or stops meeting one with its figure,
    and each foot whose peak over the source's rose by more than 5%, with where it lies."""
    tune, check = corpus.TUNING[0], corpus.CHECK[0]
    before = [_synthetic(tune, "flat", hover=0.015), _synthetic(tune, "stairs"), _synthetic(check, "flat")]
    after = [_synthetic(tune, "flat", hover=0.004), _synthetic(tune, "stairs", knee=1.3),
             _synthetic(check, "flat", knee=1.1), _synthetic(check, "noise")]
    text = "\n".join(compare.compare(before, after))
    assert "3 runs in both; 0 only before, 1 only after (left out)" in text
    assert "| hover | 1 -> 2 ** | 1 -> 1 |" in text
    assert "| pops | 2 -> 1 ** | 1 -> 1 |" in text
    assert "| identity (flat runs) | 1 -> 1 | 1 -> 1 |" in text  # the stairs run is not judged on it
    assert f"tuning {tune} flat: hover now met (1.50% -> 0.40%)" in text
    assert f"tuning {tune} stairs: pops now missed (1.00x -> 1.30x)" in text
    assert f"tuning {tune} stairs Left Leg: knee 1.00x -> 1.30x, peak at frame 40 (landing)" in text
    assert f"check {check} flat Left Leg: knee 1.00x -> 1.10x" in text  # within the target, still listed
    assert "Runs that start or stop meeting a target (2):" in text
    assert "tuning knee: 1.0000 -> 1.1500" in text
    same = "\n".join(compare.compare(before, before))
    assert "Runs that start or stop meeting a target (0):" in same and "**" not in same
    # Every figure is the independent measure's, as the targets are: a peak that rose by the model's own measure
    # alone is not listed, one that rose by the independent measure alone is, with its figures.
    own = "\n".join(compare.compare([_synthetic(tune, "noise")], [_synthetic(tune, "noise", own=1.5)]))
    assert "rose by more than 5% (0):" in own and "1.50x" not in own and "| pops | 1 -> 1 |" in own
    assert own.count("**") == 1 and "| every target, model's own | 1 -> 0 ** |" in own  # the own measure's row
    ind = "\n".join(compare.compare([_synthetic(tune, "noise")], [_synthetic(tune, "noise", knee=1.3, own=1.0)]))
    assert f"tuning {tune} noise: pops now missed (1.00x -> 1.30x)" in ind
    assert f"tuning {tune} noise Left Leg: knee 1.00x -> 1.30x, peak at frame 40 (landing)" in ind
    assert "tuning knee: 1.0000 -> 1.3000" in ind


def test_the_tuning_half_is_measured_alone_without_overwriting_the_whole_report():
    """`tools/quality.py --half tuning` measures the declared tuning half only (from ../shared/mocap, else the
    clips pinned in tests/data, which are all tuning clips) and writes its report to out/, not over
    docs/quality.md, which is the whole corpus's."""
    clips, source = quality.half_clips("tuning")
    assert clips and all(corpus.half(c.name) == "tuning" for c in clips)
    assert source.startswith("The tuning half of")
    every, _ = quality.default_clips()
    assert set(clips) | set(quality.half_clips("check")[0]) <= set(every)
    assert len(quality.half_clips("check")[0]) == sum(corpus.half(c.name) == "check" for c in every)
    assert quality.report_path(True) == harness.ROOT / "docs" / "quality.md"
    assert quality.report_path(False) == harness.ROOT / "out" / "quality.md"
    proc = subprocess.run([sys.executable, str(harness.ROOT / "tools" / "quality.py"), "--half", "tuning",
                           "--clips", clips[0].name], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "give --clips or --half, not both" in proc.stderr
