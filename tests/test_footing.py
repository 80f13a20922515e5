"""The pieces that keep feet off step edges and the pelvis smooth (issue 5's pops): the clearance field a
lifted foot keeps above, contacts moved off edges they straddle, and the pelvis's reach drop eased in
time. On a real staircase mesh, through the installed extension's own modules."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import harness
import numpy as np
from mathutils import Quaternion, Vector
from mathutils.bvhtree import BVHTree

ground = harness.module("core.ground")
heightfield = harness.module("core.heightfield")
model = harness.module("core.model")
tuning = harness.module("core.tuning")

LEG = 0.9
RISER, TREAD = 0.15 * LEG, 0.5 * LEG


def _stairs(steps: int = 6) -> ground.Terrain:
    """Treads along +Y, `steps` of them, each RISER above the last, two metres wide, with risers."""
    verts, tris = [], []
    for k in range(steps):
        y0, y1, z = k * TREAD, (k + 1) * TREAD, k * RISER
        base = len(verts)
        verts += [(-1.0, y0, z), (1.0, y0, z), (1.0, y1, z), (-1.0, y1, z)]
        tris += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
        if k:  # the riser up to this tread
            verts += [(-1.0, y0, z - RISER), (1.0, y0, z - RISER)]
            tris += [(base + 4, base + 5, base + 1), (base + 4, base + 1, base)]
    tree = BVHTree.FromPolygons(verts, tris, all_triangles=True)
    return ground.Terrain(tree, len(tris), np.array(verts, dtype=np.float64), np.array(tris, dtype=np.int32))


def _lock(n: int, **given: np.ndarray) -> model.LockTrack:
    """A hand-built `LockTrack` over `n` frames: nothing locked (`LockTrack.none`) but the fields `given`."""
    return dataclasses.replace(model.LockTrack.none(n), **given)


def _tread_height(y: float) -> float:
    return min(5, max(0, math.floor(y / TREAD))) * RISER


UP = Vector((0.0, 0.0, 1.0))


def _meshes(rng):
    """Terrains to cast on: a bumpy grid in both windings and seen from a tilted up axis, a triangle soup with
    slivers, the staircase (treads and vertical risers)."""
    xs = np.linspace(-2.0, 2.0, 21)
    gx, gy = np.meshgrid(xs, xs, indexing="ij")
    verts = np.stack((gx.ravel(), gy.ravel(), (0.1 * np.sin(3 * gx) * np.cos(2 * gy)).ravel()), -1)
    idx = np.arange(21 * 21).reshape(21, 21)
    quads = np.stack((idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]), -1).reshape(-1, 4)
    tris = np.concatenate((quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]))
    tilted = rng.normal(size=3)
    yield verts, tris, np.array([0.0, 0.0, 1.0])
    yield verts, tris[:, ::-1], np.array([0.0, 0.0, 1.0])
    yield verts, tris, tilted / np.linalg.norm(tilted)
    soup = rng.uniform(-1.0, 1.0, (600, 3)) * (1.0, 1.0, 0.3)
    soup[2::9] = soup[0::9] + 0.5 * (soup[1::9] - soup[0::9]) + 1e-4 * rng.normal(size=(len(soup[2::9]), 3))  # slivers
    yield soup, np.arange(600).reshape(-1, 3), np.array([0.0, 0.0, 1.0])
    stairs = _stairs()
    yield stairs.verts, stairs.tris, np.array([0.0, 0.0, 1.0])


def test_down_rays_look_only_at_the_cells_a_triangle_touches_and_hit_what_they_hit_before(monkeypatch):
    """`DownRays` bins each triangle into the grid cells its projection touches, not every cell of its bounding
    box: fewer candidates per ray, and the very same hits (height, normal, and which of several) as the
    bounding-box binning, for rays through vertices, along edges, inside triangles and anywhere, at every
    cell size."""
    rng = np.random.default_rng(3)
    for verts, tris, up in _meshes(rng):
        tv = verts[tris]
        w = rng.random((len(tris), 3))
        w /= w.sum(1, keepdims=True)
        lam = rng.random((len(tris), 1))
        queries = np.concatenate((verts, tv[:, 0] + lam * (tv[:, 1] - tv[:, 0]), tv[:, 1] + lam * (tv[:, 2] - tv[:, 1]),
                                  (tv * w[..., None]).sum(1), rng.uniform(verts.min(0) - 0.1, verts.max(0) + 0.1, (2000, 3))))
        reach = np.full(len(queries), 10.0)
        for cell_factor in (0.1, 0.34, 1.0):
            pruned = heightfield.DownRays(verts, tris, up, cell_factor)
            with monkeypatch.context() as m:
                m.setattr(heightfield.DownRays, "_touches", lambda self, tri_id, *_a: np.ones(len(tri_id), dtype=bool))
                boxes = heightfield.DownRays(verts, tris, up, cell_factor)
            assert len(pruned.items) <= len(boxes.items)
            a, b = pruned.cast(queries, reach), boxes.cast(queries, reach)
            assert a.hit.any() and np.array_equal(a.hit, b.hit)
            assert np.array_equal(a.height[a.hit], b.height[b.hit]) and np.array_equal(a.normal[a.hit], b.normal[b.hit])
    grid = next(_meshes(np.random.default_rng(0)))
    pruned = heightfield.DownRays(*grid)
    with monkeypatch.context() as m:
        m.setattr(heightfield.DownRays, "_touches", lambda self, tri_id, *_a: np.ones(len(tri_id), dtype=bool))
        boxes = heightfield.DownRays(*grid)
    assert len(pruned.items) < 0.75 * len(boxes.items), (len(pruned.items), len(boxes.items))


def test_clearance_field_is_never_below_the_terrain_and_rises_before_an_edge():
    terrain = _stairs()
    field = terrain.clearance(UP, LEG)
    ys = np.linspace(0.05, 6 * TREAD - 0.05, 400)
    pts = np.column_stack((np.full_like(ys, 0.1), ys, np.zeros_like(ys)))
    h = field.height(pts)
    raw = np.array([_tread_height(y) for y in ys])
    # Never more than the slope times a node spacing below the terrain (it is read between nodes).
    assert (h >= raw - heightfield.CLEAR_SLOPE * field.spacing * 1.01).all()
    # It changes at most at the slope (times the octagonal distance's 8 % over the Euclidean one).
    dh = np.abs(np.diff(h)) / np.diff(ys)
    assert dh.max() <= heightfield.CLEAR_SLOPE * 1.1, dh.max()
    # A tenth of a leg before the second tread's edge it has already risen most of a riser...
    before = field.height(np.array([[0.1, 2 * TREAD - 0.1 * LEG, 0.0]]))[0]
    assert before >= RISER + RISER - heightfield.CLEAR_SLOPE * 0.1 * LEG * 1.1 - 1e-9
    # ...and beyond CLEAR_RADIUS from the next rise it is the tread itself.
    middle = field.height(np.array([[0.1, 2 * TREAD + 0.05 * LEG, 0.0]]))[0]
    assert abs(middle - 2 * RISER) < 0.5 * heightfield.CLEAR_SLOPE * field.spacing


def test_clearance_field_is_built_only_where_it_is_read():
    terrain = _stairs()
    field = terrain.clearance(UP, LEG)
    field.height(np.array([[0.0, 0.3, 0.0]]))
    assert len(field.tiles) == 1
    assert field.height(np.array([[50.0, 50.0, 0.0]]))[0] == -math.inf  # off the terrain: nothing to clear


def _contact(lock, heel, toe, width=0.0, start=0, end=0):
    return SimpleNamespace(lock=lock, heel=heel, toe=toe, width=width, start=start, end=end)


def test_a_contact_straddling_a_step_edge_is_moved_onto_one_tread():
    terrain = _stairs()
    edge = 2 * TREAD
    foot = 0.25 * LEG
    straddling = _contact((0.0, edge - 0.17 * LEG, 0.08), (0.0, -0.05 * LEG, -0.08), (0.0, foot, -0.08))
    on_tread = _contact((0.3, edge + 0.15 * LEG, 0.08), (0.0, -0.05 * LEG, -0.08), (0.0, foot - 0.1 * LEG, -0.08))
    placed = model.place_footprints([straddling, on_tread], terrain, LEG)
    assert (placed[1] - Vector(on_tread.lock)).length == 0.0  # level already: left where it was
    moved = placed[0] - Vector(straddling.lock)
    assert 0.0 < moved.length <= tuning.FOOT_SHIFT * LEG + 1e-9
    assert moved.z == 0.0  # along the ground only
    ends = [placed[0].y + straddling.heel[1] - tuning.FOOT_MARGIN * LEG,
            placed[0].y + straddling.toe[1] + tuning.FOOT_MARGIN * LEG]
    assert _tread_height(ends[0]) == _tread_height(ends[1]), ends  # heel and toe on the same tread


def test_a_straddling_footprint_takes_the_shortest_move_then_the_ankles_level():
    """Alone (no contact before or after), the shortest move wins, whichever level it lands on: an ankle over
    the lower tread with its toe over the upper one goes 0.15 leg forward onto the upper tread, not 0.18 leg
    back to stay on its own level (range_inside on stairs: the move back left the leg reaching at push-off and
    the next swing climbing three risers, knee 1.41x). Between moves as short, the level under the ankle."""
    terrain = _stairs()
    edge = 2 * TREAD
    step = tuning.FOOT_STEP * LEG

    def placed(ankle_below_edge, heel, toe):
        lock = (0.0, edge - ankle_below_edge * LEG, 0.08)
        c = _contact(lock, (0.0, heel * LEG, -0.08), (0.0, toe * LEG, -0.08))
        moved = model.place_footprints([c], terrain, LEG)[0] - Vector(lock)
        ends = [lock[1] + moved.y + heel * LEG - tuning.FOOT_MARGIN * LEG,
                lock[1] + moved.y + toe * LEG + tuning.FOOT_MARGIN * LEG]
        assert _tread_height(ends[0]) == _tread_height(ends[1]), ends  # on one tread
        return moved, _tread_height(lock[1]), _tread_height(lock[1] + moved.y)

    # Forward needs 0.125 leg (0.15 on the grid), back 0.175 (0.18): forward, up onto the next tread.
    moved, level, now = placed(0.045, -0.04, 0.18)
    assert abs(moved.y - 5 * step) < 1e-6 and abs(moved.x) < 1e-6, moved
    assert now == level + RISER
    # Forward and back both need 0.165 leg (0.18 on the grid): back, the ankle's own level.
    moved, level, now = placed(0.075, -0.05, 0.2)
    assert abs(moved.y + 6 * step) < 1e-6 and abs(moved.x) < 1e-6, moved
    assert now == level


def test_a_straddling_footprint_keeps_the_swings_either_side_least_steep():
    """Of the places off the edge, those the swings to and from the foot's previous and next contacts climb
    least steeply (height per frame), then the shortest move. A stance between two on its ankle's tread goes
    0.18 leg back to stay on it rather than 0.15 forward (the foot stepping up a riser and down again: CMU
    131_02 on stairs, knee 1.71x -> 2.47x; a stance split in two 15 frames apart, put on two levels, made the
    foot step between them where the source stands: CMU 01_01 on rings, skate 2% -> 8% of the leg); a
    stance before a swing that climbs two risers in ten frames goes forward, up one of them."""
    terrain = _stairs()
    edge = 2 * TREAD
    step = tuning.FOOT_STEP * LEG
    heel, toe = (0.0, -0.04 * LEG, -0.08), (0.0, 0.18 * LEG, -0.08)
    straddling = _contact((0.0, edge - 0.045 * LEG, 0.08), heel, toe, start=20, end=30)

    def placed(before, after):
        cs = [_contact((0.0, y, 0.08), heel, toe, start=a, end=a + 10) for y, a in (before, after)]
        cs.insert(1, straddling)
        for c in cs[::2]:
            assert _tread_height(c.lock[1] - 0.1 * LEG) == _tread_height(c.lock[1] + 0.25 * LEG)  # level
        return model.place_footprints(cs, terrain, LEG)[1] - Vector(straddling.lock)

    # Alone, it goes forward (the shortest move: the test above); between two on the ankle's tread, back.
    on = 1.35 * TREAD
    moved = placed((on, 0), (on, 40))
    assert abs(moved.y + 6 * step) < 1e-6 and abs(moved.x) < 1e-6, moved
    # Its contacts listed in any order: the same.
    cs = [straddling, _contact((0.0, on, 0.08), heel, toe, start=40, end=50),
          _contact((0.0, on, 0.08), heel, toe, start=0, end=10)]
    assert (model.place_footprints(cs, terrain, LEG)[0] - Vector(straddling.lock) - moved).length < 1e-9
    # The next swing climbs two risers (tread 1 to tread 3) in 10 frames: forward, onto tread 2.
    moved = placed((on, 0), (on + 2 * TREAD, 40))
    assert abs(moved.y - 5 * step) < 1e-6 and abs(moved.x) < 1e-6, moved


contacts = harness.module("core.contacts")


def _swivel(frames: int = 40):
    """Heel and toe (relative to the ankle) of a foot turning 80 degrees on its heel, as in the hop stop
    of CMU 131_03: the toe sweeps a quarter circle."""
    a = np.radians(np.linspace(-100.0, -20.0, frames))
    toe = np.stack((0.23 * LEG * np.cos(a), 0.23 * LEG * np.sin(a), np.full(frames, -0.05)), 1)
    heel = np.tile(np.array([0.0, 0.0, -0.03]), (frames, 1))
    return heel, toe


def _old_footprint(heel, toe):
    """The footprint before stop 14: from the heel farthest back to the toe farthest forward along the
    mean heel-to-toe direction, as wide on both sides of that line as any point strays from it."""
    mean = toe[:, :2].mean(0) - heel[:, :2].mean(0)
    mean /= np.linalg.norm(mean)
    back, front = heel[np.argmin(heel[:, :2] @ mean)], toe[np.argmax(toe[:, :2] @ mean)]
    side = np.array([-mean[1], mean[0]])
    return tuple(back), tuple(front), float(np.abs((np.concatenate((heel, toe))[:, :2] - back[:2]) @ side).max())


def test_the_footprint_is_the_smallest_rectangle_holding_every_frame():
    heel, toe = _swivel()
    back, front, half = contacts.footprint(heel, toe)
    b, f = np.array(back[:2]), np.array(front[:2])
    axis = (f - b) / np.linalg.norm(f - b)
    side = np.array([-axis[1], axis[0]])
    pts = np.concatenate((heel, toe))[:, :2] - b
    along, across = pts @ axis, pts @ side
    assert along.min() >= -1e-9 and along.max() <= np.linalg.norm(f - b) + 1e-9  # every point inside
    assert np.abs(across).max() <= half + 1e-9
    assert axis @ (toe[:, :2].mean(0) - heel[:, :2].mean(0)) > 0.0  # back is the heel's end
    old_back, old_front, old_half = _old_footprint(heel, toe)
    area = np.linalg.norm(f - b) * 2.0 * half
    old_area = np.linalg.norm(np.subtract(old_front, old_back)[:2]) * 2.0 * old_half
    assert area < 0.8 * old_area, (area, old_area)
    # A foot that does not turn: a thin rectangle from heel to toe.
    still_back, still_front, still_half = contacts.footprint(heel[:5], np.tile(np.array([0.0, 0.2, -0.05]), (5, 1)))
    assert still_half < 1e-9
    assert np.allclose(still_back[:2], (0.0, 0.0)) and np.allclose(still_front[:2], (0.0, 0.2))


def test_a_foot_turning_in_place_by_a_step_edge_is_moved_onto_one_tread():
    """The turning foot's footprint fits a tread, so footing finds it a level place; the toe then never
    crosses the edge during the contact (it did in 131_03 on stairs: the foot rose a riser mid-contact)."""
    terrain = _stairs()
    heel, toe = _swivel()
    back, front, half = contacts.footprint(heel, toe)
    edge = 2 * TREAD
    lock = (0.0, edge + 0.12 * LEG, 0.08)  # the toe reaches 0.23 leg back, over the riser to the tread below
    assert min(_tread_height(lock[1] + y) for y in toe[:, 1]) != _tread_height(lock[1])
    placed, before = model.place_footprints([_contact(lock, back, front, half),
                                             _contact(lock, *_old_footprint(heel, toe))], terrain, LEG)
    assert before == Vector(lock)  # the footprint before fitted no tread within reach: the foot stayed
    assert 0.0 < (placed - Vector(lock)).length <= tuning.FOOT_SHIFT * LEG + 1e-9
    levels = {_tread_height(placed.y + y) for y in np.concatenate((heel[:, 1], toe[:, 1]))}
    assert len(levels) == 1, levels


def test_the_pelvis_drop_sets_in_gradually_and_never_leaves_a_leg_too_straight():
    """`model.soft_reach_drop`: a hip moving away from a planted target, frame by frame. The pelvis drop is
    zero while the leg is comfortably bent, at least what the limit needs (the leg never straighter than
    REACH_MARGIN), and without the hard version's kink where the limit is reached."""
    leg = 1.0
    up = Vector((0.0, 0.0, 1.0))
    target = Vector((0.0, 0.0, 0.0))
    xs = np.linspace(0.0, 0.6, 121)
    hard, soft = [], []
    one, none = np.ones(1), np.zeros(1)
    for x in xs:
        hip = Vector((x, 0.0, 0.9))
        plan = model.FootPlan(np.ones(1, dtype=bool), np.array([target]), np.array([[1.0, 0.0, 0.0, 0.0]]),
                              np.array([hip]), one * leg, one * 0.95, none, none, none, none, one > 0, none, one < 0, one < 0,
                              one < 0)
        hard.append(float(model.reach_drop([plan], none, np.array([up]))[0][0]))
        soft.append(float(model.soft_reach_drop([plan], none, np.array([up]))[0][0]))
        reach = (hip + up * soft[-1] - target).length
        assert reach <= (tuning.REACH_MARGIN + tuning.SOFT_REACH * tuning.SOFT_LOOSE) * leg + 1e-9
    hard, soft = np.array(hard), np.array(soft)
    assert soft[0] == 0.0 and hard[0] == 0.0  # a bent leg moves nothing
    first_hard = int(np.flatnonzero(hard < 0.0)[0])
    assert np.flatnonzero(soft < 0.0)[0] < first_hard  # it starts before the limit...
    slope = np.diff(soft)
    assert np.abs(np.diff(slope)).max() < 0.5 * np.abs(np.diff(np.diff(hard))).max()  # ...and bends less sharply


def test_leg_stretch_lets_a_straight_leg_stay_straighter_and_never_past_its_limit():
    """`model.soft_reach_drop`'s `margin` (the rig's Leg Stretch; REACH_MARGIN unless set): a leg the animation
    has straight (extension 0.999) whose target is a little beyond reach. The pelvis drops less the higher
    the setting, the leg never straighter than the setting plus the soft range's loose side; the default is
    REACH_MARGIN, and a leg the animation bends is not straightened by a higher setting (EXT_SLACK)."""
    up = np.array([[0.0, 0.0, 1.0]])
    one, none = np.ones(1), np.zeros(1)

    def leg_after(margin, extension=0.999):
        hip = np.array([[0.0, 0.0, 1.01]])  # the target at the origin: 1% of the leg beyond full stretch
        plan = model.FootPlan(np.ones(1, dtype=bool), np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]), hip, one,
                              one * extension, none, none, none, none, one > 0, none, one < 0, one < 0,
                              one < 0)
        args = () if margin is None else (margin,)
        drop = float(model.soft_reach_drop([plan], none, up, *args)[0][0])
        assert drop < 0.0  # the pelvis is lowered, never raised
        return 1.01 + drop  # how far the hip is from the target after the drop (x leg)

    default, low, high = leg_after(None), leg_after(0.9), leg_after(1.0)
    assert default == leg_after(tuning.REACH_MARGIN)
    assert low < default < high <= 1.0 + tuning.SOFT_REACH * tuning.SOFT_LOOSE + 1e-12
    assert high - default > 0.015  # straighter by about the difference of the settings (0.02 of the leg)
    assert leg_after(1.0, extension=0.9) == leg_after(tuning.REACH_MARGIN, extension=0.9)  # bent as animated


def test_a_foot_in_the_air_turns_toe_up_instead_of_lifting_its_ankle():
    """`model.toe_pitch`: the turn about the ankle that raises the toe by what it needs beyond the heel,
    none when the heel needs as much (or a ray missed), at most MAX_PITCH."""
    up = Vector((0.0, 0.0, 1.0))
    heel, toe = Vector((0.0, -0.03, -0.08)), Vector((0.0, 0.22, -0.08))
    rows = [(0.0, 0.05), (0.05, 0.05), (0.1, 0.0), (0.0, 5.0), (-np.inf, 0.05)]
    q, has = model.toe_pitch(np.tile(np.array(heel), (5, 1)), np.tile(np.array(toe), (5, 1)),
                             np.array([r[0] for r in rows]), np.array([r[1] for r in rows]), np.tile(np.array(up), (5, 1)))
    assert has.tolist() == [True, False, False, True, False]
    turn = Quaternion(q[0])
    raised = (turn @ toe).z - toe.z
    assert abs(raised - 0.05) < 0.01  # the toe rises by what it needed (the heel dips a little)
    assert (turn @ heel).z <= heel.z + 1e-12
    steep = Quaternion(q[3])
    assert abs(steep.angle - tuning.MAX_PITCH) < 1e-6  # mathutils works in float32



def test_a_foot_pointing_straight_down_turns_toe_up_about_its_ankle_hinge():
    """`model.toe_pitch` for a foot pointing nearly straight down (a toe dragged under the floor in mid-swing):
    its run along the ground is a wobble of the capture, here just ahead of the heel on one frame and just
    behind on the next. Turned about the level across that run, the toe swung forward on one frame and back on
    the next (pymo_av8 over flat ground: the knee 2.4x the source's peak speed). About the ankle's hinge
    (across the foot and the shin) it turns the same way on both, toward the shin, and still rises."""
    up = np.tile([0.0, 0.0, 1.0], (2, 1))
    heel = np.array([[0.0, 0.0, -0.03], [0.0, 0.0, -0.03]])
    toe = np.array([[0.0, 0.008, -0.25], [0.0, -0.008, -0.25]])  # run 0.036 of the foot's length
    shin = np.tile([0.0, 0.1, 0.9], (2, 1))  # the knee up and a little forward
    heel_need, toe_need = np.zeros(2), np.full(2, 0.05)
    q, has = model.toe_pitch(heel, toe, heel_need, toe_need, up, 1.0, shin)
    assert has.all()
    turned = [Quaternion(q[k]) @ Vector(toe[k]) for k in range(2)]
    assert all(t.z > toe[k][2] + 0.01 for k, t in enumerate(turned))  # the toe rises on both frames
    assert all(t.y > 0.05 for t in turned)  # toward the shin on both
    assert (turned[0] - turned[1]).length < 0.03
    # Without the hinge the two frames turn opposite ways: the toe 0.2 apart from one frame to the next.
    q, has = model.toe_pitch(heel, toe, heel_need, toe_need, up, 1.0)
    apart = (Quaternion(q[0]) @ Vector(toe[0])) - (Quaternion(q[1]) @ Vector(toe[1]))
    assert apart.length > 0.2
    # A foot straight along its shin has no hinge: no turn, and the turn is still a rotation (unit).
    q, has = model.toe_pitch(heel[:1], toe[:1], heel_need[:1], toe_need[:1], up[:1], 1.0, heel[:1] - toe[:1])
    assert abs(np.linalg.norm(q[0]) - 1.0) < 1e-12 and abs(q[0][0] - 1.0) < 1e-12

def _toe_off_plan(frame: float, ball_y: float, up: float = 0.0, terrain=None):
    """`model.plan_foot` for one frame of a toe-off beside a riser: the foot's lock track from `contacts._track`
    for a contact whose ankle is held over frames 0-10 and its ball from 6 to Ball Up at 30 (on the lower
    tread, `ball_y` before the riser at TREAD), the heel up, the next contact at 200; both contacts stood 2.5%
    of the leg over the animation's floor (their hover, carried as `rise`). `up`: how far the animation has
    the ball and toe tip over that (x leg). `terrain`: another ground than the stairs."""
    drop = 0.025 * LEG
    ankle = np.array([[0.0, ball_y - 0.1 * LEG, (0.12 + up) * LEG + drop]])
    ball = np.array([[0.0, ball_y, up * LEG + drop]])
    tip = np.array([[0.0, ball_y + 0.06 * LEG, up * LEG + drop]])
    heel = np.array([[0.0, ball_y - 0.16 * LEG, (0.09 + up) * LEG + drop]])
    hip = ankle + np.array([[0.0, 0.1 * LEG, 0.85 * LEG]])
    knee = 0.5 * (hip + ankle) + np.array([[0.0, 0.05 * LEG, 0.0]])
    frame_m = np.eye(4)[None].copy()
    frame_m[0, :3, 3] = ankle[0]
    held = np.array([[0.0, -0.1 * LEG, -0.1 * LEG]])  # the ball from the ankle as held, flat in the contact
    lock = np.repeat(ball - held, 2, axis=0)  # the ankle's lock point: the held ball is where the animation's is
    start, end = np.array([0.0, 200.0]), np.array([10.0, 210.0])
    drops, z3 = np.full(2, drop), np.zeros((2, 3))
    lk = contacts._track(np.array([frame]), 120.0, start, end, drops, drops, lock, lock, lock, np.array([0.0, 210.0]),
                         z3, np.zeros(2), z3, np.array([6.0, np.inf]), np.array([30.0, 210.0]),
                         np.concatenate((held, z3[:1])), lock)
    foot = model.Foot([hip, knee, ankle], frame_m, [heel, tip], 0.0, True, math.radians(30.0), LEG, True, lk,
                      ball=ball)
    at = model.Placement(np.eye(4)[None], 0.0)
    plan = model.plan_foot(foot, at, model.Rays(_stairs() if terrain is None else terrain), np.zeros(1), 120.0)
    return plan, float(plan.target[0, 2] - ankle[0, 2] + drop)  # how far the ankle goes over the ball's ground


def test_a_ball_held_through_toe_off_stays_on_its_ground_until_it_is_let_go():
    """Issue 20 (b): through toe-off the held ball stays on the ground of its contact beside a riser, though
    its contact stood over the animation's floor (a capture's marker offset, carried as the hover it took
    off): it is lifted by its sole's height over its contact's ground, not over the floor, so the clearance
    field does not raise it on any frame it is held, up to Ball Up, however long after the ankle's contact
    (`LockTrack.free` counts no held frame); well into the swing it clears the riser. (Lifted once held past
    End, and wholly over the swing's ease before Ball Up, the ball left its tread inside the source's contacts:
    fair1_jumping over stairs 12.6% of the leg; here 12% on frame 20 before.)"""
    drop = 0.025 * LEG  # the foot is lowered by the hover it carries: its ball then stands on the tread
    for frame in (20.0, 27.0, 29.0, 30.0):
        far, _ = _toe_off_plan(frame, 0.1 * LEG)  # the riser out of the clearance's reach: nothing to clear
        near, _ = _toe_off_plan(frame, TREAD - 0.12 * LEG)
        assert abs(float(far.correction[0]) + drop) < 1e-6 * LEG, (frame, far.correction)
        assert abs(float(near.correction[0]) + drop) < 1e-6 * LEG, (frame, near.correction)  # held by the riser
    _, lift_far = _toe_off_plan(80.0, 0.1 * LEG)  # let go, well clear of its contacts in time
    _, lift_near = _toe_off_plan(80.0, TREAD - 0.12 * LEG)
    assert lift_near > lift_far + 0.02 * LEG  # it clears the riser as a swing does


def _flat(bump: float = 0.0, y0: float = 0.0, y1: float = 0.0) -> ground.Terrain:
    """Level ground at the floor, with a block `bump` high over y0..y1 (none where `bump` is 0)."""
    verts = [(-1.0, -1.0, 0.0), (1.0, -1.0, 0.0), (1.0, 2.0, 0.0), (-1.0, 2.0, 0.0)]
    tris = [(0, 1, 2), (0, 2, 3)]
    if bump > 0.0:
        verts += [(-1.0, y0, bump), (1.0, y0, bump), (1.0, y1, bump), (-1.0, y1, bump)]
        tris += [(4, 5, 6), (4, 6, 7)]
    tree = BVHTree.FromPolygons(verts, tris, all_triangles=True)
    return ground.Terrain(tree, len(tris), np.array(verts, dtype=np.float64), np.array(tris, dtype=np.int32))


def test_a_heel_up_behind_a_held_ball_does_not_lift_it_over_a_bump():
    """Issue 20 (b, hover during the source's contacts): through toe-off, the ball held on its ground and the
    heel up behind it, a bump under the heel (lower than the heel) does not lift the foot: the heel only keeps
    out of the terrain there, and does not keep its animated height over what is under it. Before, it did,
    and the held ball rose by the bump's height (here 3% of the leg; fair1_jumping over noise: 1.02% of the
    leg in a source contact, cmu_10_01 over the slope 1.12%)."""
    ball_y = 0.5
    heel_y = ball_y - 0.16 * LEG
    bumped = _flat(0.03 * LEG, heel_y - 0.05 * LEG, heel_y + 0.05 * LEG)
    for frame in (20.0, 27.0, 29.0):
        level, _ = _toe_off_plan(frame, ball_y, terrain=_flat())
        bump, _ = _toe_off_plan(frame, ball_y, terrain=bumped)
        assert abs(float(bump.correction[0]) - float(level.correction[0])) < 1e-6 * LEG, (frame, bump.correction,
                                                                                          level.correction)
    # A bump higher than the heel is up still lifts it clear: it does not go through the terrain.
    high = _flat(0.2 * LEG, heel_y - 0.05 * LEG, heel_y + 0.05 * LEG)
    raised, _ = _toe_off_plan(20.0, ball_y, terrain=high)
    level, _ = _toe_off_plan(20.0, ball_y, terrain=_flat())
    assert float(raised.correction[0]) > float(level.correction[0]) + 0.05 * LEG


def test_a_held_ball_the_animation_has_a_little_off_its_ground_is_not_lifted_clear_of_a_riser():
    """Issue 20 (b, hover during the source's contacts): a ball held through toe-off that the animation has a
    little over the ground of its contact (0.5% of the leg: a capture's ball bobbing as the heel rises, well
    under ROLL_HEIGHT, so it is down) keeps that height over its tread beside a riser as it does with the riser
    out of reach: the clearance field and the swing's line do not weigh in on a frame anything is held. Before,
    their gates (SWING_LIFT) read the ball's small height as partly lifted and raised it by part of the riser's
    clearance (here 2.8% of the leg on frame 12, 7.4% from frame 20; xia_old over stairs: the held ball 9.5% of
    the leg over its tread in a source contact, xia_strutting 8.9%)."""
    for frame in (12.0, 20.0, 29.0):
        far, _ = _toe_off_plan(frame, 0.1 * LEG, up=0.005)
        near, _ = _toe_off_plan(frame, TREAD - 0.12 * LEG, up=0.005)
        assert abs(float(near.correction[0]) - float(far.correction[0])) < 1e-6 * LEG, (frame, near.correction,
                                                                                         far.correction)
    _, lift_far = _toe_off_plan(80.0, 0.1 * LEG, up=0.005)  # let go: it clears the riser as a swing does
    _, lift_near = _toe_off_plan(80.0, TREAD - 0.12 * LEG, up=0.005)
    assert lift_near > lift_far + 0.02 * LEG


def test_the_swing_line_over_step_edges_comes_in_from_ball_up_not_in_one_frame():
    """Issue 20 (b): after a toe-off whose ball is held 20 frames past the ankle's End, the swing's line over
    step edges (`model.swing_rays`) weighs nothing on a held frame (the ball stays on its tread) and ramps in
    from Ball Up as a swing's does from its lift-off (ARC_RAMP_TIME), with no step between two frames: live
    preview with no frame cache plans each frame alone, with no smoothing to hide a step. (Cast on held frames,
    it lifted the held ball off its tread; switched on at Ball Up, its whole lift came in one frame.)"""
    fps, f = 120.0, np.arange(0.0, 91.0)
    start, end = np.array([0.0, 80.0]), np.array([10.0, 90.0])
    lock = np.array([[0.0, 0.0, 0.1], [0.0, 1.0, 0.1]])
    zeros, z3 = np.zeros(2), np.zeros((2, 3))
    ball = np.array([[0.0, 0.1, -0.08], [0.0, 0.0, 0.0]])
    lk = contacts._track(f, fps, start, end, zeros, zeros, lock, lock, lock, np.array([0.0, 90.0]), z3, zeros, z3,
                         np.array([6.0, np.inf]), np.array([30.0, 90.0]), ball, lock)
    n = len(f)
    ankle = lock[0] + (lock[1] - lock[0]) * np.clip((f - 10.0) / 70.0, 0.0, 1.0)[:, None]
    soles = [ankle + np.array([0.0, -0.05, -0.08]), ankle + np.array([0.0, 0.15, -0.08])]
    rows = (lk.from_weight > 0.0) & (lk.to_weight > 0.0)
    at = model.Placement(np.tile(np.eye(4), (n, 1, 1)), 0.0)
    ramp = np.zeros(n)
    rays = model.swing_rays(rows, lk.from_point, lk.to_point, np.zeros(n), np.zeros(n), lk.to_weight, lk.gap, lk.lead,
                            lk.opened, ankle, soles, at, np.full(n, LEG), fps)
    ramp[rays.partial.rows] = rays.partial.ramp
    assert (ramp[f <= 30] == 0.0).all(), ramp  # nothing while the ball is held, up to Ball Up
    least = max(tuning.ARC_RAMP_FRAMES, tuning.ARC_RAMP_TIME * fps)
    assert 0.0 < ramp[31] < 0.05 and ramp[30 + int(least)] == 1.0, ramp  # from Ball Up, over ARC_RAMP_TIME
    assert np.abs(np.diff(ramp)).max() <= 1.5 / least + 1e-9, np.diff(ramp)  # smoothstep's steepest


def test_the_swing_line_comes_down_onto_the_landing_tread_over_longer_than_it_lifts_off():
    """`model.arc_ramp`: the swing's line over step edges comes in over ARC_RAMP_TIME after the lift-off and
    goes out over ARC_LAND_TIME (longer) before the landing, smoothly, at any frame rate, and over ARC_RAMP of a
    long swing's time at either end. (Over 0.1 s at both ends, the foot came down onto the tread it landed on
    in 0.1 s: cmu_12_02 over stairs, the knee 1.21x the source's peak speed.)"""
    assert tuning.ARC_LAND_TIME > tuning.ARC_RAMP_TIME
    for fps in (24.0, 30.0, 60.0, 120.0):
        gap = fps  # a swing of one second
        f = np.arange(0.0, gap + 1.0)
        ramp = model.arc_ramp(f / gap, gap, fps)
        lift = max(tuning.ARC_RAMP_FRAMES, tuning.ARC_RAMP_TIME * fps)
        land = max(tuning.ARC_RAMP_FRAMES, tuning.ARC_LAND_TIME * fps)
        assert ramp[0] == 0.0 and ramp[-1] == 0.0, ramp
        assert ramp[int(math.ceil(lift))] == 1.0 and 0.0 < ramp[int(lift) - 1] < 1.0, (fps, ramp)
        assert ramp[len(f) - 1 - int(math.ceil(land))] == 1.0, (fps, ramp)
        # still coming down where it would already be down over ARC_RAMP_TIME
        assert 0.0 < ramp[len(f) - 1 - int(math.ceil(lift))] < 0.95, (fps, ramp)
        assert np.abs(np.diff(ramp)).max() <= 1.5 / lift + 1e-9  # smoothstep's steepest, at the lift-off
    long = model.arc_ramp(np.array([0.05, 0.95]), 600.0, 120.0)  # 5 s: ARC_RAMP of it (60 frames) at either end
    assert np.allclose(long, 0.5), long


def _lift_off_plan(speed: float, fps: float = 120.0):
    """`model.plan_foot` over three frames right after a lift-off beside a riser (the ball TREAD - 0.12 leg
    along the lower tread, the riser within the clearance's reach): nothing held, fully into the swing; the
    contact stood 2.5% of the leg over the animation's floor (its hover, carried as `rise`) and the animation
    still has the sole there, its front moving along the ground at `speed` (x leg per second). How far each
    frame's ankle goes over where it stands on its ground (its hover taken off)."""
    drop, n = 0.025 * LEG, 3
    along = np.array([[0.0, 1.0, 0.0]]) * (speed * LEG / fps) * np.arange(n)[:, None]
    ball_y = TREAD - 0.12 * LEG
    ankle = np.array([[0.0, ball_y - 0.1 * LEG, 0.06 * LEG + drop]]) + along
    ball = np.array([[0.0, ball_y, drop]]) + along
    tip = np.array([[0.0, ball_y + 0.06 * LEG, drop]]) + along
    heel = np.array([[0.0, ball_y - 0.16 * LEG, 0.03 * LEG + drop]]) + along
    hip = ankle + np.array([[0.0, 0.1 * LEG, 0.85 * LEG]])
    knee = 0.5 * (hip + ankle) + np.array([[0.0, 0.05 * LEG, 0.0]])
    frame = np.tile(np.eye(4), (n, 1, 1))
    frame[:, :3, 3] = ankle
    one = np.ones(n)
    lock = _lock(n, rise=-drop * one, from_point=ankle.copy(), from_weight=one, swing=one, pitch=0 * one)
    at = model.Placement(np.tile(np.eye(4), (n, 1, 1)), 0.0)
    foot = model.Foot([hip, knee, ankle], frame, [heel, tip], 0.0, True, math.radians(30.0), LEG, True, lock,
                      ball=ball, front_speed=model.front_speeds(ball, at.up, fps))
    plan = model.plan_foot(foot, at, model.Rays(_stairs()), np.zeros(n), fps)
    return plan.target[:, 2] - ankle[:, 2] + drop


def test_a_foot_still_on_its_ground_at_lift_off_is_not_lifted_clear_of_a_riser_ahead():
    """Issue 20 (hover during the source's contacts): right after lift-off beside a riser, a foot the animation
    still has on the ground of its contact (though that stood 2.5% of the leg over the animation's floor, a
    capture's marker offset) and whose front is not moving along the ground stays on its ground: the swing's
    gate (SWING_LIFT) reads its height with the hover it carries taken off. Before, read as 2.5% over the
    floor, it was lifted clear of the riser at once (12% of the leg here; cmu_12_01 over stairs: 1.06% of the
    leg over the tread in a source contact). A front moving along the ground faster than a ball that has
    lifted (LIFT_SPEED) is on its way, and is lifted clear as before (cmu_01_01 over stairs: left down, a toe
    sliding into a riser was yanked onto the step in one frame)."""
    still = _lift_off_plan(0.0)
    moving = _lift_off_plan(2.0 * tuning.LIFT_SPEED)
    assert np.abs(still).max() < 1e-6 * LEG, still  # on its ground: the riser ahead does not lift it
    assert moving.min() > 0.01 * LEG, moving  # on its way: lifted clear of the riser as before


def _landing_plan(landing: float, fps: float = 120.0):
    """`model.plan_foot` over three frames of a ball held from its landing before Start (`LockTrack.landing`),
    the foot still coming down in front of a riser: its toe tip reaches over the next, higher tread, so the
    foot turns toe-up. The planned ball (where the plan puts the animation's ball) and the foot's turn."""
    n = 3
    down = np.array([[0.0, 0.0, -0.01 * LEG]]) * np.arange(n)[:, None]
    ball_y = TREAD - 0.03 * LEG
    ankle = np.array([[0.0, ball_y - 0.1 * LEG, 0.08 * LEG]]) + down
    ball = np.array([[0.0, ball_y, 0.02 * LEG]]) + down
    tip = np.array([[0.0, ball_y + 0.08 * LEG, 0.02 * LEG]]) + down
    heel = np.array([[0.0, ball_y - 0.16 * LEG, 0.05 * LEG]]) + down
    hip = ankle + np.array([[0.0, 0.1 * LEG, 0.85 * LEG]])
    knee = 0.5 * (hip + ankle) + np.array([[0.0, 0.05 * LEG, 0.0]])
    frame = np.tile(np.eye(4), (n, 1, 1))
    frame[:, :3, 3] = ankle
    one = np.ones(n)
    held = np.array([0.0, ball_y + 0.01 * LEG, 0.0])  # where the ball is held, along the ground
    lock = _lock(n, weight=one, point=np.tile(held, (n, 1)), from_point=ankle.copy(), from_weight=one, swing=one,
                 ball=one, landing=landing * one, anchor=np.tile(held - (ball[0] - ankle[0]), (n, 1)))
    at = model.Placement(np.tile(np.eye(4), (n, 1, 1)), 0.0)
    foot = model.Foot([hip, knee, ankle], frame, [heel, tip], 0.0, True, math.radians(30.0), LEG, True, lock,
                      ball=ball, front_speed=model.front_speeds(ball, at.up, fps))
    plan = model.plan_foot(foot, at, model.Rays(_stairs()), np.zeros(n), fps)
    rotations = harness.module("solvers.rotations")
    return plan.target + rotations.qrot(plan.rotation, ball - ankle), plan.rotation, held


def test_a_heel_held_from_its_strike_stays_put_as_the_foot_comes_down_about_it():
    """Issue 20 (b), the heel while only the heel is down: a heel held from its strike before Start
    (`LockTrack.heel`, with `landing`) stays where it is held along the ground while the foot comes down
    about it and the animation's heel slides on (1% of the leg a frame here); the ankle goes where that puts
    the heel. Before, nothing held the foot until the ankle came to rest, and the heel slid as animated."""
    n = 4
    slide = np.array([[0.0, 0.01 * LEG, 0.0]]) * np.arange(n)[:, None]
    pitch = np.radians(np.linspace(20.0, 5.0, n))  # toe up, coming down
    y0 = 0.15 * LEG  # on the first tread, well behind its riser
    heel = np.array([[0.0, y0, 0.0]]) + slide
    rel_ankle = np.stack([np.zeros(n), 0.06 * LEG * np.cos(pitch) - 0.0 * LEG, 0.08 * LEG * np.ones(n)], 1)
    ankle = heel + rel_ankle
    tip = ankle + np.stack([np.zeros(n), 0.2 * LEG * np.cos(pitch), -0.08 * LEG + 0.2 * LEG * np.sin(pitch)], 1)
    hip = ankle + np.array([[0.0, -0.1 * LEG, 0.85 * LEG]])
    knee = 0.5 * (hip + ankle) + np.array([[0.0, 0.05 * LEG, 0.0]])
    frame = np.tile(np.eye(4), (n, 1, 1))
    frame[:, :3, 3] = ankle
    one = np.ones(n)
    held = heel[-1] + np.array([0.0, 0.0, 0.0])  # where the heel is at Start
    lock = _lock(n, weight=one, point=np.tile(held, (n, 1)), from_point=ankle.copy(), from_weight=one, swing=one,
                 landing=one, anchor=np.tile(held - rel_ankle[-1], (n, 1)), heel=one)
    at = model.Placement(np.tile(np.eye(4), (n, 1, 1)), 0.0)
    foot = model.Foot([hip, knee, ankle], frame, [heel, tip], 0.0, True, math.radians(30.0), LEG, True, lock,
                      front_speed=np.zeros(n))
    plan = model.plan_foot(foot, at, model.Rays(_stairs()), np.zeros(n), 120.0)
    rotations = harness.module("solvers.rotations")
    planned = plan.target + rotations.qrot(plan.rotation, heel - ankle)
    drift = np.linalg.norm(planned[:, :2] - held[:2], axis=1)
    assert drift.max() < 1e-6 * LEG, drift / LEG
    assert np.linalg.norm(np.diff(heel[:, :2], axis=0), axis=1).min() > 0.009 * LEG  # the animation's slides


def test_a_ball_held_from_its_landing_stays_put_as_the_foot_turns_toe_up():
    """Issue 20 (b): a ball held before Start (it landed before the ankle came to rest) stays where it is
    held along the ground while the foot, still coming down in front of a riser, turns toe-up about its
    ankle: the ankle moves by what the turn moves the ball. Before, the turn swept the held ball forward
    (cmu_08_07 over stairs: 0.6% of the leg before Start, skate 1.34% -> 0.76%)."""
    planned, rotation, held = _landing_plan(1.0)
    assert (np.abs(rotation[:, 0]) < 1.0 - 1e-6).all(), rotation  # the foot does turn toe-up here
    drift = np.linalg.norm(planned[:, :2] - held[:2], axis=1)
    assert drift.max() < 1e-6 * LEG, drift / LEG


def _line_over_first_riser(y: float, fps: float = 120.0):
    """`model.swing_rays` for one frame of a swing from the first tread (y 0.2) up onto the second (y 0.7) of
    `_stairs`, the ankle at `y` (heel 0.05 behind it, toe 0.15 ahead) 0.02 over its height at the landing, cast
    on the stairs: the swing's line (`SwingLine`) and the heel point."""
    a, b = np.array([[0.0, 0.2, 0.08]]), np.array([[0.0, 0.7, RISER + 0.08]])  # the ankle's lock points
    ankle = np.array([[0.0, y, RISER + 0.1]])
    soles = [ankle + np.array([0.0, -0.05, -0.08]), ankle + np.array([0.0, 0.15, -0.08])]
    at = model.Placement(np.tile(np.eye(4), (1, 1, 1)), 0.0)
    one = np.ones(1)
    t = (y - 0.2) / 0.5
    rays = model.swing_rays(one > 0.0, a, b, 0.0 * one, RISER * one, t * one, 50.0 * one, 0.0 * one, 0.0 * one,
                            ankle, soles, at, np.full(1, LEG), fps)
    hits = model.Rays(_stairs()).cast(rays.points, rays.reach, rays.up)
    return rays.line(hits), soles[0]


def test_a_step_edge_behind_the_foot_holds_it_at_the_edges_height_not_on_the_line_climbing_past_it():
    """Issue 20 (a, hover at landings): going up a step, the swing's line over the edge (`SwingRays.line`) is
    lifted by the terrain's rise above the straight line from tread to tread near the foot. An edge the foot
    has passed lifts it to that edge's tread, not to the line's climb carried on past the edge: that held
    the heel over the tread it lands on by a part of the riser until the swing's end (cmu_12_02 over stairs:
    3.65% of the leg over its tread in a source contact, 2.11% without; 1.2% of the leg here)."""
    for y in (0.58, 0.62, 0.66):  # the heel past the edge (y 0.45) by 0.08 to 0.16
        line, heel = _line_over_first_riser(y)
        assert float(line.height(heel)[0]) <= RISER + 1e-9, (y, line.height(heel), RISER)
    # Before the edge the foot still rises over it ahead of time: the line at the heel well above the
    # straight line from tread to tread.
    line, heel = _line_over_first_riser(0.38)
    straight = RISER * (float(heel[0, 1]) - 0.2) / 0.5
    assert float(line.height(heel)[0]) > straight + 0.03 * LEG, (line.height(heel), straight)


def test_past_the_last_contact_the_pelvis_is_lowered_by_the_hover_the_foot_still_carries():
    """Issue 20: after a foot's last contact its ground fades from the contact's into the terrain under the
    body (`from_weight` below 1), while the hover it carries (`LockTrack.rise`: its contact stood 2.5% of the
    leg over the animation's floor) is taken off however far (`contacts._track`). The pelvis's ground from
    this foot (`FootPlan.support`) is lowered by that hover too, whatever the fade, so the leg stays as long
    as animated; lowered only by the faded part, the leg was stretched by the rest as the fade went on."""
    n, drop = 3, 0.025 * LEG
    ankle = np.array([[0.0, 0.1 * LEG, 0.3 * LEG]]) + np.zeros((n, 1))
    hip = ankle + np.array([[0.0, 0.0, 0.6 * LEG]])
    knee = 0.5 * (hip + ankle) + np.array([[0.0, 0.05 * LEG, 0.0]])
    heel, tip = ankle + np.array([0.0, -0.05, -0.08]), ankle + np.array([0.0, 0.15, -0.08])
    frame = np.tile(np.eye(4), (n, 1, 1))
    frame[:, :3, 3] = ankle
    one = np.ones(n)
    held = np.array([1.0, 0.5, 0.0])  # the fade after the last contact
    lock = _lock(n, rise=-drop * one, from_point=ankle.copy(), from_weight=held, swing=one, free=one)
    at = model.Placement(np.tile(np.eye(4), (n, 1, 1)), 0.0)
    foot = model.Foot([hip, knee, ankle], frame, [heel, tip], 0.0, True, math.radians(30.0), LEG, True, lock)
    window = np.full(n, 0.01 * LEG)  # the terrain under the body; the contact's ground (tread 0) is at 0
    plan = model.plan_foot(foot, at, model.Rays(_stairs()), window, 120.0)
    assert np.allclose(plan.support, (1.0 - held) * window - drop), (plan.support, (1.0 - held) * window - drop)


def _slope(grade: float) -> ground.Terrain:
    """A plane rising `grade` (height per unit) along +X, four metres square."""
    verts = [(x, y, grade * x) for x, y in ((-2.0, -2.0), (2.0, -2.0), (2.0, 2.0), (-2.0, 2.0))]
    tris = [(0, 1, 2), (0, 2, 3)]
    tree = BVHTree.FromPolygons(verts, tris, all_triangles=True)
    return ground.Terrain(tree, len(tris), np.array(verts, dtype=np.float64), np.array(tris, dtype=np.int32))


def test_the_swing_line_across_a_slope_rises_and_falls_with_it_beside_its_path():
    """Issue 20 (a, hover): in mid-swing each sole point keeps its height over the swing's line (`SwingLine`),
    the straight line between the two contacts' grounds, there at each point's place along it. Across the
    path it was level: a foot swinging wide of the straight line between its contacts on a 15 degree slope
    that falls away from that line kept its height over the line's level, not over the slope under it, and
    hovered by the fall (fair1_zombie over the slope: 3.9% of the leg as it landed). The line now rises and
    falls across its path as the ground at its two ends does: on a plane, every sole point keeps its animated
    height over the plane (here 8% of the leg lower than the line's level)."""
    grade, h, wide = math.tan(math.radians(15.0)), 0.05 * LEG, 0.3 * LEG
    ankle = np.array([[0.0, 0.0, 0.1 * LEG]])
    heel = ankle + np.array([[0.0, -0.05 * LEG, h - 0.1 * LEG]])
    tip = ankle + np.array([[0.0, 0.15 * LEG, h - 0.1 * LEG]])
    hip = ankle + np.array([[0.0, 0.0, 0.85 * LEG]])
    knee = 0.5 * (hip + ankle) + np.array([[0.0, 0.05 * LEG, 0.0]])
    frame = np.eye(4)[None].copy()
    frame[0, :3, 3] = ankle[0]
    one = np.ones(1)
    # The contacts up the slope from the foot, the path between them along it (+Y).
    a, b = ankle + np.array([[wide, -0.4 * LEG, 0.0]]), ankle + np.array([[wide, 0.4 * LEG, 0.0]])
    lock = _lock(1, from_point=a, from_weight=0.5 * one, to_point=b, to_weight=0.5 * one, swing=one, free=one,
                 gap=50.0 * one)
    foot = model.Foot([hip, knee, ankle], frame, [heel, tip], 0.0, False, math.radians(30.0), LEG, True, lock)
    plan = model.plan_foot(foot, model.Placement(np.eye(4)[None], 0.0), model.Rays(_slope(grade)), np.zeros(1),
                           120.0)
    for p in (heel, tip):
        over = float(plan.target[0, 2] + p[0, 2] - ankle[0, 2] - grade * p[0, 0])
        assert abs(over - h) < 0.002 * LEG, (over / LEG, h / LEG)


def test_a_step_edge_a_foot_has_passed_going_down_does_not_hold_it_up_over_the_tread_beyond():
    """Issue 20 (a, hover at landings): a lifted foot keeps clear of the terrain around it (the clearance
    field: what rises within CLEAR_RADIUS, falling away at CLEAR_SLOPE). Between two contacts it keeps clear
    only of what still rises around it CLEAR_AHEAD further along its path, too: coming down a flight of stairs,
    the edge of the tread it left, behind its heel, no longer holds the foot up over the tread it lands on
    (fair1_zombie over stairs: 6.4% of the leg over its tread as it landed). Here the heel is 0.05 m past the
    edge, the swing's line faded out (its ball held to the frame before): held up by 12% of the leg before,
    3.7% now (by the field 0.2 of the leg further down the stairs)."""
    h = 0.05 * LEG
    edge = 2 * TREAD  # tread 2 (2 RISER high) behind the foot, tread 1 under it: down the stairs (-Y)
    ankle = np.array([[0.0, edge - 0.1, 0.1 * LEG + h]])
    heel = ankle + np.array([[0.0, 0.05, -0.1 * LEG]])
    tip = ankle + np.array([[0.0, -0.15, -0.1 * LEG]])
    hip = ankle + np.array([[0.0, 0.0, 0.85 * LEG]])
    knee = 0.5 * (hip + ankle) + np.array([[0.0, -0.05 * LEG, 0.0]])
    frame = np.eye(4)[None].copy()
    frame[0, :3, 3] = ankle[0]
    one = np.ones(1)
    a, b = ankle + np.array([[0.0, 0.4, 0.0]]), ankle + np.array([[0.0, -0.25, 0.0]])  # on tread 2, on tread 1
    lock = _lock(1, from_point=a, from_weight=0.5 * one, to_point=b, to_weight=0.5 * one, swing=one, free=one,
                 gap=50.0 * one, lead=49.0 * one)
    foot = model.Foot([hip, knee, ankle], frame, [heel, tip], 0.0, False, math.radians(30.0), LEG, True, lock)
    plan = model.plan_foot(foot, model.Placement(np.eye(4)[None], 0.0), model.Rays(_stairs()), np.zeros(1), 120.0)
    held_up = float(plan.target[0, 2] + heel[0, 2] - ankle[0, 2] - RISER) - h  # the heel over tread 1, less h
    assert -1e-6 < held_up < 0.05 * LEG, held_up / LEG


def test_a_foot_with_no_contacts_crosses_a_step_edge_in_the_air_over_several_frames():
    """Issue 20 (e, pops): a foot with no contacts at all (a run whose stances are too brief for the detector)
    follows the terrain right under it, and that steps by a riser at every edge. Planned and smoothed as the
    bake does (`model.plan_foot`, then `model.swing_change` over all the frames), a foot crossing four of the
    staircase's edges a third of the leg up in the air rises over the frames around each edge, never by more
    than a fifth of a riser from one frame to the next (it rose by the whole riser in one frame: the knee of
    cmu_09_01 over stairs snapped at 2000-2700 deg/s, 3.5-3.9x the source's peak), is never under the terrain,
    and mid-tread stands its animated height over the tread."""
    rotations = harness.module("solvers.rotations")
    fps, n = 120.0, 240
    y = 0.1 * LEG + 1.2 * LEG * np.arange(n) / fps  # 1.2 leg per second along +Y: edges at 0.5, 1, 1.5, 2 leg
    ankle = np.stack((np.zeros(n), y, np.full(n, 0.33 * LEG)), 1)
    heel = ankle + np.array([0.0, -0.06 * LEG, -0.03 * LEG])
    tip = ankle + np.array([0.0, 0.16 * LEG, -0.06 * LEG])
    hip = ankle + np.array([0.0, -0.1 * LEG, 0.6 * LEG])
    knee = 0.5 * (hip + ankle) + np.array([0.0, 0.1 * LEG, 0.0])
    frame = np.tile(np.eye(4), (n, 1, 1))
    frame[:, :3, 3] = ankle
    foot = model.Foot([hip, knee, ankle], frame, [heel, tip], 0.0, True, math.radians(30.0), LEG, True,
                      model.LockTrack.none(n), ball=tip)
    at = model.Placement(np.tile(np.eye(4), (n, 1, 1)), 0.0)
    plan = model.plan_foot(foot, at, model.Rays(_stairs()), np.zeros(n), fps)
    assert plan.planned.all()
    lift = plan.target[:, 2] - ankle[:, 2] + model.swing_change(plan.correction, plan.floor, plan.touch, plan.pinned,
                                                                 fps, plan.leg)
    assert lift[-1] - lift[0] > 3.5 * RISER  # it climbed the four treads it crossed
    assert np.abs(np.diff(lift)).max() <= 0.2 * RISER, np.abs(np.diff(lift)).max() / RISER
    for sole in (heel, tip):  # the sole points, turned as planned, over the terrain under them
        at_sole = ankle + lift[:, None] * np.array([0.0, 0.0, 1.0]) + rotations.qrot(plan.rotation, sole - ankle)
        under = np.array([_tread_height(v) for v in at_sole[:, 1]])
        assert (at_sole[:, 2] >= under - 1e-6).all(), (at_sole[:, 2] - under).min()
    # Mid-tread: heel and toe tip over one tread, each more than three of the smoothing's widths (at this speed)
    # from an edge.
    edges = TREAD * np.arange(1, 6)
    margin = 3.0 * tuning.SWING_SMOOTH * 1.2 * LEG
    clear = np.array([min(np.abs(edges - heel[k, 1]).min(), np.abs(edges - tip[k, 1]).min()) > margin
                      and _tread_height(heel[k, 1]) == _tread_height(tip[k, 1]) for k in range(n)])
    assert clear.sum() >= 12
    tread = np.array([_tread_height(v) for v in y])
    assert np.abs(lift - tread)[clear].max() < 0.005 * LEG, np.abs(lift - tread)[clear].max() / LEG
    # Planned beside a foot with contacts, as a rig's two feet are (`model.plan_feet`: their rows one after
    # another), it gets what it gets alone; and so does a chunk of its frames.
    f = np.arange(float(n))
    start, end, z2, z3 = np.array([0.0, 200.0]), np.array([10.0, 210.0]), np.zeros(2), np.zeros((2, 3))
    lock = np.array([[0.3, 0.1 * LEG, 0.0], [0.3, 2.5 * LEG, 4 * RISER]])
    track = contacts._track(f, fps, start, end, z2, z2, lock, lock, lock, np.array([0.0, float(n)]), z3, z2, z3,
                            np.full(2, np.inf), end, z3, lock)
    other = dataclasses.replace(foot, joints=[j + np.array([0.3, 0.0, 0.0]) for j in foot.joints],
                                soles=[p + np.array([0.3, 0.0, 0.0]) for p in foot.soles], lock=track)
    assert not track.contactless.any() and foot.lock.contactless.all()
    both = model.plan_feet([other, foot], [at, at], model.Rays(_stairs()), [np.zeros(n), np.zeros(n)], fps)[1]
    for name in ("target", "correction", "floor", "touch", "pinned"):
        assert np.allclose(getattr(both, name), getattr(plan, name), atol=1e-9), name
    part = slice(100, 140)
    chunk = model.plan_foot(dataclasses.replace(foot, joints=[j[part] for j in foot.joints], end_frame=frame[part],
                                                soles=[p[part] for p in foot.soles], lock=foot.lock.rows(part),
                                                ball=tip[part]),
                            model.Placement(np.tile(np.eye(4), (40, 1, 1)), 0.0), model.Rays(_stairs()),
                            np.zeros(40), fps)
    for name in ("target", "correction", "floor", "touch", "pinned"):
        assert np.allclose(getattr(chunk, name), getattr(plan, name)[part], atol=1e-9), name


def test_the_knees_hinge_is_the_line_it_bends_about_pointing_to_the_side_it_bends_to():
    """`model.knee_hinge`: the principal axis of the knee planes' normals (thigh frame) over the frames bent more
    than HINGE_BEND, weighed by how far each is bent. The capture's jitter off a straight leg (normals any which
    way, bends under HINGE_BEND) and a few frames overextended backwards (the normal reversed) do not turn it,
    and it points to the side most of the bending is on; no frame bent that far: none."""
    rng = np.random.default_rng(7)
    hinge = np.array([0.6, 0.0, 0.8])
    n = 400
    normals = hinge + rng.normal(0.0, 0.05, (n, 3))
    bends = rng.uniform(math.radians(10.0), math.radians(90.0), n)
    normals[:40] *= -1.0  # overextended backwards, a little
    bends[:40] = math.radians(6.0)
    normals[40:140] = rng.normal(0.0, 1.0, (100, 3))  # nearly straight: its plane is noise
    bends[40:140] = rng.uniform(0.0, 0.9 * tuning.HINGE_BEND, 100)
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    got = model.knee_hinge(normals, bends)
    assert got is not None and float(got @ hinge) > 0.995, got
    assert float(model.knee_hinge(-normals, bends) @ hinge) < -0.995  # bent the other way most of the time
    assert model.knee_hinge(normals[40:140], bends[40:140]) is None
    assert model.knee_hinge(np.full((3, 3), np.nan), np.full(3, np.nan)) is None


def test_a_nearly_straight_knee_bends_across_its_hinge_and_a_bent_one_in_its_own_plane():
    """`model.fk_plane_pole` with a knee hinge: a leg almost straight (bent 2 degrees, a little backwards) whose
    foot points sideways bends across its hinge, to the side the hinge says, not where the foot points; without
    a hinge (NaN rows) it bends where the foot points, as before. A leg bent well off straight keeps the plane
    the animation bends it in either way."""
    hip = np.array([[0.0, 0.0, 1.0]] * 2)
    tip = np.array([[0.0, 0.0, 0.0]] * 2)
    back = 0.5 * math.sin(math.radians(1.0))
    knee = np.array([[0.0, back, 0.5], [0.0, -0.25, 0.5]])  # nearly straight (knee behind), bent forward
    end = np.repeat(np.eye(4)[None], 2, axis=0)
    end[:, :3, 1] = (1.0, 0.0, 0.0)  # the foot points along +X
    hinge = np.array([[1.0, 0.0, 0.0]] * 2)  # a = -Z: the knee bends toward a x hinge = -Y
    with_hinge = model.fk_plane_pole(hip, knee, tip, end, True, hinge=hinge)
    without = model.fk_plane_pole(hip, knee, tip, end, True, hinge=np.full((2, 3), np.nan))
    assert np.allclose(without, model.fk_plane_pole(hip, knee, tip, end, True))
    mid = 0.5 * (hip + tip)
    d_with = (with_hinge - mid) / np.linalg.norm(with_hinge - mid, axis=1)[:, None]
    d_without = (without - mid) / np.linalg.norm(without - mid, axis=1)[:, None]
    assert d_with[0] @ np.array([0.0, -1.0, 0.0]) > 0.99, d_with[0]
    assert d_without[0] @ np.array([1.0, 0.0, 0.0]) > 0.6, d_without[0]
    assert d_with[1] @ np.array([0.0, -1.0, 0.0]) > 0.99 and d_without[1] @ np.array([0.0, -1.0, 0.0]) > 0.95
