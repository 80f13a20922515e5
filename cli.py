"""Headless Contact IK: `blender --background --command contact_ik bake ...`, or the same arguments to
`tools/contact_ik_cli.py` with only the `bpy` wheel installed.

    contact_ik bake INPUT [INPUT ...] [--terrain NAME|FILE] [--output OUT.blend] [--export OUT.bvh|OUT.fbx|OUT.glb]
                    [--report REPORT.json] [--frame-start N] [--frame-end N] [--armature NAME]
                    [--up-axis Z] [--forward-axis Y] [--scale S] [--no-cuts] [--leg-stretch F] [--overwrite]
                    [--jobs N] [--output-dir DIR]
                    [--scheduler tcp://HOST:PORT [--worker-command CMD]]
    contact_ik detect INPUT [--armature NAME] [--up-axis Z] [--forward-axis Y]

INPUT is a .blend, or a motion file (.bvh, .fbx, .glb, .gltf) read with Blender's own importers. Several inputs,
or a folder, or several --terrain, make a batch: a pool of worker processes (one per core by default)
bakes one clip on one terrain each; a bad clip fails alone and is listed in the summary report. With
--scheduler the batch runs on a Dask cluster instead (tools/cluster.py, outside Blender). Exit codes: 0 done, 2 bad input (the
message says how to fix it), 3 done with a warning (no legs planted, a foot with no contact, or a foot
left more than 1 % of the leg under the terrain by the independent measure), 1 a batch in which some
clips failed, or an unexpected error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import bpy
import numpy as np

from .cli_args import (  # noqa: F401  (EXPORTS, InputError and parser are this module's interface too)
    EXPORT_FORMATS,
    EXPORTS,
    GLTF,
    MOTION,
    TERRAIN_FILES,
    WARNED,
    InputError,
    Job,
    batch_jobs,
    expand_inputs,
    is_batch,
    job_args,
    parser,
    terrains,
)


def execute(argv: Sequence[str]) -> int:
    """The `--command contact_ik` entry: never raises; returns the exit code."""
    try:
        args = parser().parse_args(list(argv))
    except SystemExit as exc:  # argparse printed the usage
        return int(exc.code or 0) and 2
    try:
        if args.command == "detect":
            return _detect(args)
        inputs = expand_inputs(args.inputs)
        if args.command == "bake" and args.scheduler:
            raise InputError("--scheduler runs a batch's coordinator outside Blender, in a Python with "
                             "dask[distributed]: from a checkout of Contact IK, run the same command as "
                             "`python tools/contact_ik_cli.py bake ... --scheduler ...`")
        if args.command == "bake" and is_batch(inputs, args):
            return run_batch(inputs, args)
        if len(terrains(args)) > 1:
            raise InputError("evaluate measures one terrain at a time: give one --terrain")
        args.terrain = terrains(args)[0]
        if args.command == "evaluate":
            reports = [bake_file(i, args, write=False) for i in inputs]
            if args.report:
                _write_json(args.report, {"clips": reports, "failed": []})
            for r in reports:
                print(format_quality(r))
            return WARNED if any(r["warnings"] for r in reports) else 0
        report = bake_file(inputs[0], args)
        if args.report:
            _write_json(args.report, {"clips": [report], "failed": []})
        _print_summary(report)
        return WARNED if report["warnings"] else 0
    except InputError as exc:
        print(f"contact_ik: error: {exc}", file=sys.stderr)
        if getattr(args, "report", None) and args.command == "bake":
            _write_json(args.report, {"clips": [], "failed": [{"input": args.inputs, "error": str(exc)}]})
        return 2
    except Exception as exc:  # noqa: BLE001  the command line reports every failure as a message and a code
        traceback.print_exc()
        print(f"contact_ik: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


# --------------------------------------------------------------------------------------------- one clip


def _addon() -> Any:
    from . import properties

    return properties


def load(path: str, args: argparse.Namespace) -> None:
    p = pathlib.Path(path)
    if not p.is_file():
        raise InputError(f"input file {path!r} does not exist: check the path")
    ext = p.suffix.lower()
    if ext == ".blend":
        try:
            bpy.ops.wm.open_mainfile(filepath=str(p), load_ui=False)
        except RuntimeError as exc:
            raise InputError(f"{path!r} is not a readable .blend file ({_first_line(exc)})") from exc
        return
    if ext not in MOTION:
        raise InputError(f"{path!r}: unsupported input type {ext!r}; give a .blend, .bvh, .fbx, .glb or .gltf file")
    if ext in GLTF:
        _import_motion(p, ext, "Y", args)
        args.used_up_axis = "Y"
        args.skipped_bind_pose = _skip_bind_pose()
        return
    up = args.up_axis if args.up_axis != "auto" else "Y"
    _import_motion(p, ext, up, args)
    if args.up_axis == "auto" and _lies_down():
        up = "Z"
        _import_motion(p, ext, up, args)
        print(f"contact_ik: {p.name}: the skeleton is Z-up; imported with --up-axis Z")
    args.used_up_axis = up
    args.skipped_bind_pose = _skip_bind_pose()


def _skip_bind_pose() -> bool:
    """Many converted mocap files (the cgspeed CMU BVHs) start with a T-pose frame: a jump of the whole
    skeleton from frame 1 to frame 2 that is no motion. When frame 1 jumps more than ten times as far as
    frame 2 to 3 does (and more than 5 % of the skeleton's size), the scene starts at frame 2."""
    arms = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    scene = bpy.context.scene
    if not arms or scene.frame_end - scene.frame_start < 3:
        return False
    obj = arms[0]
    frames = []
    for f in range(scene.frame_start, scene.frame_start + 3):
        scene.frame_set(f)
        frames.append([obj.matrix_world @ pb.head for pb in obj.pose.bones])
    size = max((b.head_local - obj.data.bones[0].head_local).length for b in obj.data.bones) or 1.0
    d12 = sum((a - b).length for a, b in zip(frames[0], frames[1])) / len(frames[0])
    d23 = sum((a - b).length for a, b in zip(frames[1], frames[2])) / len(frames[0])
    scene.frame_set(scene.frame_start)
    if d12 > 0.05 * size and d12 > 10.0 * d23:
        scene.frame_start += 1
        scene.frame_set(scene.frame_start)
        print(f"contact_ik: frame {scene.frame_start - 1} is a bind pose (T-pose), not motion: starting at frame "
              f"{scene.frame_start} (give --frame-start to choose)")
        return True
    return False


# Frames at either end of the range whose feet go far under the floor (`setup.detect_floor`'s deep dips) are a
# capture's leading or trailing garbage, not motion, when there are no more than this many seconds of them.
GLITCH_SECONDS = 0.25


def skip_glitch_frames(obj: bpy.types.Object, args: argparse.Namespace) -> list[int]:
    """Converted mocap may open (or close) on a few frames of garbage. The Daz-named CMU BVHs' first 1-4 frames
    have the feet 6-132% of the leg under the floor the clip walks on: planted like the rest, the jump into
    the clip became a pop (cmu_07_12: the knee 3.2x the source's on frame 2). cmu_03_02 opens on feet
    jumping 40 legs per second, then frozen: a stance on the ball planted there dropped the pelvis 70% of
    the leg (hip 1.44x). Unless a range is given (--frame-start, --frame-end), the scene's range is trimmed
    past such frames at its start and its end, within GLITCH_SECONDS of each: frames under the floor, and
    frames a foot's ankle jumps to faster than CUT_SPEED legs per second, and then the frames a foot goes on
    moving faster than any foot moves in the rest of the clip. The frames skipped are returned (and
    printed)."""
    from .core import contacts, setup
    from .core.rig import world_scale
    from .core.tuning import CUT_SPEED, LIFT_SPEED

    scene = bpy.context.scene
    if args.frame_start is not None or args.frame_end is not None:
        return []
    deep: list[tuple[int, float]] = []
    feet = [lb for lb in obj.contact_ik.limbs if lb.kind == "FOOT"]
    samples = contacts.sample_feet(obj, scene, scene.frame_start, scene.frame_end) if feet else {}
    setup.detect_floor(obj, scene, deep=deep, samples=samples or None)
    dips = {f for f, _d in deep}
    most = max(1, round(GLITCH_SECONDS * scene.render.fps / scene.render.fps_base))
    first, last = scene.frame_start, scene.frame_end
    while first in dips and first - scene.frame_start < most:
        first += 1
    while last in dips and scene.frame_end - last < most:
        last -= 1
    first = first if first not in dips else scene.frame_start  # longer than that: motion after all
    last = last if last not in dips else scene.frame_end
    # Jumps: the frame a foot's ankle jumps to (faster than CUT_SPEED x its leg per second) within the first
    # GLITCH_SECONDS starts the range; the frame one jumps from within the last ends it.
    fps = contacts.fps_of(scene)
    speeds = [np.linalg.norm(np.diff(d["ankle"], axis=0), axis=1) * fps / ((obj.contact_ik.limbs[i].length or 1.0)
                                                                          * world_scale(obj))
              for i, d in samples.items()]  # legs per second, step k: frame start + k to the next
    fastest = np.max(speeds, axis=0) if speeds else np.zeros(0)
    n = len(fastest)
    jumps = [scene.frame_start + 1 + int(k) for k in np.flatnonzero(fastest > CUT_SPEED) if k < most or k >= n - most]
    first = max([first] + [f for f in jumps if f - scene.frame_start <= most])
    last = min([last] + [f - 1 for f in jumps if scene.frame_end - (f - 1) <= most])
    # From there, a foot still moving faster than any foot moves in the rest of the clip is snapping back from
    # the garbage (or the clip's edge) into the motion: the Daz-named CMU files do for 2-4 frames at 8-17
    # legs per second where their walks stay under 5.4, and planted, that snap became a pop (the knee 2-4x
    # the source's peak: cmu_02_01, cmu_06_01, cmu_12_02). The range starts after it and ends before it.
    # Never slower than a foot lifting off (LIFT_SPEED): a still clip's first frames settling is not a snap.
    rest = fastest[most:n - most]
    limit = max(float(rest.max()), LIFT_SPEED) if len(rest) else math.inf
    snapped = False
    while first - scene.frame_start < min(n, most) and fastest[first - scene.frame_start] > limit:
        first, snapped = first + 1, True
    while scene.frame_end - last < most and 0 < last - scene.frame_start <= n and fastest[last - scene.frame_start - 1] > limit:
        last, snapped = last - 1, True
    lead, trail = list(range(scene.frame_start, first)), list(range(last + 1, scene.frame_end + 1))
    if last - first < 3 or not (lead or trail):
        return []
    scene.frame_start, scene.frame_end = first, last
    scene.frame_set(first)
    skipped = lead + trail
    span = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in
                     ([(lead[0], lead[-1])] if lead else []) + ([(trail[0], trail[-1])] if trail else []))
    depth = max([d for f, d in deep if f in lead or f in trail], default=0.0)
    why = [f"put the feet up to {depth:.0%} of the leg under the floor the rest of the clip stands on"] if depth else []
    why += [f"jump a foot faster than {CUT_SPEED:g} legs per second"] if set(jumps) & set(skipped + [first]) else []
    why += [f"move a foot faster than any foot moves in the rest of the clip ({limit:.1f} legs per second)"] \
        if snapped else []
    print(f"contact_ik: frames {span} {' and '.join(why)} (a capture's glitch, not motion): the range is "
          f"{first}-{last} (give --frame-start and --frame-end to choose)")
    return skipped


def _import_motion(p: pathlib.Path, ext: str, up: str, args: argparse.Namespace) -> None:
    import addon_utils

    bpy.ops.wm.read_homefile(use_empty=True)
    forward = args.forward_axis or ("Y" if up.endswith("Z") else "-Z")
    try:
        if ext == ".bvh":
            addon_utils.enable("io_anim_bvh", default_set=False)
            bpy.ops.import_anim.bvh(filepath=str(p), axis_up=up, axis_forward=forward, global_scale=args.scale,
                                    update_scene_fps=True, update_scene_duration=True)
        elif ext in GLTF:
            # Blender's glTF importer with its defaults; glTF fixes the axes, so --up-axis does not apply.
            addon_utils.enable("io_scene_gltf2", default_set=False)
            bpy.ops.import_scene.gltf(filepath=str(p))
            if args.scale != 1.0:
                for ob in bpy.context.scene.objects:
                    if ob.parent is None:
                        ob.scale = ob.scale * args.scale
                        ob.location = ob.location * args.scale
        else:
            addon_utils.enable("io_scene_fbx", default_set=False)
            bpy.ops.import_scene.fbx(filepath=str(p), axis_up=up, axis_forward=forward, global_scale=args.scale,
                                     use_anim=True)
        _fit_scene_range()  # the BVH importer's scene range is one frame longer than the clip
    except (RuntimeError, ValueError, KeyError, IndexError, UnicodeDecodeError) as exc:
        raise InputError(f"{str(p)!r} could not be imported as {ext[1:].upper()}: {_first_line(exc)}") from exc


def _lies_down() -> bool:
    """True when the imported skeleton's feet are not below its hips along Blender's Z (wrong up axis)."""
    from .core import detect

    arms = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    if not arms:
        return False
    obj = arms[0]
    legs = [d for d in detect.detect_limbs(detect.bones_from_armature(obj)) if d.kind == "FOOT"]
    if not legs:
        return False
    bones = obj.data.bones
    mw = obj.matrix_world
    down = sum(((mw @ bones[d.end_bone].head_local) - (mw @ bones[d.bones[0]].head_local) for d in legs),
               start=mw.translation * 0.0)
    return abs(down.z) < max(abs(down.x), abs(down.y))


def _first_line(exc: BaseException) -> str:
    """The line of an error that says what went wrong (Blender ends operator errors with a 'Location:' line)."""
    text = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip() and not ln.strip().startswith("Location:")]
    return text[-1] if text else type(exc).__name__


def _fit_scene_range() -> None:
    scene = bpy.context.scene
    ranges = [o.animation_data.action.frame_range for o in scene.objects
              if o.animation_data is not None and o.animation_data.action is not None]
    if ranges:
        scene.frame_start = int(min(r[0] for r in ranges))
        scene.frame_end = int(max(r[1] for r in ranges))


def pick_armature(name: Optional[str]) -> bpy.types.Object:
    arms = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    if name:
        obj = bpy.data.objects.get(name)
        if obj is None or obj.type != "ARMATURE":
            raise InputError(f"no armature named {name!r}; armatures here: {', '.join(o.name for o in arms) or 'none'}")
        return obj
    if not arms:
        raise InputError("no armature in the input: give a file with an animated skeleton")
    if len(arms) == 1:
        return arms[0]
    animated = [o for o in arms if o.animation_data is not None and o.animation_data.action is not None]
    if len(animated) == 1:
        return animated[0]
    raise InputError(f"several armatures ({', '.join(o.name for o in arms)}): choose one with --armature NAME")


def ensure_limbs(obj: bpy.types.Object) -> str:
    from .core import setup

    return setup.ensure_limbs(obj)


def set_terrain(obj: bpy.types.Object, spec: Optional[str]) -> str:
    """Resolve --terrain into the rig's settings; returns a description."""
    s = _addon().settings(obj)
    if spec:
        p = pathlib.Path(spec)
        terrain: Optional[bpy.types.Object]
        if p.suffix.lower() in TERRAIN_FILES:
            terrain = import_mesh(p)
        else:
            terrain = bpy.data.objects.get(spec)
            if terrain is None:
                meshes = ", ".join(o.name for o in bpy.data.objects if o.type == "MESH") or "none"
                raise InputError(f"no object named {spec!r} for --terrain (meshes here: {meshes}); or give a "
                                 ".obj/.ply/.stl file")
            if terrain.type != "MESH":
                raise InputError(f"--terrain {spec!r} is a {terrain.type.lower()}, not a mesh: name a mesh object")
        _check_mesh(terrain, spec)
        s.terrain, s.terrain_collection = terrain, None
        return terrain.name
    if s.terrain is not None or s.terrain_collection is not None:
        return (s.terrain or s.terrain_collection).name
    s.terrain = flat_ground(obj)
    return "flat ground at the animation's floor"


def import_mesh(p: pathlib.Path) -> bpy.types.Object:
    if not p.is_file():
        raise InputError(f"terrain file {str(p)!r} does not exist: check the path")
    before = set(bpy.data.objects)
    ext = p.suffix.lower()
    try:
        if ext == ".obj":
            bpy.ops.wm.obj_import(filepath=str(p))
        elif ext == ".ply":
            bpy.ops.wm.ply_import(filepath=str(p))
        else:
            bpy.ops.wm.stl_import(filepath=str(p))
    except RuntimeError as exc:
        raise InputError(f"terrain file {str(p)!r} could not be read: {_first_line(exc)}") from exc
    new = [o for o in bpy.data.objects if o not in before and o.type == "MESH"]
    if not new:
        raise InputError(f"terrain file {str(p)!r} holds no mesh: export the ground as a mesh with faces")
    if len(new) > 1:
        coll = bpy.data.collections.new("Terrain")
        bpy.context.scene.collection.children.link(coll)
        for o in new:
            coll.objects.link(o)
        bpy.ops.object.select_all(action="DESELECT")
        for o in new:
            o.select_set(True)
        bpy.context.view_layer.objects.active = new[0]
        bpy.ops.object.join()
    return new[0]


def _check_mesh(obj: bpy.types.Object, spec: str) -> None:
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = obj.evaluated_get(depsgraph).to_mesh()
    try:
        faces = len(mesh.polygons)
    finally:
        obj.evaluated_get(depsgraph).to_mesh_clear()
    if faces == 0:
        raise InputError(f"terrain {spec!r} is an empty mesh (no faces): give a mesh with faces")


def flat_ground(obj: bpy.types.Object) -> bpy.types.Object:
    """A large plane at the animation's floor (world Z), under the armature (any rotation, any scale)."""
    import bmesh
    from mathutils import Matrix

    from .core import setup
    from .core.rig import world_scale

    s = _addon().settings(obj)
    s.floor_height = setup.detect_floor(obj, bpy.context.scene)
    leg = (max((lb.length for lb in s.limbs), default=1.0) or 1.0) * world_scale(obj)
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=500.0 * leg)
    me = bpy.data.meshes.new("Contact IK Ground")
    bm.to_mesh(me)
    bm.free()
    ground = bpy.data.objects.new("Contact IK Ground", me)
    bpy.context.scene.collection.objects.link(ground)
    at = obj.matrix_world.translation
    ground.matrix_world = Matrix.Translation((at.x, at.y, s.floor_height))
    return ground


def outputs_for(path: str, args: argparse.Namespace) -> tuple[pathlib.Path, list[pathlib.Path]]:
    src = pathlib.Path(path).resolve()
    folder = pathlib.Path(args.output_dir).resolve() if args.output_dir else src.parent
    out = pathlib.Path(args.output).resolve() if args.output else folder / f"{src.stem}.contact_ik.blend"
    if out.suffix.lower() != ".blend":
        raise InputError(f"--output {str(out)!r} must end in .blend (use --export for .bvh/.fbx)")
    exports = []
    for e in args.export:
        ep = pathlib.Path(e)
        if ep.suffix.lower().lstrip(".") not in EXPORT_FORMATS and e.lower().lstrip(".") not in EXPORT_FORMATS:
            raise InputError(f"--export {e!r}: give a .bvh, .fbx or .glb path (or just .bvh / .fbx / .glb)")
        if e.lower().lstrip(".") in EXPORT_FORMATS:
            ep = folder / f"{src.stem}.contact_ik.{e.lower().lstrip('.')}"
        exports.append(ep.resolve())
    for target in [out, *exports]:
        if target == src and not args.overwrite:
            raise InputError(f"the output {str(target)!r} is the input: choose another --output, or add --overwrite")
        if target.exists() and not args.overwrite:
            raise InputError(f"{str(target)!r} already exists: remove it, choose another path, or add --overwrite")
        target.parent.mkdir(parents=True, exist_ok=True)
    return out, exports


def bake_file(path: str, args: argparse.Namespace, write: bool = True) -> dict:
    """Load, plant, bake, measure, save and export one clip (with `write` False: only measure); the
    report as a dict."""
    from .core import bake, contacts, measure, metrics, setup
    from .core.anatomy import sole_of
    from .core.ground import terrain_objects

    t0 = time.perf_counter()
    out, exports = outputs_for(path, args) if write else (None, [])
    load(path, args)
    t_load = time.perf_counter()
    obj = pick_armature(args.armature)
    limbs_found = ensure_limbs(obj)
    skipped = skip_glitch_frames(obj, args)
    terrain_desc = set_terrain(obj, args.terrain)
    if getattr(args, "no_cuts", False):
        _addon().settings(obj).detect_cuts = False
    if getattr(args, "leg_stretch", None) is not None:
        _addon().settings(obj).leg_stretch = args.leg_stretch
    scene = bpy.context.scene
    if bake.is_baked(obj.animation_data.action if obj.animation_data else None):
        src = bake.use_source(obj)
        print(f"contact_ik: {obj.name!r} played a bake; baking its source {src.name!r} again")  # type: ignore[union-attr]
    start = args.frame_start if args.frame_start is not None else scene.frame_start
    end = args.frame_end if args.frame_end is not None else scene.frame_end
    try:
        prepared = setup.prepare(obj, scene)  # as Plant Feet: limbs, terrain, floor, contacts
    except InputError as exc:
        raise InputError(f"{pathlib.Path(path).name}: {exc}") from exc
    terrain = prepared.terrain
    for warning in prepared.warnings:
        print(f"contact_ik: note: {pathlib.Path(path).name}: {warning}", file=sys.stderr)
    bpy.context.view_layer.objects.active = obj
    try:
        job = bake.BakeJob([obj], start, end, scene)
    except bake.BakeError as exc:
        raise InputError(f"{pathlib.Path(path).name}: {exc}") from exc
    for warning in job.warnings:
        print(f"contact_ik: warning: {warning}", file=sys.stderr)
    reports = job.finish()
    t_bake = time.perf_counter()
    frames = list(range(start, end + 1))
    ours = metrics.measure(obj, terrain, frames, scene)
    source = metrics.measure_source(obj, terrain, frames, scene)
    quality = [m.as_dict() for m in ours]
    source_quality = [m.as_dict() for m in source]
    found = measure.measure(obj, terrain_objects(_addon().settings(obj)), frames, scene)
    independent = [q.as_dict() for q in found]
    warnings = measure.warnings(obj, found)
    for w in warnings:
        print(f"contact_ik: warning: {pathlib.Path(path).name}: {w}", file=sys.stderr)
    notes = measure.stance_notes(obj, found)
    for n in notes:
        print(f"contact_ik: note: {pathlib.Path(path).name}: {n}", file=sys.stderr)
    t_measure = time.perf_counter()
    if out is not None:
        bpy.ops.wm.save_as_mainfile(filepath=str(out), copy=True, check_existing=False)
    for e in exports:
        export_motion(obj, e, start, end)
    t_end = time.perf_counter()
    return {
        "input": str(pathlib.Path(path).resolve()),
        "armature": obj.name,
        "limbs": limbs_found,
        "terrain": terrain_desc,
        "frames": len(frames),
        "frame_range": [start, end],
        "up_axis": getattr(args, "used_up_axis", None),
        "skipped_bind_pose": getattr(args, "skipped_bind_pose", False),
        "skipped_glitch_frames": skipped,
        "fps": scene.render.fps / scene.render.fps_base,
        "action": reports[0].action_name,
        "source_action": reports[0].source_name,
        "bake_read": reports[0].read,  # how the bake obtained the animation's result (see core/bake.py)
        "output": str(out) if out is not None else None,
        "exports": [str(e) for e in exports],
        "quality": quality,
        "quality_before": source_quality,
        "independent": independent,
        "soles": {lb.name: sole_of(obj, lb.end_bone, lb.toe_bone, lb.foot_offset).source
                  for lb in _addon().settings(obj).limbs if lb.kind == "FOOT" and lb.end_bone in obj.data.bones},
        "setup_notes": prepared.warnings,
        # The frames planned on either side as cuts (`contacts.cuts_found`): [frame, longest ankle jump in legs].
        "cuts": [[f, j] for f, j in contacts.cuts_found(obj)],
        "warnings": warnings,
        # What the user should know without it being a warning (`measure.stance_notes`): the exit code stays.
        "notes": notes,
        "timings": {"load_s": t_load - t0, "bake_s": t_bake - t_load, "measure_s": t_measure - t_bake,
                    "save_s": t_end - t_measure, "total_s": t_end - t0,
                    "bake_ms_per_frame": 1000.0 * (t_bake - t_load) / max(1, len(frames))},
    }


def export_motion(obj: bpy.types.Object, path: pathlib.Path, start: int, end: int) -> None:
    import addon_utils

    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    if path.suffix.lower() == ".bvh":
        addon_utils.enable("io_anim_bvh", default_set=False)
        bpy.ops.export_anim.bvh(filepath=str(path), frame_start=start, frame_end=end, check_existing=False)
    elif path.suffix.lower() == ".glb":
        # The armature and the meshes it deforms, with the baked action, as one binary glTF.
        addon_utils.enable("io_scene_gltf2", default_set=False)
        for ob in bpy.context.scene.objects:
            if ob.type == "MESH" and any(m.type == "ARMATURE" and m.object == obj for m in ob.modifiers):
                ob.select_set(True)
        scene = bpy.context.scene
        kept = scene.frame_start, scene.frame_end
        scene.frame_start, scene.frame_end = start, end
        try:
            bpy.ops.export_scene.gltf(filepath=str(path), export_format="GLB", use_selection=True,
                                      export_animations=True, export_frame_range=True, check_existing=False)
        finally:
            scene.frame_start, scene.frame_end = kept
    else:
        addon_utils.enable("io_scene_fbx", default_set=False)
        bpy.ops.export_scene.fbx(filepath=str(path), use_selection=True, object_types={"ARMATURE"}, bake_anim=True,
                                 add_leaf_bones=False, bake_anim_use_all_actions=False, bake_anim_use_nla_strips=False,
                                 check_existing=False)


QUALITY_COLUMNS = (
    ("penetration_max_rel", "penetration", "{:.2%}"), ("hover_max_rel", "hover max", "{:.2%}"),
    ("skate_max_rel", "skate max", "{:.2%}"), ("knee_velocity_max", "knee deg/s", "{:.0f}"),
    ("hip_velocity_max", "hip deg/s", "{:.0f}"), ("bone_length_error", "length err", "{:.1e}"),
)


# The independent figures (core/measure.py) per foot: (title, cell from the foot's figures).
INDEPENDENT_COLUMNS = (
    ("contacts", lambda q: f"{q['source_contacts']}"),
    ("under terrain", lambda q: f"{q['penetration_rel']:.2%}"),
    ("hover/source", lambda q: f"{q['hover_max_rel']:.2%}/{q['source_hover_max_rel']:.2%}"),
    ("hover over src", lambda q: f"{q['hover_over_source_rel']:.2%}"),
    ("skate/source", lambda q: f"{q['skate_max_rel']:.2%}/{q['source_skate_max_rel']:.2%}"),
    ("mm at 0.9 m", lambda q: f"{q['skate_max_mm']:.0f}"),
    ("knee speed/acc", lambda q: f"{q['knee_ratio']:.2f}x/{q['knee_acceleration_ratio']:.2f}x"),
    ("hip speed/acc", lambda q: f"{q['hip_ratio']:.2f}x/{q['hip_acceleration_ratio']:.2f}x"),
    ("moved", lambda q: f"{q['identity_max_rel']:.2%}"),
)


def format_quality(report: dict) -> str:
    """The report's metrics as text: the model's own figures (ours, and the source animation's beside them),
    then the independent ones (what a viewer sees), each table saying which it is."""
    lines = [f"{pathlib.Path(report['input']).name}: {report['frames']} frames on {report['terrain']}",
             "The model's own figures (its detected contacts, the sole points it placed):"]
    head = f"{'limb':<12} {'':<7}" + "".join(f"{title:>13}" for _k, title, _f in QUALITY_COLUMNS)
    lines.append(head)
    for ours, src in zip(report["quality"], report["quality_before"] or [None] * len(report["quality"])):
        for label, row in (("ours", ours), ("source", src)):
            if row is None:
                continue
            cells = "".join(f"{fmt.format(row[k]):>13}" for k, _t, fmt in QUALITY_COLUMNS)
            lines.append(f"{row['limb'] if label == 'ours' else '':<12} {label:<7}{cells}")
    if report.get("independent"):
        lines += ["Independent figures (contacts from the source by a detector of its own; every sole point of the "
                  "skeleton and the skinned mesh, world space, ray cast onto the terrain; % of the leg; speed and "
                  "acceleration over the source's peaks; hover over src: how much higher ours is than the source's own "
                  "in the same frames; moved: the largest move of a sole point from the source's, "
                  "which is the identity on flat ground at the source's floor):",
                  f"{'limb':<12}" + "".join(f"{title:>16}" for title, _c in INDEPENDENT_COLUMNS)]
        for q in report["independent"]:
            lines.append(f"{q['limb']:<12}" + "".join(f"{cell(q):>16}" for _t, cell in INDEPENDENT_COLUMNS))
    return "\n".join(lines)


def _print_summary(report: dict) -> None:
    worst = max((q["penetration_max_rel"] for q in report["quality"]), default=0.0)
    print(f"contact_ik: baked {report['frames']} frames of {report['armature']!r} ({pathlib.Path(report['input']).name}) "
          f"on {report['terrain']} -> {report['output']} in {report['timings']['total_s']:.2f} s "
          f"(worst penetration {worst:.2e} x leg)")


def _write_json(path: str, data: dict) -> None:
    p = pathlib.Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=2, default=str))


def _detect(args: argparse.Namespace) -> int:
    from .core import detect

    load(args.inputs[0], args)
    obj = pick_armature(args.armature)
    found = detect.detect_limbs(detect.bones_from_armature(obj))
    if not found:
        print(f"contact_ik: no limbs detected in {obj.name!r}", file=sys.stderr)
        return 2
    print(detect.describe(found))
    return 0


# --------------------------------------------------------------------------------------------- batch


def worker_command() -> list[str]:
    """How to start one more Contact IK process: Blender itself, or Python with the bpy wheel's runner."""
    if bpy.app.binary_path and not getattr(bpy.app, "is_module", False):
        return [bpy.app.binary_path, "--background", "--command", "contact_ik"]
    runner = os.environ.get("CONTACT_IK_RUNNER")
    if not runner:
        raise InputError("a batch needs worker processes: run through tools/contact_ik_cli.py or Blender's --command")
    return [sys.executable, runner]


def run_batch(inputs: list[str], args: argparse.Namespace) -> int:
    jobs_list = batch_jobs(inputs, args)
    base = worker_command()
    jobs = args.jobs or os.cpu_count() or 1
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="contact_ik_batch_") as folder:  # the workers' reports, removed after
        return _run_batch(jobs_list, args, base, jobs, t0, pathlib.Path(folder))


def _run_batch(jobs_list: list[Job], args: argparse.Namespace, base: list[str], jobs: int, t0: float,
               tmp: pathlib.Path) -> int:

    def one(i_job: tuple[int, Job]) -> dict:
        i, job = i_job
        report = tmp / f"clip_{i}.json"
        started = time.perf_counter()
        proc = subprocess.run(base + job_args(job, args, str(report)), capture_output=True, text=True)
        took = time.perf_counter() - started
        data = json.loads(report.read_text()) if report.exists() else {"clips": [], "failed": []}
        err_lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("contact_ik:")]
        return {"input": job.input, "terrain": job.terrain, "code": proc.returncode, "seconds": took, "report": data,
                "error": err_lines[-1] if err_lines else (proc.stderr.strip().splitlines() or [""])[-1]}

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, enumerate(jobs_list)))
    clips, failed = [], []
    for r in results:
        if r["code"] in (0, WARNED) and r["report"]["clips"]:
            clip = r["report"]["clips"][0]
            clip["worker_s"] = r["seconds"]
            clips.append(clip)
        else:
            failed.append({"input": r["input"], "terrain": r["terrain"], "exit_code": r["code"], "error": r["error"]})
    summary = {"clips": clips, "failed": failed, "jobs": jobs, "wall_s": time.perf_counter() - t0}
    if args.report:
        _write_json(args.report, summary)
    print(f"contact_ik: batch of {len(jobs_list)} clip(s) with {jobs} worker(s): {len(clips)} baked, {len(failed)} "
          f"failed in {summary['wall_s']:.1f} s")
    for f in failed:
        print(f"  FAILED {f['input']}: {f['error']}", file=sys.stderr)
    warned = [c for c in clips if c.get("warnings")]
    for c in warned:
        print(f"  WARNING {c['input']}: {'; '.join(c['warnings'])}", file=sys.stderr)
    return 1 if failed else WARNED if warned else 0


_handle: Any = None


def register() -> None:
    global _handle
    if hasattr(bpy.utils, "register_cli_command"):
        _handle = bpy.utils.register_cli_command("contact_ik", execute)


def unregister() -> None:
    global _handle
    if _handle is not None:
        bpy.utils.unregister_cli_command(_handle)
        _handle = None
