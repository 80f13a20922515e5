"""Shared benchmark helpers: real Blender (the bpy wheel) with Contact IK installed as a user does it,
timing, and the benchmark scene (the Rigify metarig walking on a large noise heightfield, with IK
targets and poles for both feet and both hands, set up for Blender's native IK and for Contact IK).

Importing this module starts Blender through `tests/harness.py` (a private user folder, so nothing
touches the real user's config); `install()` builds and installs this checkout's extension.
"""

from __future__ import annotations

import json
import math
import pathlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "out"
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))
import harness  # noqa: E402  (sets the private Blender user folder, then starts Blender: before any bpy import)

# isort: split
import bpy  # noqa: E402
import scenes  # noqa: E402
from mathutils import Matrix, Vector  # noqa: E402
from mathutils.bvhtree import BVHTree  # noqa: E402

# Walks longer than this are authored as one 48-frame stretch (two steps per foot) repeated by Cycles modifiers.
AUTHOR_LIMIT = 2000
WALK_CYCLE = 24  # frames per step cycle (scenes.author_walk's default)


def install() -> ModuleType:
    """Build this checkout's extension, install and enable it (once per process); its package module."""
    return harness.install()


def module(name: str) -> ModuleType:
    """A submodule of the installed extension, e.g. module('core.live')."""
    return harness.module(name)


# ------------------------------------------------------------------------------------------------ timing


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """`with stopwatch() as t: ...` then t[0] is the elapsed seconds."""
    out = [0.0]
    t0 = time.perf_counter()
    try:
        yield out
    finally:
        out[0] = time.perf_counter() - t0


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """(fn's result, seconds it took)."""
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - t0


def sweep(start: int, end: int, scene: bpy.types.Scene | None = None) -> list[float]:
    """`scene.frame_set(f)` for f in start..end; the seconds each call took."""
    scene = scene or bpy.context.scene
    clock = time.perf_counter
    times = []
    for f in range(start, end + 1):
        t0 = clock()
        scene.frame_set(f)
        times.append(clock() - t0)
    return times


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), nearest rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, math.ceil(q / 100.0 * len(ordered)) - 1))
    return ordered[k]


def blender_version() -> str:
    return str(bpy.app.version_string)


def triangle_count(obj: bpy.types.Object) -> int:
    return sum(len(p.vertices) - 2 for p in obj.data.polygons)


# ------------------------------------------------------------------------------------------------ scene


@dataclass
class Rig:
    """The benchmark scene: the walking armature, its terrain, and the animated IK targets and poles
    (empties keyed on every frame) of its four limbs, keyed `Target.foot.L`, `Pole.knee.L`..."""

    obj: bpy.types.Object
    terrain: bpy.types.Object
    frames: int
    targets: dict[str, bpy.types.Object]
    native: list[bpy.types.Constraint]


def biped_walk(frames: int) -> bpy.types.Object:
    """The Rigify human metarig walking along -Y for `frames` frames (scene range 1..frames): keyed on every
    frame by `scenes.author_walk`, or, beyond AUTHOR_LIMIT frames, two step cycles repeated by Cycles
    modifiers (the pelvis with an offset, so the walk goes on)."""
    harness.reset_scene()
    obj = scenes.metarig()
    if frames <= AUTHOR_LIMIT:
        scenes.author_walk(obj, frames=frames)
    else:
        scenes.author_walk(obj, frames=2 * WALK_CYCLE + 1)  # frame 49 is frame 1 two steps on: a seamless period
        anim = module("core.anim")
        for fc in anim.fcurves(obj.animation_data.action, anim.slot_of(obj)):
            mod = fc.modifiers.new("CYCLES")
            if fc.data_path.endswith(".location"):
                mod.mode_before = mod.mode_after = "REPEAT_OFFSET"
        # Blender evaluates a copy of the action: without this tag the copy keeps no modifier, and the rig
        # would stand still after the keyed frames (as these benchmarks' rigs did until this was found).
        obj.animation_data.action.update_tag()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.frame_set(1)
    return obj


def _world_heads(obj: bpy.types.Object, bones: Sequence[str], frames: int) -> dict[str, list[Vector]]:
    """World positions of the heads of `bones` on frames 1..frames (the animation as it is now)."""
    scene = bpy.context.scene
    out: dict[str, list[Vector]] = {b: [] for b in bones}
    mw = obj.matrix_world
    for f in range(1, frames + 1):
        scene.frame_set(f)
        for b in bones:
            out[b].append(mw @ obj.pose.bones[b].head)
    scene.frame_set(1)
    return out


def walk_terrain(obj: bpy.types.Object, frames: int, segments: int = 300, amplitude: float = 0.1,
                 margin: float = 2.0) -> bpy.types.Object:
    """A noise heightfield (`scenes.noise`) of 2 x segments^2 triangles (300 -> 180,000), a square that covers
    the whole walk with `margin` leg lengths to spare, centred on it (the mesh moved, the object at identity)."""
    scene = bpy.context.scene
    leg = scenes.leg_length(obj)
    path = []
    for f in (1, frames):
        scene.frame_set(f)
        path.append(obj.matrix_world @ obj.pose.bones["spine"].head)
    scene.frame_set(1)
    centre = (path[0] + path[1]) / 2.0
    half = max(abs(path[1].x - path[0].x), abs(path[1].y - path[0].y)) / 2.0 + margin * leg
    terrain = scenes.noise(leg, amplitude=amplitude, segments=segments, size=half / leg)
    terrain.data.transform(Matrix.Translation((centre.x, centre.y, 0.0)))
    terrain.data.update()
    return terrain


def _key_path(obj: bpy.types.Object, points: Sequence[Vector]) -> None:
    for f, p in enumerate(points, start=1):
        obj.location = p
        obj.keyframe_insert("location", frame=f)


def _empty(name: str, size: float) -> bpy.types.Object:
    e = bpy.data.objects.new(name, None)
    e.empty_display_size = size
    bpy.context.scene.collection.objects.link(e)
    return e


def limb_targets(obj: bpy.types.Object, terrain: bpy.types.Object, frames: int) -> dict[str, bpy.types.Object]:
    """Empties keyed on every frame: foot targets (the animated ankle lifted by the terrain under it), hand
    targets (hanging hands swinging against the legs, carried along with the body), knee poles (a leg
    in front of the hips) and elbow poles (a leg behind the shoulders)."""
    leg = scenes.leg_length(obj)
    bones = obj.data.bones
    arm = bones["upper_arm.L"].length + bones["forearm.L"].length
    heads = _world_heads(obj, ["spine", "thigh.L", "thigh.R", "foot.L", "foot.R", "upper_arm.L", "upper_arm.R"], frames)
    tree = BVHTree.FromObject(terrain, bpy.context.evaluated_depsgraph_get())
    down = Vector((0.0, 0.0, -1.0))
    targets: dict[str, bpy.types.Object] = {}
    for side, sign, phase in (("L", 1.0, 0.0), ("R", -1.0, math.pi)):
        feet, hands, knees, elbows = [], [], [], []
        for i in range(frames):
            ankle = heads[f"foot.{side}"][i]
            hit = tree.ray_cast(Vector((ankle.x, ankle.y, ankle.z + 10.0 * leg)), down, 20.0 * leg)[0]
            feet.append(Vector((ankle.x, ankle.y, ankle.z + (hit.z if hit is not None else 0.0))))
            shoulder = heads[f"upper_arm.{side}"][i]
            swing = 0.15 * leg * math.sin(2.0 * math.pi * i / WALK_CYCLE + phase)  # the opposite leg's phase
            hands.append(shoulder + Vector((sign * 0.15 * arm, swing - 0.1 * arm, -0.8 * arm)))
            knees.append(heads[f"thigh.{side}"][i] + Vector((0.0, -leg, -0.5 * leg)))
            elbows.append(shoulder + Vector((sign * 0.1 * arm, leg, -0.5 * arm)))
        for name, points in ((f"Target.foot.{side}", feet), (f"Target.hand.{side}", hands),
                             (f"Pole.knee.{side}", knees), (f"Pole.elbow.{side}", elbows)):
            e = _empty(name, 0.1 * leg)
            _key_path(e, points)
            targets[name] = e
    bpy.context.scene.frame_set(1)
    return targets


def _heads_at(obj: bpy.types.Object, bone: str, frames: Sequence[int]) -> list[Vector]:
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(f)
        out.append(obj.matrix_world @ obj.pose.bones[bone].head)
    return out


def add_native_ik(obj: bpy.types.Object, targets: dict[str, bpy.types.Object]) -> list[bpy.types.Constraint]:
    """Blender's own IK constraints on the same four limbs (chain of 2, target and pole empties, default
    solver settings), created muted. Each pole angle is the quarter turn that keeps the knee or elbow
    nearest its animated place (the chains' rolls differ between rigs)."""
    made = []
    end = bpy.context.scene.frame_end
    sample = sorted({1, max(1, end // 3), max(1, 2 * end // 3)})
    for side in "LR":
        for bone, target, pole in ((f"shin.{side}", f"Target.foot.{side}", f"Pole.knee.{side}"),
                                   (f"forearm.{side}", f"Target.hand.{side}", f"Pole.elbow.{side}")):
            fk = _heads_at(obj, bone, sample)
            c = obj.pose.bones[bone].constraints.new("IK")
            c.name = f"IK {bone}"
            c.target, c.pole_target, c.chain_count = targets[target], targets[pole], 2
            errors = {}
            for angle in (0.0, math.pi / 2, -math.pi / 2, math.pi):
                c.pole_angle = angle
                errors[angle] = sum((a - b).length for a, b in zip(_heads_at(obj, bone, sample), fk))
            c.pole_angle = min(errors, key=errors.__getitem__)
            c.mute = True
            made.append(c)
    bpy.context.scene.frame_set(1)
    return made


def set_muted(constraints: Sequence[bpy.types.Constraint], muted: bool) -> None:
    for c in constraints:
        if c.mute != muted:
            c.mute = muted


def select_only(active: bpy.types.Object, *others: bpy.types.Object) -> None:
    view_layer = bpy.context.view_layer
    for o in view_layer.objects:
        o.select_set(o is active or o in others)
    view_layer.objects.active = active


def setup_contact_ik(rig: Rig) -> Any:
    """Contact IK as a user sets it up: Detect Limbs, the hand targets, then Plant Feet with the terrain
    selected (terrain, floor and foot contacts, live preview on). Returns the rig's settings."""
    obj = rig.obj
    select_only(obj)
    if bpy.ops.contact_ik.detect_limbs() != {"FINISHED"}:
        raise RuntimeError("Detect Limbs failed on the metarig")
    s = obj.contact_ik
    for limb in s.limbs:
        if limb.kind == "HAND":
            limb.target_object = rig.targets[f"Target.hand.{limb.end_bone[-1]}"]
    select_only(obj, rig.terrain)
    if bpy.ops.contact_ik.plant_feet() != {"FINISHED"}:
        raise RuntimeError("Plant Feet failed on the metarig")
    select_only(obj)
    return s


def build(frames: int, segments: int = 300) -> Rig:
    """The whole benchmark scene, native constraints muted, Contact IK set up with live preview off."""
    install()
    obj = biped_walk(frames)
    terrain = walk_terrain(obj, frames, segments=segments)
    targets = limb_targets(obj, terrain, frames)
    native = add_native_ik(obj, targets)
    rig = Rig(obj, terrain, frames, targets, native)
    s = setup_contact_ik(rig)
    s.live_preview = False
    bpy.context.scene.frame_set(1)
    return rig


def write_json(path: str, data: Any) -> None:
    """Write a benchmark's figures as JSON (the folder made if needed) and say where."""
    p = pathlib.Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=2))
    print(f"written {p}")
