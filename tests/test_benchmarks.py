"""Smoke test of the solver benchmarks at tiny sizes: they run and their figures are sane (finite, positive,
errors within tolerance). Not a timed test: nothing here asserts a speed."""

from __future__ import annotations

import math
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_solvers  # noqa: E402


@pytest.fixture(scope="module")
def two_bone():
    return bench_solvers.two_bone(sizes=(50, 200), rounds=1, accuracy_n=500)


@pytest.fixture(scope="module")
def chains():
    return bench_solvers.chains(count=3, rounds=1, max_iterations=200)


def test_two_bone_benchmark_gives_positive_times_for_every_solver_and_size(two_bone):
    for kind in ("scalar", "scalar_anchor", "batch", "batch_anchor"):
        for n in (50, 200):
            us = two_bone["us_per_solve"][f"{kind}@{n}"]
            assert math.isfinite(us) and us > 0.0


def test_two_bone_benchmark_tip_errors_are_tiny(two_bone):
    acc = two_bone["accuracy"]
    assert acc["n"] == 500
    assert 0.0 <= acc["batch_float64"]["p99"] <= acc["batch_float64"]["max"] < 1e-9
    assert 0.0 <= acc["scalar_float32"]["p99"] <= acc["scalar_float32"]["max"] < 1e-5


def test_random_chains_targets_are_reachable():
    root, knee, tip, target = bench_solvers.random_chains(1000, seed=3)
    l1 = np.linalg.norm(knee - root, axis=1)
    l2 = np.linalg.norm(tip - knee, axis=1)
    d = np.linalg.norm(target - root, axis=1)
    assert ((d >= abs(l1 - l2) - 1e-12) & (d <= l1 + l2 + 1e-12)).all()


def test_chain_benchmark_iterations_and_errors_are_sane(chains):
    res = chains["results"]
    for name in ("fabrik", "fabrik_fine", "ccd", "ikpy"):
        for group in ("reachable", "unreachable"):
            r = res[group][name]
            assert r["us_per_solve"] > 0.0
            assert math.isfinite(r["error_max"])
    # Reachable: within the tolerance (a fraction of the chain length) unless the cap was hit.
    assert res["reachable"]["fabrik"]["error_max"] <= 1e-3 + 1e-6
    assert res["reachable"]["fabrik_fine"]["error_max"] <= 1e-5
    assert res["reachable"]["fabrik"]["iterations_mean"] >= 1
    # Unreachable: FABRIK straightens toward the target in one pass, the best the chain can do.
    assert res["unreachable"]["fabrik"]["iterations_max"] == 1
    assert abs(res["unreachable"]["fabrik"]["error_max"]) < 1e-5
    # ikpy on the equivalent chain gets there too (the anchor is a real solve, not a failure).
    assert res["reachable"]["ikpy"]["error_max"] < 1e-3


def test_solver_benchmark_markdown_has_both_sections(two_bone, chains):
    text = bench_solvers.markdown(two_bone, chains)
    assert "## 1. Two-bone solver" in text and "## 2. Long chains" in text
    assert "nan" not in text.lower()
