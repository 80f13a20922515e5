"""Bake benchmark: Contact IK's bake against `nla.bake(visual_keying=True)` of Blender's native IK
constraints on the same four limbs, and against a bare `frame_set` sweep, measured in the same run.

    .venv/bin/python benchmarks/bench_bake.py [--frames 1000 10000] [--json out/bench_bake.json]

Goals (issue 21): Contact IK at least 5x faster than nla.bake, at most 1.5x the bare sweep, and peak
memory growth under 200 MB at 10,000 frames; live preview's cache build at most 0.2 ms per frame.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import harness  # noqa: E402  (starts Blender with a private user folder, installs the built extension)

harness.install()
import bpy  # noqa: E402
import scenes  # noqa: E402
from mathutils import Vector  # noqa: E402

LIMB_BONES = ["thigh.L", "shin.L", "foot.L", "thigh.R", "shin.R", "foot.R",
              "upper_arm.L", "forearm.L", "hand.L", "upper_arm.R", "forearm.R", "hand.R", "spine"]


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRSS:
    """Samples resident memory every 5 ms while running; `growth` is the peak over the start."""

    def __enter__(self) -> PeakRSS:
        self.start = self.peak = rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.005)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())

    @property
    def growth(self) -> float:
        return self.peak - self.start


def build_scene(frames: int) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """The Rigify metarig walking (a keyed 48-frame cycle repeated) with 2 feet and 2 hands set up both
    ways: Contact IK limbs (terrain, hand targets) and native IK constraints (muted until needed)."""
    harness.reset_scene()
    obj = scenes.metarig()
    scenes.author_walk(obj, frames=48)
    for fc in harness_fcurves(obj):
        fc.modifiers.new("CYCLES")
    # Blender evaluates a copy of the action: without this tag the copy keeps no modifier, and the rig
    # would stand still after frame 48 (as these benchmarks' rigs did until this was found).
    obj.animation_data.action.update_tag()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    leg = scenes.leg_length(obj)
    terrain = scenes.noise(leg, amplitude=0.05, segments=100, size=8.0)
    setup = harness.module("core.setup")
    detect = harness.module("core.detect")
    setup.apply_detection(obj, detect.detect_limbs(detect.bones_from_armature(obj)))
    s = obj.contact_ik
    s.terrain = terrain
    # What Plant Feet does: the animation's floor and the feet's contacts (foot locking in the bake).
    setup.floor_and_contacts(obj, scene)
    targets = []
    for side in "LR":
        shoulder = obj.matrix_world @ obj.pose.bones[f"upper_arm.{side}"].head
        t = bpy.data.objects.new(f"Rail.{side}", None)
        scene.collection.objects.link(t)
        t.location = shoulder + Vector(((0.2 if side == "L" else -0.2) * leg, -0.3 * leg, -0.25 * leg))
        targets.append(t)
    for limb in s.limbs:
        if limb.kind == "HAND":
            limb.target_object = targets[0] if limb.end_bone.endswith(".L") else targets[1]
    # Native IK on the same four limbs: feet to empties at the rest ankles, hands to the same rails.
    for side, rail in zip("LR", targets):
        ankle = bpy.data.objects.new(f"Ankle.{side}", None)
        scene.collection.objects.link(ankle)
        ankle.location = obj.matrix_world @ obj.data.bones[f"foot.{side}"].head_local + Vector((0, 0, 0.02 * leg))
        for bone, target in ((f"shin.{side}", ankle), (f"forearm.{side}", rail)):
            c = obj.pose.bones[bone].constraints.new("IK")
            c.target, c.chain_count, c.mute = target, 2, True
    return obj, targets


def harness_fcurves(obj: bpy.types.Object):  # type: ignore[no-untyped-def]
    anim = harness.module("core.anim")
    return list(anim.fcurves(obj.animation_data.action, anim.slot_of(obj)))


def set_native(obj: bpy.types.Object, on: bool) -> None:
    for pb in obj.pose.bones:
        for c in pb.constraints:
            c.mute = not on


def sweep(frames: int) -> float:
    scene = bpy.context.scene
    t0 = time.perf_counter()
    for f in range(1, frames + 1):
        scene.frame_set(f)
    return time.perf_counter() - t0


class NoSampler:
    growth = float("nan")

    def __enter__(self) -> NoSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def contact_ik_bake(obj: bpy.types.Object, frames: int, memory: bool = False) -> tuple[float, float]:
    """Time (or, with `memory`, peak memory growth of) one Contact IK bake; the bake is then undone.
    Memory is sampled by a thread, so it is measured in a run of its own, not in a timed one."""
    bake = harness.module("core.bake")
    source = obj.animation_data.action
    with PeakRSS() if memory else NoSampler() as mem:
        t0 = time.perf_counter()
        job = bake.BakeJob([obj], 1, frames)
        job.finish()
        took = time.perf_counter() - t0
    baked = obj.animation_data.action
    bake.use_source(obj)
    bpy.data.actions.remove(baked)
    assert obj.animation_data.action == source
    return took, mem.growth


def native_bake(obj: bpy.types.Object, frames: int, memory: bool = False) -> tuple[float, float]:
    source = obj.animation_data.action
    set_native(obj, True)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    for pb in obj.pose.bones:
        owner = pb if hasattr(pb, "select") else pb.bone  # selection moved to pose bones in 5.0
        owner.select = pb.name in LIMB_BONES
    with PeakRSS() if memory else NoSampler() as mem:
        t0 = time.perf_counter()
        bpy.ops.nla.bake(frame_start=1, frame_end=frames, only_selected=True, visual_keying=True,
                         clear_constraints=False, use_current_action=False, bake_types={"POSE"})
        took = time.perf_counter() - t0
    bpy.ops.object.mode_set(mode="OBJECT")
    baked = obj.animation_data.action
    if baked is not source:
        obj.animation_data.action = source
        bpy.data.actions.remove(baked)
    set_native(obj, False)
    return took, mem.growth


def breakdown(obj: bpy.types.Object, frames: int) -> dict:
    """Where one Contact IK bake's time goes (ms per frame): reading the pose on each frame, the vectorised
    solve, writing the action, and the rest (mostly the `frame_set` sweep); and a cProfile of another bake."""
    import cProfile
    import io
    import pstats

    batch, bake = harness.module("core.batch"), harness.module("core.bake")
    totals = {"read": 0.0, "compute": 0.0, "write_action": 0.0}
    originals = [(batch.BatchRig, "read"), (batch.BatchRig, "compute"), (bake, "write_action")]
    saved = [getattr(owner, name) for owner, name in originals]

    def timed(fn, key):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[key] += time.perf_counter() - t0
        return wrapper

    for (owner, name), fn in zip(originals, saved):
        setattr(owner, name, timed(fn, name))
    try:
        took = contact_ik_bake(obj, frames)[0]
    finally:
        for (owner, name), fn in zip(originals, saved):
            setattr(owner, name, fn)
    ms = {k: 1000.0 * v / frames for k, v in totals.items()}
    ms["total"] = 1000.0 * took / frames
    ms["rest"] = ms["total"] - sum(totals.values()) * 1000.0 / frames
    prof = cProfile.Profile()
    prof.enable()
    contact_ik_bake(obj, frames)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).strip_dirs().sort_stats("tottime").print_stats(10)
    return {"ms_per_frame": ms, "profile": text.getvalue()}


def run(frames: int, rounds: int, profile: bool = False) -> dict:
    obj, _targets = build_scene(frames)
    scene = bpy.context.scene
    s = obj.contact_ik
    s.live_preview = False
    results: dict[str, list[float]] = {"bare": [], "contact_ik": [], "nla_bake": [], "mem_contact_ik": [], "mem_nla": [],
                                       "cache_build": [], "from_cache": []}
    live = harness.module("core.live")
    bake = harness.module("core.bake")
    for _round in range(rounds):
        results["bare"].append(sweep(frames))
        results["contact_ik"].append(contact_ik_bake(obj, frames)[0])
        results["nla_bake"].append(native_bake(obj, frames)[0])
        # With live preview on, its frame cache is what the bake copies. Turning it on builds the cache, and
        # the switch's own update then drops it (the UI rebuilds it 0.5 s later, by a timer): rebuilt here.
        s.live_preview = True
        bpy.context.evaluated_depsgraph_get()
        t0 = time.perf_counter()
        live.precompute(obj, scene)
        results["cache_build"].append(time.perf_counter() - t0)
        assert obj.name in live.caches.frames and bake._valid_cache(obj, bake.driven_channels(obj), 1, frames)
        results["from_cache"].append(contact_ik_bake(obj, frames)[0])
        s.live_preview = False
    # Peak memory growth in fresh processes (freed memory stays with the process, so a bake measured
    # after others would show no growth at all).
    for which in ("contact_ik", "nla"):
        proc = subprocess.run([sys.executable, __file__, "--memory-of", which, "--frames", str(frames)],
                              capture_output=True, text=True)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("MEMORY ")]
        results[f"mem_{which}"].append(float(line[-1].split()[1]) if line else float("nan"))
    parts = breakdown(obj, frames) if profile else None
    scene.frame_set(1)
    med = {k: sorted(v)[len(v) // 2] for k, v in results.items() if v}
    return {
        "frames": frames,
        "rounds": rounds,
        "seconds": med,
        "ms_per_frame": {k: 1000 * med[k] / frames for k in ("bare", "contact_ik", "nla_bake", "cache_build",
                                                             "from_cache")},
        "nla_over_from_cache": med["nla_bake"] / med["from_cache"],
        "nla_over_contact_ik": med["nla_bake"] / med["contact_ik"],
        "contact_ik_over_bare": med["contact_ik"] / med["bare"],
        "memory_growth_mb": med["mem_contact_ik"],
        "memory_growth_nla_mb": med["mem_nla"],
        "all": results,
        "breakdown": parts,
    }


def markdown(results: list[dict]) -> str:
    """The bake section of docs/benchmarks.md from `main`'s JSON."""
    lines = ["## 4. Bake", "",
             "Rigify metarig, 2 feet + 2 hands, walking (a keyed 48-frame cycle repeated), noise terrain, foot "
             "contacts detected as Plant Feet does. Anchors measured in the same run: `nla.bake(visual_keying=True)` "
             "of Blender's native IK constraints on the same four limbs, and a bare `frame_set` sweep of the range. "
             "Seconds are medians of the rounds (1,000 frames: "
             f"{results[0]['rounds']} rounds; 10,000 frames: 1); peak memory growth is measured in a fresh process "
             "per bake.", "",
             "| frames | bare sweep ms/frame | Contact IK ms/frame | nla.bake ms/frame | nla.bake / ours | ours / bare | "
             "our peak MB | nla.bake peak MB | goals |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        ms = r["ms_per_frame"]
        fast, cheap = r["nla_over_contact_ik"] >= 5, r["contact_ik_over_bare"] <= 1.5
        goals = [f"{'met' if fast else '**missed**'} (>= 5x faster than nla.bake: {r['nla_over_contact_ik'] / 5:.2f}x "
                 "the goal)",
                 f"{'met' if cheap else '**missed**'} (<= 1.5x bare: {r['contact_ik_over_bare'] / 1.5:.2f}x the limit)"]
        if r["frames"] >= 10000:
            ok = r["memory_growth_mb"] < 200
            goals.append(f"{'met' if ok else '**missed**'} (< 200 MB: {r['memory_growth_mb'] / 200:.2f}x the limit)")
        lines.append(f"| {r['frames']:,} | {ms['bare']:.3f} | {ms['contact_ik']:.3f} | {ms['nla_bake']:.3f} | "
                     f"{r['nla_over_contact_ik']:.1f}x | {r['contact_ik_over_bare']:.2f}x | {r['memory_growth_mb']:.1f} | "
                     f"{r['memory_growth_nla_mb']:.1f} | {'; '.join(goals)} |")
    lines += ["", "With live preview on, the bake copies its frame cache (built when live preview turned on, and kept until "
              "an edit) instead of replaying the animation: the report says which ran (`BakeReport.read`).", "",
              "| frames | bare sweep ms/frame | live cache build ms/frame | bake from the cache ms/frame | "
              "nla.bake / bake from the cache |", "| ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        ms = r["ms_per_frame"]
        lines.append(f"| {r['frames']:,} | {ms['bare']:.3f} | {ms['cache_build']:.3f} | {ms['from_cache']:.3f} | "
                     f"{r['nla_over_from_cache']:.1f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=str(ROOT / "out" / "bench_bake.json"))
    ap.add_argument("--memory-of", choices=["contact_ik", "nla"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_of:
        obj, _t = build_scene(args.frames[0])
        obj.contact_ik.live_preview = False
        sweep(args.frames[0])  # the scene itself warmed up, as in the timed rounds
        bake = contact_ik_bake if args.memory_of == "contact_ik" else native_bake
        print(f"MEMORY {bake(obj, args.frames[0], memory=True)[1]:.1f}")
        return
    print(f"Blender {bpy.app.version_string}; Rigify metarig, 2 feet + 2 hands, noise terrain; median of {args.rounds} rounds")
    print(f"{'frames':>7} {'bare ms/f':>10} {'ours ms/f':>10} {'nla.bake ms/f':>14} {'nla/ours':>9} {'ours/bare':>10} "
          f"{'ours MB':>8} {'nla MB':>7}")
    out = []
    for n in args.frames:
        r = run(n, args.rounds if n <= 2000 else 1, profile=n == args.frames[0])  # 10,000 frames: one timed round of each
        out.append(r)
        ms = r["ms_per_frame"]
        print(f"{n:>7} {ms['bare']:>10.3f} {ms['contact_ik']:>10.3f} {ms['nla_bake']:>14.3f} "
              f"{r['nla_over_contact_ik']:>8.1f}x {r['contact_ik_over_bare']:>9.2f}x "
              f"{r['memory_growth_mb']:>8.1f} {r['memory_growth_nla_mb']:>7.1f}")
    for r in out:
        ms = r["ms_per_frame"]
        print(f"{r['frames']:>7} with live preview on: cache build {ms['cache_build']:.3f} ms/f, bake from the cache "
              f"{ms['from_cache']:.3f} ms/f, nla.bake {r['nla_over_from_cache']:.1f}x slower")
    print("goals: nla/ours >= 5x, ours/bare <= 1.5x, memory growth < 200 MB at 10,000 frames")
    for r in out:
        ok = [r["nla_over_contact_ik"] >= 5, r["contact_ik_over_bare"] <= 1.5,
              r["frames"] < 10000 or r["memory_growth_mb"] < 200]
        print(f"  {r['frames']} frames: " + ", ".join(("met" if k else "MISSED") + f" ({name})" for k, name in
                                                    zip(ok, ("speed vs nla.bake", "cost vs bare sweep", "memory"))))
    path = pathlib.Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"written {path}")


if __name__ == "__main__":
    main()
