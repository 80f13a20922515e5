"""Motion quality as a user sees it, measured independently of the model.

`core/metrics.py` measures the model on its own terms: skate over the contacts Contact IK detected and
locked, penetration at the sole points it placed. This module takes nothing from the model but which bones
are the legs:

- **world space**, up is the scene's world Z, whatever the armature object's rotation, scale or parents;
- **the leg length** from the joints (hip, knee and ankle heads in the rest pose), never from a bone's tail;
- **sole points**: from the skeleton, the ball (the toe bone's head) and the toe tip (the toe bone's tail,
  or the foot bone's tail where there is no toe); a skeleton has no heel joint, so the heel (below the
  ankle at the rest pose's sole level, carried by the foot bone) is recorded but not judged; from the
  skinned mesh, where one is bound, the lowest vertices weighted to the foot and toe bones in the rest pose
  (heel, ball, toe tip and the sides);
- **the terrain** by ray cast down onto a BVH tree of its evaluated meshes, built here;
- **contacts from the source animation**, by a detector of its own (not the one that locks): the ball or toe
  tip within 3 % of the leg of the source's floor, and the ball moving under 0.25 leg/s;
- **penetration** beyond the source's own dip below its floor (what the capture itself does is not ours),
  **hover** of the lowest sole point (heel, ball, toe tip, and the mesh's sole where bound) during source
  contacts (beside the source's own on its floor), **skate** as the ball's horizontal drift over each source
  contact (also in millimetres for a 0.9 m leg: viewers notice foot sliding above about 21 mm, Prazak, Hoyet
  and O'Sullivan, SCA 2011), **pops** as peak knee and hip angular velocity and acceleration beside the
  source's (leaving out the steps where the source itself cuts: every foot's ball jumping faster than 20 leg/s
  at once, an NLA repeat's or a loop's seam snapping the whole body back), and the **identity**: how far each
  sole point moves from the source's (for flat ground at the source's own floor, where nothing should change),
  outside frames where the source itself goes below its floor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import bpy
import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

from .anatomy import deform_name
from .contacts import fps_of
from .metrics import angular_peaks, angular_peaks_at, playing_source

UP = np.array([0.0, 0.0, 1.0])
CONTACT_HEIGHT = 0.03  # x leg: the ball or toe tip this close to the source's floor...
CONTACT_SPEED = 0.25  # leg/s: ...and the ball slower than this is a source contact
MIN_CONTACT_FRAMES = 2
CONTACT_GAP = 0.025  # s: a stance broken by no more than this is one contact
SEAM_SPEED = 2.5  # leg/s: a ball this fast from one frame to the next has jumped (a seam), not rolled
# s: a source contact shorter than this is brief (a tap, the toe brushing the floor just after toe-off or
# before a landing: the ball or toe tip within CONTACT_HEIGHT of the floor and slow for a few frames). A report's
# split, not a target's: hover is judged over every source contact, brief or not. (The value of Contact IK's
# shortest contact, `tuning.MIN_CONTACT`, written here on its own: the measure takes nothing from the model.)
BRIEF_CONTACT = 0.08
CUT_SPEED = 20.0  # leg/s: every ball of the source this fast at once: a cut (the clip snapping back), no pop
MESH_SOLE_BAND = 0.03  # x leg: a bound mesh's sole is its foot vertices this close to their lowest
HUMAN_LEG_MM = 900.0  # a 0.9 m leg, to state skate in millimetres at human scale
PERCEPTIBLE_SKATE_MM = 21.0
IDENTITY_TOLERANCE = 0.005  # x leg: flat ground at the source's floor gives the source back within this


@dataclass
class Foot:
    """The bones of one leg, as the rig's settings name them."""

    name: str
    thigh: str
    shin: str
    foot: str
    toe: Optional[str]


@dataclass
class Samples:
    """One foot over the frames, world space: sole points (frames x points x 3) and joint rotations."""

    heel: np.ndarray
    ball: np.ndarray
    tip: np.ndarray
    mesh: Optional[np.ndarray]  # frames x vertices x 3, or None where no mesh is bound
    knee: list[Any] = field(default_factory=list)  # shin's rotation in the thigh's frame
    hip: list[Any] = field(default_factory=list)  # thigh's rotation in its parent's frame

    def skeleton(self) -> np.ndarray:
        """The skeleton's own sole points, as issue 20 defines them: the ball and the toe tip. (The heel
        here is derived, not a joint: it is recorded, not judged.)"""
        return np.stack([self.ball, self.tip], axis=1)

    def sole(self) -> np.ndarray:
        """Every sole point of the skeleton, for hover: the heel, the ball and the toe tip (frames x 3 x 3). A
        foot standing on its heel with its toes up (a stylised walk, a heel strike) stands on the ground."""
        return np.stack([self.heel, self.ball, self.tip], axis=1)


class Ground:
    """The terrain as a BVH tree of its evaluated meshes in world space, with down-ray heights."""

    def __init__(self, objects: Sequence[bpy.types.Object], depsgraph: bpy.types.Depsgraph):
        verts: list[Vector] = []
        polys: list[tuple[int, ...]] = []
        for ob in objects:
            ev = ob.evaluated_get(depsgraph)
            me = ev.to_mesh()
            try:
                base = len(verts)
                mw = ev.matrix_world
                verts += [mw @ v.co for v in me.vertices]
                polys += [tuple(base + i for i in p.vertices) for p in me.polygons]
            finally:
                ev.to_mesh_clear()
        self.tree = BVHTree.FromPolygons(verts, polys) if polys else None
        self.top = max((v.z for v in verts), default=0.0)
        self.bottom = min((v.z for v in verts), default=0.0)

    def heights(self, points: np.ndarray) -> np.ndarray:
        """The terrain's height under each point (nan where nothing is under or over it)."""
        flat = points.reshape(-1, 3)
        out = np.full(len(flat), math.nan)
        if self.tree is None:
            return out.reshape(points.shape[:-1])
        start = self.top + 1.0 + abs(self.top - self.bottom)
        reach = start - self.bottom + 1.0
        for i, p in enumerate(flat):
            hit = self.tree.ray_cast(Vector((p[0], p[1], start)), Vector((0.0, 0.0, -1.0)), reach)
            if hit[0] is not None:
                out[i] = hit[0].z
        return out.reshape(points.shape[:-1])


class Plane:
    """A horizontal plane at height z (the source's own floor)."""

    def __init__(self, z: float):
        self.z = z

    def heights(self, points: np.ndarray) -> np.ndarray:
        return np.full(points.shape[:-1], self.z)


def feet_of(obj: bpy.types.Object) -> list[Foot]:
    """The legs as the rig's settings name them (the only thing taken from Contact IK), each bone measured
    on the deform bone it moves where the rig has one (a Rigify control or ORG bone: its DEF bone)."""
    bones = obj.data.bones

    def deform(name: str) -> str:
        d = deform_name(name)
        return d if d in bones else name

    out = []
    for lb in obj.contact_ik.limbs:
        names = [b.bone for b in lb.bones if b.bone]
        if lb.kind != "FOOT" or len(names) < 2 or not lb.end_bone:
            continue
        toe = deform(lb.toe_bone) if lb.toe_bone and lb.toe_bone in bones else None
        out.append(Foot(lb.name, deform(names[0]), deform(names[-1]), deform(lb.end_bone), toe))
    return out


def leg_length(obj: bpy.types.Object, foot: Foot) -> float:
    """Hip to knee plus knee to ankle, from the joints (bone heads) in the rest pose, in world units."""
    mw, bones = obj.matrix_world, obj.data.bones
    hip, knee, ankle = (mw @ bones[n].head_local for n in (foot.thigh, foot.shin, foot.foot))
    return float((knee - hip).length + (ankle - knee).length)


def _vec(v: Vector) -> list[float]:
    return [v.x, v.y, v.z]


def _heel_in_foot(obj: bpy.types.Object, foot: Foot) -> Vector:
    """The heel in the foot bone's rest frame: below the ankle (world down) at the rest sole's level."""
    mw, bones = obj.matrix_world, obj.data.bones
    fb = bones[foot.foot]
    ankle = mw @ fb.head_local
    tips = [mw @ fb.tail_local] if foot.toe is None else [mw @ bones[foot.toe].head_local, mw @ bones[foot.toe].tail_local]
    sole = min(p.z for p in tips)
    heel = Vector((ankle.x, ankle.y, min(sole, ankle.z)))
    return (mw @ fb.matrix_local).inverted() @ heel


def _skinned(obj: bpy.types.Object) -> list[bpy.types.Object]:
    """Meshes deformed by `obj` (an Armature modifier pointing at it)."""
    return [m for m in bpy.context.scene.objects if m.type == "MESH"
            and any(md.type == "ARMATURE" and md.object == obj for md in m.modifiers)]


def _mesh_sole(obj: bpy.types.Object, foot: Foot, leg: float) -> list[tuple[bpy.types.Object, list[int]]]:
    """Per bound mesh, the indices of its sole vertices: weighted (>= 0.5) to the foot or toe bone, within
    MESH_SOLE_BAND of the lowest of them in the rest pose (the undeformed mesh)."""
    out = []
    names = {foot.foot} | ({foot.toe} if foot.toe else set())
    for mesh in _skinned(obj):
        groups = {g.index for g in mesh.vertex_groups if g.name in names}
        if not groups:
            continue
        mw = mesh.matrix_world
        idx, zs = [], []
        for v in mesh.data.vertices:
            if sum(g.weight for g in v.groups if g.group in groups) >= 0.5:
                idx.append(v.index)
                zs.append((mw @ v.co).z)
        if idx:
            low = min(zs)
            out.append((mesh, [i for i, z in zip(idx, zs) if z <= low + MESH_SOLE_BAND * leg]))
    return out


def sample(obj: bpy.types.Object, feet: Sequence[Foot], frames: Sequence[int], scene: bpy.types.Scene) -> dict[str, Samples]:
    """Play `frames` and record each foot's sole points and joint rotations, as the rig plays now."""
    pbs = obj.pose.bones
    legs = {f.name: leg_length(obj, f) for f in feet}
    heels = {f.name: _heel_in_foot(obj, f) for f in feet}
    soles = {f.name: _mesh_sole(obj, f, legs[f.name]) for f in feet}
    rec: dict[str, dict[str, list[Any]]] = {f.name: {"heel": [], "ball": [], "tip": [], "mesh": [], "knee": [],
                                                     "hip": []} for f in feet}
    current = scene.frame_current
    try:
        for fr in frames:
            scene.frame_set(fr)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            mw = obj.matrix_world
            meshes: dict[str, np.ndarray] = {}
            for f in feet:
                r = rec[f.name]
                fp = pbs[f.foot]
                r["heel"].append(_vec(mw @ (fp.matrix @ heels[f.name])))
                if f.toe:
                    r["ball"].append(_vec(mw @ pbs[f.toe].head))
                    r["tip"].append(_vec(mw @ pbs[f.toe].tail))
                else:
                    r["ball"].append(_vec(mw @ fp.tail))
                    r["tip"].append(_vec(mw @ fp.tail))
                pts = []
                for mesh, idx in soles[f.name]:
                    if mesh.name not in meshes:
                        ev = mesh.evaluated_get(depsgraph)
                        me = ev.to_mesh()
                        co = np.empty(len(me.vertices) * 3)
                        me.vertices.foreach_get("co", co)
                        m = np.array(ev.matrix_world)
                        co = co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
                        ev.to_mesh_clear()
                        meshes[mesh.name] = co
                    pts.append(meshes[mesh.name][idx])
                r["mesh"].append(np.concatenate(pts) if pts else None)
                thigh, shin = pbs[f.thigh], pbs[f.shin]
                tq, sq = (mw @ thigh.matrix).to_quaternion(), (mw @ shin.matrix).to_quaternion()
                r["knee"].append((tq.inverted() @ sq).normalized())
                parent = (mw @ thigh.parent.matrix).to_quaternion() if thigh.parent else mw.to_quaternion()
                r["hip"].append((parent.inverted() @ tq).normalized())
    finally:
        scene.frame_set(current)
    out = {}
    for f in feet:
        r = rec[f.name]
        sole = np.stack(r["mesh"]) if r["mesh"] and r["mesh"][0] is not None else None
        out[f.name] = Samples(np.asarray(r["heel"]), np.asarray(r["ball"]), np.asarray(r["tip"]), sole,
                              r["knee"], r["hip"])
    return out


def source_floor(samples: dict[str, Samples]) -> float:
    """The source's floor: the 10th percentile of the feet's lowest skeleton sole point per frame (robust to
    a few frames through the floor, such as a landing's dip, and to a clip that is mostly in the air)."""
    low = np.concatenate([s.skeleton()[..., 2].min(axis=1) for s in samples.values()])
    return float(np.percentile(low, 10))


def source_contacts(s: Samples, floor: float, leg: float, fps: float) -> list[tuple[int, int]]:
    """Contact intervals (first, last frame index) of the source: the ball or toe tip within
    CONTACT_HEIGHT of the floor and the ball slower than CONTACT_SPEED (both x leg)."""
    low = np.minimum(s.ball[:, 2], s.tip[:, 2]) - floor
    step = np.linalg.norm(np.diff(s.ball[:, :2], axis=0), axis=1) * fps
    speed = np.concatenate([[step[0] if len(step) else 0.0], step])
    if len(step):
        speed = np.minimum(speed, np.concatenate([step, [step[-1]]]))  # slow on either side of the frame
    on = (low <= CONTACT_HEIGHT * leg) & (speed <= CONTACT_SPEED * leg)
    # A stance broken by a frame or two of capture jitter (at 120 fps the ball's per-frame speed is noisy)
    # is one contact: gaps of up to CONTACT_GAP seconds between two runs are closed.
    gap = max(1, int(round(CONTACT_GAP * fps)))
    idx = np.flatnonzero(on)
    for a, b in zip(idx[:-1], idx[1:]):
        if 1 < b - a <= gap + 1:
            on[a:b] = True
    # A jump no planted foot makes (a loop's or an NLA repeat's seam snapping the clip back) ends a contact,
    # though the frames either side of it are slow.
    jump = np.concatenate([step > SEAM_SPEED * leg, [False]])
    out, start = [], None
    for i, v in enumerate(list(on) + [False]):
        if v and start is None:
            start = i
        elif start is not None and (not v or jump[i - 1]):
            if i - start >= MIN_CONTACT_FRAMES:
                out.append((start, i - 1))
            start = i if v else None
    return out


def contact_drift(ball: np.ndarray, a: int, b: int) -> np.ndarray:
    """The ball's horizontal drift on each frame of the contact `a`..`b` from where it was on frame `a` (the
    skate figure), in the ball's units."""
    return np.linalg.norm(ball[a:b + 1, :2] - ball[a, :2], axis=1)


def _depth(points: np.ndarray, ground: Any) -> np.ndarray:
    """How far each point is below the ground under it (0 above; nan where there is no ground)."""
    h = ground.heights(points)
    return np.maximum(0.0, h - points[..., 2])


def _nanmax(a: np.ndarray) -> float:
    a = np.asarray(a, dtype=float)
    return float(np.nanmax(a)) if a.size and np.isfinite(a).any() else 0.0


@dataclass
class FootQuality:
    """Independent figures for one foot; lengths as fractions of the leg (`_rel`) unless named `_mm`."""

    limb: str
    leg_length: float
    source_contacts: int
    penetration_skeleton_rel: float  # beyond the source's own dip below its floor
    penetration_mesh_rel: Optional[float]  # None: no mesh bound to the foot
    hover_max_rel: float
    source_hover_max_rel: float  # the source's own, on its floor, over the same contacts
    skate_max_rel: float
    skate_max_mm: float  # at human scale (a 0.9 m leg)
    source_skate_max_rel: float
    knee_velocity_max: float
    knee_velocity_source: float
    knee_acceleration_max: float
    knee_acceleration_source: float
    hip_velocity_max: float
    hip_velocity_source: float
    hip_acceleration_max: float
    hip_acceleration_source: float
    identity_max_rel: float  # largest move of a sole point from the source's (outside source penetration)
    # Where the worst hover and skate are, against what the model held there (`held_frames`), to say what kind
    # of failure a miss is; not used by any figure above. The frame (index into the measured frames) of the
    # worst hover, -1 for none; what the model held on it ("", "outside", "contact", "ball"); the share of the
    # worst-skating source contact's frames the model held the foot on (nan: not known).
    hover_frame: int = -1
    hover_held: str = ""
    skate_held_share: float = math.nan
    # The source's own hover on the frames the identity judges: the lower of its ball and toe tip (the sole
    # points the identity holds) over its floor, inside its contacts, at most (0: no such frame). Over
    # HOVER + IDENTITY (1.5% of the leg), the two targets contradict each other on flat ground at the source's
    # floor: hover <= 1% moves the ball or toe tip more than the identity's 0.5% (only a heel lowered alone, the
    # foot turned heel-down about its ball, could reach the ground there).
    source_hover_judged_rel: float = 0.0
    # Where the pop is: the frame (index into the measured frames, the one the step ends on) of the knee's or
    # the hip's peak speed, whichever is the larger over the source's (-1: none), and what lies there
    # (`pop_place`): the range's first or last POP_EDGE seconds, a landing or a lift-off of the model's (within
    # POP_NEAR seconds of one), or else what the model holds ("outside": a swing); "" where nothing is known.
    pop_frame: int = -1
    pop_where: str = ""
    # Hover over the source's own: inside the source's contacts, frame by frame, how much higher our lowest sole
    # point is over the terrain than the source's is over its floor (on it, where the source is under it), at
    # most (0: never higher). A figure for the report, not a target: it tells a foot the model lifts from one the
    # capture itself holds up (a contact the independent detector finds with the ball or toe tip up to
    # CONTACT_HEIGHT over the floor).
    hover_over_source_rel: float = 0.0
    # How long (seconds) the source contact holding the worst hover frame is (nan: no hover measured), and the
    # hover over the source contacts at least BRIEF_CONTACT long alone (0: none). Figures for the report, not
    # targets: they tell how much of the hover missed lies in brief source contacts.
    hover_contact_s: float = math.nan
    hover_lasting_rel: float = 0.0
    # The frame (index into the measured frames) of the identity's largest move (-1: no frame judged), and what
    # the model held on it (as `hover_held`): a figure for the report, to say where a foot moved from the
    # source's on flat ground.
    identity_frame: int = -1
    identity_held: str = ""
    # Standing straight: over the source contacts' frames where the source's knee is bent less than
    # STRAIGHT_KNEE degrees, the most our knee is bent beyond it (degrees, 0: none such), and the two bends on
    # that frame. A figure for the report and the Leg Stretch note (`notes`), not a target.
    straight_knee_extra_deg: float = 0.0
    straight_knee_deg: float = 0.0
    straight_knee_source_deg: float = 0.0

    @property
    def penetration_rel(self) -> float:
        return max(self.penetration_skeleton_rel, self.penetration_mesh_rel or 0.0)

    @property
    def knee_ratio(self) -> float:
        return self.knee_velocity_max / self.knee_velocity_source if self.knee_velocity_source else 0.0

    @property
    def hip_ratio(self) -> float:
        return self.hip_velocity_max / self.hip_velocity_source if self.hip_velocity_source else 0.0

    @property
    def knee_acceleration_ratio(self) -> float:
        """The knee's peak angular acceleration over the source's (reported beside the speed; not a target)."""
        return self.knee_acceleration_max / self.knee_acceleration_source if self.knee_acceleration_source else 0.0

    @property
    def hip_acceleration_ratio(self) -> float:
        return self.hip_acceleration_max / self.hip_acceleration_source if self.hip_acceleration_source else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d.update(penetration_rel=self.penetration_rel, knee_ratio=self.knee_ratio, hip_ratio=self.hip_ratio,
                 knee_acceleration_ratio=self.knee_acceleration_ratio,
                 hip_acceleration_ratio=self.hip_acceleration_ratio)
        return d


HELD_KINDS = ("outside", "contact", "ball")  # `held_frames`: 0, 1, 2
POP_EDGE = 0.15  # s: a pop this near the range's first or last frame is placed there (a report, not tuned)
POP_NEAR = 0.1  # s: ... or this near a landing or a lift-off of the model's


def pop_place(frame: int, count: int, fps: float, state: Optional[np.ndarray] = None) -> str:
    """Where a pop on `frame` (of `count` measured frames) lies: "range start" or "range end" (within
    POP_EDGE seconds), "landing" or "lift-off" (within POP_NEAR seconds of the model starting or ending a hold
    of the foot, the nearer), else what the model holds there (`HELD_KINDS`); "" without `state` (`held_frames`)
    outside the range's ends."""
    if frame < 0:
        return ""
    edge = POP_EDGE * fps
    if frame <= edge:
        return "range start"
    if count - 1 - frame <= edge:
        return "range end"
    if state is None:
        return ""
    held = np.asarray(state) > 0
    change = np.flatnonzero(held[1:] != held[:-1]) + 1  # the first frame after each change
    if len(change):
        j = int(change[np.argmin(np.abs(change - frame))])
        if abs(j - frame) <= POP_NEAR * fps:
            return "landing" if held[j] else "lift-off"
    return HELD_KINDS[int(state[frame])]


def held_frames(obj: bpy.types.Object, frames: Sequence[int], fps: float) -> dict[str, np.ndarray]:
    """Per foot limb (by name), what the model holds on each of `frames`, from its own lock track
    (`contacts.locks_over`, as the plan reads it): 0 nothing (a swing, a source contact it found none for, or
    locking off), 1 a contact (its ankle held), 2 its ball held (toe-off, a turn on the ball). Read only to
    say where a miss lies, never for a figure."""
    from .contacts import locks_over
    from .rig import settings

    if not len(frames):
        return {}
    out = {}
    for lb in settings(obj).limbs:
        if lb.kind == "FOOT":
            track = locks_over(lb, float(frames[0]), len(frames), fps)
            out[lb.name] = ((track.weight > 0.0).astype(np.int8) + (track.ball > 0.0)).astype(np.int8)
    return out


# A knee the source bends less than this (degrees) stands straight (`FootQuality.straight_knee_extra_deg`).
STRAIGHT_KNEE = 15.0


def knee_bends(knee: Sequence[Any]) -> np.ndarray:
    """Per frame, how far the knee is bent (degrees, 0-180): the turn of the shin's axis (its local Y) from the
    thigh's, from `Samples.knee` (the shin's rotation in the thigh's frame), its twist about that axis left out,
    a quaternion and its negation alike."""
    if not len(knee):
        return np.zeros(0)
    q = np.array([tuple(k) for k in knee], dtype=np.float64)
    cos = 1.0 - 2.0 * (q[:, 1] ** 2 + q[:, 3] ** 2)  # the Y axis turned by q, along Y
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))  # type: ignore[no-any-return]


def _straight_knee(ours: Sequence[Any], source: Sequence[Any], contacts: Sequence[tuple[int, int]]) -> tuple[float, float, float]:
    """`FootQuality.straight_knee_*`: (most bent beyond the source's, ours, the source's) in degrees over the
    source `contacts`' frames where the source's knee stands straight (STRAIGHT_KNEE); zeros for none."""
    bend, sbend = knee_bends(ours), knee_bends(source)
    if len(bend) != len(sbend) or not len(bend):
        return 0.0, 0.0, 0.0
    judged = np.zeros(len(bend), dtype=bool)
    for a, b in contacts:
        judged[a:b + 1] = True
    judged &= sbend < STRAIGHT_KNEE
    if not judged.any():
        return 0.0, 0.0, 0.0
    k = int(np.argmax(np.where(judged, bend - sbend, -np.inf)))
    return max(0.0, float(bend[k] - sbend[k])), float(bend[k]), float(sbend[k])


def compare(source: dict[str, Samples], ours: dict[str, Samples], legs: dict[str, float], ground: Any,
            fps: float, held: Optional[dict[str, np.ndarray]] = None) -> list[FootQuality]:
    """The independent figures of `ours` on `ground`, against the source's own on its floor; with `held`
    (`held_frames`), where the worst hover and skate lie against what the model held."""
    floor = Plane(source_floor(source))
    out = []
    # Steps where the source itself cuts (every foot jumps at once: an NLA repeat's or a loop's seam snapping
    # the clip back): the whole body jumps there, in the source as in ours, so no pop is counted on them.
    cut: Optional[np.ndarray] = None
    for name, src in source.items():
        leg = legs[name]
        if len(src.ball) > 1 and math.isfinite(leg) and leg > 0.0:
            jumped = np.linalg.norm(np.diff(src.ball, axis=0), axis=1) * fps > CUT_SPEED * leg
            cut = jumped if cut is None else cut & jumped
    for name, src in source.items():
        got, leg = ours[name], legs[name]
        if not (math.isfinite(leg) and leg > 0.0):
            continue  # a degenerate (zero or non-finite) scale: nothing to measure against
        contacts = source_contacts(src, floor.z, leg, fps)
        src_dip = _depth(src.skeleton(), floor).max(axis=0)  # per sole point, over the clip
        pen = np.maximum(0.0, np.nan_to_num(_depth(got.skeleton(), ground), nan=0.0).max(axis=0) - src_dip).max()
        pen_mesh = None
        # Hover: the lowest sole point over the terrain (nan where there is none), every sole point: the
        # skeleton's heel, ball and toe tip, and the bound mesh's sole where there is one.
        heights = got.sole()[..., 2] - ground.heights(got.sole())
        src_heights = src.sole()[..., 2].min(axis=1) - floor.z
        if got.mesh is not None and src.mesh is not None:
            src_mesh_dip = _depth(src.mesh, floor).max()
            mesh_heights = got.mesh[..., 2] - ground.heights(got.mesh)
            pen_mesh = max(0.0, _nanmax(np.maximum(0.0, -mesh_heights)) - src_mesh_dip) / leg
            heights = np.concatenate([heights, mesh_heights], axis=1)
            src_heights = np.minimum(src_heights, src.mesh[..., 2].min(axis=1) - floor.z)
        hover, src_hover, skate, src_skate = 0.0, 0.0, 0.0, 0.0
        state = held.get(name) if held is not None else None
        hover_frame, hover_held, skate_share = -1, "", math.nan
        over_source, hover_contact, lasting = 0.0, math.nan, 0.0
        for a, b in contacts:
            low = np.where(np.isnan(heights[a:b + 1]), np.inf, heights[a:b + 1]).min(axis=1)  # nan: no terrain
            low = np.where(np.isfinite(low), low, np.nan)
            # (the source's under its floor counts as on it: ours is never under the terrain)
            over_source = max(over_source, _nanmax(low - np.maximum(src_heights[a:b + 1], 0.0)))
            h, span = _nanmax(low), (b - a + 1) / fps
            if span >= BRIEF_CONTACT:
                lasting = max(lasting, h)
            if h > hover:
                hover, hover_frame, hover_contact = h, a + int(np.nanargmax(low)), span
                hover_held = HELD_KINDS[int(state[hover_frame])] if state is not None else ""
            src_hover = max(src_hover, float(src_heights[a:b + 1].max()))
            drift = float(contact_drift(got.ball, a, b).max())
            if drift > skate:
                skate = drift
                skate_share = float((state[a:b + 1] > 0).mean()) if state is not None else math.nan
            src_skate = max(src_skate, float(contact_drift(src.ball, a, b).max()))
        # The identity is judged outside frames where the source goes below its floor or skates: in a
        # source contact, once its ball has drifted IDENTITY_TOLERANCE from where the contact began.
        excluded = (_depth(src.skeleton(), floor) > IDENTITY_TOLERANCE * leg).any(axis=1)
        for a, b in contacts:
            excluded[a:b + 1] |= contact_drift(src.ball, a, b) > IDENTITY_TOLERANCE * leg
        moved = np.linalg.norm(got.skeleton() - src.skeleton(), axis=2).max(axis=1)
        straight = _straight_knee(got.knee, src.knee, contacts)
        identity, identity_frame, identity_held = 0.0, -1, ""
        if (~excluded).any():
            identity_frame = int(np.argmax(np.where(excluded, -np.inf, moved)))
            identity = float(moved[identity_frame])
            identity_held = HELD_KINDS[int(state[identity_frame])] if state is not None else ""
        src_low = src.skeleton()[..., 2].min(axis=1) - floor.z  # the lower of the ball and the toe tip
        judged_hover = max((float(src_low[a:b + 1][~excluded[a:b + 1]].max()) for a, b in contacts
                            if (~excluded[a:b + 1]).any()), default=0.0)
        kv, ka, knee_at = angular_peaks_at(got.knee, fps, cut)
        skv, ska = angular_peaks(src.knee, fps, cut)
        hv, ha, hip_at = angular_peaks_at(got.hip, fps, cut)
        shv, sha = angular_peaks(src.hip, fps, cut)
        pop_frame = knee_at if (kv / skv if skv else 0.0) >= (hv / shv if shv else 0.0) else hip_at
        pop_where = pop_place(pop_frame, len(got.ball), fps, state)
        out.append(FootQuality(name, leg, len(contacts), float(pen) / leg, pen_mesh, max(0.0, hover) / leg,
                               src_hover / leg, skate / leg, skate / leg * HUMAN_LEG_MM, src_skate / leg, kv, skv, ka,
                               ska, hv, shv, ha, sha, identity / leg, hover_frame, hover_held, skate_share,
                               max(0.0, judged_hover) / leg, pop_frame, pop_where, max(0.0, over_source) / leg,
                               hover_contact, max(0.0, lasting) / leg, identity_frame, identity_held, *straight))
    return out


def measure(obj: bpy.types.Object, terrain_objects: Sequence[bpy.types.Object], frames: Sequence[int],
            scene: bpy.types.Scene, feet: Optional[Sequence[Foot]] = None) -> list[FootQuality]:
    """The independent figures of `obj` as it plays now (a bake or live preview) over `frames`, on the
    terrain made of `terrain_objects`, against its source animation. `feet`: the bones to measure (the
    deform bones of a control rig), else the legs of the rig's settings."""
    feet = list(feet) if feet is not None else feet_of(obj)
    if not feet:
        return []
    ground = Ground(terrain_objects, bpy.context.evaluated_depsgraph_get())
    ours = sample(obj, feet, frames, scene)
    with playing_source(obj, scene):
        source = sample(obj, feet, frames, scene)
    scene.frame_set(scene.frame_current)
    fps = fps_of(scene)
    return compare(source, ours, {f.name: leg_length(obj, f) for f in feet}, ground, fps, held_frames(obj, frames, fps))



# A foot this far under the terrain (x leg, measured here) is a warning, and the CLI's exit code 3.
UNDER_TERRAIN = 0.01


def warnings(obj: bpy.types.Object, found: Sequence[FootQuality]) -> list[str]:
    """What a user must know about a run: no legs planted, a foot that found no contact, a foot left under
    the terrain (`found`: this module's figures). The CLI exits with 3 for any of them."""
    from .rig import settings

    limbs = [lb for lb in settings(obj).limbs if lb.enabled]
    feet = [lb for lb in limbs if lb.kind == "FOOT"]
    out = []
    if not feet:
        names = ", ".join(lb.name for lb in limbs) or "none"
        out.append(f"no legs were planted (limbs: {names}): Contact IK found no thigh > shin > foot chain in "
                   f"{obj.name!r}; set the legs in the Limbs panel, or check that each foot bone is parented to its shin")
    for lb in feet:
        if not lb.contacts:
            out.append(f"{lb.name}: no foot contact was found, so the foot is not held anywhere (the clip may be "
                       "all in the air, or its stances shorter than the detector's)")
    for q in found:
        if q.penetration_rel > UNDER_TERRAIN:
            where = "skinned mesh" if (q.penetration_mesh_rel or 0.0) > q.penetration_skeleton_rel else "ball or toe tip"
            out.append(f"{q.limb}: its {where} goes {q.penetration_rel:.2%} of the leg under the terrain "
                       "(measured independently of the plan, beyond the source's own dip below its floor)")
    return out


# A standing knee bent this much (degrees) more than the source's, held at Leg Stretch's bend, gets a note
# (`stance_notes`; a message, not tuned).
BEND_NOTE = 12.0


def stance_notes(obj: bpy.types.Object, found: Sequence[FootQuality]) -> list[str]:
    """What a user should know about a run without it being a warning (the CLI's exit code stays): a leg the
    animation holds straight on the ground that comes back bent more than BEND_NOTE degrees beyond it, at
    about the bend Leg Stretch allows a leg on the ground (`reach_drop`), with how to keep it straighter."""
    from .rig import leg_stretch, settings

    margin = leg_stretch(obj)
    if not settings(obj).body_follow or not margin < 1.0:
        return []
    feet = {f.name: f for f in feet_of(obj)}
    out = []
    for q in found:
        f = feet.get(q.limb)
        if f is None or q.straight_knee_extra_deg <= BEND_NOTE:
            continue
        hip, knee, ankle = (obj.data.bones[n].head_local for n in (f.thigh, f.shin, f.foot))
        a, b = (knee - hip).length, (ankle - knee).length
        if a <= 0.0 or b <= 0.0:
            continue
        reach = margin * (a + b)
        at_limit = 180.0 - math.degrees(math.acos(max(-1.0, min(1.0, (a * a + b * b - reach * reach) / (2.0 * a * b)))))
        if q.straight_knee_deg < at_limit - 3.0:
            continue  # bent by something else (the ground it stands on), not held at the limit
        out.append(f"{q.limb}: standing on the ground, its knee is bent {q.straight_knee_deg:.0f} degrees where the "
                   f"animation has {q.straight_knee_source_deg:.0f}: no leg on the ground is straighter than Leg "
                   f"Stretch ({margin:g} of the leg, the knee bent about {at_limit:.0f} degrees), so the pelvis comes "
                   "down instead. To keep a straight-legged stance straighter, raise Leg Stretch toward 1.0 (in the "
                   "Contact IK panel, under Body Follows Ground; --leg-stretch on the command line), at the cost of "
                   "knee pops on walks over uneven ground")
    return out


def summary(objs: Sequence[bpy.types.Object], scene: bpy.types.Scene, frames: Sequence[int]) -> tuple[str, list[str]]:
    """Plant Feet's and Bake's figures, as the rigs play now, measured here (not the model's own): 'worst
    under the terrain 0.12% of the leg (1.1 mm, skinned mesh), worst skate 0.06% and hover 0.30% of the leg over 8
    source contacts (hover 0.10% above the source's own there), knee and hip peak speed 1.05x the source's', or
    '' when no rig has feet on a terrain; and every rig's `warnings` and `stance_notes`."""
    from .ground import terrain_objects
    from .metrics import length_text
    from .rig import settings

    found: list[FootQuality] = []
    notes: list[str] = []
    for obj in objs:
        terrain = terrain_objects(settings(obj))
        try:
            mine = measure(obj, terrain, frames, scene) if terrain else []
        except Exception as exc:  # noqa: BLE001  the run itself is done: say it could not be measured
            mine = []
            notes.append(f"{obj.name}: the result could not be measured ({type(exc).__name__}: {exc}); check it by eye")
        found += mine
        said = warnings(obj, mine) + stance_notes(obj, mine)
        notes += [f"{obj.name}: {w}" if len(objs) > 1 else w for w in said]
    if not found:
        return "", notes
    worst = max(found, key=lambda q: q.penetration_rel)
    where = "skinned mesh" if (worst.penetration_mesh_rel or 0.0) > worst.penetration_skeleton_rel else "skeleton"
    skate = max(q.skate_max_rel for q in found)
    hover = max(q.hover_max_rel for q in found)
    over = max(q.hover_over_source_rel for q in found)
    pops = max(max(q.knee_ratio, q.hip_ratio) for q in found)
    text = (f"worst under the terrain {worst.penetration_rel:.2%} of the leg "
            f"({length_text(scene, worst.penetration_rel * worst.leg_length)}, {where}), worst skate {skate:.2%} and "
            f"hover {hover:.2%} of the leg over {sum(q.source_contacts for q in found)} source contacts (hover "
            f"{over:.2%} above the source's own there), knee and hip peak speed {pops:.2f}x the source's (measured as "
            "the rig plays, beside its source)")
    return text, notes
