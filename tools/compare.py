"""Compare two runs of `tools/quality.py` (their --json files) as the corpus split asks: per declared half
(`tools/corpus.py`), how many runs meet each target before and after, every run that starts or stops meeting
one (with its figure), every foot whose knee or hip peak over the source's rose by more than 5% (with where the
peak lies), and the median of those ratios. Every figure is the independent measure's (`core/measure.py`), as
the targets are; the model's own counts only in "every target, model's own". Runs in only one of the two files
are counted and left out.

    .venv/bin/python tools/quality.py --half tuning --json out/after.json
    .venv/bin/python tools/compare.py out/before.json out/after.json

Each file's time of writing is printed first: a run still going leaves the previous file in place."""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import statistics
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import corpus  # noqa: E402
from quality import INDEPENDENT_TARGETS, judged, verdict, verdict_independent  # noqa: E402

HALVES = ("tuning", "check")
# The figure behind each independent target, per foot (the worst foot is the run's).
FIGURES = {"penetration": "penetration_rel", "hover": "hover_max_rel", "skate": "skate_max_rel",
           "identity": "identity_max_rel"}
ROSE = 1.05  # a foot's knee or hip peak over the source's this much higher is listed


def figure(row: dict[str, Any], target: str) -> float:
    """The run's worst foot's figure for `target`: a share of the leg, or for pops the larger peak ratio."""
    feet = [f for f in row["feet"] if f.get("independent")]
    if not feet:
        return float("nan")
    if target == "pops":
        return max(max(f["independent"]["knee_ratio"], f["independent"]["hip_ratio"]) for f in feet)
    return max(f["independent"][FIGURES[target]] for f in feet)


def shown(target: str, value: float) -> str:
    return f"{value:.2f}x" if target == "pops" else f"{100.0 * value:.2f}%"


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """The comparison, as lines of text."""
    a = {(r["clip"], r["terrain"]): r for r in before}
    b = {(r["clip"], r["terrain"]): r for r in after}
    both = sorted(k for k in a if k in b)
    lines = [f"{len(both)} runs in both; {sum(k not in b for k in a)} only before, {sum(k not in a for k in b)} "
             "only after (left out)"]
    targets = list(INDEPENDENT_TARGETS)
    counts: dict[tuple[str, str], list[int]] = {}
    runs: dict[str, int] = {h: 0 for h in HALVES}
    changed, rose = [], []
    ratios: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for key in both:
        half = corpus.half(key[0])
        runs[half] = runs.get(half, 0) + 1
        va, vb = verdict_independent(a[key]), verdict_independent(b[key])
        for t in targets:
            if t == "identity" and not judged(t, a[key]):
                continue  # counted on the runs it is judged on only
            c = counts.setdefault((half, t), [0, 0])
            c[0] += va[t]
            c[1] += vb[t]
            if va[t] != vb[t]:
                changed.append(f"  {half} {key[0]} {key[1]}: {t} {'now met' if vb[t] else 'now missed'} "
                               f"({shown(t, figure(a[key], t))} -> {shown(t, figure(b[key], t))})")
        for name, ok_a, ok_b in (("every target", all(va.values()), all(vb.values())),
                                 ("every target, model's own", all(verdict(a[key]).values()),
                                  all(verdict(b[key]).values()))):
            c = counts.setdefault((half, name), [0, 0])
            c[0] += ok_a
            c[1] += ok_b
        for fa, fb in zip(a[key]["feet"], b[key]["feet"]):
            qa, qb = fa.get("independent"), fb.get("independent")
            if not qa or not qb:
                continue
            for ratio in ("knee_ratio", "hip_ratio"):
                pair = ratios.setdefault((half, ratio), ([], []))
                pair[0].append(qa[ratio])
                pair[1].append(qb[ratio])
                if qb[ratio] > ROSE * qa[ratio]:
                    rose.append(f"  {half} {key[0]} {key[1]} {fb['limb']}: {ratio.split('_')[0]} "
                                f"{qa[ratio]:.2f}x -> {qb[ratio]:.2f}x, peak at frame {qb.get('pop_frame', '?')} "
                                f"({qb.get('pop_where', '?')})")
    lines.append("")
    lines.append("| target | " + " | ".join(f"{h} half ({runs.get(h, 0)} runs)" for h in HALVES) + " |")
    lines.append("|---|" + "---|" * len(HALVES))
    for t in targets + ["every target", "every target, model's own"]:
        label = "identity (flat runs)" if t == "identity" else t
        cells = []
        for h in HALVES:
            before_n, after_n = counts.get((h, t), [0, 0])
            cells.append(f"{before_n} -> {after_n}" + (" **" if before_n != after_n else ""))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Runs that start or stop meeting a target ({len(changed)}):")
    lines += changed or ["  none"]
    lines.append(f"Feet whose peak over the source's rose by more than {round(100 * (ROSE - 1))}% ({len(rose)}):")
    lines += rose or ["  none"]
    lines.append("Median peak over the source's, before -> after:")
    for (h, ratio), (x, y) in sorted(ratios.items()):
        lines.append(f"  {h} {ratio.split('_')[0]}: {statistics.median(x):.4f} -> {statistics.median(y):.4f}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=pathlib.Path)
    ap.add_argument("after", type=pathlib.Path)
    args = ap.parse_args()
    for label, path in (("before", args.before), ("after", args.after)):
        written = datetime.datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d %H:%M:%S")
        print(f"{label}: {path} (written {written})")
    print("\n".join(compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))))


if __name__ == "__main__":
    main()
