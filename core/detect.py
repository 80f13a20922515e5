"""Limb detection from bone names and hierarchy: legs and arms of common rig naming conventions.

Names are compared case-insensitively without namespace prefixes (`mixamorig:`), rig prefixes
(`CC_Base_`, `J_Bip_`, `Bip01 `, `DEF-`), whitespace or side markers (`.L`, `_l`, `Left`, `L_`, `l`);
a chain is accepted only when its bones form a parent-child line, so twist and share bones beside the
chain (children of the thigh or forearm) are never taken for it. When names say nothing, legs and arms
come from the skeleton's shape (`_by_hierarchy`). A limb is reported only when it is certain: a
skeleton with no recognisable limbs gives [] rather than a guess.

Axes are Blender's armature space: Z up, the character faces -Y, its left is +X (the fallback reads
the facing from the feet, so a rig facing +Y gets its sides right too).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import bpy

Vec = tuple[float, float, float]


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
    control: str = ""  # a control the limb is driven through (Rigify's IK foot), or '': the chain is solved


@dataclass(frozen=True)
class _Convention:
    label: str
    leg: tuple[str, str]  # side-free keys: upper, lower
    foot: tuple[str, ...]  # keys the end bone may have, in order of preference
    arm: tuple[str, str]
    hand: tuple[str, ...]


# Order matters only where two conventions share a key (the first match per limb wins; a chain must
# still be a parent-child line). Labels sharing keys are told apart by the rig prefix (`_prefix_label`).
_CONVENTIONS = (
    _Convention("Rigify", ("thigh", "shin"), ("foot",), ("upperarm", "forearm"), ("hand",)),
    _Convention("Mixamo/MotionBuilder", ("upleg", "leg"), ("foot",), ("arm", "forearm"), ("hand",)),
    # 3ds Max-style BVH: LeftCollar is the clavicle, LeftShoulder the upper arm.
    _Convention("3ds Max BVH", ("hip", "knee"), ("ankle", "foot"), ("shoulder", "elbow"), ("wrist", "hand")),
    # CMU ASF: lradius > lwrist > lhand in the full skeleton, lradius > lhand in reduced ones.
    _Convention("CMU ASF", ("femur", "tibia"), ("foot",), ("humerus", "radius"), ("hand", "wrist")),
    _Convention("Unreal", ("thigh", "calf"), ("foot",), ("upperarm", "lowerarm"), ("hand",)),
    _Convention("Unity", ("upperleg", "lowerleg"), ("foot",), ("upperarm", "lowerarm"), ("hand",)),
    _Convention("Character Creator", ("thigh", "calf"), ("foot",), ("upperarm", "forearm"), ("hand",)),
)

TOE_KEYS = ("toebase", "toe", "toes", "ball", "toe0", "toe1", "toe01")
_GIRDLE_KEYS = ("clavicle", "collar", "shoulder", "hipjoint")
# Side-free keys a compact side marker may precede ("lfemur", "LHip", "RKnee") or follow ("ThighL").
_LIMB_KEYS = frozenset(
    [k for c in _CONVENTIONS for k in (*c.leg, *c.foot, *c.arm, *c.hand)] + list(TOE_KEYS) + list(_GIRDLE_KEYS)
)

_SEP = r"[\s._\-]"
_RIG_PREFIX = re.compile(r"^(mixamorig\d*|cc_base|j_bip|bip\d+|def|org|mch)" + _SEP + "+", re.I)
_GLUED_PREFIX = re.compile(r"^(mixamorig\d*|ccbase|jbip|bip\d+|def|org|mch)")
_CENTRE_MARKER = re.compile(r"^[cm]" + _SEP + "+(?=.)", re.I)  # J_Bip_C_Hips
_SIDE_PATTERNS = (
    re.compile(r"^(?P<side>left|right)" + _SEP + r"*(?P<rest>.+)$", re.I),  # LeftUpLeg, Left_Arm
    re.compile(r"^(?P<rest>.+?)" + _SEP + r"*(?P<side>left|right)$", re.I),  # ThighLeft, hand_right
    re.compile(r"^(?P<rest>.+?)" + _SEP + r"+(?P<side>[lr])$", re.I),  # thigh.L, calf_l, Thigh L
    re.compile(r"^(?P<side>[lr])" + _SEP + r"+(?P<rest>.+)$", re.I),  # L_Thigh, L Thigh (CC, VRM, Biped)
    re.compile(r"^(?P<rest>.+?)" + _SEP + r"+(?P<side>[lr])(?P<more>" + _SEP + r"+.*)$", re.I),  # thigh.L.001
)
_COMPACT = (
    re.compile(r"^(?P<side>[lr])(?P<rest>[a-z].*)$", re.I),  # lfemur (CMU ASF), LHip, RKnee
    re.compile(r"^(?P<rest>.*[a-z0-9])(?P<side>[LR])$"),  # ThighL (case-sensitive: a capital marker)
)


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _parse(name: str) -> tuple[Optional[str], str, str]:
    """(side 'L'/'R' or None, side-free key, rig prefix or namespace in lower case) of a bone name."""
    n = name.strip()
    prefix = ""
    if ":" in n:
        prefix, n = n.rsplit(":", 1)
        prefix, n = _key(prefix), n.strip()
    m = _RIG_PREFIX.match(n)
    if m and len(n) > m.end():
        prefix, n = _key(m.group(1)), n[m.end():]
    n = _CENTRE_MARKER.sub("", n)
    side: Optional[str] = None
    rest = n
    for pattern in _SIDE_PATTERNS:
        m = pattern.match(n)
        if m:
            side, rest = m.group("side")[0].upper(), m.group("rest") + (m.groupdict().get("more") or "")
            break
    else:
        for pattern in _COMPACT:
            m = pattern.match(n)
            if m and _key(m.group("rest")) in _LIMB_KEYS:
                side, rest = m.group("side").upper(), m.group("rest")
                break
    key = _key(rest)
    m = _GLUED_PREFIX.match(key)
    if m and key not in _LIMB_KEYS and key[m.end():] in _LIMB_KEYS:  # no separator: "CCBase_L_Thigh"
        prefix, key = m.group(0), key[m.end():]
    return side, key, prefix


def split_side(name: str) -> tuple[Optional[str], str]:
    """(side 'L'/'R' or None, the side-free lower-case key) of a bone name."""
    side, key, _prefix = _parse(name)
    return side, key


def _is_toe(key: str) -> bool:
    return key in TOE_KEYS or key.startswith("toe")


def _prefix_label(prefix: str) -> Optional[str]:
    if "mixamorig" in prefix:
        return "Mixamo"
    if prefix == "ccbase":
        return "Character Creator"
    if prefix == "jbip":
        return "VRM"
    if re.fullmatch(r"bip\d+", prefix):
        return "3ds Max Biped"
    if prefix in ("def", "org", "mch"):
        return "Rigify"
    return None


# --- geometry ---------------------------------------------------------------------------------------


def _sub(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _norm(v: Vec) -> float:
    return float((v[0] ** 2 + v[1] ** 2 + v[2] ** 2) ** 0.5)


class _Skeleton:
    """Bones by name, children, and measures of the whole skeleton (height, floor, centre line)."""

    def __init__(self, bones: Sequence[BoneInfo]) -> None:
        self.by_name = {b.name: b for b in bones}
        self.order = {b.name: i for i, b in enumerate(bones)}
        self.children: dict[str, list[str]] = {}
        for b in bones:
            if b.parent and b.parent in self.by_name and b.parent != b.name:
                self.children.setdefault(b.parent, []).append(b.name)
        self.parsed = {b.name: _parse(b.name) for b in bones}
        zs = [p[2] for b in bones for p in (b.head, b.tail)]
        self.floor = min(zs) if zs else 0.0
        self.height = (max(zs) - self.floor) if zs else 0.0
        self.centre_x = statistics.median(b.head[0] for b in bones) if bones else 0.0

    def parent(self, name: str) -> Optional[str]:
        p = self.by_name[name].parent
        return p if p in self.by_name and p != name else None

    def head(self, name: str) -> Vec:
        return self.by_name[name].head

    def direction(self, name: str) -> Vec:
        """Where the bone points: to its only child's head when it has one (bone tails of imported rigs
        may point anywhere), else to its tail."""
        b = self.by_name[name]
        kids = self.children.get(name, [])
        if len(kids) == 1:
            d = _sub(self.head(kids[0]), b.head)
            if _norm(d) > 1e-6 * max(self.height, 1e-9):
                return d
        return _sub(b.tail, b.head)

    def descendants(self, name: str) -> set[str]:
        out: set[str] = set()
        stack = [name]
        while stack:
            for c in self.children.get(stack.pop(), []):
                if c not in out:
                    out.add(c)
                    stack.append(c)
        return out

    def reach_out(self, name: str, sign: float) -> float:
        """How far the bone and its descendants extend past its head along X toward `sign` (outward for
        an arm: fingers do, a sword held forward hardly does)."""
        x = self.head(name)[0]
        bones = [self.by_name[n] for n in self.descendants(name) | {name}]
        return max(0.0, max(sign * (p[0] - x) for b in bones for p in (b.head, b.tail)))

    def is_level(self, name: str) -> bool:
        """More horizontal than vertical (a toe), and not of zero length."""
        d = self.direction(name)
        return _norm(d) > 0.0 and (d[0] ** 2 + d[1] ** 2) ** 0.5 > abs(d[2])


def _geometric_toe(sk: _Skeleton, foot: str, only_child: bool) -> Optional[str]:
    """The foot's toe from geometry: a child running level, low, starting away from the ankle. With
    several such children (toes of a nameless rig, a heel) the one starting farthest from the ankle,
    when it clearly does; otherwise none."""
    kids = sk.children.get(foot, [])
    if only_child and len(kids) != 1:
        return None
    ankle = sk.head(foot)
    low = sk.floor + 0.15 * sk.height
    level = [c for c in kids if sk.is_level(c) and sk.head(c)[2] <= low]
    if not level:
        return None
    dist = sorted(((_norm(_sub(sk.head(c), ankle)), c) for c in level), reverse=True)
    if len(dist) == 1 or dist[1][0] < 0.8 * dist[0][0]:
        return dist[0][1]
    return None


# --- by name ----------------------------------------------------------------------------------------


def _named_toe(sk: _Skeleton, foot: str, side: str) -> Optional[str]:
    kids = [c for c in sk.children.get(foot, []) if sk.parsed[c][0] in (side, None)]
    named = [c for c in kids if sk.parsed[c][1] in TOE_KEYS] or [c for c in kids if _is_toe(sk.parsed[c][1])]
    return named[0] if named else _geometric_toe(sk, foot, only_child=True)


def _by_name(sk: _Skeleton) -> dict[tuple[str, str], DetectedLimb]:
    index: dict[tuple[str, str], list[str]] = {}
    for name, (side, key, _prefix) in sk.parsed.items():
        if side:
            index.setdefault((side, key), []).append(name)
    found: dict[tuple[str, str], DetectedLimb] = {}
    labels: dict[tuple[str, str], list[str]] = {}
    for kind in ("FOOT", "HAND"):
        for side in ("L", "R"):
            for conv in _CONVENTIONS:
                upper, lower = conv.leg if kind == "FOOT" else conv.arm
                ends = conv.foot if kind == "FOOT" else conv.hand
                hit = _chain_by_keys(sk, index, side, upper, lower, ends)
                if hit is None:
                    continue
                if (kind, side) not in found:
                    u, lo, e = hit
                    toe = _named_toe(sk, e, side) if kind == "FOOT" else None
                    found[(kind, side)] = DetectedLimb(_label(kind, side), kind, side, (u, lo), e, toe, conv.label)
                    labels[(kind, side)] = [conv.label]
                elif hit == (*found[(kind, side)].bones, found[(kind, side)].end_bone):
                    labels[(kind, side)].append(conv.label)  # the same chain under another convention's keys
    # Conventions sharing keys (Rigify and Character Creator arms; Unreal and Unity arms): the rig prefix
    # decides, else the convention the legs were found by.
    leg_labels = {lb.convention for (k, _s), lb in found.items() if k == "FOOT"}
    for k, limb in list(found.items()):
        names = limb.bones + (limb.end_bone,)
        by_prefix = {_prefix_label(sk.parsed[n][2]) for n in names} - {None}
        if len(by_prefix) == 1:
            label = by_prefix.pop()
        else:
            label = next((c for c in labels[k] if c in leg_labels), labels[k][0])
        if label is not None and label != limb.convention:
            found[k] = DetectedLimb(limb.name, limb.kind, limb.side, limb.bones, limb.end_bone, limb.toe_bone, label)
    return found


def _chain_by_keys(sk: _Skeleton, index: dict[tuple[str, str], list[str]], side: str, upper: str, lower: str,
                   ends: Sequence[str]) -> Optional[tuple[str, str, str]]:
    for u in index.get((side, upper), []):
        for lo in sk.children.get(u, []):
            if sk.parsed[lo][:2] != (side, lower):
                continue
            for end_key in ends:
                for e in sk.children.get(lo, []):
                    if sk.parsed[e][:2] == (side, end_key):
                        return u, lo, e
    return None


# --- by hierarchy and geometry ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    bones: tuple[str, str, str]  # upper, lower, end
    score: float  # the best line of a side scores highest (see the candidates' functions)
    length: float  # of the two bones, head to head
    side_x: float  # the end's offset from the centre line (+X is the character's left facing -Y)


def _triples(sk: _Skeleton, excluded: set[str]) -> Iterable[tuple[str, str, str, Vec, Vec, float, float]]:
    """Every parent-child line of three bones (a > b > c) with the vectors a->b and b->c between heads."""
    for c in sk.by_name:
        b = sk.parent(c)
        a = sk.parent(b) if b else None
        if a is None or b is None or excluded & {a, b, c}:
            continue
        va, vb = _sub(sk.head(b), sk.head(a)), _sub(sk.head(c), sk.head(b))
        la, lb = _norm(va), _norm(vb)
        if la <= 0.0 or lb <= 0.0:
            continue
        yield a, b, c, va, vb, la, lb


def _splits_a_bone(sk: _Skeleton, a: str, va: Vec, la: float, from_centre: bool) -> bool:
    """Whether `a` only continues its parent in a straight line (the lower half of a thigh or upper arm
    split for twisting): then a > b > c is not the limb, and its true upper bone would be two bones.
    With `from_centre`, a parent starting at the centre line (a clavicle in line with a T-pose arm)
    does not count."""
    p = sk.parent(a)
    if p is None:
        return False
    vp = _sub(sk.head(a), sk.head(p))
    lp = _norm(vp)
    if lp < 0.04 * sk.height or (from_centre and abs(sk.head(p)[0] - sk.centre_x) < 0.06 * sk.height):
        return False
    return (vp[0] * va[0] + vp[1] * va[1] + vp[2] * va[2]) / (lp * la) > 0.97


def _leg_candidates(sk: _Skeleton, excluded: set[str]) -> list[_Candidate]:
    """Thigh > shin > foot lines: two long bones of similar length running down, the foot's head (the
    ankle) near the lowest point of the skeleton, the hip well above it."""
    h = sk.height
    out = []
    for a, b, c, va, vb, la, lb in _triples(sk, excluded):
        if min(la, lb) < 0.04 * h or not 0.4 <= la / lb <= 2.5:
            continue
        if va[2] / la > -0.7 or vb[2] / lb > -0.7:  # within 45 degrees of straight down
            continue
        if sk.head(c)[2] > sk.floor + 0.15 * h or sk.head(a)[2] - sk.head(c)[2] < 0.15 * h:
            continue
        if _splits_a_bone(sk, a, va, la, from_centre=False):
            continue
        out.append(_Candidate((a, b, c), la + lb, la + lb, sk.head(c)[0] - sk.centre_x))
    return out


def _arm_candidates(sk: _Skeleton, excluded: set[str], hip_z: float) -> list[_Candidate]:
    """Upper arm > forearm > hand lines of the upper body: two long bones of similar length extending
    sideways (T- or A-pose), each further from the centre line than the last."""
    h = sk.height
    out = []
    for a, b, c, va, vb, la, lb in _triples(sk, excluded):
        if min(la, lb) < 0.05 * h or not 0.4 <= la / lb <= 2.5 or sk.head(a)[2] <= hip_z:
            continue
        xa, xb, xc = (sk.head(n)[0] - sk.centre_x for n in (a, b, c))
        s = 1.0 if xc > 0 else -1.0
        if abs(xc) < 0.02 * h or not s * xa < s * xb < s * xc:
            continue
        if s * va[0] / la < 0.5 or s * vb[0] / lb < 0.45:  # sideways, at most 60 degrees off level
            continue
        if _splits_a_bone(sk, a, va, la, from_centre=True):
            continue
        # The end is where the arm ends: past a hand only the fingers reach further out, past a forearm
        # (the line clavicle > upper arm > forearm) the forearm and the hand do. What lies beyond also
        # counts against the line, so that of two lines the one ending at the hand wins.
        beyond = sk.reach_out(c, s)
        if beyond >= max(s * va[0], s * vb[0]):
            continue
        out.append(_Candidate((a, b, c), la + lb - beyond, la + lb, xc))
    return out


def _one_per_side(sk: _Skeleton, candidates: list[_Candidate]) -> Optional[tuple[_Candidate, _Candidate]]:
    """The best candidate on each side of the centre line (+X first), or None when a side has none, has
    two unrelated lines (a second leg on one side: a quadruped, a skirt to the floor), or the two sides
    do not mirror each other in length and height."""
    best: list[_Candidate] = []
    for sign in (1.0, -1.0):
        mine = sorted((cd for cd in candidates if cd.side_x * sign > 0.02 * sk.height),
                      key=lambda cd: (-cd.score, sk.order[cd.bones[2]]))
        if not mine:
            return None
        top = mine[0]
        family = sk.descendants(top.bones[0]) | {top.bones[0]}
        for other in mine[1:]:
            if other.bones[0] not in family and top.bones[0] not in sk.descendants(other.bones[0]):
                return None
        best.append(top)
    left, right = best
    if abs(left.length - right.length) > 0.2 * max(left.length, right.length):
        return None
    if abs(sk.head(left.bones[0])[2] - sk.head(right.bones[0])[2]) > 0.1 * sk.height:
        return None
    return left, right


def _facing_sign(sk: _Skeleton, feet: Sequence[tuple[str, Optional[str]]]) -> float:
    """+1 when the character faces -Y (its left is +X), -1 when its feet point clearly toward +Y."""
    fx = fy = 0.0
    for foot, toe in feet:
        d = _sub(sk.head(toe), sk.head(foot)) if toe else sk.direction(foot)
        fx, fy = fx + d[0], fy + d[1]
    return -1.0 if fy > 0.0 and fy > 2.0 * abs(fx) else 1.0


def _by_hierarchy(sk: _Skeleton, kinds: Sequence[str], excluded: set[str],
                  known_legs: Sequence[DetectedLimb]) -> list[DetectedLimb]:
    """Legs and arms from the skeleton's shape when names say nothing.

    Legs: the lines from a branching bone down to the lowest bones, thigh > shin > foot, with the toe
    when the foot's child runs more level than down. Arms: the lines extending sideways from the upper
    body (above the hips), upper arm > forearm > hand; a clavicle before the upper arm and fingers after
    the hand are left out, as are twist bones beside the chain. One line per side or nothing: never a
    guess."""
    if sk.height <= 0.0:
        return []
    legs = _one_per_side(sk, _leg_candidates(sk, excluded)) if "FOOT" in kinds else None
    toes = {cd.bones[2]: _geometric_toe(sk, cd.bones[2], only_child=False) for cd in legs or ()}
    feet = [(lb.end_bone, lb.toe_bone) for lb in known_legs] + list(toes.items())
    facing = _facing_sign(sk, feet) if feet else 1.0

    def side_of(cd: _Candidate) -> str:
        return "L" if (cd.side_x > 0) == (facing > 0) else "R"

    out = [DetectedLimb(_label("FOOT", side_of(cd)), "FOOT", side_of(cd), cd.bones[:2], cd.bones[2], toes[cd.bones[2]],
                        "hierarchy") for cd in legs or ()]
    if "HAND" in kinds:
        leg_bones = [(*lb.bones, lb.end_bone, lb.toe_bone) for lb in [*known_legs, *out]]
        used = excluded | {n for chain in leg_bones for n in chain if n}
        thighs = [chain[0] for chain in leg_bones]
        hip_z = max(sk.head(n)[2] for n in thighs) if thighs else sk.floor + 0.5 * sk.height
        arms = _one_per_side(sk, _arm_candidates(sk, used, hip_z))
        out += [DetectedLimb(_label("HAND", side_of(cd)), "HAND", side_of(cd), cd.bones[:2], cd.bones[2], None, "hierarchy")
                for cd in arms or ()]
    return out


# --- public -----------------------------------------------------------------------------------------


def detect_limbs(bones: Sequence[BoneInfo]) -> list[DetectedLimb]:
    """Left and right legs and arms found by name (parent-child lines only), then by hierarchy and
    geometry for what names did not give; in the order left leg, right leg, left arm, right arm."""
    sk = _Skeleton(bones)
    found = _by_name(sk)
    missing = [k for k in ("FOOT", "HAND") if not ((k, "L") in found and (k, "R") in found)]
    if missing:
        used = {n for lb in found.values() if lb.kind not in missing for n in (*lb.bones, lb.end_bone)}
        known_legs = [lb for lb in found.values() if lb.kind == "FOOT" and "FOOT" not in missing]
        guessed = {(lb.kind, lb.side): lb for lb in _by_hierarchy(sk, missing, used, known_legs)}
        for kind in missing:
            named = [found[(kind, s)] for s in ("L", "R") if (kind, s) in found]
            shaped = [guessed[(kind, s)] for s in ("L", "R") if (kind, s) in guessed]
            if len(shaped) != 2:
                continue
            # With one side named, the shape must agree with it before it gives the other side.
            if all((lb.bones, lb.end_bone) == (guessed[(kind, lb.side)].bones, guessed[(kind, lb.side)].end_bone)
                   for lb in named):
                for lb in shaped:
                    found.setdefault((kind, lb.side), lb)
    order = [("FOOT", "L"), ("FOOT", "R"), ("HAND", "L"), ("HAND", "R")]
    return [found[k] for k in order if k in found]


def _label(kind: str, side: str) -> str:
    return f"{'Left' if side == 'L' else 'Right'} {'Leg' if kind == 'FOOT' else 'Arm'}"


def bones_from_armature(obj: bpy.types.Object) -> list[BoneInfo]:
    return [
        BoneInfo(b.name, b.parent.name if b.parent else None, tuple(b.head_local), tuple(b.tail_local))  # type: ignore[arg-type]
        for b in obj.data.bones
    ]


def describe(limbs: Sequence[DetectedLimb]) -> str:
    lines = []
    for lb in limbs:
        chain = " > ".join(lb.bones + (lb.end_bone,) + ((lb.toe_bone,) if lb.toe_bone else ()))
        through = f", driven through {lb.control}" if lb.control else ""
        lines.append(f"{lb.name}: {chain} ({lb.convention}{through})")
    return "\n".join(lines)
