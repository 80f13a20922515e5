"""Limb detection from bone names and hierarchy: legs and arms of common rig naming conventions.

Names are compared case-insensitively without namespace prefixes (`mixamorig:`), whitespace or side
markers; a chain is accepted only when its bones form a parent-child line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import bpy


@dataclass(frozen=True)
class BoneInfo:
    name: str
    parent: Optional[str]
    head: tuple[float, float, float]
    tail: tuple[float, float, float]


@dataclass(frozen=True)
class DetectedLimb:
    name: str
    kind: str
    side: str
    bones: tuple[str, ...]
    end_bone: str
    toe_bone: Optional[str]
    convention: str


# (convention, kind, upper, lower, end, toe) as side-free keys.
_CONVENTIONS = [
    ("Rigify", "FOOT", "thigh", "shin", "foot", "toe"),
    ("Rigify", "HAND", "upperarm", "forearm", "hand", None),
    ("Mixamo/MotionBuilder", "FOOT", "upleg", "leg", "foot", "toebase"),
    ("Mixamo/MotionBuilder", "HAND", "arm", "forearm", "hand", None),
    ("3ds Max BVH", "FOOT", "hip", "knee", "ankle", "toe"),
    ("3ds Max BVH", "HAND", "shoulder", "elbow", "wrist", None),
    ("CMU ASF", "FOOT", "femur", "tibia", "foot", "toes"),
    ("CMU ASF", "HAND", "humerus", "radius", "hand", None),
    ("Unreal", "FOOT", "thigh", "calf", "foot", "ball"),
    ("Unreal", "HAND", "upperarm", "lowerarm", "hand", None),
    ("Unity/VRM", "FOOT", "upperleg", "lowerleg", "foot", "toes"),
    ("Unity/VRM", "HAND", "upperarm", "lowerarm", "hand", None),
    ("Character Creator", "FOOT", "thigh", "calf", "foot", "toebase"),
    ("Character Creator", "HAND", "upperarm", "forearm", "hand", None),
]

_PREFIXES = ("ccbase", "jbip", "bip01", "bip", "def", "org", "mch")


def split_side(name: str) -> tuple[Optional[str], str]:
    """(side 'L'/'R' or None, the side-free lower-case key) of a bone name."""
    n = name.strip()
    if ":" in n:
        n = n.rsplit(":", 1)[1]
    n = n.strip()
    side: Optional[str] = None
    m = re.match(r"^(left|right)(.*)$", n, re.I)
    if m:
        side, n = m.group(1)[0].upper(), m.group(2)
    else:
        m = re.match(r"^(.*?)[._\-\s]?(left|right)$", n, re.I) or re.match(r"^(.*?)[._\-\s]([lr])$", n, re.I)
        if m:
            side, n = m.group(2)[0].upper(), m.group(1)
        else:
            m = re.search(r"(?:^|[._\-\s])([lr])[._\-\s]", n, re.I)  # CC_Base_L_Thigh, J_Bip_L_UpperLeg
            if m:
                side, n = m.group(1).upper(), n[: m.start(1)] + n[m.end(1):]
            else:
                m = re.match(r"^([lr])(femur|tibia|foot|toes|humerus|radius|hand)$", n, re.I)  # CMU ASF
                if m:
                    side, n = m.group(1).upper(), m.group(2)
    key = re.sub(r"[^a-z0-9]", "", n.lower())
    for prefix in _PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix):]
    return side, key


TOE_KEYS = ("toe", "toes", "toebase", "ball", "toe0", "toe1", "toe01")


def _is_toe(key: str) -> bool:
    return key in TOE_KEYS or key.startswith("toe")


def detect_limbs(bones: Sequence[BoneInfo]) -> list[DetectedLimb]:
    """Left and right legs and arms found by name (parent-child lines only), then by hierarchy."""
    index: dict[tuple[str, str], list[str]] = {}
    sides: dict[str, tuple[Optional[str], str]] = {}
    for b in bones:
        side, key = sides[b.name] = split_side(b.name)
        if side:
            index.setdefault((side, key), []).append(b.name)
    children: dict[str, list[str]] = {}
    for b in bones:
        if b.parent:
            children.setdefault(b.parent, []).append(b.name)
    found: dict[tuple[str, str], DetectedLimb] = {}
    for conv, kind, upper, lower, end, _toe in _CONVENTIONS:
        for side in ("L", "R"):
            if (kind, side) in found:
                continue
            for u in index.get((side, upper), []):
                lows = [c for c in children.get(u, []) if sides[c] == (side, lower)]
                for lo in lows:
                    ends = [c for c in children.get(lo, []) if sides[c] == (side, end)]
                    if not ends:
                        continue
                    e = ends[0]
                    toes = [c for c in children.get(e, []) if kind == "FOOT" and sides[c][0] in (side, None)
                            and _is_toe(sides[c][1])]
                    found[(kind, side)] = DetectedLimb(_label(kind, side), kind, side, (u, lo), e,
                                                       toes[0] if toes else None, conv)
                    break
                if (kind, side) in found:
                    break
    for kind in ("FOOT", "HAND"):
        if not any(k == kind for k, _s in found):
            for limb in _by_hierarchy(bones, children, kind):
                found.setdefault((limb.kind, limb.side), limb)
    order = [("FOOT", "L"), ("FOOT", "R"), ("HAND", "L"), ("HAND", "R")]
    return [found[k] for k in order if k in found]


def _label(kind: str, side: str) -> str:
    return f"{'Left' if side == 'L' else 'Right'} {'Leg' if kind == 'FOOT' else 'Arm'}"


def _direction(b: BoneInfo) -> tuple[float, float, float]:
    d = (b.tail[0] - b.head[0], b.tail[1] - b.head[1], b.tail[2] - b.head[2])
    n = (d[0] ** 2 + d[1] ** 2 + d[2] ** 2) ** 0.5
    return (d[0] / n, d[1] / n, d[2] / n) if n > 0.0 else (0.0, 0.0, 0.0)


def _length(b: BoneInfo) -> float:
    return sum((t - h) ** 2 for h, t in zip(b.head, b.tail)) ** 0.5


def _by_hierarchy(bones: Sequence[BoneInfo], children: dict[str, list[str]], kind: str) -> list[DetectedLimb]:
    """Legs or arms from the skeleton's shape when names say nothing (Blender axes: Z up, the character's
    left is +X). A chain runs from a branch point through single children to a leaf or the next branch
    (a hand with fingers). A leg has two bones running down (thigh, shin) then the foot, and the toe when
    the next bone runs more level than down; an arm has two bones running sideways (upper arm, forearm)
    then the hand. Exactly one chain per side is accepted, or none: never a guess."""
    by_name = {b.name: b for b in bones}
    roots = [b.name for b in bones if not b.parent or b.parent not in by_name]
    if not roots:
        return []
    starts = [c for b in bones for c in children.get(b.name, []) if len(children.get(b.name, [])) >= 2] + roots
    centre_x = sum(by_name[r].head[0] for r in roots) / len(roots)
    found: dict[str, list[DetectedLimb]] = {"L": [], "R": []}
    for start in dict.fromkeys(starts):
        chain = [start]
        while len(children.get(chain[-1], [])) == 1:
            chain.append(children[chain[-1]][0])
        dirs = [_direction(by_name[n]) for n in chain]
        lengths = [_length(by_name[n]) for n in chain]
        pairs = []
        for i in range(len(chain) - 2):
            a, b = dirs[i], dirs[i + 1]
            if kind == "FOOT":
                ok = a[2] < -0.7 and b[2] < -0.7
            else:
                ok = abs(a[0]) > 0.5 and abs(b[0]) > 0.5 and a[2] > -0.75 and b[2] > -0.75
            if ok:
                pairs.append((lengths[i] + lengths[i + 1], i))
        # The longest such pair: thigh and shin, upper arm and forearm (not a clavicle, not fingers).
        for _total, i in sorted(pairs, reverse=True)[:1]:
            end = chain[i + 2]
            toe = None
            if kind == "FOOT" and i + 3 < len(chain) and abs(dirs[i + 3][2]) < 0.7:
                toe = chain[i + 3]
            elif kind == "FOOT" and i + 3 >= len(chain):
                level = [c for c in children.get(end, []) if abs(_direction(by_name[c])[2]) < 0.7]
                toe = level[0] if len(level) == 1 else None
            x = by_name[end].head[0] - centre_x
            if abs(x) < 1e-9:
                break
            side = "L" if x > 0 else "R"
            found[side].append(DetectedLimb(_label(kind, side), kind, side, (chain[i], chain[i + 1]), end, toe,
                                            "hierarchy"))
            break
    if len(found["L"]) != 1 or len(found["R"]) != 1:
        return []
    return [found["L"][0], found["R"][0]]


def bones_from_armature(obj: bpy.types.Object) -> list[BoneInfo]:
    return [
        BoneInfo(b.name, b.parent.name if b.parent else None, tuple(b.head_local), tuple(b.tail_local))  # type: ignore[arg-type]
        for b in obj.data.bones
    ]


def describe(limbs: Sequence[DetectedLimb]) -> str:
    lines = []
    for lb in limbs:
        chain = " > ".join(lb.bones + (lb.end_bone,) + ((lb.toe_bone,) if lb.toe_bone else ()))
        lines.append(f"{lb.name}: {chain} ({lb.convention})")
    return "\n".join(lines)
