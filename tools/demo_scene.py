"""The demo's scene, authored in code: a terrain (flat ground, a staircase, a landing and an uneven rocky
slope), the Rigify human metarig with a simple skinned body, and a walk cycle keyed on its bones.

The walk is a plain flat-ground walk (the character knows nothing of the terrain): the hips travel
forward with a bob, each foot is planted flat for the stance and swings in an arc, the legs are posed
with a small two-bone solve of this module's own, the arms swing against the legs. Everything is in
metres; the metarig faces -Y, so the character walks along -Y. No Contact IK code is used here.
"""

from __future__ import annotations

import math

import bmesh
import bpy
import bpy_kit
import numpy as np
from mathutils import Matrix, Quaternion, Vector

FPS = 24
CYCLE = 30  # frames per stride (two steps)
STEP = 0.55  # metres per step
SPEED = 2 * STEP / CYCLE  # metres per frame
STANCE = 0.6  # fraction of the cycle a foot is down
LIFT = 0.12  # swing height of the source walk, metres
HIP_DROP, BOB = 0.05, 0.018  # the hips sit a little lower than at rest, and bob twice per stride

# Terrain along the walk (s = distance ahead of the start, metres = -y).
FIRST_RISER = 1.209  # puts every planted foot in the middle of a tread (treads are one step long)
RISER, STEPS = 0.14, 5
LANDING_END = FIRST_RISER + STEPS * STEP + 0.7
SLOPE_END = LANDING_END + 3.0
SLOPE_LOW = 0.2  # height at the bottom of the rocky slope
HALF_WIDTH = 1.0  # the terrain's half width across the walk

LEGS = {"L": ("thigh.L", "shin.L", "foot.L", "toe.L"), "R": ("thigh.R", "shin.R", "foot.R", "toe.R")}
ARMS = {"L": ("upper_arm.L", "forearm.L"), "R": ("upper_arm.R", "forearm.R")}
PHASE = {"L": 0.0, "R": 0.5}
NEAR = "R"  # the side that faces the camera (the camera looks along +X)


# --------------------------------------------------------------------------------------------- terrain


def _rocks(seed: int = 7) -> np.ndarray:
    """Rocks on the slope: (x, s, height, radius) rows."""
    rng = np.random.default_rng(seed)
    n = 28
    xs = rng.uniform(-0.8, 0.8, n)
    ss = rng.uniform(LANDING_END + 0.15, SLOPE_END + 1.0, n)
    hs = rng.uniform(0.05, 0.13, n)
    rs = rng.uniform(0.12, 0.3, n)
    # A few rocks on the walking line, so that feet land on them.
    line = np.array([[-0.1, LANDING_END + 0.75, 0.12, 0.22], [0.12, LANDING_END + 1.45, 0.1, 0.25],
                     [-0.12, LANDING_END + 2.1, 0.13, 0.2], [0.08, LANDING_END + 2.7, 0.1, 0.24]])
    return np.vstack((np.column_stack((xs, ss, hs, rs)), line))


ROCKS = _rocks()


def ground_height(x: np.ndarray | float, s: np.ndarray | float) -> np.ndarray:
    """Terrain height at (x, s); risers are vertical (a point on one takes the lower tread)."""
    x = np.asarray(x, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    steps = np.clip(np.floor((s - FIRST_RISER) / STEP) + 1, 0, STEPS)
    z = steps * RISER
    top = STEPS * RISER
    on_slope = s >= LANDING_END
    u = np.clip((s - LANDING_END) / (SLOPE_END - LANDING_END), 0.0, 1.0)
    slope = top + (SLOPE_LOW - top) * (0.5 - 0.5 * np.cos(math.pi * u))
    rocks = np.zeros(np.broadcast(x, s).shape)
    for rx, rs, rh, rr in ROCKS:
        d2 = ((x - rx) ** 2 + (s - rs) ** 2) / (rr * rr)
        # A rounded, flat-topped boulder: steep sides, not a smooth hill.
        rocks = np.maximum(rocks, rh * np.clip(1.2 - d2 ** 1.5, 0.0, 1.0) / 1.2)
    # Small faceted unevenness everywhere on the slope.
    bumps = 0.025 * (np.sin(7.3 * x + 2.1 * s) * np.cos(5.1 * s - 1.3 * x) + 0.5 * np.sin(13.7 * s + 3.3 * x))
    return np.where(on_slope, slope + rocks + bumps * np.clip(u * 8.0, 0.0, 1.0), z)


def _rows(s_from: float, s_to: float) -> list[tuple[float, int]]:
    """The terrain's rows along the walk: (s, tread index or -1); a riser is two rows at the same s."""
    rows: list[tuple[float, int]] = []
    s = s_from
    while s < FIRST_RISER:
        rows.append((s, 0))
        s += 0.25
    for i in range(STEPS):
        edge = FIRST_RISER + i * STEP
        rows += [(edge, i), (edge, i + 1)]
    s = FIRST_RISER + (STEPS - 1) * STEP + 0.1
    while s < LANDING_END:
        rows.append((s, STEPS))
        s += 0.2
    s = LANDING_END
    while s <= s_to:
        rows.append((s, -1))
        s += 0.05
    return rows


def terrain_mesh(name: str, x_from: float = -HALF_WIDTH, x_to: float = HALF_WIDTH, s_from: float = -2.0,
                 s_to: float = SLOPE_END + 3.0, thickness: float = 0.75) -> bpy.types.Object:
    """A solid slab whose top is the terrain, between x_from and x_to. With x_from through the character
    the slab is a cutaway: its side face is the terrain's profile there, in front of which the near leg
    is seen whole."""
    rows = _rows(s_from, s_to)
    cols = np.linspace(x_from, x_to, max(2, int(round((x_to - x_from) / 0.05)) + 1))
    bm = bmesh.new()
    grid = []
    bottoms = []
    for s, tread in rows:
        zs = np.full(len(cols), tread * RISER) if tread >= 0 else ground_height(cols, np.full(len(cols), s))
        grid.append([bm.verts.new((float(x), -s, float(z))) for x, z in zip(cols, zs)])
        bottoms.append(float(zs.min()) - thickness)
    mats = []
    for r in range(len(rows) - 1):
        for c in range(len(cols) - 1):
            f = bm.faces.new((grid[r][c], grid[r][c + 1], grid[r + 1][c + 1], grid[r + 1][c]))
            mats.append((f, 0 if rows[r][1] >= 0 and rows[r + 1][1] >= 0 else 1))
    # Walls: both sides, both ends, down to a base that follows the terrain.
    base = [(bm.verts.new((cols[0], -s, b)), bm.verts.new((cols[-1], -s, b))) for (s, _t), b in zip(rows, bottoms)]
    for r in range(len(rows) - 1):
        mats.append((bm.faces.new((grid[r][0], grid[r + 1][0], base[r + 1][0], base[r][0])), 2))
        mats.append((bm.faces.new((grid[r + 1][-1], grid[r][-1], base[r][1], base[r + 1][1])), 2))
        mats.append((bm.faces.new((base[r][0], base[r + 1][0], base[r + 1][1], base[r][1])), 2))
    for r, flip in ((0, False), (len(rows) - 1, True)):
        ring = [*grid[r], base[r][1], base[r][0]]
        mats.append((bm.faces.new(ring[::-1] if flip else ring), 2))
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces)
    for f, m in mats:
        f.material_index = m
    obj = bpy_kit.mesh_object(name, bm)
    for mat in (_material("Stairs", (0.8, 0.76, 0.68)), _material("Rock", (0.58, 0.5, 0.4)),
                _material("Cut", (0.3, 0.28, 0.27))):
        obj.data.materials.append(mat)
    return obj


def _material(name: str, rgb: tuple[float, float, float]) -> bpy.types.Material:
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    mat.diffuse_color = (*rgb, 1.0)
    return mat


# --------------------------------------------------------------------------------------------- character


metarig = bpy_kit.metarig


# bone: (radius across, radius across the other way, colour); ellipsoids along each bone.
_SKIN, _SKIN_FAR = (0.78, 0.8, 0.86), (0.6, 0.62, 0.68)
_PARTS = {
    "spine": (0.15, 0.1, _SKIN), "spine.001": (0.14, 0.1, _SKIN), "spine.002": (0.15, 0.1, _SKIN),
    "spine.003": (0.16, 0.11, _SKIN), "spine.004": (0.05, 0.05, _SKIN), "spine.005": (0.05, 0.05, _SKIN),
    "spine.006": (0.1, 0.11, _SKIN),
    "shoulder.L": (0.05, 0.05, _SKIN), "shoulder.R": (0.05, 0.05, _SKIN),
    "upper_arm.L": (0.045, 0.045, _SKIN_FAR), "forearm.L": (0.038, 0.038, _SKIN_FAR), "hand.L": (0.03, 0.045, _SKIN_FAR),
    "upper_arm.R": (0.045, 0.045, _SKIN), "forearm.R": (0.038, 0.038, _SKIN), "hand.R": (0.03, 0.045, _SKIN),
    "thigh.L": (0.075, 0.075, (0.55, 0.33, 0.12)), "shin.L": (0.055, 0.055, (0.55, 0.33, 0.12)),
    "thigh.R": (0.075, 0.075, (0.95, 0.55, 0.15)), "shin.R": (0.055, 0.055, (0.95, 0.55, 0.15)),
}
_FEET = {"L": (0.55, 0.08, 0.08), "R": (0.9, 0.12, 0.1)}


def sole_height_at_rest(obj: bpy.types.Object, side: str) -> float:
    """The sole's height at rest: the lowest of the foot's tail and the toe (the metarig's 1.7 cm)."""
    bones = obj.data.bones
    _t, _s, foot, toe = LEGS[side]
    return min(bones[foot].tail_local.z, bones[toe].head_local.z, bones[toe].tail_local.z)


def add_body(obj: bpy.types.Object) -> bpy.types.Object:
    """One mesh skinned to the rig with rigid weights: an ellipsoid per bone and a box per foot and toe,
    the soles flat at the rest pose's sole height (where Contact IK puts the sole)."""
    bones = obj.data.bones
    bm = bmesh.new()
    deform = bm.verts.layers.deform.verify()
    groups: list[str] = []
    colours: list[tuple[float, float, float]] = []

    def add(verts: list[bmesh.types.BMVert], bone: str, rgb: tuple[float, float, float]) -> None:
        if bone not in groups:
            groups.append(bone)
        if rgb not in colours:
            colours.append(rgb)
        for v in verts:
            v[deform][groups.index(bone)] = 1.0
            for f in v.link_faces:
                f.material_index = colours.index(rgb)

    for name, (rx, rz, rgb) in _PARTS.items():
        b = bones[name]
        half = b.length / 2
        m = b.matrix_local @ Matrix.Translation((0.0, half, 0.0)) @ Matrix.Diagonal((rx, half * 1.12, rz, 1.0))
        if name == "spine.006":  # the head: a sphere over the head bone
            m = b.matrix_local @ Matrix.Translation((0.0, half * 0.8, -0.01)) @ Matrix.Diagonal((rx, rx * 1.25, rz, 1.0))
        geom = bmesh.ops.create_uvsphere(bm, u_segments=14, v_segments=8, radius=1.0, matrix=m)
        add(geom["verts"], name, rgb)
    for side, rgb in _FEET.items():
        _t, _s, foot, toe = LEGS[side]
        sole = sole_height_at_rest(obj, side)
        fb, tb = bones[foot], bones[toe]
        x = fb.head_local.x
        heel_y, ball_y, tip_y = fb.head_local.y + 0.035, tb.head_local.y, tb.tail_local.y
        for bone, (y0, y1, top) in ((foot, (heel_y, ball_y, fb.head_local.z + 0.015)), (toe, (ball_y, tip_y, sole + 0.045))):
            centre = Vector((x, (y0 + y1) / 2, (sole + top) / 2))
            m = Matrix.Translation(centre) @ Matrix.Diagonal((0.095, abs(y1 - y0), top - sole, 1.0))
            geom = bmesh.ops.create_cube(bm, size=1.0, matrix=m)
            add(geom["verts"], bone, rgb)
    me = bpy.data.meshes.new("Body")
    bm.to_mesh(me)
    bm.free()
    for i, rgb in enumerate(colours):
        me.materials.append(_material(f"Body {i}", rgb))
    for p in me.polygons:
        p.use_smooth = True
    body = bpy.data.objects.new("Body", me)
    bpy.context.scene.collection.objects.link(body)
    for name in groups:
        body.vertex_groups.new(name=name)
    mod = body.modifiers.new("Armature", "ARMATURE")
    mod.object = obj
    body.parent = obj
    return body


# --------------------------------------------------------------------------------------------- the walk


class Walk:
    """The walk's timing and paths, as functions of the frame (1-based)."""

    def body_s(self, f: float) -> float:
        return SPEED * (f - 1)

    def foot(self, side: str, f: float) -> tuple[float, float]:
        """Forward offset of the ankle from its rest place (metres along the walk) and its lift."""
        t = (f - 1) / CYCLE + PHASE[side]
        n, u = math.floor(t), t - math.floor(t)
        plant = SPEED * CYCLE * (n + 0.3 - PHASE[side])  # where the body is at mid-stance
        if u < STANCE:
            return plant, 0.0
        w = (u - STANCE) / (1.0 - STANCE)
        return plant + SPEED * CYCLE * (0.5 - 0.5 * math.cos(math.pi * w)), LIFT * math.sin(math.pi * w) ** 1.3

    def bob(self, f: float) -> float:
        u = ((f - 1) / CYCLE) % 1.0
        return -HIP_DROP + BOB * math.cos(2 * math.pi * (2 * u - 0.6))

    def arm_swing(self, side: str, f: float) -> float:
        u = ((f - 1) / CYCLE + PHASE[side]) % 1.0
        return math.radians(22.0) * math.cos(2 * math.pi * (u - 0.5))


def _knee(hip: Vector, ankle: Vector, a: float, b: float, forward: Vector) -> Vector:
    d_vec = ankle - hip
    d = min(d_vec.length, (a + b) * 0.999)
    axis = d_vec.normalized()
    x = (a * a - b * b + d * d) / (2 * d)
    h = math.sqrt(max(0.0, a * a - x * x))
    pole = (forward - axis * forward.dot(axis)).normalized()
    return hip + axis * x + pole * h


def _aim(pb: bpy.types.PoseBone, head: Vector, direction: Vector) -> None:
    """Turn the pose bone (its parent already posed) so its Y axis points along `direction`."""
    m = pb.matrix.copy()
    rot = m.to_3x3().normalized()
    turn = Vector(rot.col[1]).rotation_difference(direction.normalized())
    pb.matrix = Matrix.Translation(head) @ (turn.to_matrix() @ rot).to_4x4()


def author_walk(obj: bpy.types.Object, frames: int) -> Walk:
    """Key the walk on the metarig: hips (location), legs, feet and arms (quaternions), one key per frame."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, frames
    walk = Walk()
    pb = obj.pose.bones
    bones = obj.data.bones
    keyed = [n for side in "LR" for n in (*LEGS[side][:3], *ARMS[side])]
    for n in keyed:
        pb[n].rotation_mode = "QUATERNION"
    hips = pb["spine"]
    to_hips_local = bones["spine"].matrix_local.to_3x3().inverted()
    forward = Vector((0.0, -1.0, 0.0))
    ankle_rest = {s: bones[LEGS[s][2]].head_local.copy() for s in LEGS}
    lengths = {s: (bones[LEGS[s][0]].length, bones[LEGS[s][1]].length) for s in LEGS}
    flat_foot = {s: bones[LEGS[s][2]].matrix_local.to_3x3() for s in LEGS}
    action = bpy.data.actions.new("Walk")
    obj.animation_data_create().action = action
    layer = bpy.context.view_layer
    for f in range(1, frames + 1):
        for n in keyed:
            pb[n].rotation_quaternion = Quaternion()
        hips.location = to_hips_local @ Vector((0.0, -walk.body_s(f), walk.bob(f)))
        layer.update()
        knees, ankles = {}, {}
        for side in "LR":
            thigh, shin, foot, _toe = LEGS[side]
            ahead, lift = walk.foot(side, f)
            ankles[side] = ankle_rest[side] + Vector((0.0, -ahead, lift))
            hip = pb[thigh].head.copy()
            knees[side] = _knee(hip, ankles[side], *lengths[side], forward)
            _aim(pb[thigh], hip, knees[side] - hip)
            upper, _fore = ARMS[side]
            swing = walk.arm_swing(side, f)
            out = 0.12 if side == "L" else -0.12
            _aim(pb[upper], pb[upper].head.copy(), Vector((out, -math.sin(swing), -math.cos(swing))))
        layer.update()
        for side in "LR":
            thigh, shin, foot, _toe = LEGS[side]
            _aim(pb[shin], knees[side], ankles[side] - knees[side])
            upper, fore = ARMS[side]
            bend = walk.arm_swing(side, f) + math.radians(25.0)
            out = 0.05 if side == "L" else -0.05
            _aim(pb[fore], pb[fore].head.copy(), Vector((out, -math.sin(bend), -math.cos(bend))))
        layer.update()
        for side in "LR":
            foot = LEGS[side][2]
            pb[foot].matrix = Matrix.Translation(pb[foot].head) @ flat_foot[side].to_4x4()
        for n in keyed:
            pb[n].keyframe_insert("rotation_quaternion", frame=f, group=n)
        hips.keyframe_insert("location", frame=f, group="spine")
    scene.frame_set(1)
    return walk


def build_source(frames: int) -> tuple[bpy.types.Object, bpy.types.Object, bpy.types.Object]:
    """An empty scene with the terrain, the metarig and its body, the walk keyed; (rig, body, terrain)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    terrain = terrain_mesh("Terrain")
    rig = metarig()
    rig.name = "Walker"
    body = add_body(rig)
    author_walk(rig, frames)
    scene.frame_set(1)
    return rig, body, terrain
