"""The `contact_ik` command's arguments and a batch's jobs, without Blender: `cli.py` (in Blender) and the
cluster coordinator (`tools/cluster.py`, in any Python with dask) read the same command line and give every
clip x terrain the same outputs and the same per-clip command. Standard library only: no `bpy` import."""

from __future__ import annotations

import argparse
import pathlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

MOTION = {".bvh", ".fbx", ".glb", ".gltf"}
GLTF = {".glb", ".gltf"}  # glTF is Y-up by its specification: Blender's importer turns it Z-up itself
TERRAIN_FILES = {".obj", ".ply", ".stl"}
EXPORT_FORMATS = {"bvh", "fbx", "glb"}
EXPORTS = {".bvh", ".fbx", ".glb", ".blend"}
AXES = ["X", "Y", "Z", "-X", "-Y", "-Z"]


WARNED = 3  # exit code: baked, but with a warning the user must read (nothing planted, feet under the terrain)


try:  # inside the extension: its one exception type for problems the user can fix
    from .core.errors import UserError as InputError
except ImportError:  # loaded on its own, outside the extension (tools/cluster.py, in a Python without Blender)

    class InputError(ValueError):  # type: ignore[no-redef]
        """Bad input: the message says what is wrong and how to fix it (exit code 2)."""


# Leg Stretch's range (the armature setting `leg_stretch`, properties.py): a fraction of the leg.
LEG_STRETCH = (0.9, 1.0)


def leg_stretch(text: str) -> float:
    """--leg-stretch's value: a number within LEG_STRETCH, or a message that says so."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    lo, hi = LEG_STRETCH
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction of the leg from {lo} to {hi}: give e.g. "
                                         "--leg-stretch 1.0 (the armature's Leg Stretch setting; 0.98 by default)")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="contact_ik", description="Contact IK: plant feet on terrain and bake, headless.")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bake", help="bake planted feet (and hands) into a new action")
    b.add_argument("inputs", nargs="+", help=".blend, .bvh, .fbx, .glb or .gltf files, or folders of them")
    b.add_argument("--terrain", action="append", default=None,
                   help="terrain: an object name in the .blend, or a mesh file (.obj, .ply, .stl); default: the rig's "
                   "terrain setting, else a flat ground at the animation's floor. Repeat it to bake every clip on each "
                   "terrain (outputs are then named INPUT_STEM.TERRAIN_STEM.contact_ik.*)")
    b.add_argument("--armature", help="name of the armature to bake (default: the only, or the animated one)")
    b.add_argument("--output", help="output .blend (default: INPUT_STEM.contact_ik.blend beside the input)")
    b.add_argument("--output-dir", help="folder for outputs (batch default: beside each input)")
    b.add_argument("--export", action="append", default=[], help="also write the cleaned motion: .bvh, .fbx or .glb "
                   "(repeatable; in a batch give just the extension, e.g. --export .fbx)")
    b.add_argument("--report", help="write a JSON report: per clip and limb, frames, quality metrics, timings")
    b.add_argument("--frame-start", type=int, help="first frame (default: the scene's)")
    b.add_argument("--frame-end", type=int, help="last frame (default: the scene's)")
    b.add_argument("--up-axis", default="auto", choices=["auto", *AXES],
                   help="up axis of a motion file: auto (default) tries Y, the BVH/FBX convention, and takes Z "
                   "when the skeleton then lies on its back")
    b.add_argument("--forward-axis", default=None, choices=AXES,
                   help="forward axis of a motion file (default: -Z for Y up, Y for Z up)")
    b.add_argument("--scale", type=float, default=1.0, help="scale applied when importing a motion file")
    b.add_argument("--no-cuts", action="store_true",
                   help="treat no frame as a cut: a jump of every foot faster than 20 leg lengths per second (a loop's "
                   "seam, an NLA repeat) is followed as a move, not planned on either side as a fresh start (the "
                   "armature's Detect Cuts setting off); the report lists the frames treated as cuts otherwise")
    b.add_argument("--leg-stretch", type=leg_stretch, default=None, metavar="FRACTION",
                   help=f"how straight a leg on the ground may be ({LEG_STRETCH[0]}-{LEG_STRETCH[1]} of its length) "
                   "before the pelvis is lowered for it instead: the armature's Leg Stretch setting (default: the "
                   "armature's, 0.98 unless set). Higher keeps a straight-legged stance (an idle) straighter")
    b.add_argument("--overwrite", action="store_true", help="allow writing over existing files, the input included")
    b.add_argument("--jobs", type=int, default=0, help="worker processes for a batch (default: one per core)")
    b.add_argument("--scheduler", help="run the batch on a Dask cluster: the scheduler's address, tcp://HOST:PORT "
                   "(needs dask[distributed] in the Python that runs this command, and --output-dir, a folder every "
                   "worker reaches)")
    b.add_argument("--worker-command", help="with --scheduler: how a worker starts Contact IK, e.g. "
                   "'blender --background --command contact_ik' or 'PYTHON /path/tools/contact_ik_cli.py' (default: "
                   "$CONTACT_IK_WORKER_COMMAND on the worker, else the worker's own Python when it has the bpy wheel, "
                   "else `blender` on its PATH)")
    e = sub.add_parser("evaluate", help="plant and measure without writing anything but the report: penetration, "
                       "hover, skate, pops, bone length and reach errors, beside the source animation's own")
    e.add_argument("inputs", nargs="+", help=".blend, .bvh, .fbx, .glb or .gltf files")
    for action in b._actions:
        if action.dest in ("terrain", "armature", "report", "frame_start", "frame_end", "up_axis", "forward_axis",
                           "scale", "no_cuts", "leg_stretch"):
            e._add_action(action)
    e.set_defaults(output=None, output_dir=None, export=[], overwrite=False, jobs=1, scheduler=None,
                   worker_command=None)
    d = sub.add_parser("detect", help="list the limbs found in a file")
    d.add_argument("inputs", nargs=1)
    d.add_argument("--armature")
    d.add_argument("--up-axis", default="auto", choices=["auto", *AXES])
    d.add_argument("--forward-axis", default=None, choices=AXES)
    d.add_argument("--scale", type=float, default=1.0)
    return p


def terrains(args: argparse.Namespace) -> list[Optional[str]]:
    """The terrains given (--terrain, repeatable), or [None] for the default."""
    return list(getattr(args, "terrain", None) or [None])


def expand_inputs(items: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        p = pathlib.Path(item)
        if p.is_dir():
            found = sorted(str(c) for c in p.iterdir() if c.suffix.lower() in MOTION | {".blend"})
            if not found:
                raise InputError(f"folder {item!r} holds no .blend, .bvh, .fbx, .glb or .gltf files")
            out += found
        else:
            out.append(item)
    return out


def is_batch(inputs: Sequence[str], args: argparse.Namespace) -> bool:
    return len(inputs) > 1 or len(terrains(args)) > 1 or any(pathlib.Path(i).is_dir() for i in args.inputs)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "terrain"


@dataclass(frozen=True)
class Job:
    """One clip on one terrain: what a batch worker bakes, and the files it must leave behind."""

    key: str  # unique in the batch, safe as a file name: INPUT_STEM[.TERRAIN_STEM]
    input: str
    terrain: Optional[str]
    output: pathlib.Path  # the baked .blend
    exports: tuple[pathlib.Path, ...]


def batch_jobs(inputs: Sequence[str], args: argparse.Namespace) -> list[Job]:
    """Every clip x terrain of a batch with its output paths (beside each input, or in --output-dir)."""
    if args.output:
        raise InputError("--output names one file: for a batch use --output-dir")
    for e in args.export:
        if e.lower().lstrip(".") not in EXPORT_FORMATS:
            raise InputError(f"--export {e!r}: in a batch give just the extension, --export .bvh, .fbx or .glb")
    ts = terrains(args)
    jobs = []
    for path in inputs:
        src = pathlib.Path(path)
        folder = pathlib.Path(args.output_dir) if args.output_dir else src.parent
        for terrain in ts:
            key = src.stem if len(ts) == 1 else f"{src.stem}.{_slug(pathlib.Path(terrain).stem if terrain else 'default')}"
            exports = tuple(folder / f"{key}.contact_ik.{e.lower().lstrip('.')}" for e in args.export)
            jobs.append(Job(key, path, terrain, folder / f"{key}.contact_ik.blend", exports))
    keys = [j.key for j in jobs]
    clash = sorted({k for k in keys if keys.count(k) > 1})
    if clash:
        raise InputError(f"two inputs would write the same outputs ({', '.join(clash)}): give clips distinct file "
                         "names, or bake them in separate batches")
    return jobs


def job_args(job: Job, args: argparse.Namespace, report: str, output: Optional[pathlib.Path] = None,
             exports: Optional[Sequence[pathlib.Path]] = None) -> list[str]:
    """The `contact_ik bake` arguments that bake one job alone (its report to `report`); `output` and
    `exports` replace the job's own paths (a cluster worker writes under temporary names first)."""
    out = ["bake", str(job.input), "--report", report, "--output", str(output or job.output),
           f"--up-axis={args.up_axis}", f"--scale={args.scale!r}"]
    if args.forward_axis:
        out.append(f"--forward-axis={args.forward_axis}")
    for e in (exports if exports is not None else job.exports):
        out += ["--export", str(e)]
    for flag, value in (("--terrain", job.terrain), ("--armature", args.armature), ("--frame-start", args.frame_start),
                        ("--frame-end", args.frame_end)):
        if value is not None:
            out += [flag, str(value)]
    if args.overwrite:
        out.append("--overwrite")
    if getattr(args, "no_cuts", False):
        out.append("--no-cuts")
    if getattr(args, "leg_stretch", None) is not None:
        out.append(f"--leg-stretch={args.leg_stretch!r}")
    return out
