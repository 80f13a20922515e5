"""Solver benchmarks: the closed-form two-bone solve (scalar on `mathutils`, numpy batch) and the long-chain
solvers (FABRIK, CCD) on the setup of the FABRIK paper, beside `ikpy` on the same chain and targets.

    .venv/bin/python benchmarks/bench_solvers.py [--quick] [--json out/bench_solvers.json]

Every time is a median of interleaved rounds; each figure stands beside an anchor timed in the same run:
the two-bone solvers beside the textbook solve of the seed article (law of cosines, no checks), FABRIK
and CCD beside ikpy. `two_bone()` and `chains()` return plain dicts, `markdown()` turns them into the
tables of docs/benchmarks.md. Figures are reported, never asserted (tests/test_benchmarks.py only
checks that they are sane at tiny sizes).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))
import harness  # noqa: E402  (private Blender user folder, then Blender: mathutils comes with it)

harness.install()
from mathutils import Vector  # noqa: E402

two_bone_mod = harness.module("solvers.two_bone")
chains_mod = harness.module("solvers.chains")

SCALAR_GOAL_US = 2.0
BATCH_GOAL_PER_S = 2e6
PAPER = {"fabrik": (15.5, 67.6), "ccd": (26.3, 390.1)}  # Aristidou & Lasenby 2011, Table 1: reachable, unreachable
IKPY_SPEED_GOAL = 100.0
# Our solvers return mathutils (single precision) vectors: below about 1e-6 of a 10-unit chain's length
# an error is rounding of the result, not the solve. "Equal accuracy" to ikpy is judged down to this floor.
ACCURACY_FLOOR = 1e-6


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


# ------------------------------------------------------------------------------------------------ two-bone


def random_chains(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """n random two-bone chains (bones 0.2..1, root anywhere near the origin) and a reachable target for
    each (a random direction, a distance uniform between |l1 - l2| and l1 + l2): float64 arrays (n, 3)."""
    rng = np.random.default_rng(seed)

    def directions() -> np.ndarray:
        v = rng.normal(size=(n, 3))
        return v / np.linalg.norm(v, axis=1)[:, None]

    l1 = rng.uniform(0.2, 1.0, n)
    l2 = rng.uniform(0.2, 1.0, n)
    root = rng.normal(size=(n, 3))
    knee = root + directions() * l1[:, None]
    tip = knee + directions() * l2[:, None]
    d = rng.uniform(np.abs(l1 - l2), l1 + l2)
    target = root + directions() * d[:, None]
    return root, knee, tip, target


def textbook_scalar(a: Vector, b: Vector, c: Vector, t: Vector) -> tuple[Vector, Vector]:
    """The anchor: the seed article's solve in `mathutils` (law of cosines, knee kept on its side), with
    none of the checks (degenerate input, overflow, poles, soft IK) of `solve_two_bone`."""
    l1 = (b - a).length
    l2 = (c - b).length
    at = t - a
    d = min(at.length, l1 + l2)
    e = at.normalized()
    cos_t = max(-1.0, min(1.0, (l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * d)))
    n = (b - a) - e * (b - a).dot(e)
    n.normalize()
    return a + e * (l1 * cos_t) + n * (l1 * math.sqrt(max(0.0, 1.0 - cos_t * cos_t))), a + e * d


def textbook_batch(a: np.ndarray, b: np.ndarray, c: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The batch anchor: the same textbook solve vectorised in numpy, no checks."""
    l1 = np.linalg.norm(b - a, axis=1)
    l2 = np.linalg.norm(c - b, axis=1)
    at = t - a
    dist = np.linalg.norm(at, axis=1)
    d = np.minimum(dist, l1 + l2)
    e = at / dist[:, None]
    cos_t = np.clip((l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * d), -1.0, 1.0)
    ab = b - a
    n = ab - e * np.einsum("ij,ij->i", ab, e)[:, None]
    n /= np.linalg.norm(n, axis=1)[:, None]
    knee = a + e * (l1 * cos_t)[:, None] + n * (l1 * np.sqrt(1.0 - cos_t * cos_t))[:, None]
    return knee, a + e * d[:, None]


def rigid_tip_error(root: np.ndarray, knee: np.ndarray, tip: np.ndarray, target: np.ndarray, l1: np.ndarray,
                    l2: np.ndarray) -> np.ndarray:
    """Tip error of the solved pose as a rig applies it: only bone directions are kept (bones have fixed
    lengths), so rebuild the chain with the true lengths along the solved directions and measure its tip."""
    u = knee - root
    k = root + u / np.linalg.norm(u, axis=1)[:, None] * l1[:, None]
    v = tip - knee
    end = k + v / np.linalg.norm(v, axis=1)[:, None] * l2[:, None]
    return np.linalg.norm(end - target, axis=1)


def two_bone(sizes: Sequence[int] = (1000, 10000, 100000), rounds: int = 5, accuracy_n: int = 100000,
             seed: int = 1) -> dict[str, Any]:
    """µs per solve for the scalar and batch solvers and their anchors at each size (median of `rounds`
    interleaved rounds), and tip errors over `accuracy_n` random reachable targets."""
    solve, solve_batch = two_bone_mod.solve_two_bone, two_bone_mod.solve_two_bone_batch
    top = max(max(sizes), accuracy_n)
    root, knee, tip, target = random_chains(top, seed)
    vecs = [[Vector(p) for p in arr] for arr in (root, knee, tip, target)]
    times: dict[tuple[str, int], list[float]] = {}

    def scalar_run(fn: Callable[..., Any], n: int) -> float:
        ra, rb, rc, rt = (v[:n] for v in vecs)
        t0 = time.perf_counter()
        for i in range(n):
            fn(ra[i], rb[i], rc[i], rt[i])
        return time.perf_counter() - t0

    def batch_run(fn: Callable[..., Any], n: int) -> float:
        args = [np.ascontiguousarray(x[:n]) for x in (root, knee, tip, target)]
        t0 = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t0

    runs: dict[str, tuple[Callable[..., float], Callable[..., Any]]] = {
        "scalar": (scalar_run, solve), "scalar_anchor": (scalar_run, textbook_scalar),
        "batch": (batch_run, solve_batch), "batch_anchor": (batch_run, textbook_batch),
    }
    for n in sizes:  # warm-up
        for runner, fn in runs.values():
            runner(fn, min(n, 1000))
    for r in range(rounds):
        names = list(runs)
        names = names[r % len(names):] + names[:r % len(names)]
        for n in sizes:
            for name in names:
                runner, fn = runs[name]
                times.setdefault((name, n), []).append(runner(fn, n))
    us = {f"{name}@{n}": 1e6 * _median(t) / n for (name, n), t in times.items()}
    best = {f"{name}@{n}": 1e6 * min(t) / n for (name, n), t in times.items()}

    # Accuracy: float64 batch, and the scalar solver whose results are mathutils (float32) vectors.
    n = accuracy_n
    l1 = np.linalg.norm(knee[:n] - root[:n], axis=1)
    l2 = np.linalg.norm(tip[:n] - knee[:n], axis=1)
    chain = l1 + l2
    bk, bt, _case = solve_batch(root[:n], knee[:n], tip[:n], target[:n])
    err64 = rigid_tip_error(root[:n], bk, bt, target[:n], l1, l2) / chain
    sk = np.empty((n, 3))
    st = np.empty((n, 3))
    for i in range(n):
        res = solve(vecs[0][i], vecs[1][i], vecs[2][i], vecs[3][i])
        sk[i] = res.knee
        st[i] = res.tip
    # The float32 run is measured against its own float32 inputs (what the solver was given).
    r32, k32, c32, t32 = (np.array([tuple(v) for v in vs[:n]]) for vs in vecs)
    l1_32 = np.linalg.norm(k32 - r32, axis=1)
    l2_32 = np.linalg.norm(c32 - k32, axis=1)
    err32 = rigid_tip_error(r32, sk, st, t32, l1_32, l2_32) / (l1_32 + l2_32)
    accuracy = {
        "n": n,
        "batch_float64": {"max": float(err64.max()), "p99": float(np.percentile(err64, 99))},
        "scalar_float32": {"max": float(err32.max()), "p99": float(np.percentile(err32, 99))},
    }
    return {"sizes": list(sizes), "rounds": rounds, "us_per_solve": us, "us_per_solve_fastest": best,
            "accuracy": accuracy}


# ------------------------------------------------------------------------------------------------ chains


def paper_targets(count: int, length: float, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """`count` reachable targets (uniform in the ball of radius 0.95 x chain length, at least 0.05 x from
    the root) and `count` unreachable ones (1.05 to 2 x chain length away), random directions."""
    rng = np.random.default_rng(seed)

    def directions() -> np.ndarray:
        v = rng.normal(size=(count, 3))
        return v / np.linalg.norm(v, axis=1)[:, None]

    reach = length * np.cbrt(rng.uniform(0.05**3, 0.95**3, count))
    far = length * rng.uniform(1.05, 2.0, count)
    return directions() * reach[:, None], directions() * far[:, None]


def ikpy_chain(links: int, bone: float) -> Any:
    """ikpy's equivalent of an unconstrained chain of `links` bones of length `bone` along +Z: ikpy has no
    spherical joint, so each joint is two revolute joints (about X then Y, at the same place), which
    reach every bone direction (a universal joint: the missing twist moves no joint position)."""
    from ikpy.chain import Chain
    from ikpy.link import OriginLink, URDFLink

    items: list[Any] = [OriginLink()]
    for j in range(links):
        offset = [0.0, 0.0, bone if j > 0 else 0.0]
        items.append(URDFLink(f"j{j}x", origin_translation=np.array(offset), origin_orientation=np.zeros(3),
                              rotation=np.array([1.0, 0.0, 0.0])))
        items.append(URDFLink(f"j{j}y", origin_translation=np.zeros(3), origin_orientation=np.zeros(3),
                              rotation=np.array([0.0, 1.0, 0.0])))
    items.append(URDFLink("tip", origin_translation=np.array([0.0, 0.0, bone]), origin_orientation=np.zeros(3),
                          joint_type="fixed"))
    mask = [False] + [True] * (2 * links) + [False]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Chain(items, active_links_mask=mask, jax_precompile=False)


def chains(links: int = 10, count: int = 20, rounds: int = 3, ikpy_rounds: int = 1, seed: int = 7,
           max_iterations: int = 1000) -> dict[str, Any]:
    """The FABRIK paper's Table 1 setup: one unconstrained chain of `links` joints (unit bones, straight
    along +Z at the start of every solve), `count` reachable and `count` unreachable targets, tolerance
    1e-3 of the chain length. Iterations, µs per solve and final errors (fractions of the chain length;
    for unreachable targets the excess over the best possible, target distance minus chain length)."""
    bone = 1.0
    length = links * bone
    start = [Vector((0.0, 0.0, k * bone)) for k in range(links + 1)]
    reachable, unreachable = paper_targets(count, length, seed)
    groups = {"reachable": reachable, "unreachable": unreachable}
    tol = 1e-3 * length
    fine_tol = 1e-6 * length
    solvers: dict[str, Callable[[tuple[float, float, float]], tuple[int, Any]]] = {
        "fabrik": lambda t: _chain_solve(chains_mod.fabrik, start, t, tol, max_iterations),
        "fabrik_fine": lambda t: _chain_solve(chains_mod.fabrik, start, t, fine_tol, max_iterations),
        "ccd": lambda t: _chain_solve(chains_mod.ccd, start, t, tol, max_iterations),
    }
    chain = ikpy_chain(links, bone)
    zeros = [0.0] * len(chain.links)

    def ikpy_solve(t: tuple[float, float, float]) -> tuple[int, np.ndarray]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            angles = chain.inverse_kinematics(np.array(t), initial_position=zeros)
        return 0, np.asarray(chain.forward_kinematics(angles)[:3, 3], dtype=np.float64)

    out: dict[str, Any] = {"links": links, "targets_each": count, "tolerance": 1e-3, "fine_tolerance": 1e-6,
                           "max_iterations": max_iterations, "rounds": rounds, "ikpy_rounds": ikpy_rounds,
                           "paper": PAPER, "results": {}}
    for group, targets in groups.items():
        tv = [(float(t[0]), float(t[1]), float(t[2])) for t in targets]  # double precision, as given to each
        best = [max(0.0, float(np.linalg.norm(t)) - length) for t in targets]
        res: dict[str, Any] = {}
        all_solvers = dict(solvers, ikpy=ikpy_solve)
        for name, fn in all_solvers.items():
            per_round = []
            iterations: list[int] = []
            errors: list[float] = []
            for r in range(ikpy_rounds if name == "ikpy" else rounds):
                t0 = time.perf_counter()
                outs = [fn(t) for t in tv]
                per_round.append((time.perf_counter() - t0) / len(tv))
                if r == 0:
                    iterations = [it for it, _tip in outs]
                    errors = [(float(np.linalg.norm(np.asarray(tip, dtype=np.float64) - t)) - b) / length
                              for (_it, tip), t, b in zip(outs, targets, best)]
            res[name] = {
                "us_per_solve": 1e6 * _median(per_round),
                "iterations_mean": float(np.mean(iterations)),
                "iterations_max": int(max(iterations)),
                "at_cap": int(sum(it >= max_iterations for it in iterations)),
                "error_max": float(max(errors)),
                "error_mean": float(np.mean(errors)),
            }
        out["results"][group] = res
    return out


def _chain_solve(fn: Callable[..., Any], start: list[Vector], target: tuple[float, float, float], tol: float,
                 cap: int) -> tuple[int, Vector]:
    sol = fn(start, target, tolerance=tol, max_iterations=cap)
    return sol.iterations, sol.positions[-1]


def ikpy_verdict(group: dict[str, Any]) -> tuple[str, float, bool, float, float]:
    """The FABRIK-against-ikpy goal for one group of targets: (our run judged, ikpy time / ours, met, our max
    error, ikpy's max error). The run judged is FABRIK at the paper's tolerance if its worst error is within
    ikpy's (or the single-precision floor), else FABRIK at the fine tolerance."""
    ik = group["ikpy"]
    bar = max(ik["error_max"], ACCURACY_FLOOR)
    name = "fabrik" if group["fabrik"]["error_max"] <= bar else "fabrik_fine"
    r = group[name]
    speed = ik["us_per_solve"] / r["us_per_solve"]
    return name, speed, speed >= IKPY_SPEED_GOAL and r["error_max"] <= bar, r["error_max"], ik["error_max"]


# ------------------------------------------------------------------------------------------------ report


def _verdict(ok: bool, text: str) -> str:
    return f"{'met' if ok else '**missed**'} ({text})"


def markdown(two: dict[str, Any], ch: dict[str, Any]) -> str:
    us = two["us_per_solve"]
    lines = ["## 1. Two-bone solver", "",
             f"Random chains (bones 0.2 to 1, reachable targets), µs per solve, median of {two['rounds']} interleaved "
             "rounds. Anchor: the seed article's textbook solve (law of cosines, no checks for degenerate input, "
             "poles or soft IK), in `mathutils` for the scalar solver and in numpy for the batch.", "",
             "| solver | solves | ours µs/solve | anchor µs/solve | ours / anchor | solves/s | ours, fastest round | goal |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for kind, label in (("scalar", "scalar (`mathutils`)"), ("batch", "numpy batch (float64)")):
        for n in two["sizes"]:
            ours, anchor = us[f"{kind}@{n}"], us[f"{kind}_anchor@{n}"]
            if kind == "scalar":
                goal = _verdict(ours < SCALAR_GOAL_US, f"< {SCALAR_GOAL_US:g} µs: {ours / SCALAR_GOAL_US:.2f}x the limit")
            else:
                rate = 1e6 / ours
                goal = (_verdict(rate > BATCH_GOAL_PER_S, f"> 2 M/s: {rate / BATCH_GOAL_PER_S:.2f}x the goal")
                        if n == max(two["sizes"]) else "")
            fastest = two.get("us_per_solve_fastest", us)[f"{kind}@{n}"]
            lines.append(f"| {label} | {n:,} | {ours:.3f} | {anchor:.3f} | {ours / anchor:.2f}x | "
                         f"{1e6 / ours:,.0f} | {fastest:.3f} µs | {goal} |")
    acc = two["accuracy"]
    lines += ["", f"Tip error over {acc['n']:,} random reachable targets, as a fraction of the chain length, of the "
              "pose as a rig applies it (the solved bone directions with the true bone lengths):", "",
              "| solver | max | 99th percentile |", "| --- | ---: | ---: |",
              f"| numpy batch, float64 | {acc['batch_float64']['max']:.2e} | {acc['batch_float64']['p99']:.2e} |",
              f"| scalar, `mathutils` float32 results | {acc['scalar_float32']['max']:.2e} | "
              f"{acc['scalar_float32']['p99']:.2e} |", ""]

    res = ch["results"]
    lines += ["## 2. Long chains on the FABRIK paper's setup", "",
              f"Aristidou and Lasenby (2011), Table 1: one chain of {ch['links']} unconstrained joints (unit bones, "
              f"straight at the start of every solve), {ch['targets_each']} reachable and {ch['targets_each']} "
              f"unreachable random targets, tolerance {ch['tolerance']:g} of the chain length (our cap "
              f"{ch['max_iterations']} iterations). Anchor: `ikpy` 4.2.1 on the same chain and targets (each joint "
              "two revolute joints, X then Y: a universal joint, which reaches every bone direction; default "
              "`inverse_kinematics`, SciPy least squares), benchmark environment only. Errors are fractions of "
              "the chain length; for unreachable targets, the excess over the best possible (target distance "
              f"minus chain length). FABRIK (fine) is ours at tolerance {ch['fine_tolerance']:g}. µs per solve: "
              f"median of {ch['rounds']} rounds (ikpy: {ch['ikpy_rounds']}).", "",
              "| solver | targets | iterations (mean / max) | paper's iterations | µs/solve | ikpy / ours | "
              "max error | mean error |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    labels = {"fabrik": "FABRIK", "fabrik_fine": "FABRIK (fine)", "ccd": "CCD", "ikpy": "ikpy (anchor)"}
    for group in ("reachable", "unreachable"):
        ik_us = res[group]["ikpy"]["us_per_solve"]
        for name, label in labels.items():
            r = res[group][name]
            paper = ch["paper"].get(name.split("_")[0]) if name != "fabrik_fine" else None
            paper_it = f"{paper[0 if group == 'reachable' else 1]:g}" if paper else ""
            its = "" if name == "ikpy" else f"{r['iterations_mean']:.1f} / {r['iterations_max']}"
            if r["at_cap"]:
                its += f" ({r['at_cap']} at the cap)"
            speed = "1" if name == "ikpy" else f"{ik_us / r['us_per_solve']:,.0f}x"
            lines.append(f"| {label} | {group} | {its} | {paper_it} | {r['us_per_solve']:,.1f} | {speed} | "
                         f"{r['error_max']:.1e} | {r['error_mean']:.1e} |")
    lines += ["", "Goals:", ""]
    for group, idx in (("reachable", 0), ("unreachable", 1)):
        r = res[group]["fabrik"]
        paper = PAPER["fabrik"][idx]
        lines.append(f"- FABRIK iterations, {group}: " + _verdict(r["iterations_mean"] <= paper,
                     f"{r['iterations_mean']:.1f} against the paper's {paper:g}: {r['iterations_mean'] / paper:.2f}x"))
    for group in ("reachable", "unreachable"):
        name, speed, ok, err, ik_err = ikpy_verdict(res[group])
        lines.append(f"- FABRIK >= {IKPY_SPEED_GOAL:g}x faster than ikpy at equal or better accuracy, {group}: "
                     + _verdict(ok, f"{labels[name]} {speed:,.0f}x faster, max error {err:.1e} against ikpy's "
                                    f"{ik_err:.1e}; errors under {ACCURACY_FLOOR:g} of the chain count as equal: our "
                                    "results are single-precision `mathutils` vectors"))
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, one round: a smoke run")
    ap.add_argument("--json", default=str(ROOT / "out" / "bench_solvers.json"))
    args = ap.parse_args()
    if args.quick:
        two = two_bone(sizes=(1000, 10000), rounds=1, accuracy_n=10000)
        ch = chains(count=5, rounds=1)
    else:
        two = two_bone()
        ch = chains()
    out = {"two_bone": two, "chains": ch}
    path = pathlib.Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(markdown(two, ch))
    print(f"written {path}")


if __name__ == "__main__":
    main()
