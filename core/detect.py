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


def detect_limbs(bones: Sequence[BoneInfo]) -> list[DetectedLimb]:
    """Left and right legs and arms found by name (parent-child lines only), then by hierarchy."""
    parent = {b.name: b.parent for b in bones}
    index: dict[tuple[str, str], list[str]] = {}
    for b in bones:
        side, key = split_side(b.name)
        if side:
            index.setdefault((side, key), []).append(b.name)
    children: dict[str, list[str]] = {}
    for b in bones:
        if b.parent:
            children.setdefault(b.parent, []).append(b.name)
    found: dict[tuple[str, str], DetectedLimb] = {}
    for conv, kind, upper, lower, end, toe in _CONVENTIONS:
        for side in ("L", "R"):
            if (kind, side) in found:
                continue
            for u in index.get((side, upper), []):
                lows = [c for c in children.get(u, []) if split_side(c) == (side, lower)]
                for lo in lows:
                    ends = [c for c in children.get(lo, []) if split_side(c) == (side, end)]
                    if not ends:
                        continue
                    e = ends[0]
                    toes = [c for c in children.get(e, []) if toe and split_side(c) == (side, toe)]
                    label = f"{'Left' if side == 'L' else 'Right'} {'Leg' if kind == 'FOOT' else 'Arm'}"
                    found[(kind, side)] = DetectedLimb(label, kind, side, (u, lo), e, toes[0] if toes else None, conv)
                    break
                if (kind, side) in found:
                    break
    if not any(k == "FOOT" for k, _s in found):
        for limb in _by_hierarchy(bones, parent, children):
            found.setdefault((limb.kind, limb.side), limb)
    order = [("FOOT", "L"), ("FOOT", "R"), ("HAND", "L"), ("HAND", "R")]
    return [found[k] for k in order if k in found]


def _by_hierarchy(bones: Sequence[BoneInfo], parent: dict, children: dict) -> list[DetectedLimb]:
    """Legs from geometry when names say nothing: the two lowest leaf chains of 3+ bones, split by X."""
    by_name = {b.name: b for b in bones}
    leaves = [b.name for b in bones if not children.get(b.name)]
    chains = []
    for leaf in leaves:
        chain = [leaf]
        while parent.get(chain[-1]) and len(children.get(parent[chain[-1]], [])) == 1:
            chain.append(parent[chain[-1]])
        if parent.get(chain[-1]):
            chain.append(parent[chain[-1]]) if len(chain) < 4 else None
        chain.reverse()
        if len(chain) >= 3:
            chains.append(chain)
    chains.sort(key=lambda c: by_name[c[-1]].tail[2])
    legs = chains[:2]
    if len(legs) < 2:
        return []
    out = []
    for chain in legs:
        side = "L" if by_name[chain[-1]].tail[0] > 0 else "R"
        toe = chain[-1] if len(chain) >= 4 else None
        core = chain[-4:] if toe else chain[-3:]
        out.append(DetectedLimb(f"{'Left' if side == 'L' else 'Right'} Leg", "FOOT", side, (core[0], core[1]), core[2], toe,
                                "hierarchy"))
    if out[0].side == out[1].side:
        return []
    return out


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
