"""The foot's sole, from what the rig has: the skinned mesh, else the joints, and only as a last resort an
estimate (said in the report), never from the tail of a bone that ends a chain (importers make those up:
Blender's glTF importer gives leaf bones any length, 100x the foot's in a Mixamo file).

A sole is a few points in the rest pose, each fixed to the foot or the toe bone: heel first, toe tip last
(`model.toe_pitch` reads those two), the sides, the lowest point and the ball between.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from mathutils import Matrix, Vector

from .rig import chain_length, local_up

if TYPE_CHECKING:
    import bpy

# Vertices count as the foot's where the foot and toe bones hold at least this much of their weight.
FOOT_WEIGHT = 0.5
# The sole's band: vertices within this fraction of the ankle's height of the lowest one.
SOLE_BAND = 0.12
# With no toe tip to be had from the rig, the toe reaches this far beyond the ball, as a fraction of the
# ankle-to-ball distance along the ground (a human foot: about 6 cm beyond a 15 cm ankle-to-ball).
TOE_ESTIMATE = 0.4
# A toeless foot bone whose tail hangs under the ankle (Biovision without toes: the end site right under the
# ankle, no reach along the ground) marks the ground with its tail, where it lies no lower than this fraction
# of the leg (thigh and shin) under the ankle (a human ankle joint stands about 0.08 of the leg up).
ANKLE_HEIGHT = 0.15

_memo: dict[tuple[Any, ...], Sole] = {}


@dataclass(frozen=True)
class Sole:
    points: tuple[tuple[str, Vector], ...]  # (bone, point in that bone's rest frame), heel first, toe tip last
    source: str  # where they came from, for the report
    offset: float  # the ankle's height above the lowest sole point at rest, armature units
    # Which of `points` a foot without a toe bone is held by as it rolls or turns on its front (its "ball";
    # with a toe bone, that bone's head): the toe tip, or a toeless foot bone's tail hanging under the ankle,
    # the point that foot meets the ground with.
    ball: int = -1


def bound_meshes(obj: bpy.types.Object) -> list[bpy.types.Object]:
    """The mesh objects an Armature modifier binds to `obj`."""
    import bpy

    return [m for m in bpy.data.objects if m.type == "MESH"
            and any(md.type == "ARMATURE" and md.object == obj for md in m.modifiers)]


def sole_of(obj: bpy.types.Object, foot: str, toe: str, foot_offset: float | None = None,
            meshes: list[bpy.types.Object] | None = None) -> Sole:
    """The sole of the foot bone `foot` (toe bone `toe`, or ''), measured once per rig, mesh and setting.
    `foot_offset`: the user's Sole Height for a sole from the joints (None: measured); `meshes`: the rig's
    `bound_meshes` when already found. A mesh is known by its place relative to the armature, which is all
    the sole depends on: a rig moving through the scene keeps its sole."""
    meshes = bound_meshes(obj) if meshes is None else meshes
    bones = obj.data.bones
    shape = tuple((tuple(c.head_local), tuple(c.tail_local)) for b in (foot, toe) if b in bones
                  for c in (bones[b], *bones[b].children))
    key: tuple[Any, ...] = (obj.name, obj.data.name, foot, toe, foot_offset, tuple(local_up(obj)), shape)
    if meshes:
        # Rounded: the same place relative to the armature comes out a little different as the rig moves.
        to_arm = obj.matrix_world.inverted_safe()
        key += tuple((m.name, m.data.name, len(m.data.vertices),
                      tuple(round(v, 5) for r in to_arm @ m.matrix_world for v in r)) for m in meshes)
    if key not in _memo:
        if len(_memo) > 256:
            _memo.clear()
        _memo[key] = _from_mesh(obj, foot, toe, meshes) or _from_joints(obj, foot, toe, foot_offset)
    return _memo[key]


def _axes(obj: bpy.types.Object, foot: str, toe: str) -> tuple[Vector, Vector, Vector, Vector, Vector | None]:
    """Rest pose, armature space: up, forward (ankle toward the toes, along the ground), side, ankle, ball."""
    bones = obj.data.bones
    up = local_up(obj)
    ankle = bones[foot].head_local.copy()
    ball = bones[toe].head_local.copy() if toe and toe in bones else None
    ahead = (ball if ball is not None else bones[foot].tail_local) - ankle
    forward = ahead - up * ahead.dot(up)
    if forward.length < 1e-9:
        forward = bones[foot].matrix_local.to_3x3() @ Vector((0.0, 1.0, 0.0))
        forward -= up * forward.dot(up)
    forward.normalize()
    side = Vector(up.cross(forward))
    return up, forward, side, ankle, ball


def deform_name(control: str) -> str:
    """The deform bone a Rigify control or original bone moves: foot_fk.L, ORG-foot.L -> DEF-foot.L."""
    return "DEF-" + control.removeprefix("ORG-").replace("_fk", "")


def _local(obj: bpy.types.Object, bone: str, p: Vector) -> tuple[str, Vector]:
    return bone, obj.data.bones[bone].matrix_local.inverted_safe() @ p


def _from_mesh(obj: bpy.types.Object, foot: str, toe: str, meshes: list[bpy.types.Object]) -> Sole | None:
    """The lowest vertices the foot and toe bones carry, in the rest pose: heel, sides, lowest, ball, tip."""
    up, forward, side, ankle, ball = _axes(obj, foot, toe)
    for mesh in meshes:
        groups = {g.name: g.index for g in mesh.vertex_groups}
        # A control rig's mesh is weighted to its deform bones (Rigify: foot_fk.L moves DEF-foot.L).
        gf = groups.get(foot, groups.get(deform_name(foot), -1))
        gt = groups.get(toe, groups.get(deform_name(toe), -2)) if toe else -2
        if gf < 0 and gt < 0:
            continue
        pts, on_toe = [], []
        for v in mesh.data.vertices:
            wf = wt = total = 0.0
            for g in v.groups:
                total += g.weight
                if g.group == gf:
                    wf = g.weight
                elif g.group == gt:
                    wt = g.weight
            if total > 0.0 and wf + wt >= FOOT_WEIGHT * total:
                pts.append(v.co)
                on_toe.append(wt > wf)
        if len(pts) < 3:
            continue
        m = obj.matrix_world.inverted_safe() @ mesh.matrix_world
        arm = np.array([tuple(m @ Vector(p)) for p in pts])
        u: np.ndarray = np.array(tuple(up))
        f: np.ndarray = np.array(tuple(forward))
        s: np.ndarray = np.array(tuple(side))
        h, along, across = arm @ u, arm @ f, arm @ s
        lowest = h.min()
        height = max(float(np.array(tuple(ankle)) @ u - lowest), 1e-9)
        band = np.flatnonzero(h <= lowest + SOLE_BAND * height)
        low = np.flatnonzero(h <= lowest + 2.0 * SOLE_BAND * height)
        picks = [low[np.argmin(along[low])], band[np.argmax(across[band])], band[np.argmin(across[band])],
                 int(np.argmin(h))]
        if ball is not None:
            flat = (arm[band] - np.array(tuple(ball))) @ np.stack((f, s), 1)
            picks.append(band[np.argmin(np.linalg.norm(flat, axis=1))])
        picks.append(low[np.argmax(along[low])])
        seen: list[int] = []
        for k in picks:
            if k not in seen:
                seen.append(int(k))
        points = tuple(_local(obj, toe if on_toe[k] else foot, Vector(arm[k])) for k in seen)
        return Sole(points, f"the skinned mesh {mesh.name!r}", height)
    return None


def _from_joints(obj: bpy.types.Object, foot: str, toe: str, foot_offset: float | None) -> Sole:
    """Heel under the ankle, the ball joint, and the toe tip from the toe's child's head; the toe's (or
    foot's) tail where it is no longer than the foot; else estimated beyond the ball."""
    bones = obj.data.bones
    up, forward, _side, ankle, ball = _axes(obj, foot, toe)
    reach = ((ball if ball is not None else bones[foot].tail_local) - ankle)
    reach_flat = (reach - up * reach.dot(up)).length
    last = bones[toe] if ball is not None else bones[foot]
    children = [c for c in last.children]
    estimated = False
    if len(children) == 1:
        tip = children[0].head_local.copy()
    elif ball is None and last.length <= 2.0 * max(reach_flat, 1e-9):
        tip = last.tail_local.copy()  # no toe: the foot's own tail, where it is no longer than a foot
    elif ball is not None and last.length <= reach.length:
        tip = last.tail_local.copy()
    else:
        base = ball if ball is not None else ankle + forward * reach_flat
        tip, estimated = base + forward * (TOE_ESTIMATE * reach_flat), True
    lows = [tip.dot(up)] + ([ball.dot(up)] if ball is not None else [])
    hangs = False
    if estimated and ball is None:
        # The tail was not taken as the toe tip (it reaches down more than along the ground), but where it
        # hangs under the ankle within an ankle's height it is where the foot meets the ground: the sole's
        # height, though not its length (cmu_10_01's feet went 8% of the leg under the terrain).
        drop = (ankle - last.tail_local).dot(up)
        shin = bones[foot].parent
        thigh = shin.parent if shin is not None else None
        leg = chain_length(obj, [b.name for b in (thigh, shin) if b is not None], foot)
        hangs = 0.0 < drop <= ANKLE_HEIGHT * leg
        if hangs:
            lows.append(last.tail_local.dot(up))
    offset = max(0.0, ankle.dot(up) - min(lows)) if foot_offset is None else foot_offset
    heel = ankle - up * offset
    points = [_local(obj, foot, heel)]
    if ball is not None:
        points.append(_local(obj, toe, ball))
    elif hangs:
        # The hanging tail is what such a foot stands and turns on: held as its ball, so a contact that turns
        # or rolls the foot keeps that point where it is (held by the estimated tip, level with the ankle, the
        # tail swept 2.5-3% of the leg as the foot pitched: cmu_10_01).
        points.append(_local(obj, foot, last.tail_local.copy()))
    points.append(_local(obj, toe if ball is not None else foot, tip))
    source = "the joints" + ("; the toe tip estimated (no toe end bone, and the last bone's tail is longer "
                             "than a foot)" if estimated else "")
    return Sole(tuple(points), source, offset, 1 if hangs else -1)


def ball_world(obj: bpy.types.Object, toe: str, sole: Sole, points: list[Vector], mw: Matrix | None = None) -> Vector:
    """The foot's ball as the pose has it now, world space: the toe bone `toe`'s head, or without one the
    sole's `ball` of its `points` (`sole_world`). What the contacts and the model's own figures hold, as
    `batch` does (`LimbSpec.ball`)."""
    pbs = obj.pose.bones
    if toe in pbs:
        return (obj.matrix_world if mw is None else mw) @ pbs[toe].head
    return points[sole.ball]


def sole_world(obj: bpy.types.Object, sole: Sole, mw: Matrix | None = None) -> list[Vector]:
    """The sole's points in world space, as the pose has them now."""
    mw = obj.matrix_world if mw is None else mw
    pbs = obj.pose.bones
    return [mw @ (pbs[bone].matrix @ p) for bone, p in sole.points]
