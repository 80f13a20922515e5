"""The corpus guard (issue 20): every clip of the broad corpus (../shared/mocap, declared in
tools/corpus.py) over every terrain of `make quality`, measured independently (core/measure.py) and held to
what each run met when the baseline was measured (tests/data/corpus_baseline.json, written by
`make quality` beside docs/quality.md). A change that loses a target on any run fails here, by name; one
that is meant to (a trade the issue allows) regenerates the baseline with `make quality` and says so.

It holds the runs to their baseline, not yet to the issue's targets: most runs miss some target
(docs/quality.md lists them), and a gate on the targets would only be red.

It runs where the corpus is (CI has ../shared beside the clone; a user's clone has not, and skips it) and
on the main Blender only, where the baseline was measured."""

from __future__ import annotations

import functools
import json
import sys

import bpy
import harness
import pytest

sys.path.insert(0, str(harness.ROOT / "tools"))
import corpus  # noqa: E402
import quality  # noqa: E402

MAIN = (harness.ROOT / "requirements-dev.txt").read_text().split("bpy==")[1].split()[0]
pytestmark = [
    pytest.mark.skipif(not harness.CORPUS.is_dir(),
                       reason=f"the broad corpus ({harness.CORPUS}) is not beside this clone: the guard runs in CI"),
    pytest.mark.skipif(bpy.app.version_string.split()[0] != MAIN,
                       reason=f"the corpus guard runs on the main Blender ({MAIN}) only, where its baseline was measured"),
]

DECLARED = sorted(corpus.TUNING + corpus.CHECK)


@functools.cache
def _baseline() -> dict:
    return json.loads(quality.BASELINE.read_text())


def test_the_corpus_is_the_declared_one():
    """Every clip of ../shared/mocap is in a declared half (tools/corpus.py), and every declared clip is there:
    a clip added later is declared before anything is tuned on it."""
    found = sorted(p.name for p in harness.CORPUS.glob("*.bvh"))
    assert found == DECLARED, (f"undeclared: {sorted(set(found) - set(DECLARED))}; "
                               f"declared but missing: {sorted(set(DECLARED) - set(found))}")
    runs = _baseline()["runs"]
    assert sorted(runs) == sorted(f"{c}|{t}" for c in DECLARED for t in quality.TERRAINS), (
        "the baseline does not cover the corpus: run `make quality`")


@pytest.mark.parametrize("clip", DECLARED)
def test_no_run_loses_a_target(clip):
    base = _baseline()
    assert base["targets"] == quality.INDEPENDENT_TARGETS, "the targets changed: run `make quality`"
    lost = {}
    for terrain in quality.TERRAINS:
        row = quality.run_clip(harness.CORPUS / clip, terrain)
        gone = quality.lost(base["runs"][f"{clip}|{terrain}"], row)
        if gone:
            lost[terrain] = gone
    assert not lost, (f"{clip} ({corpus.half(clip)} half) lost targets it met in tests/data/corpus_baseline.json: "
                      f"{lost}. If the change means to trade them, regenerate with `make quality` and say so.")
