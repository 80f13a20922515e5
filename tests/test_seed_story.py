"""The six unit tests of the seed IK design story, ported one to one to our two-bone solver."""

from __future__ import annotations

import harness

solvers = harness.module("solvers")
from mathutils import Vector  # noqa: E402


def vertical_chain():
    """Shoulder at the origin, elbow at (0,1,0), wrist at (0,2,0): upper arm 1, forearm 1."""
    return Vector((0, 0, 0)), Vector((0, 1, 0)), Vector((0, 2, 0))


def test_foot_reaches_target_position():
    a, b, c = vertical_chain()
    target = Vector((1.0, 1.0, 0.0))
    res = solvers.solve_two_bone(a, b, c, target)
    error = (res.tip - target).length
    assert error < 0.01, f"tip should reach target within tolerance, error = {error}"


def test_knee_bends_correctly():
    a, b, c = vertical_chain()
    target = Vector((1.0, 0.5, 0.0))
    new_b = solvers.solve_two_bone(a, b, c, target).knee
    assert (new_b - b).length > 0.01, "knee should bend away from original position"
    upper_len = (new_b - a).length
    assert abs(upper_len - 1.0) < 0.01, f"upper bone length should be preserved, got {upper_len}"
    res2 = solvers.solve_two_bone(a, b, c, target)
    lower_len = (res2.tip - res2.knee).length
    assert abs(lower_len - 1.0) < 0.01, f"lower bone length should be preserved, got {lower_len}"


def test_hand_ik_reaches_target():
    a, b, c = vertical_chain()
    target = Vector((0.5, 1.5, 0.5))
    res = solvers.solve_two_bone(a, b, c, target)
    error = (res.tip - target).length
    assert error < 0.01, f"hand should reach target, error = {error}"


def test_weight_zero_is_pure_fk():
    a, b, c = vertical_chain()
    target = Vector((1.0, 0.0, 0.0))
    res = solvers.solve_two_bone(a, b, c, target)
    blended_b = b.lerp(res.knee, 0.0)
    blended_c = c.lerp(res.tip, 0.0)
    assert blended_b == b, "weight=0 should produce original mid position"
    assert blended_c == c, "weight=0 should produce original tip position"
    # And through the limb solve that the add-on uses: weight 0 returns the FK rotations bit for bit.
    pose = solvers.ChainPose.from_points([a, b, c])
    sol = solvers.solve_limb(pose, target, weight=0.0)
    assert [tuple(q) for q in sol.rotations] == [tuple(q) for q in pose.rotations]
    assert [tuple(p) for p in sol.positions] == [tuple(p) for p in pose.positions()]


def test_weight_one_is_pure_ik():
    a, b, c = vertical_chain()
    target = Vector((1.0, 1.0, 0.0))
    res = solvers.solve_two_bone(a, b, c, target)
    blended_b = b.lerp(res.knee, 1.0)
    blended_c = c.lerp(res.tip, 1.0)
    assert (blended_b - res.knee).length < 1e-6, "weight=1 should produce IK mid position"
    assert (blended_c - res.tip).length < 1e-6, "weight=1 should produce IK tip position"
    pose = solvers.ChainPose.from_points([a, b, c])
    sol = solvers.solve_limb(pose, target, weight=1.0)
    assert (sol.positions[1] - res.knee).length < 1e-6
    assert (sol.positions[2] - res.tip).length < 1e-6


def test_ik_handles_unreachable_targets_gracefully():
    a, b, c = vertical_chain()
    unreachable_target = Vector((10.0, 10.0, 0.0))
    res = solvers.solve_two_bone(a, b, c, unreachable_target)
    chain_length = (res.knee - a).length + (res.tip - res.knee).length
    assert abs(chain_length - 2.0) < 0.02, f"fully extended chain should equal total bone length, got {chain_length}"
    dot = (unreachable_target - a).normalized().dot((res.tip - a).normalized())
    assert dot > 0.99, f"chain should stretch toward target, alignment = {dot}"
    assert res.case == solvers.TOO_FAR
