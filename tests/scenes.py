"""Scene builders for tests and benchmarks: the Rigify metarig walking, terrains of four kinds.

The walk is authored here in code: the pelvis travels forward with a small bob, each foot is planted
on the floor (z = 0) for the stance and swings in an arc, and the legs are posed with our own two-bone
solver and keyed as ordinary FK rotations.
"""

from __future__ import annotations

import math

import bmesh
import bpy
import bpy_kit  # tools/ (harness, imported first by conftest and benchmarks, puts it on the path)
import harness
from mathutils import Vector

LEGS = {"L": ("thigh.L", "shin.L", "foot.L", "toe.L"), "R": ("thigh.R", "shin.R", "foot.R", "toe.R")}


metarig = bpy_kit.metarig


def leg_length(obj: bpy.types.Object) -> float:
    b = obj.data.bones
    return b["thigh.L"].length + b["shin.L"].length


def push_to_strip(obj: bpy.types.Object, scale: float = 1.0, repeat: float = 1.0) -> bpy.types.NlaStrip:
    """The armature's action pushed down into an NLA strip (`scale`, `repeat`), no action left playing."""
    ad = obj.animation_data
    strip = ad.nla_tracks.new().strips.new("walk", 1, ad.action)
    if hasattr(strip, "action_slot"):
        strip.action_slot = ad.action_slot
    strip.scale, strip.repeat = scale, repeat
    ad.action = None
    return strip


def author_walk(obj: bpy.types.Object, frames: int = 48, cycle: int = 24, stride: float = 0.35) -> None:
    """Key a walk along -Y (the metarig faces -Y): a planted stance and an arcing swing per foot."""
    rig = harness.module("core.rig")
    solvers = harness.module("solvers")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    leg = leg_length(obj)
    step = stride * leg  # distance the body travels per half cycle
    speed = 2 * step / cycle
    pb = obj.pose.bones
    pelvis = pb["spine"]
    rest = {s: obj.data.bones[LEGS[s][2]].head_local.copy() for s in LEGS}
    for name in ("thigh.L", "shin.L", "thigh.R", "shin.R", "foot.L", "foot.R"):
        pb[name].rotation_mode = "QUATERNION"
    for f in range(1, frames + 1):
        scene.frame_set(f)
        t = f - 1
        pelvis.location = (0.0, 0.0, 0.0)
        # Bone-local Y of the metarig's spine points up: move along world -Y through the parent space.
        world_move = Vector((0.0, -speed * t, -0.09 * leg + 0.015 * leg * math.cos(4 * math.pi * t / cycle)))
        local = (pelvis.bone.matrix_local.to_3x3().inverted() @ world_move)
        pelvis.location = local
        for name in ("thigh.L", "shin.L", "thigh.R", "shin.R", "foot.L", "foot.R"):
            pb[name].rotation_quaternion = (1, 0, 0, 0)
        bpy.context.view_layer.update()
        for side, phase in (("L", 0.0), ("R", 0.5)):
            u = ((t / cycle) + phase) % 1.0
            # The foot is planted where the body is at mid-stance (u = 0.3), then swings to the next spot.
            n_cycle = math.floor(t / cycle + phase)
            stance_y = -speed * (n_cycle + 0.3 - phase) * cycle
            if u < 0.6:
                y, lift = stance_y, 0.0
            else:
                s = (u - 0.6) / 0.4
                y = stance_y - speed * cycle * (0.5 - 0.5 * math.cos(math.pi * s))
                lift = 0.12 * leg * math.sin(math.pi * s)
            ankle = Vector((rest[side].x, y + rest[side].y, rest[side].z + lift))
            thigh, shin, foot = LEGS[side][:3]
            pose = rig.read_chain(obj, [thigh, shin], end_bone=foot)
            pole = pose.positions()[1] + Vector((0.0, -leg, 0.0))
            world_ankle = obj.matrix_world @ ankle
            flat_foot = obj.matrix_world.to_quaternion() @ obj.data.bones[foot].matrix_local.to_quaternion()
            sol = solvers.solve_limb(pose, world_ankle, pole=obj.matrix_world @ pole, target_rotation=flat_foot)
            rig.write_solution(obj, [thigh, shin], sol, end_bone=foot)
        for name in ("thigh.L", "shin.L", "thigh.R", "shin.R", "foot.L", "foot.R"):
            pb[name].keyframe_insert("rotation_quaternion", frame=f)
        pelvis.keyframe_insert("location", frame=f)
    scene.frame_set(1)


def author_stance(obj: bpy.types.Object, frames: int = 48) -> None:
    """Key a standing idle: the metarig in its rest pose (legs almost straight, the knee bent about 10
    degrees), its body swaying 1 cm up and down."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    spine = obj.pose.bones["spine"]
    for f in range(1, frames + 1, 8):
        spine.location = (0.0, 0.0, 0.01 * math.sin(f / 8.0))
        spine.keyframe_insert("location", frame=f)
    scene.frame_set(1)


def knee_bend(obj: bpy.types.Object, side: str) -> float:
    """How far the metarig's knee on `side` ("L", "R") is bent as posed now: the shin's turn from the thigh,
    degrees."""
    pb = obj.pose.bones
    return math.degrees(pb[f"thigh.{side}"].matrix.to_3x3().col[1].angle(pb[f"shin.{side}"].matrix.to_3x3().col[1]))


_mesh_object = bpy_kit.mesh_object


def flat(leg: float, height: float = 0.0) -> bpy.types.Object:
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=2, y_segments=2, size=20 * leg)
    for v in bm.verts:
        v.co.z = height
    return _mesh_object("Flat", bm)


def slope(leg: float, degrees: float = 20.0) -> bpy.types.Object:
    """A plane rising along -Y (the walking direction) at `degrees`."""
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=2, y_segments=40, size=20 * leg)
    k = math.tan(math.radians(degrees))
    for v in bm.verts:
        v.co.z = -v.co.y * k
    return _mesh_object("Slope", bm)


def stairs(leg: float, riser: float = 0.15, tread: float = 0.45, first: float = -0.2, count: int = 12) -> bpy.types.Object:
    """Steps rising along -Y: risers of `riser` x leg, treads of `tread` x leg, starting at y = -first x leg."""
    bm = bmesh.new()
    w = 3 * leg
    r, d = riser * leg, tread * leg
    y0 = first * leg
    profile = [(10 * leg, 0.0), (y0, 0.0)]
    for i in range(count):
        y = y0 - i * d
        z = (i + 1) * r
        profile += [(y, z), (y - d, z)]
    profile.append((y0 - count * d - 10 * leg, count * r))
    left = [bm.verts.new((-w, y, z)) for y, z in profile]
    right = [bm.verts.new((w, y, z)) for y, z in profile]
    for i in range(len(profile) - 1):
        bm.faces.new((left[i], right[i], right[i + 1], left[i + 1]))
    return _mesh_object("Stairs", bm)


def noise(leg: float, amplitude: float = 0.1, segments: int = 100, size: float = 6.0) -> bpy.types.Object:
    """A smooth pseudo-random heightfield (sum of sines), amplitude `amplitude` x leg."""
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=segments, y_segments=segments, size=size * leg)
    a = amplitude * leg
    for v in bm.verts:
        x, y = v.co.x / leg, v.co.y / leg
        v.co.z = a * (0.5 * math.sin(1.7 * x + 0.3) * math.cos(1.3 * y) + 0.3 * math.sin(3.1 * y + 1.1 * x)
                      + 0.2 * math.cos(4.3 * x - 2.2 * y))
    return _mesh_object("Noise", bm)


TERRAINS = {"flat": flat, "slope": slope, "stairs": stairs, "noise": noise}
