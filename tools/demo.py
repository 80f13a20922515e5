"""The main job: builds and validates the extension zip, then runs the headless demo in real Blender.

    .venv/bin/python tools/demo.py [--quick] [--out DIR] [--extension ZIP] [--update-docs]

The demo authors a scene in code (a staircase and an uneven rocky slope, the Rigify human metarig with
a simple skinned body, a flat-ground walk cycle keyed on its bones), saves it as `demo_source.blend`,
plants and bakes the feet with the `contact_ik bake` command (tools/contact_ik_cli.py: the built zip,
installed as a user installs it) and, from the baked file, writes into the output folder (`out/`):

    demo.blend        the baked walk beside a copy playing the source animation, camera and labels
    before_after.png  Workbench renders of the same frames, source (top) and Contact IK (bottom)
    demo.mp4          the whole walk, source above, Contact IK below
    feet.png          each foot's sole height against the terrain under it, before and after
    feet.json         the numbers behind feet.png (per frame, per foot)

and on the way: demo_source.blend (the bake's input), demo_baked.blend and bake_report.json (the
command's own output and report), frames/ (the stills), runner_user/ and blender_user/ (the Blender
user folders of the two processes, so a real Blender configuration is never touched).

It writes nothing outside the output folder except the extension zip (`dist/`, as `make build`; not
with --extension) and, only with --update-docs, `docs/before_after.png` (the README's picture).
--quick: 100 frames (flat ground and the stairs), tiny renders, a video of every fourth frame (the test
runs it). --extension ZIP: use that built zip instead of building dist/.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
sys.path.insert(0, str(TOOLS))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, default=ROOT / "out", help="output folder (default: out/)")
    p.add_argument("--quick", action="store_true", help="fewer frames and tiny renders (for tests)")
    p.add_argument("--extension", type=pathlib.Path, help="a built contact_ik zip to use (default: build dist/)")
    p.add_argument("--update-docs", action="store_true", help="also write docs/before_after.png (full run only)")
    args = p.parse_args(argv)
    if args.update_docs and args.quick:
        p.error("--update-docs takes the full run's picture: drop --quick")
    return args


class Settings:
    """What differs between the full demo and --quick."""

    def __init__(self, quick: bool):
        self.quick = quick
        self.frames = 100 if quick else 250
        self.px_per_m = 40 if quick else 170  # the video's resolution: pixels per metre of the view
        self.still_percent = 100 if quick else 140  # before_after.png's, relative to the video's
        self.video_step = 4 if quick else 1
        self.strides = (2, 3) if quick else (2, 3, 5, 6)  # near-foot mid-stances shown in before_after.png


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # Blender's user folder inside the output folder: a real Blender configuration is never touched.
    os.environ["BLENDER_USER_RESOURCES"] = str(out / "blender_user")
    import build_extension

    if args.extension:
        zip_path = args.extension.resolve()
        if not zip_path.is_file():
            raise SystemExit(f"demo: --extension {zip_path}: no such file (build one with `make build`)")
    else:
        zip_path = build_extension.build(ROOT / "dist")
        print(f"Contact IK extension built and validated: {zip_path}")
        print("Install it in Blender: Preferences > Get Extensions > Install from Disk.")
    cfg = Settings(args.quick)
    import demo_render
    import demo_scene

    t = time.perf_counter()
    source = out / "demo_source.blend"
    import bpy

    with demo_render.quiet():
        demo_scene.build_source(cfg.frames)
        bpy.ops.wm.save_as_mainfile(filepath=str(source), check_existing=False)
    print(f"demo: scene and walk authored ({cfg.frames} frames) in {time.perf_counter() - t:.1f} s -> {source}")

    t = time.perf_counter()
    baked, report = out / "demo_baked.blend", out / "bake_report.json"
    bake(source, baked, report, zip_path, out)
    clip = json.loads(report.read_text())["clips"][0]
    print(f"demo: contact_ik bake ({clip['frames']} frames, bake {clip['timings']['bake_s']:.2f} s) in "
          f"{time.perf_counter() - t:.1f} s -> {baked}")

    t = time.perf_counter()
    with demo_render.quiet():
        bpy.ops.wm.open_mainfile(filepath=str(baked), load_ui=False)
    feet = demo_render.measure_feet(clip["source_action"])
    (out / "feet.json").write_text(json.dumps(feet, indent=1))
    demo_render.plot_feet(feet, out / "feet.png")
    print(f"demo: feet measured and plotted in {time.perf_counter() - t:.1f} s -> {out / 'feet.png'}")

    t = time.perf_counter()
    stage = demo_render.stage(clip["source_action"], cfg)
    with demo_render.quiet():
        bpy.ops.wm.save_as_mainfile(filepath=str(out / "demo.blend"), check_existing=False)
    frames = demo_render.pick_frames(feet, cfg)
    demo_render.before_after(stage, frames, feet, out / "before_after.png", out / "frames", cfg)
    print(f"demo: before/after frames {frames} rendered in {time.perf_counter() - t:.1f} s -> {out / 'before_after.png'}")

    t = time.perf_counter()
    video = demo_render.animation(stage, cfg, out / "demo.mp4")
    print(f"demo: animation rendered in {time.perf_counter() - t:.1f} s -> {video}")

    if args.update_docs:
        size = demo_render.docs_copy(out / "before_after.png", ROOT / "docs" / "before_after.png")
        print(f"demo: README picture updated ({size // 1024} KB) -> {ROOT / 'docs' / 'before_after.png'}")
    summary = feet["summary"]
    skeleton, mesh = worst_independent(clip)
    print(f"demo: sole below the terrain, worst: source {summary['source_penetration_rel']:.1%} of the leg, "
          f"Contact IK {summary['baked_penetration_rel']:.2%} (feet.json: the heel under the ankle and the toe "
          f"tip, by ray cast); the bake report, measured independently: {skeleton:.2%} at the skeleton's ball "
          f"and toe tip, {mesh:.2%} at the skinned sole")
    print(f"demo: done in {time.perf_counter() - t0:.0f} s. Outputs in {out}:")
    for path in (out / "demo.blend", out / "before_after.png", video, out / "feet.png", out / "feet.json"):
        print(f"  {path}")
    return 0


def bake(source: pathlib.Path, baked: pathlib.Path, report: pathlib.Path, zip_path: pathlib.Path,
         out: pathlib.Path) -> None:
    """`contact_ik bake` on the source .blend, through the bpy-wheel runner in its own process."""
    env = dict(os.environ)
    env.pop("BLENDER_USER_RESOURCES", None)
    env["CONTACT_IK_EXTENSION"] = str(zip_path)
    env["CONTACT_IK_USER"] = str(out / "runner_user")
    cmd = [sys.executable, str(TOOLS / "contact_ik_cli.py"), "bake", str(source), "--terrain", "Terrain",
           "--armature", "Walker", "--output", str(baked), "--report", str(report), "--overwrite"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if not bake_went_through(proc.returncode, proc.stderr):
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"demo: contact_ik bake failed ({proc.returncode}): {' '.join(cmd)}")
    for line in proc.stderr.splitlines():
        if "warning" in line.lower():
            print(f"demo: the bake warns (exit {proc.returncode}): {line}")


def bake_went_through(code: int, stderr: str) -> bool:
    """The README's exit codes: 0 done; 3 done with a warning, printed (the demo goes on and shows it);
    anything else is a failure."""
    return code == 0 or (code == 3 and "warning" in stderr.lower())


def worst_independent(clip: dict) -> tuple[float, float]:
    """The bake report's independent measure (`core/measure.py`, nothing taken from the model): the worst
    penetration of any foot's skeleton sole points and of its skinned sole, in fractions of the leg."""
    feet = clip.get("independent") or []
    return (max((f["penetration_skeleton_rel"] for f in feet), default=0.0),
            max((f.get("penetration_mesh_rel") or 0.0 for f in feet), default=0.0))


if __name__ == "__main__":
    code = main(sys.argv[1:])
    import bpy_kit  # the 4.2/4.5 wheels cannot exit normally after Rigify, which the demo enables

    bpy_kit.leave_now_if_exit_is_broken(code)
    sys.exit(code)
