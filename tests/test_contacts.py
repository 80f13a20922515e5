"""Foot contacts: detection thresholds with hysteresis at any scale and frame rate, foot locking rules,
the per-frame and all-frames forms agreeing, and editing contacts from the panel's operators."""

from __future__ import annotations

import math

import bpy
import harness
import numpy as np
import pytest
import scenes
from test_plant_feet import LEG_LIMBS, _close, _plant, _pose_snapshot, _walker

contacts = harness.module("core.contacts")
props = harness.module("properties")
setup = harness.module("core.setup")


def _gait(fps: float, leg: float, seconds: float = 3.0, hover: float = 0.0):
    """A synthetic foot: down 0.6 s, up 0.4 s, repeated; heights and speeds as mocap gives them."""
    t = np.arange(int(seconds * fps)) / fps
    phase = (t % 1.0)
    down = phase < 0.6
    height = np.where(down, hover * leg, 0.15 * leg * np.sin(np.pi * (phase - 0.6) / 0.4))
    speed = np.where(down, 0.02 * leg, 3.0 * leg)
    return height, speed, down


@pytest.mark.parametrize("fps", [24.0, 30.0, 120.0])
@pytest.mark.parametrize("leg", [0.9, 25.0, 90.0])
def test_detection_holds_at_any_frame_rate_and_scale(fps, leg):
    height, speed, down = _gait(fps, leg)
    found = contacts.find_contacts(height, speed, leg, fps)
    assert len(found) == 3
    for a, b in found:
        assert down[a:b + 1].all()
        assert (b - a + 1) / fps == pytest.approx(0.6, abs=2.0 / fps)


def test_hysteresis_and_minimum_length():
    fps, leg = 30.0, 1.0
    height, speed, _down = _gait(fps, leg)
    # Noise between the landing and the lift-off thresholds does not split a contact.
    noisy = speed.copy()
    noisy[5] = 0.6 * leg  # above LAND_SPEED, below LIFT_SPEED
    assert contacts.find_contacts(height, noisy, leg, fps) == contacts.find_contacts(height, speed, leg, fps)
    # A blip shorter than the minimum contact is not a contact.
    h = np.full(60, 0.3 * leg)
    s = np.full(60, 3.0 * leg)
    h[30], s[30] = 0.0, 0.0
    assert contacts.find_contacts(h, s, leg, fps) == []


@pytest.mark.parametrize("fps", [24.0, 30.0])
def test_a_runs_short_stances_are_contacts(fps):
    """A run: each foot still for two steps (three frames: the one it lands on, one between, the one it leaves
    from) every 14 frames. By the faster of the steps into and out of each frame no frame is slow, so no
    contact was found and the feet were never locked (issue 19); by the slower one, each stance is found,
    frame for frame, and walking contacts stay as they were."""
    leg = 1.0
    n = 70
    ankle = np.zeros((n, 3))
    x = 0.0
    still = set()
    for i in range(1, n):
        stance = (i % 14) in (2, 3)  # the steps 1->2 and 2->3 are still: frames 1, 2, 3 stand
        x += 0.0 if stance else 0.3 * leg
        ankle[i, 1] = x
        if stance:
            still |= {i - 1, i}
    height = np.where([i in still for i in range(n)], 0.0, 0.2 * leg)
    steps = np.linalg.norm(np.diff(ankle, axis=0), axis=1) * fps
    into, out_of = np.r_[steps[:1], steps], np.r_[steps, steps[-1:]]
    assert contacts.find_contacts(height, np.maximum(into, out_of), leg, fps) == []  # what it did before
    found = contacts.find_contacts(height, np.maximum(into, out_of), leg, fps, np.minimum(into, out_of))
    assert found == [(a, a + 2) for a in range(1, n - 2, 14)], found
    # A walk's contacts do not change: where the faster steps find a contact, the slower ones add nothing.
    height, speed, _down = _gait(fps, leg)
    assert contacts.find_contacts(height, speed, leg, fps, speed * 0.0) == contacts.find_contacts(height, speed, leg, fps)


def test_drifting_floor_is_followed():
    """Mocap whose floor drifts upward through the take: contacts are still found (each foot's local ground)."""
    fps, leg = 120.0, 1.0
    height, speed, down = _gait(fps, leg, seconds=4.0)
    drift = np.linspace(0.0, 0.3 * leg, len(height))
    found = contacts.find_contacts(height + drift, speed, leg, fps)
    assert len(found) == 4


def test_lock_rules():
    obj, terrain, leg = _walker("stairs")
    _plant(obj, terrain)
    s = props.settings(obj)
    for limb in [lb for lb in s.limbs if lb.kind == "FOOT"]:
        assert len(limb.contacts) >= 2
        c = limb.contacts[0]
        inside = contacts.locks_over(limb, c.start, 1, 24.0)
        assert inside.weight[0] == 1.0 and inside.down[0] == 1.0
        # The ankle's lock point, or the ball's where the ball is held from the first frame (issue 20 (b)).
        on_ball = c.rolls and c.pivot <= c.start
        assert inside.ball[0] == (1.0 if on_ball else 0.0)
        held = np.array(c.lock) + (np.array(c.ball) if on_ball else 0.0)
        assert tuple(inside.point[0]) == pytest.approx(tuple(held))
    # Locking off: no lock at all.
    s.limbs[0].use_lock = False
    off = contacts.locks_over(s.limbs[0], s.limbs[0].contacts[0].start, 1, 24.0)
    none = contacts.LockTrack.none(1)
    assert all(np.array_equal(getattr(off, k), getattr(none, k)) for k in vars(none))


def test_a_swing_off_the_end_of_the_range_follows_a_line_to_the_ground_there():
    """The clip ends (or the scene's range cuts it) mid-swing: after the foot's last contact its ground is the
    line from that contact to the ground under the ankle at the range's last frame, as between two contacts
    (weights summing to 1, the far end's rising linearly to 1 there), not the ground right under the foot,
    which jumped at each step edge and popped the knee on stairs (1.51x the source's, issue 19)."""
    obj, terrain, leg = _walker("stairs")
    _plant(obj, terrain)
    scene = bpy.context.scene
    first, last = scene.frame_start, scene.frame_end
    fps = scene.render.fps
    checked = 0
    for limb in [lb for lb in props.settings(obj).limbs if lb.kind == "FOOT"]:
        assert tuple(limb.contact_range) == (first, last)
        # After Ball Up (where the foot rolls on over its ball), the line from the ankle's contact end: up
        # the up axis a contact ends with the ankle's.
        up = max(max(c.end, c.roll) if c.rolls else c.end for c in limb.contacts)
        end = max(c.end for c in limb.contacts)
        if up >= last - 2:
            continue
        frames = np.arange(up + 1, last + 1, dtype=np.float64)
        track = contacts.locks_over(limb, float(up + 1), len(frames), fps)
        assert np.allclose(track.from_weight + track.to_weight, 1.0)
        assert np.allclose(track.to_weight, (frames - end) / (last - end))
        assert np.allclose(track.to_point, np.array(limb.range_ankles)[3:])
        assert np.all(track.gap == last - end)
        # Contacts entered by hand, with no range detected: the old fade into the ground under the foot.
        limb.contact_range = (0, 0)
        faded = contacts.locks_over(limb, float(up + 1), len(frames), fps)
        assert (faded.to_weight == 0.0).all() and faded.from_weight[-1] < 0.5
        checked += 1
    assert checked


def test_a_range_that_starts_mid_swing_follows_a_line_from_the_ground_there():
    """The scene's range starts mid-swing (frames 20-70 of a longer walk): before a foot's first contact its
    ground is the line from the ground under the animation's ankle on the first frame to that contact, with
    no lift-off to ease in from (`LockTrack.opened`); it followed the ground right under the foot, which
    jumps at step edges (the left knee 1.29x the source's on stairs)."""
    obj, terrain, leg = _walker("stairs")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 20, 70
    _plant(obj, terrain)
    fps = scene.render.fps
    checked = 0
    for limb in [lb for lb in props.settings(obj).limbs if lb.kind == "FOOT"]:
        first = min(c.start for c in limb.contacts)
        if first <= 22:
            continue
        frames = np.arange(20, first, dtype=np.float64)
        track = contacts.locks_over(limb, 20.0, len(frames), fps)
        assert np.allclose(track.from_weight + track.to_weight, 1.0)
        assert np.allclose(track.to_weight, (frames - 20) / (first - 20))
        assert np.allclose(track.from_point, np.array(limb.range_ankles)[:3])
        assert (track.opened == 1.0).all() and np.all(track.gap == first - 20)
        checked += 1
    assert checked


def test_a_swing_across_a_cut_is_planned_as_if_the_body_had_not_jumped():
    """An NLA repeat snaps the body 2 legs back between two contacts (a cut at frame 25): before the cut the
    foot swings toward where it would land had the body not jumped, after it from where it lifted off, moved
    with the body. The line between the contacts as they are ran backwards through the seam (the knee 8x the
    source's on stairs)."""
    f = np.arange(0.0, 41.0)
    start, end = np.array([0.0, 30.0]), np.array([10.0, 40.0])
    lock = np.array([[0.0, 0.0, 0.1], [-1.2, 0.0, 0.1]])  # 0.8 ahead, then snapped 2 back
    zeros = np.zeros(2)
    cut, jump = np.array([0.0, 25.0]), np.array([[0.0, 0.0, 0.0], [-2.0, 0.0, 0.0]])
    track = contacts._track(f, 24.0, start, end, zeros, zeros, lock, lock, lock, np.zeros(2), np.zeros((2, 3)), cut, jump)
    before, after = (f > 10) & (f < 25), (f >= 25) & (f < 30)
    assert np.allclose(track.to_point[before], [0.8, 0.0, 0.1])
    assert np.allclose(track.from_point[before], lock[0]) and np.allclose(track.to_point[after], lock[1])
    assert np.allclose(track.from_point[after], [-2.0, 0.0, 0.1])
    # Without the cut, the line from one contact to the other.
    plain = contacts._track(f, 24.0, start, end, zeros, zeros, lock, lock, lock, np.zeros(2), np.zeros((2, 3)),
                            np.zeros(2), np.zeros((2, 3)))
    assert np.allclose(plain.to_point[before], lock[1]) and np.allclose(plain.from_point[after], lock[0])


def test_feet_with_the_same_timing_share_its_arithmetic_and_each_gets_what_it_gets_alone():
    """A crowd of copies: feet whose contacts have the same timing (their places differ) share what depends on
    the timing alone (`contacts._around`, kept for the last few arguments by `_around_kept`, read-only).
    Each foot's track is exactly what it gets with nothing kept, and a foot with other timing gets its own."""
    rng = np.random.default_rng(2)
    f = np.arange(-5.0, 60.0)
    start, end = np.array([0.0, 22.0, 41.0]), np.array([12.0, 33.0, 52.0])
    zeros = np.zeros(3)

    def track(lock, start=start, end=end):
        return contacts._track(f, 30.0, start, end, zeros, zeros, lock, lock + 0.01, lock - 0.02, np.array([0.0, 55.0]),
                               np.zeros((2, 3)), zeros, np.zeros((3, 3)))

    locks = [rng.normal(size=(3, 3)) for _ in range(4)]
    alone = []
    for lock in locks:
        contacts._around_kept.cache_clear()
        alone.append(track(lock))
    contacts._around_kept.cache_clear()
    together = [track(lock) for lock in locks]
    for a, b in zip(alone, together):
        for name in a.__dataclass_fields__:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    # The timing's arithmetic done once for the four feet (no roll: the hold ends with the contact).
    assert contacts._around_kept.cache_info().currsize == 1 and contacts._around_kept.cache_info().misses == 1
    track(locks[0], start=start + 1.0)  # other timing: its own
    assert contacts._around_kept.cache_info().currsize == 2
    kept = contacts._around(f, start, end, 1.0)
    with pytest.raises(ValueError):
        kept[0][0] = 7  # read-only: no caller can change what the next foot is given


def test_a_foot_rolling_onto_its_ball_starts_its_swing_up_the_up_axis_where_its_ankle_lifts_off():
    """A contact held on its ball through toe-off (Ball Down at 6, End at 10, Ball Up at 14): along the ground
    the ball stays held until Ball Up, but up the up axis the contact ends with the ankle's, at End: the sole is
    no longer put down, and the toe-up turn eases in from there. The clearance over the terrain around waits
    until the ball is let go (a held ball stays on its tread, issue 20 (b)), then goes on from its ease since
    End, not starting again at Ball Up. (The sole put down to Ball Up, a jump from standing up stairs kept its
    toe on the lower tread until the ball was up, then climbed the riser in 3 frames: fair1_jumping stairs,
    knee 1.77x the source's.)"""
    f = np.arange(0.0, 41.0)
    start, end = np.array([0.0, 30.0]), np.array([10.0, 40.0])
    lock = np.array([[0.0, 0.0, 0.1], [1.0, 0.0, 0.1]])
    zeros, z3 = np.zeros(2), np.zeros((2, 3))
    pivot, up = np.array([6.0, np.inf]), np.array([14.0, 40.0])
    ball = np.array([[0.15, 0.0, -0.08], [0.0, 0.0, 0.0]])
    track = contacts._track(f, 120.0, start, end, zeros, zeros, lock, lock, lock, np.array([0.0, 40.0]),
                            np.zeros((2, 3)), zeros, z3, pivot, up, ball, lock)
    roll = (f > 10) & (f <= 14)
    assert (track.weight[f <= 14] == 1.0).all() and (track.ball[(f >= 6) & (f <= 14)] == 1.0).all()
    assert np.allclose(track.point[(f >= 6) & (f <= 14)], lock[0] + ball[0])
    assert (track.down[f <= 10] == 1.0).all() and (track.down[roll] == 0.0).all()
    assert (track.swing[f <= 14] == 0.0).all() and (track.pitch[roll] > 0.0).all()
    assert track.swing[15] == contacts.swing_weight(5.0, 120.0) > contacts.swing_weight(1.0, 120.0)  # no restart
    assert (np.diff(track.swing[(f > 14) & (f <= 20)]) >= 0.0).all()
    # The swing's line over step edges ramps in from Ball Up: its first 4 frames (End to Ball Up) are held.
    assert (track.lead[(f > 10) & (f < 30)] == 4.0).all() and (track.lead[(f <= 10) | (f >= 30)] == 0.0).all()


def test_a_ball_that_lands_before_the_ankle_rests_is_held_from_its_landing():
    """Issue 20 (b): where the ball is down (on the ground and still) on the frames before the ankle comes to
    rest, the contact holds the ball from the first of them (`landing_of`), no earlier than the frame after
    the previous contact's last held frame, and not where the ball is not down on Start and the frame before."""
    down = np.zeros(60, dtype=bool)
    down[12:40] = True  # the ball lands at 12; the ankle rests from 20
    assert contacts.landing_of(down, 20, 0) == 12
    assert contacts.landing_of(down, 20, 15) == 15  # the previous contact held its foot to 14
    assert contacts.landing_of(down, 12, 0) == 12  # the ball lands with the ankle
    down[19] = False
    assert contacts.landing_of(down, 20, 0) == 20  # the ball up the frame before Start
    down[19], down[20] = True, False
    assert contacts.landing_of(down, 20, 0) == 20  # ... or on Start


def test_a_heel_that_strikes_before_the_ankle_rests_is_held_from_its_strike():
    """Issue 20 (b), the heel while only the heel is down: where the heel is down (`heel_down`: low and still)
    on the frames before the ankle comes to rest and the ball is not, the contact holds its heel from the
    first of them (`first_down`); a ball that lands first is held instead, as before, and nothing is held
    before Start where neither is down on Start and the frame before it."""
    n = 60
    ball, heel = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    heel[14:40] = True  # the heel strikes at 14; the ankle rests from 20
    ball[18:40] = True  # the ball comes down at 18, before the ankle rests too
    assert contacts.first_down(ball, heel, 20, 0) == (18, False)  # the ball landed before Start: its hold
    ball[:20] = False
    struck = np.zeros(n, dtype=bool)
    struck[10:16] = True  # the foot toe-up until 15, flat from 16 (before Start)
    assert contacts.first_down(ball, heel, 20, 0, struck) == (14, True)  # a heel strike: the heel from 14
    assert contacts.first_down(ball, heel, 20, 16, struck) == (20, False)  # from 16 on: a flat foot settling
    assert contacts.first_down(ball, heel, 20, 16) == (16, True)  # (the previous contact held its foot to 15)
    heel[19] = False
    assert contacts.first_down(ball, heel, 20, 0, struck) == (20, False)  # the heel up the frame before Start
    # From the samples: the heel low and still from 14, the foot toe-up until it comes down flat at 20.
    fps, leg = 120.0, 1.0
    y = np.r_[np.linspace(0.0, 0.5, 15)[:-1], np.full(n - 14, 0.5)]  # 4.3 leg/s, then still from 14
    d = {"heel": np.stack([np.zeros(n), y, np.r_[np.linspace(0.3, 0.0, 15)[:-1], np.zeros(n - 14)]], 1),
         "front_z": np.r_[np.full(20, 0.1), np.full(n - 20, 0.01)]}
    down, up = contacts.heel_down(d, leg, fps), contacts.toe_up(d, leg)
    assert down[14:].all() and not down[:10].any()
    assert up[11:20].all() and not up[20:].any()  # (before 11 the heel is still higher than the front)


def test_a_heel_held_from_its_strike_is_held_along_the_ground_only():
    """The heel held from its strike (12) to Start (20), `land` with its fourth member: `heel` is 1 there and
    `ball` 0, the point where the heel is at Start (lock point and `land_ball`); every other value as for a
    ball held from Ball Lands (`test_a_ball_held_from_its_landing_is_held_along_the_ground_only`)."""
    f = np.arange(0.0, 41.0)
    start, end = np.array([0.0, 20.0]), np.array([4.0, 40.0])
    lock = np.array([[0.0, 0.0, 0.1], [1.0, 0.0, 0.1]])
    zeros, z3 = np.zeros(2), np.zeros((2, 3))
    span = np.array([0.0, 40.0])
    land_heel = np.array([[0.0, 0.0, 0.0], [-0.05, 0.0, -0.08]])
    shift = np.array([[0.0, 0.0, 0.0], [-0.03, 0.01, 0.0]])
    args = (f, 24.0, start, end, zeros, zeros, lock, lock + 0.02, lock, span, z3, zeros, z3)
    ball = contacts._track(*args, land=(np.array([0.0, 12.0]), land_heel, shift))
    heel = contacts._track(*args, land=(np.array([0.0, 12.0]), land_heel, shift, np.array([False, True])))
    landing = (f >= 12) & (f < 20)
    assert (heel.heel[landing] == 1.0).all() and (heel.heel[~landing] == 0.0).all()
    assert (heel.ball[landing] == 0.0).all() and (ball.ball[landing] == 1.0).all()
    assert np.allclose(heel.point[landing], lock[1] + land_heel[1])
    for name, value in vars(ball).items():
        if name not in ("ball", "heel"):
            assert np.array_equal(getattr(heel, name), value), name


def test_a_ball_held_from_its_landing_is_held_along_the_ground_only():
    """The ball held from Ball Lands (12) to Start (20): on those frames it is held where it is at Start (the
    lock point and `land_ball`), with no heading held; the swing's correction along the ground arrives there
    by Ball Lands with no jump. Up the up axis the frames before Start are the swing's (the sole not put down,
    its hover, ground and toe-up turn as without the landing) but for the clearance: none there (`swing` and
    `free` 0, as wherever something is held; the edge just passed held the ball up over the tread it landed
    on, fair1_zombie over stairs: 2.9% of the leg), and `model.swing_smoothing` keeps those frames no higher
    than the terrain under them puts them."""
    f = np.arange(0.0, 41.0)
    start, end = np.array([0.0, 20.0]), np.array([4.0, 40.0])
    lock = np.array([[0.0, 0.0, 0.1], [1.0, 0.0, 0.1]])
    enter = lock + np.array([0.02, 0.0, 0.0])
    zeros, z3 = np.zeros(2), np.zeros((2, 3))
    span = np.array([0.0, 40.0])
    land_ball = np.array([[0.0, 0.0, 0.0], [0.15, 0.0, -0.08]])
    land_shift = np.array([[0.0, 0.0, 0.0], [-0.03, 0.01, 0.0]])
    land = (np.array([0.0, 12.0]), land_ball, land_shift)
    plain = contacts._track(f, 24.0, start, end, zeros, zeros, lock, enter, lock, span, z3, zeros, z3)
    track = contacts._track(f, 24.0, start, end, zeros, zeros, lock, enter, lock, span, z3, zeros, z3, land=land)
    landing = (f >= 12) & (f < 20)
    assert (track.landing[landing] == 1.0).all() and (track.landing[~landing] == 0.0).all()
    assert (track.weight[landing] == 1.0).all() and (track.ball[landing] == 1.0).all()
    assert np.allclose(track.point[landing], lock[1] + land_ball[1])
    assert np.allclose(track.anchor[landing], lock[1]) and (track.turning[landing] == 0.0).all()
    assert np.allclose(track.twist[landing], 0.0)
    # The swing's correction arrives at Ball Lands: the animation's ball there moved onto where it is held.
    before = lock[1] - enter[1] + land_shift[1]
    gone = np.linalg.norm(track.offset[5:12] - before, axis=1)
    assert gone[-1] < 0.05 * np.linalg.norm(before) and (np.diff(gone) < 0.0).all()
    assert np.linalg.norm(np.diff(track.offset[5:12], axis=0), axis=1).max() < 0.3 * np.linalg.norm(before)
    # Up the up axis, every frame as without the landing, but no clearance on the landing's frames.
    for name in ("down", "rise", "from_point", "from_weight", "to_point", "to_weight", "pitch", "gap", "lead",
                 "opened"):
        assert np.array_equal(getattr(track, name), getattr(plain, name)), name
    for name in ("swing", "free"):
        got, was = getattr(track, name), getattr(plain, name)
        assert (got[landing] == 0.0).all() and (was[landing] > 0.0).any(), name  # it had some there before
        assert np.array_equal(got[~landing], was[~landing]), name
    # From Start on, and before Ball Lands, the track is the plain one along the ground too.
    rest = f >= 20
    assert np.array_equal(track.point[rest], plain.point[rest]) and np.array_equal(track.weight[rest], plain.weight[rest])


def test_a_held_heading_is_kept_through_the_ball_and_carried_across_the_swing():
    """Issue 20 (b), the whole foot held when flat: while the ankle is held (0..5) so is the foot's heading
    (`turning`, at the contact's `heading`); from Ball Down (6) to Ball Up (14) the foot keeps the turn it had
    as the ankle was let go, and the swing eases it into the next landing's turn as the correction along the
    ground is, with no step between frames; it fades out after the last contact. A contact that holds no
    heading (as detected before headings were held) turns nothing."""
    f = np.arange(0.0, 80.0)
    start, end = np.array([0.0, 30.0]), np.array([10.0, 40.0])
    lock = np.array([[0.0, 0.0, 0.1], [1.0, 0.0, 0.1]])
    zeros, z3 = np.zeros(2), np.zeros((2, 3))
    pivot, up = np.array([6.0, np.inf]), np.array([14.0, 40.0])
    ball = np.array([[0.15, 0.0, -0.08], [0.0, 0.0, 0.0]])
    turn = (np.array([True, True]), np.array([0.5, -1.0]), np.array([0.0, 0.0]), np.array([0.2, -0.1]))

    def track(turn):
        return contacts._track(f, 120.0, start, end, zeros, zeros, lock, lock, lock, np.array([0.0, 80.0]),
                               z3, zeros, z3, pivot, up, ball, lock, turn=turn)

    t = track(turn)
    held = f <= 5
    assert (t.turning[held] == 1.0).all() and (t.heading[held] == 0.5).all() and (t.twist[held] == 0.0).all()
    on_ball = (f >= 6) & (f <= 14)
    assert (t.turning[on_ball] == 0.0).all() and np.allclose(t.twist[on_ball], 0.2)
    swing = (f > 14) & (f < 30)
    assert np.all(np.diff(t.twist[(f >= 14) & (f <= 30)]) <= 1e-12)  # from 0.2 down to the landing's 0
    assert np.abs(np.diff(t.twist[swing])).max() < 0.2 / 8
    assert t.twist[f == 29][0] == pytest.approx(0.0, abs=0.01)
    second = (f >= 30) & (f <= 40)
    assert (t.turning[second] == 1.0).all() and (t.heading[second] == -1.0).all()
    assert t.twist[f == 41][0] == pytest.approx(-0.1, abs=0.01) and t.twist[-1] == 0.0  # faded out after it
    # Contacts that hold no heading: nothing turns, anywhere.
    t = track((np.array([False, False]), zeros, zeros, zeros))
    assert not t.turning.any() and not t.twist.any()
    # The turn held is the animation's less the contact's heading, wrapped, and at most MAX_HELD_TURN.
    model = harness.module("core.model")
    limit = harness.module("core.tuning").MAX_HELD_TURN
    assert model.held_turn_angle(0.1) == pytest.approx(0.1)
    assert model.held_turn_angle(2.0 * math.pi - 0.1) == pytest.approx(-0.1)
    assert model.held_turn_angle(1.0) == pytest.approx(limit) and model.held_turn_angle(-3.0) == pytest.approx(-limit)


def test_planted_foot_does_not_skate_during_a_contact():
    obj, terrain, leg = _walker("noise")
    _plant(obj, terrain)
    scene = bpy.context.scene
    limb = props.settings(obj).limbs[0]
    for c in limb.contacts:
        positions = []
        for f in range(c.start, c.end + 1):
            scene.frame_set(f)
            positions.append((obj.matrix_world @ obj.pose.bones[limb.end_bone].head).xy.copy())
        travel = sum((b - a).length for a, b in zip(positions, positions[1:]))
        assert travel <= 1e-4 * leg, (c.start, c.end, travel)


def test_contact_operators_edit_and_relock():
    obj, terrain, leg = _walker("flat")
    _plant(obj, terrain)
    s = props.settings(obj)
    bpy.context.view_layer.objects.active = obj
    s.active_limb = 0
    limb = s.limbs[0]
    count = len(limb.contacts)
    limb.active_contact = 0
    assert bpy.ops.contact_ik.contact_remove() == {"FINISHED"}
    assert len(limb.contacts) == count - 1
    bpy.context.scene.frame_set(2)
    assert bpy.ops.contact_ik.contact_add() == {"FINISHED"}
    added = limb.contacts[len(limb.contacts) - 1]
    assert added.start == 2 and added.end > 2
    assert bpy.ops.contact_ik.contact_relock() == {"FINISHED"}
    assert bpy.ops.contact_ik.detect_contacts() == {"FINISHED"}
    assert len(limb.contacts) == count


def _rolling_walk(obj, frames: int = 48, cycle: int = 24, stride: float = 0.35, yaw: float = 0.0):
    """`scenes.author_walk` with a foot that rolls over its ball before it lifts off (flat, then the heel
    rising as the foot turns about the ball, up to 35 degrees), its ball on the floor sliding back 3% of the
    leg over the stance, as captured feet do. `yaw` (radians): the flat foot also turns that far about its
    ankle (the ankle still, its ball sweeping round it) and keeps the turn through the roll; the swing turns
    it back."""
    from mathutils import Matrix, Vector

    rig, solvers = harness.module("core.rig"), harness.module("solvers")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    leg = scenes.leg_length(obj)
    speed = 2 * stride * leg / cycle
    pb = obj.pose.bones
    pelvis = pb["spine"]
    bones = obj.data.bones
    names = ("thigh.L", "shin.L", "thigh.R", "shin.R", "foot.L", "foot.R")
    for name in names:
        pb[name].rotation_mode = "QUATERNION"
    for f in range(1, frames + 1):
        scene.frame_set(f)
        t = f - 1
        move = Vector((0.0, -speed * t, -0.09 * leg + 0.015 * leg * math.cos(4 * math.pi * t / cycle)))
        pelvis.location = pelvis.bone.matrix_local.to_3x3().inverted() @ move
        for name in names:
            pb[name].rotation_quaternion = (1, 0, 0, 0)
        bpy.context.view_layer.update()
        for side, phase in (("L", 0.0), ("R", 0.5)):
            foot, toe = f"foot.{side}", f"toe.{side}"
            ankle0, ball0 = bones[foot].head_local, bones[toe].head_local
            u = ((t / cycle) + phase) % 1.0
            stance_y = -speed * (math.floor(t / cycle + phase) + 0.3 - phase) * cycle
            slide = 0.03 * leg
            pitch, lift, y = 0.0, 0.0, stance_y + slide * u / 0.6
            if 0.35 <= u < 0.6:  # the heel rises, the foot turning about its ball
                pitch = math.radians(35.0) * (u - 0.35) / 0.25
            elif u >= 0.6:
                s = (u - 0.6) / 0.4
                w = 0.5 - 0.5 * math.cos(math.pi * s)
                y = stance_y + slide * (1.0 - w) - speed * cycle * w
                lift = 0.12 * leg * math.sin(math.pi * s)
                pitch = math.radians(35.0) * max(0.0, 1.0 - 3.0 * s)
            psi = yaw * min(u / 0.35, 1.0) if u < 0.6 else yaw * (0.5 + 0.5 * math.cos(math.pi * (u - 0.6) / 0.4))
            spin = Matrix.Rotation(psi, 3, "Z")
            turn = spin @ Matrix.Rotation(pitch, 3, "X")  # heel up: the toes stay, the heel rises (the foot faces -Y)
            ball = ankle0 + Vector((0.0, y, lift)) + spin @ (ball0 - ankle0)
            ankle = ball + turn @ (ankle0 - ball0)
            pose = rig.read_chain(obj, [f"thigh.{side}", f"shin.{side}"], end_bone=foot)
            pole = pose.positions()[1] + Vector((0.0, -leg, 0.0))
            rot = (turn.to_quaternion() @ bones[foot].matrix_local.to_quaternion())
            sol = solvers.solve_limb(pose, obj.matrix_world @ ankle, pole=obj.matrix_world @ pole, target_rotation=rot)
            rig.write_solution(obj, [f"thigh.{side}", f"shin.{side}"], sol, end_bone=foot)
        for name in names:
            pb[name].keyframe_insert("rotation_quaternion", frame=f)
        pelvis.keyframe_insert("location", frame=f)
    scene.frame_set(1)


@pytest.mark.parametrize("yaw", [0.0, 12.0])
def test_a_foot_rolling_over_its_ball_keeps_its_ball_where_it_was(yaw):
    """Issue 20 (b): while the heel rises and the foot rolls over its ball, the ball stays where it was (within
    1% of the leg along the ground), from the flat foot through toe-off: what touches the ground is held, not
    the ankle (which swept the ball back as the foot turned about it). Also where the flat foot turns 12
    degrees about its ankle, as captured feet do (pymo_av8: its ball swept 3.4% of the leg): a flat foot's
    heading is held with its ankle (`ContactIKContact.holds_turn`)."""
    harness.reset_scene()
    obj = scenes.metarig()
    _rolling_walk(obj, yaw=math.radians(yaw))
    leg = scenes.leg_length(obj)
    terrain = scenes.TERRAINS["flat"](leg)
    setup.apply_detection(obj, LEG_LIMBS)
    scene = bpy.context.scene
    frames = range(scene.frame_start, scene.frame_end + 1)
    source = {}
    for f in frames:
        scene.frame_set(f)
        source[f] = {s: (obj.matrix_world @ obj.pose.bones[f"toe.{s}"].head).copy() for s in "LR"}
    _plant(obj, terrain)
    checked = 0
    for side in "LR":
        # The frames the animation has its ball on the floor (flat foot and roll), run by run.
        low = min(source[f][side].z for f in frames)
        still = [f for f in frames if source[f][side].z < low + 0.001 * leg]
        runs, run = [], []
        for f in still:
            if run and f != run[-1] + 1:
                runs.append(run)
                run = []
            run.append(f)
        runs.append(run)
        for run in [r for r in runs if len(r) >= 8 and r[0] > scene.frame_start + 1 and r[-1] < scene.frame_end]:
            balls = []
            for f in run:
                scene.frame_set(f)
                balls.append((obj.matrix_world @ obj.pose.bones[f"toe.{side}"].head).xy.copy())
            drift = max((b - balls[0]).length for b in balls)
            assert drift <= 0.01 * leg, (side, run[0], run[-1], drift / leg)
            checked += 1
    assert checked >= 2


def test_a_held_heading_is_the_same_frame_by_frame_and_on_a_rotated_rig():
    """The held heading is one computation: the per-frame solve (`plant_rig`, reading each frame's row of the
    lock track) gives the pose of the whole-range solve (`batch`), on uneven ground; and a rig turned and
    moved at object level holds its feet's heading in world space as an unturned one does (the ball still
    within 1% of the leg while the flat foot turns 12 degrees)."""
    live = harness.module("core.live")
    harness.reset_scene()
    obj = scenes.metarig()
    _rolling_walk(obj, yaw=math.radians(12.0))
    obj.rotation_euler = (0.0, 0.0, 1.1)
    obj.location = (3.0, -2.0, 0.0)
    bpy.context.view_layer.update()
    leg = scenes.leg_length(obj)
    terrain = scenes.TERRAINS["noise"](leg)
    setup.apply_detection(obj, LEG_LIMBS)
    _plant(obj, terrain)
    limb = props.settings(obj).limbs[0]
    assert any(c.holds_turn and abs(c.turn_out) > math.radians(5.0) for c in limb.contacts)
    scene = bpy.context.scene
    assert live.precompute(obj, scene) is not None
    cached = {}
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        cached[f] = _pose_snapshot(obj)
    live.invalidate_frames()
    live.USE_FRAME_CACHE = False
    try:
        for f in range(scene.frame_start, scene.frame_end + 1):
            scene.frame_set(f)
            assert _close(_pose_snapshot(obj), cached[f], 1e-5 * leg), f
    finally:
        live.USE_FRAME_CACHE = True
    # In a contact that holds the heading, the ball stays put while the ankle is held.
    checked = 0
    for c in limb.contacts:
        if not c.holds_turn or c.start <= scene.frame_start + 1 or (c.pivot if c.rolls else c.end + 1) - c.start < 4:
            continue
        checked += 1
        last = (c.pivot - 1) if c.rolls else c.end
        balls = []
        for f in range(c.start, last + 1):
            scene.frame_set(f)
            balls.append((obj.matrix_world @ obj.pose.bones["toe.L"].head).xy.copy())
        assert max((b - balls[0]).length for b in balls) <= 0.01 * leg, (c.start, last)
    assert checked >= 1


def test_a_foot_turning_on_its_ball_holds_its_ball():
    """A stance that turns in place on the ball (the heel swinging round it) and lifts off whole holds the
    ball, not the ankle: held at the ankle, the ball swept 6% of the leg (cmu_131_01, a walk that stops and
    turns). A foot turning on its heel (the ankle still, the ball swinging) keeps the ankle held."""
    n = 40
    angle = np.linspace(0.0, math.radians(40.0), n)
    ball = np.tile([0.0, 0.2, 0.0], (n, 1))  # still
    ankle = ball - 0.2 * np.stack([np.sin(angle), np.cos(angle), np.zeros(n)], 1)  # swinging round it
    down = np.ones(n, dtype=bool)
    down[-3:] = False  # the foot lifts off whole: its ball is up on the contact's last frames
    assert contacts.roll_of(down, 0, n - 1, n - 1) is None  # not a roll onto the toes...
    assert contacts.turn_on_ball({"ball": ball, "ankle": ankle}, down, 0, n - 1) == (0, n - 1)  # ...a turn on it
    late = down.copy()
    late[:5] = False  # the ball comes down after the heel: held from then
    assert contacts.turn_on_ball({"ball": ball, "ankle": ankle}, late, 0, n - 1) == (5, n - 1)
    on_heel = {"ankle": np.tile([0.0, 0.0, 0.0], (n, 1)), "ball": ankle + (ball - ankle) * 2.0}
    assert contacts.turn_on_ball(on_heel, down, 0, n - 1) is None
    assert contacts.turn_on_ball({"ball": ball, "ankle": ankle}, np.zeros(n, dtype=bool), 0, n - 1) is None


def test_a_foot_landing_on_its_toes_is_held_from_when_its_ball_lands():
    """A contact (found from the ankle coming to rest) whose foot lands on its toes first (its ball down, its
    heel still up) starts on the frame the ball lands, so the ball is held from then, not left to slide until
    the ankle stops; a heel strike (the ball not yet down) starts with the ankle, and no contact reaches back
    into the one before it."""
    n = 50
    down = np.zeros(n, dtype=bool)
    toes = np.zeros(n, dtype=bool)
    down[12:40], toes[12:20] = True, True  # the ball lands at 12, the heel comes down at 20
    assert contacts.landed_on_toes([(20, 40)], down, toes) == [(12, 40)]
    assert contacts.landed_on_toes([(20, 40)], down, np.zeros(n, dtype=bool)) == [(20, 40)]  # heel first
    assert contacts.landed_on_toes([(2, 14), (20, 40)], down, toes) == [(2, 14), (15, 40)]


def test_a_toe_pushing_through_the_floor_at_toe_off_does_not_hide_the_ball_down():
    """The ball is down where the front of the foot is near the level it stands on, and that level is one the
    front holds for a stance, not the few frames a toe pushes through the floor at toe-off (pymo_av8: 2% of
    the leg under it, so the stances before read 3-6% up and no ball was ever held: the ball swept 3-6% of the
    leg as the foot turned). A lower stance near in time still sets the level."""
    fps, leg = 120.0, 1.0
    front = np.full(240, 0.2)  # in the air
    speed = np.full(240, 2.0)
    front[20:81], speed[20:81] = 0.02, 0.05  # a stance, its front 2% of the leg over the floor...
    front[81:87], speed[81:87] = -0.02, 0.05  # ... the toe through the floor for six frames at toe-off
    down = contacts.ball_down(front, speed, leg, fps)
    assert down[20:81].all()
    assert not down[100:].any()
    low = front.copy()
    low[81:87] = 0.2
    low[120:180], speed[120:180] = -0.02, 0.05  # a stance of its own, 4% lower: that is the level
    assert not contacts.ball_down(low, speed, leg, fps)[50:81].any()  # within BASELINE_WINDOW of it


def test_the_level_a_ball_stands_on_is_read_where_the_front_is_slow_and_near_its_lowest():
    """`stance_level`: the level the front of the foot stands on is the lowest it holds while slower than
    ROLL_SPEED, not the lowest it passes through moving along the ground (cmu_12_02: read against such frames
    the level was 1.7% of the leg low, the last frames of a toe-off read up, and the ball was let go and slid);
    and never more than ROLL_STAY_HEIGHT over the lowest it holds at any speed: a foot hanging still in the air
    near a stance on the floor is not down."""
    fps, leg = 120.0, 1.0
    n = 240
    front = np.full(n, 0.2)  # in the air
    speed = np.full(n, 2.0)
    front[20:81], speed[20:81] = 0.02, 0.05  # a stance, its front 2% of the leg over the floor
    front[100:120] = -0.03  # a toe swept through the floor, moving (5% under the stance, within the window)
    down = contacts.ball_down(front, speed, leg, fps)
    assert down[20:81].all()
    assert np.allclose(contacts.stance_level(front, speed, leg, fps)[20:81], 0.02)
    assert not down[100:120].any()  # moving: not down, wherever it is
    hang, moving = np.full(n, 0.2), np.full(n, 2.0)
    hang[20:60], moving[20:60] = 0.0, 0.4  # shuffling along the floor, never slow...
    hang[70:140], moving[70:140] = 0.15, 0.05  # ... then hanging still, 15% of the leg up
    assert not contacts.ball_down(hang, moving, leg, fps).any()
    assert np.allclose(contacts.stance_level(hang, moving, leg, fps)[70:140], 0.05)
    # With no stance near (the whole window in the air), the level is the lowest it holds, as it was.
    alone = np.full(n, 0.2)
    assert contacts.ball_down(alone, np.full(n, 0.05), leg, fps).all()
    assert len(contacts.stance_level(np.zeros(0), np.zeros(0), leg, fps)) == 0


def test_a_contact_rolls_on_a_ball_kept_down_as_it_rises_a_little_and_slowly():
    """`ball_runs`' kept down: once down, the ball stays down while within ROLL_STAY_HEIGHT of its level and
    slower than ROLL_STAY_SPEED, and a contact whose ball is kept down so on its last frame rolls on it
    (`roll_of`): the ball rising a little as the heel peels off is still what the foot stands on (cmu_12_02:
    3.3% up at 0.27 leg/s on the contact's last frames; the ankle held, the foot turned about it and swept the
    ball 2.6% of the leg). A ball that comes no lower than that, or moves faster, is not down; and the roll
    goes no further past the contact than the ball is down."""
    fps, leg = 120.0, 1.0
    n = 240
    front = np.full(n, 0.2)  # in the air
    speed = np.full(n, 2.0)
    front[20:81], speed[20:81] = 0.0, 0.05  # a stance on the ball...
    front[81:91], speed[81:91] = np.linspace(0.0, 0.045, 11)[1:], 0.3  # ... rising to 4.5% of the leg, slowly
    front[91:100], speed[91:100] = 0.1, 0.3  # and up
    down, kept = contacts.ball_runs(front, speed, leg, fps)
    assert kept[20:91].all()
    assert not kept[91:].any()
    assert (down == contacts.ball_down(front, speed, leg, fps)).all()
    assert down[20:81].all() and not down[85:].any()  # down alone: up from ROLL_HEIGHT on
    assert contacts.roll_of(down, 20, 90, 200, kept=kept) == (20, 90)
    assert contacts.roll_of(down, 20, 90, 200) is None  # what it was: the ankle held
    assert contacts.roll_of(down, 20, 85, 200, kept=kept) == (20, 85)  # not past the contact: not down there
    hover = np.full(n, 0.2)
    hover[20:81], hover[85:150] = 0.04, 0.0  # 4% over the level the next stance holds, never lower
    still = speed.copy()
    still[85:150] = 0.05
    assert not contacts.ball_runs(hover, still, leg, fps)[1][20:81].any()
    fast = speed.copy()
    fast[81:91] = 0.45  # faster than ROLL_STAY_SPEED: lifting off
    assert not contacts.ball_runs(front, fast, leg, fps)[1][81:91].any()


def test_a_turn_on_the_ball_runs_on_into_the_roll():
    """A contact whose ball turns on the ground, slides a few frames as the toes push off, and is down again
    for a frame or two as the contact ends is held at the ball from the turn on, through the roll: held from
    those last frames alone (`roll_of`), the ball swept the turn (cmu_01_01, 1.1 -> 2.0% of the leg). A foot
    turning on its heel (the ball swinging) keeps its roll alone."""
    n = 60
    ball = np.tile([0.0, 0.2, 0.0], (n, 1))
    ankle = ball - 0.2 * np.stack([np.sin(np.linspace(0.0, 0.6, n)), np.cos(np.linspace(0.0, 0.6, n)), np.zeros(n)], 1)
    d = {"ball": ball, "ankle": ankle}
    down = np.zeros(n, dtype=bool)
    down[10:35] = True  # turning on it
    down[42:45] = True  # slid, then down again as the contact ends (b = 43) and after
    toes = np.ones(n, dtype=bool)
    assert contacts.roll_of(down, 0, 43, n - 1, toes) == (42, 44)
    assert contacts.held_ball(d, down, 0, 43, n - 1) == (10, 44)
    on_heel = {"ankle": np.tile([0.0, 0.0, 0.0], (n, 1)), "ball": ankle + (ball - ankle) * 2.0}
    assert contacts.held_ball(on_heel, down, 0, 43, n - 1) == (42, 44)
    assert contacts.held_ball(d, down, 0, 41, 41) == (10, 41)  # no roll: the turn


def test_a_ball_still_down_after_the_contact_is_held_though_the_heel_is_not_up():
    """The ankle's contact ends (the ankle starts to move) while the ball is still down and slow, the heel not
    yet up (a foot peeling off flat, a shuffle): the ball is held until it is up, as in a roll onto the toes.
    Held only while the heel was up, it slid from the contact's end on (cmu_02_01: 2.0% of the leg; sfu_0005
    4.1% on stairs)."""
    n = 40
    d = {"ball": np.tile([0.0, 0.2, 0.0], (n, 1)), "ankle": np.tile([0.0, 0.0, 0.0], (n, 1))}
    down = np.zeros(n, dtype=bool)
    down[0:26] = True  # the ball down through frame 25; the ankle's contact ends at 20
    assert contacts.held_ball(d, down, 0, 20, n - 1) == (0, 25)
    assert contacts.held_ball(d, down, 0, 20, 22) == (0, 22)  # never into the next contact
    up = down.copy()
    up[21:] = False  # the ball up as the contact ends: nothing held after it
    assert contacts.held_ball(d, up, 0, 20, n - 1) == (0, 20)


def test_a_heel_peeling_off_a_still_ball_in_a_contact_holds_the_ball_from_there():
    """Issue 20 (b), the ball through toe-off: inside a contact the heel comes up (`heel_down` no longer) while
    the ball stays still along the ground: the foot stands on its ball from there, and the contact holds its
    ball from there (`sole_runs`' `peel`, `roll_of`), though the ball, sinking as the toes push, is not yet
    down by height (`ball_down`: within ROLL_HEIGHT of its own low). Held from where it was down by height
    alone, the ball swept as the foot turned about the held ankle (pymo_av8: 1.3-1.9% of the leg over every
    terrain; the capture's own 3.8%)."""
    fps, leg, n = 120.0, 1.0, 120
    t = np.arange(n)
    heel_z = np.where(t < 40, 0.0, 0.004 * (t - 40))  # the heel rises from 40
    heel_y = np.where(t < 40, 0.0, 0.4 / fps * (t - 40))  # ... and swings forward about the ball, 0.4 leg/s
    ball_z = np.where(t < 40, 0.07, 0.07 - 0.0015 * (t - 40))  # the ball sinks as the toes push: 7% -> 1.2%
    ball = np.stack([np.zeros(n), np.full(n, 0.2) + 0.0008 * t, ball_z], 1)  # 0.1 leg/s along the ground
    ball[80:, 1] += 0.05 * (t[80:] - 79)  # lifted off and away from 80
    ball[80:, 2] += 0.02 * (t[80:] - 79)
    d = {"heel": np.stack([np.zeros(n), heel_y, heel_z], 1), "ball": ball, "front_z": ball[:, 2],
         "ball_speed": contacts.ground_speed(ball, fps), "ankle": np.zeros((n, 3))}
    d["ankle"][:, 2] = 0.1
    down, heel, _struck, peel, _kept = contacts.sole_runs(d, leg, fps, np.zeros(n, dtype=bool))
    assert heel[:40].all() and not heel[42:80].any()
    assert peel[42:79].all() and not peel[:40].any() and not peel[82:].any()
    first_by_height = int(np.flatnonzero(down[:80])[0])
    assert first_by_height >= 48  # by height alone the ball is down only well into the peel
    # The contact (the ankle at rest) is frames 0..60; the ball down as it ends, so it rolls onto its ball.
    assert down[60]
    assert contacts.roll_of(down, 0, 60, n - 1)[0] == first_by_height
    first, last = contacts.roll_of(down, 0, 60, n - 1, peel=peel)
    assert 40 <= first <= 42 and last == contacts.roll_of(down, 0, 60, n - 1)[1]
    assert contacts.held_ball(d, down, 0, 60, n - 1, peel)[0] == first


def _walker_feet():
    """A walker on flat ground, for feeding `detect_contacts` samples of its own: the rig, the scene, its
    settings, the scene's fps, its foot limbs' indices and the leg's length in world units."""
    obj, _terrain, _leg = _walker("flat")
    scene = bpy.context.scene
    s = obj.contact_ik
    feet = [i for i, lb in enumerate(s.limbs) if lb.kind == "FOOT"]
    return obj, scene, s, contacts.fps_of(scene), feet, s.limbs[feet[0]].length * contacts.world_scale(obj)


def test_a_stance_on_the_ball_alone_is_a_contact_that_holds_its_ball():
    """A foot standing on its ball while its ankle never comes to rest (on its toes, pivoting as a walk starts
    or stops) gets a contact of its own that holds the ball from its first frame: left to the swing, it
    floated over a flight of stairs on the swing's line (cmu_131_01: 13.7% of the leg). Not where the ball
    only passes (shorter than MIN_BALL_STANCE), not where it is held already, and a frame the ball jumps to (a
    capture's glitch of the toe) splits the stance rather than being held through."""
    obj, scene, s, fps, feet, leg = _walker_feet()
    n = int(round(2.0 * fps))
    a, b = int(round(0.5 * fps)), int(round(1.2 * fps))  # on the ball over frames a..b-1

    def samples(glitch: bool = False, short: bool = False) -> dict[int, dict[str, np.ndarray]]:
        t = np.arange(n) / fps
        ankle = np.stack([0.3 * leg * t, np.zeros(n), s.floor_height + leg * (0.2 + 0.05 * np.sin(9.0 * t))], 1)
        ball = ankle + np.array([0.15 * leg, 0.0, -0.2 * leg])
        front = np.full(n, s.floor_height + 0.2 * leg)
        ball_speed = np.full(n, 2.0 * leg)
        stop = a + int(math.ceil(0.04 * fps)) if short else b
        ball[a:stop] = [0.15 * leg + 0.3 * leg * t[a], 0.0, s.floor_height + 0.005 * leg]
        front[a:stop], ball_speed[a:stop] = s.floor_height + 0.005 * leg, 0.0
        if glitch:
            ball[(a + b) // 2, 0] += 0.3 * leg  # for one frame: a jump of 0.3 legs, and back
        heel = ankle - np.array([0.05 * leg, 0.0, 0.05 * leg])
        return {i: {"ankle": ankle, "sole": heel, "heel": heel, "toe": ball + [0.05 * leg, 0.0, 0.0], "ball": ball,
                    "front_z": front, "speed": np.full(n, 1.0 * leg), "still": np.full(n, 1.0 * leg),
                    "ball_speed": ball_speed} for i in feet}

    f0 = scene.frame_start
    contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples())
    for i in feet:
        found = [(c.start - f0, c.end - f0, c.rolls, c.pivot - f0, c.roll - f0) for c in s.limbs[i].contacts]
        assert found == [(a, b - 1, True, a, b - 1)]
        lock = np.array(s.limbs[i].contacts[0].lock) + np.array(s.limbs[i].contacts[0].ball)
        assert np.linalg.norm(lock - samples()[i]["ball"][a]) < 1e-6 * leg  # the ball held where it stands
    contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples(glitch=True))
    mid = (a + b) // 2
    # Split around the frame it jumps to and the one it jumps back on.
    assert [(c.start - f0, c.end - f0) for c in s.limbs[feet[0]].contacts] == [(a, mid - 1), (mid + 2, b - 1)]
    contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples(short=True))
    assert not len(s.limbs[feet[0]].contacts)
    # A run of the ball down that overlaps a contact or its ball hold is that contact's.
    down = np.zeros(n, dtype=bool)
    down[a:b] = True
    assert contacts.ball_stances(down, [], 5) == [(a, b - 1)]
    assert contacts.ball_stances(down, [(0, a)], 5) == []
    assert contacts.ball_stances(down, [(0, a - 1)], 5) == [(a, b - 1)]


def test_a_stance_on_the_ball_is_held_through_jitter_and_is_the_start_of_the_contact_it_runs_into():
    """A stance on the ball is split only where the ball jumps faster than BALL_JUMP: a slower step is the
    capture's jitter (at 120 fps LIFT_SPEED is 0.7% of the leg per frame), split there the stances of a foot on
    its toes fell under MIN_CONTACT and nothing held the ball (cmu_02_04: it slid 1.8% of the leg). And a
    stance that runs into a contact (the foot lands on its ball, the ankle comes to rest later) is that
    contact's start: one contact from the stance's first frame, holding its ball; it was dropped, and the
    contact started as the ankle came to rest."""
    obj, scene, s, fps, feet, leg = _walker_feet()
    n = int(round(2.0 * fps))
    a, b = int(round(0.5 * fps)), int(round(1.2 * fps))  # on the ball over frames a..b-1
    mid = (a + b) // 2

    def samples(jitter: float = 0.0, rest: int = 0) -> dict[int, dict[str, np.ndarray]]:
        t = np.arange(n) / fps
        ankle = np.stack([0.3 * leg * t, np.zeros(n), s.floor_height + leg * (0.2 + 0.05 * np.sin(9.0 * t))], 1)
        ball = ankle + np.array([0.15 * leg, 0.0, -0.2 * leg])
        front = np.full(n, s.floor_height + 0.2 * leg)
        ball_speed = np.full(n, 2.0 * leg)
        ball[a:b] = [0.15 * leg + 0.3 * leg * t[a], 0.0, s.floor_height + 0.005 * leg]
        front[a:b], ball_speed[a:b] = s.floor_height + 0.005 * leg, 0.0
        ball[mid, 0] += jitter * leg / fps  # for one frame, at `jitter` legs per second, and back
        speed = np.full(n, 1.0 * leg)
        if rest:  # the ankle at rest from frame `rest` to the stance's end
            ankle[rest:b] = [0.3 * leg * t[rest], 0.0, s.floor_height + 0.15 * leg]
            speed[rest:b] = 0.0
        heel = ankle - np.array([0.05 * leg, 0.0, 0.05 * leg])
        if rest:  # the heel low too (not on its toes, so not a landing on the toes: `landed_on_toes`)
            heel[a:b, 2] = s.floor_height + 0.02 * leg
        return {i: {"ankle": ankle, "sole": heel, "heel": heel, "toe": ball + [0.05 * leg, 0.0, 0.0], "ball": ball,
                    "front_z": front, "speed": speed, "still": speed.copy(), "ball_speed": ball_speed} for i in feet}

    f0 = scene.frame_start
    contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples(jitter=1.5))  # over LIFT_SPEED, under BALL_JUMP
    for i in feet:
        assert [(c.start - f0, c.end - f0, c.pivot - f0) for c in s.limbs[i].contacts] == [(a, b - 1, a)]
    contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples(jitter=5.0))  # a jump: split around it
    assert [(c.start - f0, c.end - f0) for c in s.limbs[feet[0]].contacts] == [(a, mid - 1), (mid + 2, b - 1)]
    rest = a + int(round(0.3 * fps))
    contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples(rest=rest))
    for i in feet:
        found = [(c.start - f0, c.end - f0, c.rolls, c.pivot - f0) for c in s.limbs[i].contacts]
        assert found == [(a, b - 1, True, a)], found
    # The run of the ball down, up to the contact or hold it runs into; none where it starts in one.
    down = np.zeros(n, dtype=bool)
    down[a:b] = True
    assert contacts.ball_stances(down, [(rest, b + 5)], 5) == [(a, rest - 1)]
    assert contacts.ball_stances(down, [(a + 2, b + 5)], 5) == []


def test_a_brief_stance_on_the_ball_is_held_and_one_ending_just_before_a_contact_starts_it():
    """Issue 20 (c, short stances): at 120 fps a stance on the ball alone of 9 frames (0.075 s: shorter than
    MIN_CONTACT, not than MIN_BALL_STANCE) gets a contact that holds its ball from its first frame. Dropped, the
    ball slid as the capture has it (cmu_02_04 on every terrain: skate 1.7-2.8% of the leg -> 0.4%; the tuning
    half's skate +8 runs). And a stance that ends two frames before a contact starts (a gap under MIN_GAP,
    the ball up for a part of a percent of the leg) is that contact's start, as one running into it is: kept
    apart, the foot was let go and landed again (cmu_08_07 over stairs: the knee 1.55x the source's peak)."""
    obj, scene, s, _fps, feet, leg = _walker_feet()
    old = (scene.render.fps, scene.render.fps_base)
    scene.render.fps, scene.render.fps_base = 120, 1.0
    try:
        fps = contacts.fps_of(scene)
        n, a = 240, 60
        tuning = harness.module("core.tuning")
        assert math.ceil(tuning.MIN_BALL_STANCE * fps) <= 9 < math.ceil(tuning.MIN_CONTACT * fps)

        def samples(down: list[tuple[int, int]], rest: tuple[int, int] = (0, 0)) -> dict[int, dict[str, np.ndarray]]:
            t = np.arange(n) / fps
            ankle = np.stack([0.3 * leg * t, np.zeros(n), s.floor_height + leg * (0.2 + 0.05 * np.sin(9.0 * t))], 1)
            ball = ankle + np.array([0.15 * leg, 0.0, -0.2 * leg])
            front = np.full(n, s.floor_height + 0.2 * leg)
            ball_speed = np.full(n, 2.0 * leg)
            for lo, hi in down:  # the ball down and still on frames lo..hi-1
                ball[lo:hi] = [0.15 * leg + 0.3 * leg * t[a], 0.0, s.floor_height + 0.005 * leg]
                front[lo:hi], ball_speed[lo:hi] = s.floor_height + 0.005 * leg, 0.0
            speed = np.full(n, 1.0 * leg)
            heel = ankle - np.array([0.05 * leg, 0.0, 0.05 * leg])
            if rest[1] > rest[0]:  # the ankle at rest, the heel low (not on its toes)
                ankle[rest[0]:rest[1]] = [0.3 * leg * t[rest[0]], 0.0, s.floor_height + 0.15 * leg]
                speed[rest[0]:rest[1]] = 0.0
                heel = ankle - np.array([0.05 * leg, 0.0, 0.05 * leg])
                heel[rest[0]:rest[1], 2] = s.floor_height + 0.02 * leg
            return {i: {"ankle": ankle, "sole": heel, "heel": heel, "toe": ball + [0.05 * leg, 0.0, 0.0],
                        "ball": ball, "front_z": front, "speed": speed, "still": speed.copy(),
                        "ball_speed": ball_speed} for i in feet}

        f0 = scene.frame_start
        contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples([(a, a + 9)]))
        for i in feet:
            found = [(c.start - f0, c.end - f0, c.rolls, c.pivot - f0) for c in s.limbs[i].contacts]
            assert found == [(a, a + 8, True, a)], found
        # The ball down on a..a+29, up for two frames, down again as the ankle rests from a+32 to a+79.
        contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples([(a, a + 30), (a + 32, a + 80)], (a + 32, a + 80)))
        for i in feet:
            found = [(c.start - f0, c.end - f0, c.rolls, c.pivot - f0) for c in s.limbs[i].contacts]
            assert found == [(a, a + 79, True, a)], found
    finally:
        scene.render.fps, scene.render.fps_base = old


def test_a_contact_found_from_the_ranges_second_frame_starts_on_its_first():
    """A foot found at rest from the range's second frame on is held from its first: nothing before the range
    shows it landing, and the first frame, left out of the contact, took the swing's clearance and dropped into
    the contact in one frame (cmu_03_02 over stairs: the knee 1.82x the source's there, 1.18x held). A contact
    from the third frame on is left as found: that foot was still moving on the first two."""
    obj, scene, s, fps, feet, leg = _walker_feet()
    n = int(round(1.0 * fps))
    rest = int(round(0.5 * fps))

    def samples(first: int) -> dict[int, dict[str, np.ndarray]]:
        ankle = np.tile([0.0, 0.0, s.floor_height + 0.05 * leg], (n, 1))
        speed = np.full(n, 2.0 * leg)
        speed[first:first + rest] = 0.0  # at rest from frame `first` for half a second
        ball = ankle + np.array([0.15 * leg, 0.0, 0.3 * leg])  # the ball well up: no stance on it
        heel = ankle - np.array([0.05 * leg, 0.0, 0.05 * leg])
        return {i: {"ankle": ankle, "sole": heel, "heel": heel, "toe": ball, "ball": ball,
                    "front_z": ball[:, 2].copy(), "speed": speed, "still": speed.copy(),
                    "ball_speed": np.full(n, 2.0 * leg)} for i in feet}

    f0 = scene.frame_start
    for first, expected in ((1, 0), (2, 2), (0, 0)):
        contacts.detect_contacts(obj, scene, f0, f0 + n - 1, samples(first))
        for i in feet:
            found = [(c.start - f0, c.end - f0) for c in s.limbs[i].contacts]
            assert found == [(expected, first + rest - 1)], (first, found)


def test_the_hover_of_the_first_and_last_contacts_is_carried_however_far_before_and_after_them():
    """Issue 20 (hover where the model holds nothing): between two contacts the hover the foot carries
    (`LockTrack.rise`, the level its contacts stand on over the animation's floor, taken off) blends from
    one to the other across the swing; before the first contact and after the last it is the first's and
    the last's, however far from them, not faded out: faded, the foot there stood over the floor the clip was
    detected on, not over the level its contacts stand on (cmu_08_07 over flat: 2.6% of the leg over the
    source's own in a brief source contact after the foot's last)."""
    f = np.arange(0.0, 101.0)
    start, end = np.array([30.0, 60.0]), np.array([40.0, 70.0])
    lock = np.array([[0.0, 0.0, 0.1], [0.5, 0.0, 0.1]])
    zeros, z3 = np.zeros(2), np.zeros((2, 3))
    drop_in, drop_out = np.array([0.02, 0.03]), np.array([0.025, 0.035])
    track = contacts._track(f, 24.0, start, end, drop_in, drop_out, lock, lock, lock, np.array([0.0, 100.0]), z3,
                            zeros, z3)
    assert np.allclose(track.rise[f < 30], -0.02) and np.allclose(track.rise[f > 70], -0.035), track.rise
    inside = ((f >= 30) & (f <= 40)) | ((f >= 60) & (f <= 70))
    assert (track.rise[inside] == 0.0).all()
    swing = (f > 40) & (f < 60)  # blended from the first's lift-off to the second's landing
    assert np.allclose(track.rise[swing], -(0.025 + (0.03 - 0.025) * (f[swing] - 40.0) / 20.0))


def looped_walker(terrain_kind: str = "flat"):
    """The metarig's walk played twice by an NLA strip (repeat 2): at the seam the whole body snaps back the
    1.4 legs it walked, every foot faster than CUT_SPEED legs per second. The rig, its terrain, its leg and the
    seam: the frame the body jumps to."""
    obj, terrain, leg = _walker(terrain_kind)
    scene = bpy.context.scene
    strip = scenes.push_to_strip(obj, repeat=2.0)
    scene.frame_end = int(strip.frame_end)
    spine = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        spine.append(np.array(obj.matrix_world @ obj.pose.bones["spine"].head))
    steps = np.linalg.norm(np.diff(spine, axis=0), axis=1)
    assert steps.max() * scene.render.fps > 20.0 * leg and np.sort(steps)[-2] < 0.2 * leg  # one jump, no other
    return obj, terrain, leg, scene.frame_start + 1 + int(np.argmax(steps))


def _panel_labels(obj, panel: str = "CONTACT_IK_PT_main") -> list[str]:
    """The labels a Contact IK panel (the main one by default) draws for `obj` (made active), through a layout
    that records them."""
    panels = harness.module("panels")
    labels: list[str] = []

    class Layout:
        def __getattr__(self, name):
            if name == "label":
                return lambda text="", **_kw: labels.append(text)
            return lambda *_a, **_kw: self

    bpy.context.view_layer.objects.active = obj
    getattr(panels, panel).draw(type("Panel", (), {"layout": Layout()})(), bpy.context)
    return labels


def test_plant_feet_says_which_frames_it_treats_as_cuts_and_detect_cuts_off_follows_them():
    """A jump of every foot faster than CUT_SPEED legs per second is planned as a cut (a loop's seam: no foot
    is held and the body is not smoothed across it). A capture's glitch looks the same to the detector (salsa,
    cmu_60_10, frame 318: the body drops 14% of the leg in one frame), and nothing said so. Plant Feet now says
    where, how far, and how to have the jump followed; with Detect Cuts off no contact is planned across a cut
    (at once, before contacts are detected again) and nothing is said; detected again, no contact holds one."""
    obj, terrain, leg, seam = looped_walker()
    scene = bpy.context.scene
    s = props.settings(obj)
    prepared = setup.prepare(obj, scene, terrain)
    found = contacts.cuts_found(obj)
    assert [f for f, _j in found] == [seam]
    assert found[0][1] == pytest.approx(1.4, abs=0.1)  # the walk's 1.4 legs, less a frame's step, in legs
    (said,) = [w for w in prepared.warnings if "cut" in w]
    assert f"frame {seam} (" in said and "Detect Cuts" in said and "--no-cuts" in said, said
    assert setup.cut_warning(obj, scene) == said
    assert f"Treated as a cut: frame {seam}" in _panel_labels(obj)  # and the panel keeps it in sight
    feet = [lb for lb in s.limbs if lb.kind == "FOOT" and any(c.cut for c in lb.contacts)]
    assert feet  # a contact after the seam is planned from its side of it
    fps = scene.render.fps
    count = scene.frame_end - scene.frame_start + 1

    def tracks():
        return [contacts.locks_over(lb, float(scene.frame_start), count, fps) for lb in feet]

    planned = tracks()
    s.detect_cuts = False  # read at once: the contacts still hold their cuts, the swings ignore them
    assert all(c.cut for lb in feet for c in lb.contacts if c.cut) and contacts.cuts_found(obj) == []
    assert setup.cut_warning(obj, scene) is None
    assert not any("cut" in text for text in _panel_labels(obj))
    straight = tracks()
    for a, b in zip(planned, straight):
        assert not np.allclose(a.to_point, b.to_point)  # before the seam, toward a landing moved by the jump
    contacts.detect_contacts(obj, scene)
    assert not any(c.cut for lb in s.limbs for c in lb.contacts)
    s.detect_cuts = True
    contacts.detect_contacts(obj, scene)
    assert [f for f, _j in contacts.cuts_found(obj)] == [seam]
    # The operators that say it run through (their reports are not readable in the background).
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.contact_ik.detect_contacts() == {"FINISHED"}
    assert bpy.ops.contact_ik.bake() == {"FINISHED"}


def test_bake_with_detect_cuts_off_limits_the_pelvis_across_the_seam():
    """The bake reads Detect Cuts too: on, each side of the seam is limited on its own (the pelvis keeps its
    own height up to the seam on stairs); off, the seam is a move like any other, so the pelvis's speed limit
    spreads the ground's jump under the body over the frames before it. Away from the seam nothing differs."""
    bake = harness.module("core.bake")
    obj, terrain, leg, seam = looped_walker("stairs")
    scene = bpy.context.scene
    setup.prepare(obj, scene, terrain)
    s = props.settings(obj)
    heights = {}
    for on in (True, False):
        s.detect_cuts = on
        bake.BakeJob([obj], scene.frame_start, scene.frame_end, scene).finish()
        z = []
        for f in range(scene.frame_start, scene.frame_end + 1):
            scene.frame_set(f)
            z.append((obj.matrix_world @ obj.pose.bones["spine"].head).z)
        heights[on] = np.array(z)
        laid = obj.animation_data.action  # the bake, laid over the strip: without it the strip plays again
        obj.animation_data.action = None
        for key, values in dict(laid[bake.UNKEYED_KEY]).items():  # as use_source gives them back
            bone, _sep, prop = key.rpartition("|")
            setattr(obj.pose.bones[bone], prop, list(values))
    moved = np.abs(heights[True] - heights[False]) / leg
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    assert moved[np.abs(frames - seam) > 0.5 * scene.render.fps].max() < 1e-6  # away from the seam: the same
    # Off, the limit pulls the pelvis down ahead of the seam to meet the ground after it (by 41% of the leg).
    assert (heights[True] - heights[False])[frames < seam].max() > 0.2 * leg


def test_feet_thrown_about_a_body_that_stays_are_said_to_be_a_glitch_more_likely_than_a_seam():
    """A capture's glitch: for one frame both legs swing 80 degrees (every ankle faster than CUT_SPEED legs
    per second) while the body stays. It is planned as a cut all the same (a seam and a glitch both break the
    motion; following the glitch instead was measured and not taken: see `tuning.CUT_RIGID`), but Plant Feet
    says the body did not jump with its feet, a glitch more likely than a seam (cmu_60_10 at frame 318: the
    ankles 54% and 58% of the leg in one frame, the pelvis 14%). A loop's seam is not called a glitch."""
    from mathutils import Quaternion

    obj, terrain, leg = _walker("flat")
    scene = bpy.context.scene
    glitch = 30
    for side in "LR":
        pb = obj.pose.bones[f"thigh.{side}"]
        scene.frame_set(glitch)
        pb.rotation_quaternion = Quaternion((1.0, 0.0, 0.0), math.radians(80.0)) @ pb.rotation_quaternion
        pb.keyframe_insert("rotation_quaternion", frame=glitch)
    scene.frame_set(scene.frame_start)
    fps = scene.render.fps
    samples = contacts.sample_feet(obj, scene, scene.frame_start, scene.frame_end, body=True)
    row = glitch - scene.frame_start
    for d in samples.values():  # every ankle jumps in and out faster than CUT_SPEED legs per second
        assert np.linalg.norm(d["ankle"][row] - d["ankle"][row - 1]) * fps > 20.0 * leg
    assert contacts.cut_rows(obj, samples, fps)[row] and not contacts.body_jumps(obj, samples, fps).any()
    prepared = setup.prepare(obj, scene, terrain)
    assert [f for f, _j in contacts.cuts_found(obj)] == [glitch]
    (said,) = [w for w in prepared.warnings if "cut" in w]
    assert f"frame {glitch} (the feet " in said and "; the body 3%: a glitch of the capture?)" in said, said
    assert "There the body did not jump with its feet" in said
    seam_obj, seam_terrain, _leg, seam = looped_walker()
    (said,) = [w for w in setup.prepare(seam_obj, bpy.context.scene, seam_terrain).warnings if "cut" in w]
    assert f"frame {seam} (" in said and "glitch" not in said, said
