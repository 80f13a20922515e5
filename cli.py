"""Headless Contact IK: `blender --background --command contact_ik bake ...`, or the same arguments to
`tools/contact_ik_cli.py` with only the `bpy` wheel installed.

    contact_ik bake INPUT [INPUT ...] [--terrain NAME|FILE] [--output OUT.blend] [--export OUT.bvh|OUT.fbx]
                    [--report REPORT.json] [--frame-start N] [--frame-end N] [--armature NAME]
                    [--up-axis Z] [--forward-axis Y] [--scale S] [--overwrite] [--jobs N] [--output-dir DIR]
    contact_ik detect INPUT [--armature NAME] [--up-axis Z] [--forward-axis Y]

INPUT is a .blend, or a motion file (.bvh, .fbx) read with Blender's own importers. Several inputs,
or a folder, make a batch: a pool of worker processes (one per core by default) bakes one clip each;
a bad clip fails alone and is listed in the summary report. Exit codes: 0 done, 2 bad input (the
message says how to fix it), 1 a batch in which some clips failed, or an unexpected error.
"""

from __future__ import annotations

import argparse
import json
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

from .core.errors import UserError

MOTION = {".bvh", ".fbx"}
TERRAIN_FILES = {".obj", ".ply", ".stl"}
EXPORTS = {".bvh", ".fbx", ".blend"}


# Bad input: the message says what is wrong and how to fix it (exit code 2). The extension's one type for
# problems the user can fix (`core.errors.UserError`).
InputError = UserError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="contact_ik", description="Contact IK: plant feet on terrain and bake, headless.")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bake", help="bake planted feet (and hands) into a new action")
    b.add_argument("inputs", nargs="+", help=".blend, .bvh or .fbx files, or folders of them")
    b.add_argument("--terrain", help="terrain: an object name in the .blend, or a mesh file (.obj, .ply, .stl); "
                   "default: the rig's terrain setting, else a flat ground at the animation's floor")
    b.add_argument("--armature", help="name of the armature to bake (default: the only, or the animated one)")
    b.add_argument("--output", help="output .blend (default: INPUT_STEM.contact_ik.blend beside the input)")
    b.add_argument("--output-dir", help="folder for outputs (batch default: beside each input)")
    b.add_argument("--export", action="append", default=[], help="also write the cleaned motion: .bvh or .fbx "
                   "(repeatable; in a batch give just the extension, e.g. --export .fbx)")
    b.add_argument("--report", help="write a JSON report: per clip and limb, frames, quality metrics, timings")
    b.add_argument("--frame-start", type=int, help="first frame (default: the scene's)")
    b.add_argument("--frame-end", type=int, help="last frame (default: the scene's)")
    b.add_argument("--up-axis", default="auto", choices=["auto", "X", "Y", "Z", "-X", "-Y", "-Z"],
                   help="up axis of a motion file: auto (default) tries Y, the BVH/FBX convention, and takes Z "
                   "when the skeleton then lies on its back")
    b.add_argument("--forward-axis", default=None, choices=["X", "Y", "Z", "-X", "-Y", "-Z"],
                   help="forward axis of a motion file (default: -Z for Y up, Y for Z up)")
    b.add_argument("--scale", type=float, default=1.0, help="scale applied when importing a motion file")
    b.add_argument("--overwrite", action="store_true", help="allow writing over existing files, the input included")
    b.add_argument("--jobs", type=int, default=0, help="worker processes for a batch (default: one per core)")
    e = sub.add_parser("evaluate", help="plant and measure without writing anything but the report: penetration, "
                       "hover, skate, pops, bone length and reach errors, beside the source animation's own")
    e.add_argument("inputs", nargs="+", help=".blend, .bvh or .fbx files")
    for action in b._actions:
        if action.dest in ("terrain", "armature", "report", "frame_start", "frame_end", "up_axis", "forward_axis",
                           "scale"):
            e._add_action(action)
    e.set_defaults(output=None, output_dir=None, export=[], overwrite=False, jobs=1)
    d = sub.add_parser("detect", help="list the limbs found in a file")
    d.add_argument("inputs", nargs=1)
    d.add_argument("--armature")
    d.add_argument("--up-axis", default="auto", choices=["auto", "X", "Y", "Z", "-X", "-Y", "-Z"])
    d.add_argument("--forward-axis", default=None, choices=["X", "Y", "Z", "-X", "-Y", "-Z"])
    d.add_argument("--scale", type=float, default=1.0)
    return p


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
        if args.command == "evaluate":
            reports = [bake_file(i, args, write=False) for i in inputs]
            if args.report:
                _write_json(args.report, {"clips": reports, "failed": []})
            for r in reports:
                print(format_quality(r))
            return 0
        if len(inputs) > 1 or any(pathlib.Path(i).is_dir() for i in args.inputs):
            return run_batch(inputs, args)
        report = bake_file(inputs[0], args)
        if args.report:
            _write_json(args.report, {"clips": [report], "failed": []})
        _print_summary(report)
        return 0
    except InputError as exc:
        print(f"contact_ik: error: {exc}", file=sys.stderr)
        if getattr(args, "report", None) and args.command == "bake":
            _write_json(args.report, {"clips": [], "failed": [{"input": args.inputs, "error": str(exc)}]})
        return 2
    except Exception as exc:  # noqa: BLE001  the command line reports every failure as a message and a code
        traceback.print_exc()
        print(f"contact_ik: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def expand_inputs(items: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        p = pathlib.Path(item)
        if p.is_dir():
            found = sorted(str(c) for c in p.iterdir() if c.suffix.lower() in MOTION | {".blend"})
            if not found:
                raise InputError(f"folder {item!r} holds no .blend, .bvh or .fbx files")
            out += found
        else:
            out.append(item)
    return out


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
        raise InputError(f"{path!r}: unsupported input type {ext!r}; give a .blend, .bvh or .fbx file")
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


def _import_motion(p: pathlib.Path, ext: str, up: str, args: argparse.Namespace) -> None:
    import addon_utils

    bpy.ops.wm.read_homefile(use_empty=True)
    forward = args.forward_axis or ("Y" if up.endswith("Z") else "-Z")
    try:
        if ext == ".bvh":
            addon_utils.enable("io_anim_bvh", default_set=False)
            bpy.ops.import_anim.bvh(filepath=str(p), axis_up=up, axis_forward=forward, global_scale=args.scale,
                                    update_scene_fps=True, update_scene_duration=True)
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
    """A large plane at the animation's floor, in the armature's space (any up axis, any scale)."""
    import bmesh
    from mathutils import Matrix

    from .core import setup

    s = _addon().settings(obj)
    s.floor_height = setup.detect_floor(obj, bpy.context.scene)
    leg = max((lb.length for lb in s.limbs), default=1.0) or 1.0
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=500.0 * leg)
    me = bpy.data.meshes.new("Contact IK Ground")
    bm.to_mesh(me)
    bm.free()
    ground = bpy.data.objects.new("Contact IK Ground", me)
    bpy.context.scene.collection.objects.link(ground)
    ground.matrix_world = obj.matrix_world @ Matrix.Translation((0.0, 0.0, s.floor_height))
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
        if ep.suffix.lower() not in {".bvh", ".fbx"} and e.lower() not in {".bvh", ".fbx", "bvh", "fbx"}:
            raise InputError(f"--export {e!r}: give a .bvh or .fbx path (or just .bvh / .fbx)")
        if e.lower().lstrip(".") in {"bvh", "fbx"}:
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
    from .core import bake, metrics, setup

    t0 = time.perf_counter()
    out, exports = outputs_for(path, args) if write else (None, [])
    load(path, args)
    t_load = time.perf_counter()
    obj = pick_armature(args.armature)
    limbs_found = ensure_limbs(obj)
    terrain_desc = set_terrain(obj, args.terrain)
    scene = bpy.context.scene
    if bake.is_baked(obj.animation_data.action if obj.animation_data else None):
        src = bake.use_source(obj)
        print(f"contact_ik: {obj.name!r} played a bake; baking its source {src.name!r} again")  # type: ignore[union-attr]
    start = args.frame_start if args.frame_start is not None else scene.frame_start
    end = args.frame_end if args.frame_end is not None else scene.frame_end
    try:
        terrain = setup.prepare(obj, scene).terrain  # as Plant Feet: limbs, terrain, floor, contacts
    except InputError as exc:
        raise InputError(f"{pathlib.Path(path).name}: {exc}") from exc
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
        "fps": scene.render.fps / scene.render.fps_base,
        "action": reports[0].action_name,
        "source_action": reports[0].source_name,
        "output": str(out) if out is not None else None,
        "exports": [str(e) for e in exports],
        "quality": quality,
        "quality_before": source_quality,
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


def format_quality(report: dict) -> str:
    """The report's metrics as a text table: ours, and the source animation's beside them."""
    lines = [f"{pathlib.Path(report['input']).name}: {report['frames']} frames on {report['terrain']}"]
    head = f"{'limb':<12} {'':<7}" + "".join(f"{title:>13}" for _k, title, _f in QUALITY_COLUMNS)
    lines.append(head)
    for ours, src in zip(report["quality"], report["quality_before"] or [None] * len(report["quality"])):
        for label, row in (("ours", ours), ("source", src)):
            if row is None:
                continue
            cells = "".join(f"{fmt.format(row[k]):>13}" for k, _t, fmt in QUALITY_COLUMNS)
            lines.append(f"{row['limb'] if label == 'ours' else '':<12} {label:<7}{cells}")
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


def _clip_args(path: str, args: argparse.Namespace, report: str) -> list[str]:
    src = pathlib.Path(path)
    folder = pathlib.Path(args.output_dir) if args.output_dir else src.parent
    out = ["bake", path, "--report", report, "--output", str(folder / f"{src.stem}.contact_ik.blend"),
           f"--up-axis={args.up_axis}", f"--scale={args.scale!r}"]
    if args.forward_axis:
        out.append(f"--forward-axis={args.forward_axis}")
    for e in args.export:
        out += ["--export", e if e.lower().lstrip(".") in {"bvh", "fbx"} else str(folder / f"{src.stem}{pathlib.Path(e).suffix}")]
    for flag, value in (("--terrain", args.terrain), ("--armature", args.armature), ("--frame-start", args.frame_start),
                        ("--frame-end", args.frame_end), ("--output-dir", args.output_dir)):
        if value is not None:
            out += [flag, str(value)]
    if args.overwrite:
        out.append("--overwrite")
    return out


def run_batch(inputs: list[str], args: argparse.Namespace) -> int:
    if args.output:
        raise InputError("--output names one file: for a batch use --output-dir")
    base = worker_command()
    jobs = args.jobs or os.cpu_count() or 1
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="contact_ik_batch_") as folder:  # the workers' reports, removed after
        return _run_batch(inputs, args, base, jobs, t0, pathlib.Path(folder))


def _run_batch(inputs: list[str], args: argparse.Namespace, base: list[str], jobs: int, t0: float,
               tmp: pathlib.Path) -> int:

    def one(i_path: tuple[int, str]) -> dict:
        i, path = i_path
        report = tmp / f"clip_{i}.json"
        started = time.perf_counter()
        proc = subprocess.run(base + _clip_args(path, args, str(report)), capture_output=True, text=True)
        took = time.perf_counter() - started
        data = json.loads(report.read_text()) if report.exists() else {"clips": [], "failed": []}
        err_lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("contact_ik:")]
        return {"input": path, "code": proc.returncode, "seconds": took, "report": data,
                "error": err_lines[-1] if err_lines else (proc.stderr.strip().splitlines() or [""])[-1]}

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, enumerate(inputs)))
    clips, failed = [], []
    for r in results:
        if r["code"] == 0 and r["report"]["clips"]:
            clip = r["report"]["clips"][0]
            clip["worker_s"] = r["seconds"]
            clips.append(clip)
        else:
            failed.append({"input": r["input"], "exit_code": r["code"], "error": r["error"]})
    summary = {"clips": clips, "failed": failed, "jobs": jobs, "wall_s": time.perf_counter() - t0}
    if args.report:
        _write_json(args.report, summary)
    print(f"contact_ik: batch of {len(inputs)} clip(s) with {jobs} worker(s): {len(clips)} baked, {len(failed)} failed "
          f"in {summary['wall_s']:.1f} s")
    for f in failed:
        print(f"  FAILED {f['input']}: {f['error']}", file=sys.stderr)
    return 0 if not failed else 1


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
