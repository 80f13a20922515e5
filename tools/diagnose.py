"""Why one run of `make quality` misses: a clip over one terrain, baked as `tools/quality.py` bakes it, then,
foot by foot, where its independent figures come from, frame by frame.

    .venv/bin/python tools/diagnose.py CLIP TERRAIN [--window 8] [--frames FIRST LAST]

CLIP is a file name of ../shared/mocap (or of tests/data, or a path); TERRAIN one of flat, slope, stairs,
noise, rings. For each foot it prints:

- the independent figures (`core/measure.py`, the ones docs/quality.md shows) and the frame of the worst hover;
- the source's contacts as the independent detector finds them beside Contact IK's own contacts (first and
  last frame, the frames it holds the ball on), and how many frames of each source contact the model holds;
- around the knee's and the hip's peak speed (where over 1.2x the source's), around the worst hover and the
  worst skate (where over their targets), around the identity's largest move (flat ground, where over its
  target), or over --frames: per frame what the model holds (outside, contact,
  ball), the knee and hip speed beside the source's (deg/s), the heel, ball and toe tip over the terrain under
  each (ours, by ray cast) beside the source's over its own floor, and inside a source contact the ball's
  horizontal drift from where it was on the contact's first frame (the skate figure), ours beside the
  source's, in % of the leg.

A tool for finding the kind of a failure, not a figure of record: the figures of record are make quality's.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))
import bpy  # noqa: E402
import harness  # noqa: E402  (Blender with a private user folder and the built extension installed)
import numpy as np  # noqa: E402
import quality  # noqa: E402


def clip_named(name: str) -> pathlib.Path:
    path = pathlib.Path(name)
    return path if path.is_file() else quality.clip_path_named(name)


def speeds(rotations: list[Any], fps: float) -> np.ndarray:
    """Per frame (the step into it; 0 on the first), the angular speed in deg/s (`metrics.angular_velocities`)."""
    metrics = harness.module("core.metrics")
    w = metrics.angular_velocities(rotations, fps)
    return np.concatenate([[0.0], np.degrees(np.linalg.norm(w, axis=1))])


def angles(rotations: list[Any]) -> np.ndarray:
    """Per frame, each rotation's angle in degrees, 0-180: a quaternion and its negation (the same
    rotation; a pose's sign may flip from one frame to the next) read alike."""
    if not rotations:
        return np.zeros(0)
    a = np.degrees([q.angle for q in rotations])
    return np.minimum(a, 360.0 - a)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("clip")
    ap.add_argument("terrain", choices=quality.TERRAINS)
    ap.add_argument("--window", type=int, default=8, help="frames either side of a peak or of the worst hover")
    ap.add_argument("--over", type=float, default=quality.INDEPENDENT_TARGETS["pops"],
                    help="show the knee's and hip's peak where over this many times the source's (default: the target)")
    ap.add_argument("--frames", type=int, nargs=2, metavar=("FIRST", "LAST"), help="print these frames instead")
    args = ap.parse_args()
    measure = harness.module("core.measure")

    built: dict[str, bpy.types.Object] = {}
    build = quality.build_terrain

    def keep(*a: Any, **k: Any) -> bpy.types.Object:
        built["terrain"] = build(*a, **k)
        return built["terrain"]

    quality.build_terrain = keep
    row = quality.run_clip(clip_named(args.clip), args.terrain)
    scene = bpy.context.scene
    obj = next(o for o in scene.objects if o.type == "ARMATURE" and o.contact_ik.limbs)
    frames = list(range(scene.frame_start, scene.frame_end + 1))
    fps = measure.fps_of(scene)
    feet = measure.feet_of(obj)
    ground = measure.Ground([built["terrain"]], bpy.context.evaluated_depsgraph_get())
    ours = measure.sample(obj, feet, frames, scene)
    with measure.playing_source(obj, scene):
        source = measure.sample(obj, feet, frames, scene)
    scene.frame_set(scene.frame_current)
    floor = measure.source_floor(source)
    held = measure.held_frames(obj, frames, fps)
    limbs = {lb.name: lb for lb in obj.contact_ik.limbs}
    print(f"{row['clip']} on {args.terrain}: frames {frames[0]}-{frames[-1]} at {fps:g} fps")
    for f, r in zip(feet, row["feet"]):
        q = r["independent"]
        leg = measure.leg_length(obj, f)
        o, s = ours[f.name], source[f.name]
        print(f"\n{f.name}: hover {q['hover_max_rel']:.2%} (source {q['source_hover_max_rel']:.2%}; over the source's own "
              f"{q['hover_over_source_rel']:.2%}) at frame "
              f"{frames[0] + q['hover_frame'] if q['hover_frame'] >= 0 else '-'} ({q['hover_held'] or '-'}), skate "
              f"{q['skate_max_rel']:.2%} (source {q['source_skate_max_rel']:.2%}), knee {r['knee_ratio']:.3f}x, hip "
              f"{r['hip_ratio']:.3f}x, penetration {q['penetration_skeleton_rel']:.2%}, identity {q['identity_max_rel']:.2%}")
        state = held.get(f.name, np.zeros(len(frames), dtype=np.int8))
        found = measure.source_contacts(s, floor, leg, fps)
        model = [(c.start, c.end, c.pivot, c.roll, c.land if c.lands else c.start, c.land_heel)
                 for c in limbs[f.name].contacts] if f.name in limbs else []
        print("  model's contacts (first-last, ball held pivot-roll, heel or ball held from before Start): "
              + ", ".join(f"{a}-{b}" + (f" ball {p}-{rl}" if rl > b or p < b else "")
                          + (f" {'heel' if on_heel else 'ball'} from {land}" if land < a else "")
                          for a, b, p, rl, land, on_heel in model))
        print("  source contacts (independent detector), frames the model holds of each: "
              + ", ".join(f"{frames[a]}-{frames[b]} {int((state[a:b + 1] > 0).sum())}/{b - a + 1}" for a, b in found))
        knee, sknee = speeds(o.knee, fps), speeds(s.knee, fps)
        hip, ship = speeds(o.hip, fps), speeds(s.hip, fps)
        # How far the knee is bent (the shin's turn from the thigh, degrees), ours and the source's: a knee
        # folded where the source's leg is straight shows why its speed is over the source's.
        bend, sbend = angles(o.knee), angles(s.knee)
        # The ball's drift over the source contact each frame lies in (the skate figure), ours and the source's.
        drift, sdrift = np.full(len(frames), np.nan), np.full(len(frames), np.nan)
        for a, b in found:
            drift[a:b + 1] = measure.contact_drift(o.ball, a, b) / leg * 100.0
            sdrift[a:b + 1] = measure.contact_drift(s.ball, a, b) / leg * 100.0
        if args.frames:
            first, last = args.frames[0] - frames[0], args.frames[1] - frames[0]
            windows = [("frames", max(0, first), min(len(frames) - 1, last))]
        else:
            windows = []
            for name, a, b in (("knee", knee, sknee), ("hip", hip, ship)):
                if b.max() > 0.0 and a.max() > args.over * b.max():
                    i = int(a.argmax())
                    title = f"{name} peak {a.max():.0f} deg/s (source's {b.max():.0f})"
                    windows.append((title, i - args.window, i + args.window))
            if q["hover_frame"] >= 0 and q["hover_max_rel"] > quality.INDEPENDENT_TARGETS["hover"]:
                i = q["hover_frame"]
                windows.append((f"worst hover {q['hover_max_rel']:.2%}", i - args.window, i + args.window))
            if q.get("identity_frame", -1) >= 0 and q["identity_max_rel"] > quality.INDEPENDENT_TARGETS["identity"] \
                    and quality.judged("identity", row):
                i = q["identity_frame"]
                windows.append((f"identity: moved {q['identity_max_rel']:.2%} from the source "
                                f"({q.get('identity_held') or '-'})", i - args.window, i + args.window))
            if q["skate_max_rel"] > quality.INDEPENDENT_TARGETS["skate"] and np.isfinite(drift).any():
                i = int(np.nanargmax(drift))
                start = next(a for a, b in found if a <= i <= b)
                windows.append((f"worst skate {q['skate_max_rel']:.2%} (its source contact from frame "
                                f"{frames[start]})", i - args.window, i + args.window))
        for title, a, b in windows:
            a, b = max(0, a), min(len(frames) - 1, b)
            print(f"  {title}:")
            print("    frame   held     knee (src)     hip (src)   knee angle (src)   "
                  "heel/ball/tip over the terrain (source's over its floor), ball's drift in its source contact (source's), "
                  "% of leg")
            for k in range(a, b + 1):
                pts = np.stack([o.heel[k], o.ball[k], o.tip[k]])
                over = (pts[:, 2] - ground.heights(pts)) / leg * 100.0
                src = (np.array([s.heel[k][2], s.ball[k][2], s.tip[k][2]]) - floor) / leg * 100.0
                speed = (f"{knee[k]:5.0f} ({sknee[k]:4.0f})  {hip[k]:5.0f} ({ship[k]:4.0f})  "
                         f"{bend[k]:6.1f} ({sbend[k]:5.1f})")
                kind = measure.HELD_KINDS[int(state[k])]
                print(f"    {frames[k]:5d}  {kind:7s} {speed}   " + " ".join(f"{v:+6.2f}" for v in over)
                      + "  (" + " ".join(f"{v:+6.2f}" for v in src) + ")"
                      + (f"  {drift[k]:5.2f} ({sdrift[k]:5.2f})" if np.isfinite(drift[k]) else ""))


if __name__ == "__main__":
    main()
