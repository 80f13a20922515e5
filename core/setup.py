"""Filling a rig's settings: limbs from detection, defaults measured on the rig, the animation's floor.

Every default comes from the rig itself (leg length, rest pose, where the feet rest in the
animation), never from constants in metres, so rigs of any scale work untouched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from . import checks, contacts, detect, state
from .anatomy import sole_of
from .contacts import fps_of
from .errors import UserError
from .ground import terrain_objects
from .model import held_floor
from .rig import chain_length, heel_local, hinge_to_measure, settings, world_scale  # noqa: F401  (heel_local: the tests' own heel)
from .tuning import CUT_SPEED, DEEP_DIP, MIN_CONTACT

if TYPE_CHECKING:
    import bpy


def foot_offset_at_rest(obj: bpy.types.Object, foot: str, toe: str | None) -> float:
    """Ankle height above the lowest point of the sole (`anatomy.sole_of`) in the rest pose, along world up
    (`rig.UP`), armature units."""
    return sole_of(obj, foot, toe or "").offset


def common_ancestor(obj: bpy.types.Object, names: Sequence[str]) -> str:
    """The nearest bone that is an ancestor of all `names` (the pelvis for two thighs), or ''."""
    bones = obj.data.bones
    chains = []
    for n in names:
        chain = []
        b = bones[n].parent
        while b is not None:
            chain.append(b.name)
            b = b.parent
        chains.append(chain)
    if not chains:
        return ""
    for candidate in chains[0]:
        if all(candidate in c for c in chains[1:]):
            return candidate
    return chains[0][-1] if chains[0] else ""


def apply_detection(obj: bpy.types.Object, found: Sequence[detect.DetectedLimb], pelvis: Optional[str] = None) -> None:
    """Replace the rig's limbs with `found`, each with defaults measured on the rig; `pelvis`: the bone the
    body follows by (None: the legs' nearest common ancestor)."""
    s = settings(obj)
    s.limbs.clear()
    for d in found:
        limb = s.limbs.add()
        limb.name = d.name
        limb.kind = d.kind
        for name in d.bones:
            limb.bones.add().bone = name
        limb.end_bone = d.end_bone
        limb.toe_bone = d.toe_bone or ""
        limb.control_bone = getattr(d, "control", "")  # a DetectedLimb, or any object with its fields
        measure_limb(obj, limb)
    thighs = [d.bones[0] for d in found if d.kind == "FOOT"]
    s.pelvis_bone = pelvis if pelvis is not None else common_ancestor(obj, thighs) if thighs else ""
    s.active_limb = 0


def measure_limb(obj: bpy.types.Object, limb: bpy.types.PropertyGroup) -> None:
    """Defaults measured on the rig: chain length, ray length (the chain's), sole height for feet."""
    bones = obj.data.bones
    names = [b.bone for b in limb.bones if b.bone in bones]
    length = chain_length(obj, names, limb.end_bone)
    limb.length = length
    limb.ray_length = length
    if limb.kind == "FOOT" and limb.end_bone in bones:
        limb.foot_offset = foot_offset_at_rest(obj, limb.end_bone, limb.toe_bone or None)


def _toe_of(foot: bpy.types.Bone) -> str:
    """The foot's toe: its only connected child, else a child named like a toe or ball, else ''."""
    connected = [c for c in foot.children if c.use_connect]
    if len(connected) == 1:
        return str(connected[0].name)
    named = [c for c in foot.children if any(k in c.name.lower() for k in ("toe", "ball"))]
    return str(named[0].name) if len(named) == 1 else ""


def add_limb(obj: bpy.types.Object, kind: str, end_bone: str = "", chain_length: int = 2) -> bpy.types.PropertyGroup:
    """A new limb of `kind`: with `end_bone`, its `chain_length` parents make the chain (root to tip) and
    its only child becomes the toe of a foot; without, empty bone slots to fill in the panel."""
    s = settings(obj)
    bones = obj.data.bones
    chain: list[str] = []
    toe = ""
    if end_bone:
        if end_bone not in bones:
            raise UserError(f"No bone {end_bone!r} in {obj.name!r}")
        b = bones[end_bone].parent
        while b is not None and len(chain) < chain_length:
            chain.insert(0, b.name)
            b = b.parent
        if len(chain) < chain_length:
            raise UserError(f"{end_bone!r} has only {len(chain)} parent bone(s); a chain of {chain_length} is needed: "
                             "make the foot or hand bone active, or lower Chain Bones")
        if kind == "FOOT":
            toe = _toe_of(bones[end_bone])
    limb = s.limbs.add()
    label = {"FOOT": "Foot", "HAND": "Hand", "CHAIN": "Chain"}[kind]
    limb.name = f"{label} ({end_bone})" if end_bone else f"{label} {len(s.limbs)}"
    limb.kind = kind
    for name in chain or [""] * chain_length:
        limb.bones.add().bone = name
    limb.end_bone = end_bone
    limb.toe_bone = toe
    measure_limb(obj, limb)
    if kind == "FOOT" and not s.pelvis_bone and chain and bones[chain[0]].parent is not None:
        s.pelvis_bone = bones[chain[0]].parent.name
    s.active_limb = len(s.limbs) - 1
    return limb


def detect_floor(obj: bpy.types.Object, scene: bpy.types.Scene, deep: Optional[list[tuple[int, float]]] = None,
                 samples: Optional[dict[int, dict[str, np.ndarray]]] = None) -> float:
    """The animation's floor (world Z): the lowest level the feet hold, the lowest sole point of either foot
    staying at or below it for at least MIN_CONTACT seconds, over every frame of the scene's range (`samples`:
    `contacts.sample_feet` over it, already taken). A few frames lower than that (a capture's leading T-pose
    or glitch, a landing's dip) do not make the floor: a stance lasts longer than they do. `deep`, if given,
    gets the frames whose feet go more than DEEP_DIP x leg under it (frame, depth x leg)."""
    s = settings(obj)
    start = scene.frame_start
    if samples is None:
        samples = contacts.sample_feet(obj, scene, start, scene.frame_end)
    if not samples or scene.frame_end < start:
        return s.floor_height
    lows = np.min([d["sole"][:, 2] for d in samples.values()], axis=0)
    floor = held_floor(lows, math.ceil(MIN_CONTACT * fps_of(scene)))
    if deep is not None:
        leg = max(s.limbs[i].length or 0.0 for i in samples) * world_scale(obj)
        deep += [(start + k, (floor - float(z)) / leg) for k, z in enumerate(lows)
                 if leg > 0.0 and floor - z > DEEP_DIP * leg]
    return floor


def floor_and_contacts(obj: bpy.types.Object, scene: bpy.types.Scene, floor: bool = True, find: bool = True,
                       deep: Optional[list[tuple[int, float]]] = None) -> None:
    """The animation's floor (`detect_floor`, with `floor`; `deep` as there) and every foot's contacts
    (`contacts.detect_contacts`, with `find`), from one sweep over the scene's frame range. Without `find`, the
    knee hinge of a foot never measured is measured (`rig.hinge_to_measure`, `contacts.measure_hinges`): contacts kept from
    before (edited, or found by an earlier version) keep a knee from bending where the foot points."""
    unmeasured = any(hinge_to_measure(lb) for lb in settings(obj).limbs)
    if not (floor or find or unmeasured):
        return
    samples = contacts.sample_feet(obj, scene, scene.frame_start, scene.frame_end)
    if floor:
        settings(obj).floor_height = detect_floor(obj, scene, deep=deep, samples=samples)
    if find:
        contacts.detect_contacts(obj, scene, samples=samples)
    elif unmeasured:
        contacts.measure_hinges(obj, samples)


def deep_dip_warning(deep: Sequence[tuple[int, float]]) -> str:
    """Plant Feet's note on frames far under the floor (`detect_floor`)."""
    frames = [f for f, _d in deep]
    span = f"frame {frames[0]}" if len(frames) == 1 else f"frames {frames[0]}-{frames[-1]}"
    many = f" ({len(frames)} frames)" if len(frames) > 1 and frames[-1] - frames[0] + 1 != len(frames) else ""
    return (f"{span}{many}: the feet go up to {max(d for _f, d in deep):.0%} of the leg under the floor the rest of "
            "the animation stands on (a leading T-pose or a capture glitch?); they are not taken for the floor, and "
            "they are planted like the rest: start the scene's frame range after them if they are not part of the shot")


def cut_warning(obj: bpy.types.Object, scene: bpy.types.Scene) -> Optional[str]:
    """What Plant Feet, Detect Contacts, Bake and the command line say of the frames the rig's contacts treat
    as cuts (`contacts.cuts_found`): where, how far the feet and the body jump, whether the body jumped with
    its feet (a loop's seam) or the feet were thrown about a body that stays (`contacts.body_jumps`: a
    capture's glitch, more likely), and how to have the jump followed instead. None for none."""
    found = contacts.cuts_found(obj)
    if not found:
        return None
    fps = fps_of(scene)
    leg = max((lb.length or 1.0 for lb in settings(obj).limbs if lb.kind == "FOOT"), default=1.0) * world_scale(obj)
    glitches = 0
    shown: list[str] = []
    for f, j in found:
        samples = contacts.sample_feet(obj, scene, f - 1, f, body=True)
        whole = contacts.body_jumps(obj, samples, fps)
        body = next(iter(samples.values())).get("body") if samples else None
        moved = float(np.linalg.norm(body[1] - body[0])) / leg if body is not None else None
        glitch = whole is not None and not whole[1]
        glitches += glitch
        if len(shown) < 5:
            shown.append(f"{f} (the feet {j:.0%} of the leg in one frame, {j * fps:.0f} legs per second"
                         + (f"; the body {moved:.0%}" if moved is not None else "")
                         + (": a glitch of the capture?" if glitch else "") + ")")
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    one = len(found) == 1
    where = "There" if one else f"At {glitches} of them"
    odd = (f" {where} the body did not jump with its feet: more likely a glitch of the capture than a seam."
           if glitches else "")
    return (f"{obj.name!r}: {'frame' if one else 'frames'} {', '.join(shown)}{more}: every foot jumps faster than "
            f"{CUT_SPEED:g} leg lengths per second, so {'it is' if one else 'they are'} treated as "
            f"{'a cut' if one else 'cuts'} (a loop's seam or an NLA repeat snapping the body back): no foot is held "
            f"and the body is not smoothed across {'it' if one else 'them'}.{odd} To have such a jump followed as a "
            "move, turn off Detect Cuts in the Contact IK panel and click Detect Contacts (on the command line: "
            "--no-cuts)")


def no_limbs_message(obj: bpy.types.Object) -> str:
    return (f"No legs or arms found in {obj.name!r} by bone names or hierarchy (no limbs detected): add limbs by "
            "hand in the Contact IK panel (for the command line: save the .blend with them, then bake that)")


# A Rigify generated rig, by the controls every one of them has: (kind, IK/FK switch bone, FK chain, FK end
# bone, FK toe, label). Its ORG, DEF and MCH bones follow these by constraints and are never written.
RIGIFY_LIMBS = (("FOOT", "thigh_parent", ("thigh_fk", "shin_fk"), "foot_fk", "toe_fk", "Leg"),
                ("HAND", "upper_arm_parent", ("upper_arm_fk", "forearm_fk"), "hand_fk", None, "Arm"))
# A Rigify leg in IK mode: the joints read from its ORG bones (chain, end bone, toe), which follow the rig's
# own IK; the leg is driven through its IK foot control (the foot roll under it kept as animated).
RIGIFY_IK_LEG = (("ORG-thigh", "ORG-shin"), "ORG-foot", "ORG-toe", "foot_ik")


def rigify_limbs(obj: bpy.types.Object) -> Optional[list[detect.DetectedLimb]]:
    """A Rigify generated rig's limbs (the body through `torso`); None for any other rig. The IK/FK switch
    (`IK_FK` on each limb's parent control: 1 is FK) is read per limb: a leg in FK mode is driven through its
    FK controls (thigh_fk > shin_fk > foot_fk, toe_fk); a leg in IK mode through its IK foot control
    (`foot_ik`), its joints read from its ORG bones, the knee left to Rigify's own IK (its pole or knee
    control as animated); an arm in IK mode is left out."""
    pbs = obj.pose.bones
    if "torso" not in pbs or not any(f"thigh_parent.{s}" in pbs for s in "LR"):
        return None
    found = []
    for kind, switch, chain, end, toe, label in RIGIFY_LIMBS:
        for side in "LR":
            names = tuple(f"{c}.{side}" for c in chain)
            parent = pbs.get(f"{switch}.{side}")
            if parent is None or any(n not in pbs for n in (*names, f"{end}.{side}")):
                continue
            name = f"{'Left' if side == 'L' else 'Right'} {label}"
            if float(parent.get("IK_FK", 1.0)) < 0.5:
                if kind != "FOOT":
                    continue
                ik_chain, ik_end, ik_toe, control = RIGIFY_IK_LEG
                ik_names = tuple(f"{c}.{side}" for c in ik_chain)
                if any(n not in pbs for n in (*ik_names, f"{ik_end}.{side}", f"{control}.{side}")):
                    raise UserError(f"{obj.name!r} is a Rigify rig with {parent.name!r} in IK mode (IK_FK 0) but without "
                                    f"the bones Contact IK reads and drives it by ({', '.join(ik_names)}, "
                                    f"{ik_end}.{side}, {control}.{side}): switch the leg to FK (IK_FK 1), or add "
                                    "its limb by hand in the Contact IK panel")
                tip = f"{ik_toe}.{side}" if f"{ik_toe}.{side}" in pbs else None
                found.append(detect.DetectedLimb(name, kind, side, ik_names, f"{ik_end}.{side}", tip,
                                                 "Rigify IK foot control", f"{control}.{side}"))
                continue
            tip = f"{toe}.{side}" if toe and f"{toe}.{side}" in pbs else None
            found.append(detect.DetectedLimb(name, kind, side, names, f"{end}.{side}", tip, "Rigify FK controls"))
    return found


def find_limbs(obj: bpy.types.Object) -> tuple[list[detect.DetectedLimb], Optional[str]]:
    """The rig's limbs and the bone the body follows by (None: the legs' common ancestor): a Rigify rig's
    controls (`rigify_limbs`), else by names and hierarchy (`detect`)."""
    rigify = rigify_limbs(obj)
    if rigify is not None:
        return rigify, "torso"
    return detect.detect_limbs(detect.bones_from_armature(obj)), None


def ensure_limbs(obj: bpy.types.Object) -> str:
    """The rig's limbs, detected when it has none (`apply_detection`); how they were found."""
    if settings(obj).limbs:
        return "from the file's settings"
    found, pelvis = find_limbs(obj)
    if not found:
        raise UserError(no_limbs_message(obj))
    apply_detection(obj, found, pelvis)
    return detect.describe(found)


@dataclass
class Prepared:
    """What `prepare` found: the terrain built for the feet, how the limbs were found, and warnings."""

    terrain: Any  # `ground.Terrain`
    limbs: str
    warnings: list[str] = field(default_factory=list)


def prepare(obj: bpy.types.Object, scene: bpy.types.Scene, terrain: Optional[bpy.types.Object] = None,
            depsgraph: Optional[bpy.types.Depsgraph] = None) -> Prepared:
    """Plant Feet's and the command line's set-up of a rig, in this order: its limbs (detected when it has
    none), its terrain (`terrain`, a mesh that becomes the rig's Terrain once it is found usable, else the
    one in its settings) checked and built, the animation's floor (with Auto Floor on) and the contacts
    (detected when no foot has any). A refused rig (`UserError`) is left as it was, but for limbs detected."""
    import bpy

    s = settings(obj)
    error = checks.rig_error(obj) or checks.range_error(scene.frame_start, scene.frame_end)
    if error:
        raise UserError(error)
    limbs = ensure_limbs(obj)
    error = checks.rig_error(obj)
    if error:
        raise UserError(error)
    mesh, collection = (terrain if terrain is not None else s.terrain), s.terrain_collection
    if mesh is None and collection is None:
        raise UserError("No terrain: select the ground mesh too (Ctrl+click it), or set Terrain in the Contact IK panel")
    objs = terrain_objects(SimpleNamespace(terrain=mesh, terrain_collection=collection))
    if not objs:
        raise UserError(f"The terrain collection {collection.name!r} holds no mesh: add the ground meshes to it, or "
                        "select the ground mesh too (Ctrl+click it)")
    error = checks.terrain_scene_error(objs, scene)
    if error:
        raise UserError(error)
    ground = state.caches.terrain.get(objs, depsgraph or bpy.context.evaluated_depsgraph_get())
    if terrain is not None:
        s.terrain = terrain
    warnings = checks.rig_warnings(obj)
    for lb in s.limbs:
        if lb.enabled and lb.kind == "FOOT" and lb.end_bone in obj.data.bones:
            source = sole_of(obj, lb.end_bone, lb.toe_bone, lb.foot_offset).source
            if "estimated" in source:
                warnings.append(f"{lb.name}: its sole comes from {source}; bind the character's mesh to the armature "
                                "(or give the toe an end bone) for a sole Contact IK does not have to guess")
    deep: list[tuple[int, float]] = []
    floor_and_contacts(obj, scene, floor=s.auto_floor, find=not any(lb.contacts for lb in s.limbs if lb.kind == "FOOT"),
                       deep=deep)
    if deep:
        warnings.append(deep_dip_warning(deep))
    cut = cut_warning(obj, scene)
    if cut:
        warnings.append(cut)
    return Prepared(ground, limbs, warnings)
