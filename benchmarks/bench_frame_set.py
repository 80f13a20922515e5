"""Live preview benchmark: a `frame_set` sweep over 1,000 frames of a biped with 2 feet and 2 hands on
a 180,000-triangle terrain, with Contact IK's live preview, with Blender's native IK constraints on
the same four limbs, and bare, measured in the same run (interleaved rounds, medians).

    .venv/bin/python benchmarks/bench_frame_set.py [--frames 1000] [--rounds 3]

Goal (issue 3): Contact IK's added cost at most 2x the native constraints' added cost. Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_bake  # noqa: E402  (starts Blender with the extension installed; shares the scene builder)

bpy = bench_bake.bpy
harness = bench_bake.harness
scenes = bench_bake.scenes
ROOT = bench_bake.ROOT


def big_terrain(obj: bpy.types.Object) -> bpy.types.Object:
    """A noise heightfield of 2 x 300 x 300 = 180,000 triangles replacing the rig's terrain."""
    s = obj.contact_ik
    old = s.terrain
    leg = scenes.leg_length(obj)
    terrain = scenes.noise(leg, amplitude=0.05, segments=300, size=8.0)
    s.terrain = terrain
    if old is not None:
        bpy.data.objects.remove(old)
    return terrain


def sweep(frames: int) -> float:
    return bench_bake.sweep(frames)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=str(ROOT / "out" / "bench_frame_set.json"))
    args = ap.parse_args()
    n = args.frames
    obj, _targets = bench_bake.build_scene(n)
    terrain = big_terrain(obj)
    tris = sum(len(p.vertices) - 2 for p in terrain.data.polygons)
    s = obj.contact_ik
    live = harness.module("core.live")
    times: dict[str, list[float]] = {"bare": [], "native": [], "contact_ik": [], "cache_build": [],
                                     "frame_by_frame": []}
    for _round in range(args.rounds):
        s.live_preview = False
        bench_bake.set_native(obj, False)
        times["bare"].append(sweep(n))
        bench_bake.set_native(obj, True)
        times["native"].append(sweep(n))
        bench_bake.set_native(obj, False)
        t0 = time.perf_counter()
        s.live_preview = True  # builds the frame cache for the whole range
        times["cache_build"].append(time.perf_counter() - t0)
        assert obj.name in live.live_rigs and obj.name in live.caches.frames
        times["contact_ik"].append(sweep(n))
        s.live_preview = False
    # Without the cache (each frame solved on its own, as right after an edit): one round.
    live.USE_FRAME_CACHE = False
    s.live_preview = True
    times["frame_by_frame"].append(sweep(n))
    s.live_preview = False
    live.USE_FRAME_CACHE = True
    med = {k: sorted(v)[len(v) // 2] * 1000.0 / n for k, v in times.items()}
    native_added = med["native"] - med["bare"]
    ours_added = med["contact_ik"] - med["bare"]
    ratio = ours_added / native_added if native_added > 0 else float("inf")
    print(f"Blender {bpy.app.version_string}; Rigify metarig, 2 feet + 2 hands; terrain {tris:,} triangles; "
          f"{n} frames; median of {args.rounds} interleaved rounds")
    print(f"{'':>22} {'ms/frame':>9} {'added ms':>9}")
    print(f"{'bare':>22} {med['bare']:>9.3f} {'':>9}")
    print(f"{'native IK constraints':>22} {med['native']:>9.3f} {native_added:>9.3f}")
    print(f"{'Contact IK preview':>22} {med['contact_ik']:>9.3f} {ours_added:>9.3f}")
    print(f"added cost ratio (Contact IK / native): {ratio:.2f}x (goal <= 2x: {'met' if ratio <= 2 else 'MISSED'})")
    fbf = med["frame_by_frame"] - med["bare"]
    print(f"frame cache build when live preview turns on: {med['cache_build'] * n / 1000.0:.2f} s for {n} frames "
          f"({med['cache_build']:.3f} ms/frame); without the cache (right after an edit) {med['frame_by_frame']:.3f} "
          f"ms/frame, added {fbf:.3f} ms = {fbf / native_added if native_added > 0 else float('inf'):.1f}x native")
    out = {"frames": n, "triangles": tris, "ms_per_frame": med, "native_added_ms": native_added,
           "contact_ik_added_ms": ours_added, "ratio": ratio, "all": times}
    path = pathlib.Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"written {path}")


if __name__ == "__main__":
    main()
