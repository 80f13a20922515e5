"""Fuzzing (issue 7): hypothesis over the solvers' inputs (any finite floats, degenerate chains, extreme
limits) and over the settings a user can type: no exception, no NaN, invariants hold. Kept small (the
file runs in well under 30 s); test_solver_properties.py holds the solvers' accuracy properties."""

from __future__ import annotations

import math

import bpy
import harness
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

solvers = harness.module("solvers")
props = harness.module("properties")
live = harness.module("core.live")
from mathutils import Quaternion, Vector  # noqa: E402

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Values that make chains degenerate when they coincide (zero-length bones, a target on the root,
# a straight limb), mixed with any finite single-precision float.
special = st.sampled_from([0.0, 1.0, -1.0, 0.5, 1e-7, -1e-7, 1e-30, 1e6, -1e6, 1e18, 3.4e38, -3.4e38])
coordinate = st.one_of(special, st.floats(allow_nan=False, allow_infinity=False, width=32))
point = st.tuples(coordinate, coordinate, coordinate)
angle = st.one_of(st.sampled_from([0.0, math.pi, -math.pi, 2 * math.pi, 1e-9]),
                  st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))


def _finite(*values):
    return all(math.isfinite(v) for v in values)


def _unit(q):
    return abs(q.magnitude - 1.0) < 1e-4


@st.composite
def chains(draw, min_points=3, max_points=6):
    """Joint positions: often with repeated points (zero-length bones) and the same point as the target."""
    n = draw(st.integers(min_points, max_points))
    pool = draw(st.lists(point, min_size=1, max_size=n))
    return [draw(st.sampled_from(pool)) if draw(st.booleans()) else draw(point) for _ in range(n)]


@st.composite
def extreme_limits(draw):
    lo = tuple(draw(angle) for _ in range(3))
    hi = tuple(draw(angle) for _ in range(3))  # min may be above max
    return solvers.JointLimits(lock=tuple(draw(st.booleans()) for _ in range(3)),
                               use_limit=tuple(draw(st.booleans()) for _ in range(3)), minimum=lo, maximum=hi)


@FAST
@given(chains(3, 3), point, st.one_of(st.none(), point), st.floats(0.0, 0.5))
def test_two_bone_degenerate_chains_give_finite_results(pts, target, pole, softness):
    a, b, c = (Vector(p) for p in pts)
    res = solvers.solve_two_bone(a, b, c, Vector(target), pole=None if pole is None else Vector(pole),
                                 softness=softness)
    assert _finite(*res.knee, *res.tip, res.error)
    nb, nc, _case = solvers.solve_two_bone_batch(np.array([pts[0]]), np.array([pts[1]]), np.array([pts[2]]),
                                                 np.array([target]), pole=None if pole is None else np.array([pole]),
                                                 softness=softness)
    assert np.isfinite(nb).all() and np.isfinite(nc).all()


@settings(FAST, max_examples=50)
@given(chains(), point, st.data(), st.floats(0.0, 1.0), st.floats(0.0, 0.5),
       st.sampled_from(["auto", "fabrik", "ccd"]), st.booleans())
def test_limb_solve_never_raises_and_stays_finite(pts, target, data, weight, softness, method, rotate_end):
    limits = [data.draw(st.one_of(st.none(), extreme_limits())) for _ in range(len(pts) - 1)]
    pose = solvers.ChainPose.from_points(pts, limits=limits)
    end_rotation = Quaternion(Vector(data.draw(point)), data.draw(angle)) if rotate_end else None
    sol = solvers.solve_limb(pose, target, weight=weight, softness=softness, method=method,
                             target_rotation=end_rotation, max_iterations=16)
    assert len(sol.rotations) == len(pts) - 1
    for q in sol.rotations:  # what is written to the bones
        assert _finite(*q) and _unit(q), q
    if max(abs(v) for p in (*pts, target) for v in p) < 1e18:  # near float32's largest, FK itself overflows
        assert all(_finite(*p) for p in sol.positions)


@FAST
@given(st.lists(st.tuples(st.floats(-10, 10), st.floats(-10, 10), st.floats(-10, 10)), min_size=3, max_size=7),
       st.tuples(st.floats(-30, 30), st.floats(-30, 30), st.floats(-30, 30)), st.sampled_from(["fabrik", "ccd"]))
# A chain folded back on itself with its tip already on the target: FABRIK once returned the bend it
# makes to leave a straight line, bones 0.13% too long, without a pass to put the lengths back.
@example([(0.0, 1.0, 0.0), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 0.0)], (0.0, 0.0, 0.0), "fabrik")
def test_chain_solvers_keep_bone_lengths_on_any_chain(pts, target, method):
    """Moderate coordinates (so float32 vectors keep the lengths): every bone keeps its length, the
    root stays, whatever the chain (zero-length bones and straight lines included)."""
    fn = solvers.fabrik if method == "fabrik" else solvers.ccd
    sol = fn(pts, target, max_iterations=50)
    scale = 1.0 + max(abs(v) for p in pts for v in p)
    assert all(_finite(*p) for p in sol.positions)
    assert (Vector(sol.positions[0]) - Vector(pts[0])).length <= 1e-5 * scale
    for i in range(len(pts) - 1):
        before = (Vector(pts[i + 1]) - Vector(pts[i])).length
        after = (Vector(sol.positions[i + 1]) - Vector(sol.positions[i])).length
        assert abs(before - after) <= 1e-4 * scale, (i, before, after)


@FAST
@given(st.floats(allow_nan=False), st.floats(allow_nan=False), st.floats(0.0, 0.5))
def test_soft_distance_is_finite_and_never_beyond_the_chain(distance, chain, softness):
    d = solvers.soft_distance(abs(distance) if math.isfinite(distance) else 1.0, abs(chain) if math.isfinite(chain)
                              else 1.0, softness)
    assert math.isfinite(d)
    if softness * abs(chain) > 0.0 and abs(chain) < 1e300:  # soft IK on: the reach eases in below the chain
        assert d <= abs(chain) * (1 + 1e-9)


@FAST
@given(extreme_limits(), angle, angle, angle)
def test_clamp_with_extreme_limits_gives_a_unit_rotation(limits, x, y, z):
    from mathutils import Euler

    q = limits.clamp(Euler((x, y, z)).to_quaternion())
    assert _finite(*q) and _unit(q)


# ------------------------------------------------------------------------------ settings on a real rig


@pytest.fixture(scope="module")
def planted():
    from test_plant_feet import _walker
    from test_robustness import _select

    obj, terrain, leg = _walker("stairs")
    _select(obj, terrain)
    assert bpy.ops.contact_ik.plant_feet() == {"FINISHED"}
    lengths = {n: obj.data.bones[n].length for n in ("thigh.L", "shin.L", "thigh.R", "shin.R")}
    return obj.name, leg, lengths


finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)
setting_values = st.fixed_dictionaries({
    "floor_height": st.one_of(finite32, st.floats(-2.0, 2.0)),
    "softness": st.floats(0.0, 0.5),
    "leg_stretch": st.floats(0.9, 1.0),
    "body_follow": st.booleans(),
    "limbs": st.lists(st.fixed_dictionaries({
        "weight": st.floats(0.0, 1.0),
        "ray_length": st.one_of(st.just(0.0), st.floats(0.0, 3.4e38), st.floats(0.0, 5.0)),
        "foot_offset": st.one_of(st.floats(0.0, 3.4e38), st.floats(0.0, 0.3)),
        "max_align_angle": st.floats(0.0, math.pi / 2),
        "align_to_normal": st.booleans(),
        "use_lock": st.booleans(),
        "enabled": st.booleans(),
    }), min_size=2, max_size=2),
})


@SLOW
@given(values=setting_values, frame=st.integers(-5, 60), cached=st.booleans())
def test_any_settings_give_a_finite_pose_with_bones_of_their_length(planted, values, frame, cached, capfd):
    name, leg, lengths = planted
    obj = bpy.data.objects[name]
    s = props.settings(obj)
    for key in ("floor_height", "softness", "leg_stretch", "body_follow"):
        setattr(s, key, values[key])
    for limb, lv in zip(s.limbs, values["limbs"]):
        for key, value in lv.items():
            setattr(limb, key, value)
    live.USE_FRAME_CACHE = cached
    try:
        if cached:
            live.precompute(obj, bpy.context.scene)
        bpy.context.scene.frame_set(frame)
        bpy.context.scene.frame_set(frame + 1)
    finally:
        live.USE_FRAME_CACHE = True
    out, err = capfd.readouterr()
    assert "Traceback" not in err, err
    pbs = obj.pose.bones
    for pb in pbs:
        assert _finite(*pb.location, *pb.rotation_quaternion, *(v for row in pb.matrix for v in row)), pb.name
    if not s.live_preview:  # only a length far beyond the rig's size turns it off, and says which
        assert "over 1000 times" in out, out
        s.live_preview = True
        return
    for pb in pbs:
        assert _finite(*pb.location, *pb.rotation_quaternion, *(v for row in pb.matrix for v in row)), pb.name
    for n, length in lengths.items():
        assert abs(pbs[n].length - length) <= 1e-4 * length, (n, pbs[n].length, length)
