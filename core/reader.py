"""Reading a rig into plain arrays: its settings into plain limb descriptions (`LimbSpec`), and its
animation, one frame at a time, into per-frame arrays of the bones the solve uses (`RigReader.read`).

The bpy-facing layer of the ground model: everything after the read (`model`, `batch`) works on these
arrays. During a sweep each frame costs a few `foreach_get` reads of the pose; live preview's fallback
reads one frame from the depsgraph being updated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ..solvers import JointLimits
from . import rig
from .anatomy import bound_meshes, sole_of
from .checks import limb_is_usable
from .contacts import contact_values, locks_over
from .model import LockTrack, place_footprints
from .rig import anim_paths, bone_names, chain_length, leg_stretch, object_moves, rest_leg_length, settings

if TYPE_CHECKING:
    import bpy

    from .ground import Terrain

# Rows allocated at a time as a sweep advances.
ROWS_CHUNK = 4096
# The array each channel read per frame goes to.
_ARRAYS = {"matrix": "matrix", "rotation_quaternion": "quat", "rotation_axis_angle": "aa", "rotation_euler": "euler",
           "scale": "scale", "location": "loc"}


@dataclass
class LimbSpec:
    """One enabled, usable limb as the plan and the solve read it: bones by their index in the pose."""

    index: int  # in the settings' limbs
    name: str
    kind: str  # FOOT, HAND or CHAIN
    chain: tuple[int, ...]  # pose-bone indices, root to tip
    end: int  # the end bone (foot or hand), -1 without
    toe: int  # -1 without
    pole_bone: int  # -1 unless the pole is a bone
    soles: list[tuple[int, np.ndarray]]  # a foot's sole points (`anatomy.Sole`): (bone index, point in its frame)
    tail_length: float  # the chain's last bone's length: its tail is the chain's tip without an end bone
    ray_length: float  # armature units; 0: the leg's length
    align: bool
    max_align: float  # radians
    use_target_rotation: bool
    auto_pole: bool
    rest_length: float  # the chain's length at rest, armature units
    use_lock: bool
    limits: list[Optional[JointLimits]]  # per chain bone (Bone Properties > Inverse Kinematics)
    end_limits: Optional[JointLimits]
    pole_object: Any = None
    ball: int = -1  # which of `soles` a foot without a toe bone is held by on its front (`anatomy.Sole.ball`)
    target_object: Any = None
    target_bone: str = ""
    static_target: bool = False  # not animated, parented or constrained: read once
    static_pole: bool = False
    placed: Optional[np.ndarray] = None  # (contacts, 3) a foot's lock points moved off step edges (`placed_locks`)
    kept: dict[str, Any] = field(default_factory=dict)  # a one-frame set-up's foot locking (`contacts.locks_over`)
    weights: Optional[np.ndarray] = None  # (N,) the limb's IK weight per frame
    targets: Optional[np.ndarray] = None  # (N, 4, 4) world target matrices
    poles: Optional[np.ndarray] = None  # (N, 3) world pole positions (a pole object)
    # A control bone the limb is driven through (`batch.BatchRig._drive`), -1 for none: the chain is solved.
    control: int = -1
    # How much of a move of the pelvis the control's parent takes along (`pelvis_follow`): 0 for a control
    # under the rig's root, 1 for one under the pelvis.
    control_follow: float = 0.0
    # A leg's knee hinge in its thigh's frame (`ContactIKLimb.hinge`, unit), None where not measured.
    hinge: Optional[np.ndarray] = None

    @property
    def closed_form(self) -> bool:
        """Two bones with an end bone and no IK limits: solved in closed form over all frames at once;
        any other chain is planned the same way and solved frame by frame (`solvers.solve_limb`)."""
        return (len(self.chain) == 2 and self.end >= 0 and self.end_limits is None
                and all(lim is None for lim in self.limits))


def _static(obj: Any) -> bool:
    """True for an object whose transform nothing changes over time (no animation, parent, constraint)."""
    return (obj is not None and obj.animation_data is None and obj.parent is None and not obj.constraints
            and obj.type != "ARMATURE")


def placed_locks(obj: bpy.types.Object, limb: bpy.types.PropertyGroup, terrain: Terrain, leg: float) -> Optional[np.ndarray]:
    """The lock points (world space, (contacts, 3)) of `limb`'s contacts, each moved off any step edge its
    footprint straddles on `terrain` (`model.place_footprints`); None without contacts. Computed once per
    terrain and contacts (`leg`: world units)."""
    cs = limb.contacts
    if not len(cs) or not limb.use_lock:
        return None
    footprints = [contact_values(cs, p, k).tobytes() for p, k in (("lock", 3), ("heel", 3), ("toe", 3), ("width", 1))]
    key = ("footing", obj.name, limb.name, float(f"{leg:.6g}"), *footprints)
    return terrain.memo(key, lambda: np.array(place_footprints(list(cs), terrain, leg)))  # type: ignore[no-any-return]


# Pose-bone indices by (armature object, bone name), as last found: `pose.bones.find` compares every bone's
# name (20 us on a 265-bone rig), a remembered index is checked by its name alone.
_found: dict[tuple[int, str], int] = {}


def bone_index(obj: bpy.types.Object, name: str, count: int) -> int:
    """`obj.pose.bones.find(name)` (-1 for none), `count`: the number of pose bones."""
    if not name:
        return -1
    pbs = obj.pose.bones
    key = (obj.as_pointer(), name)
    i = _found.get(key, -1)
    if 0 <= i < count and pbs[i].name == name:
        return i
    i = pbs.find(name)
    if i >= 0:
        if len(_found) > 4096:
            _found.clear()
        _found[key] = i
    return i


# Constraints through which a bone takes along its target's translation (by their influence).
_FOLLOWING = {"CHILD_OF", "COPY_TRANSFORMS", "COPY_LOCATION"}


def pelvis_follow(obj: bpy.types.Object, bone: str, pelvis: str) -> float:
    """How much of a translation of the bone `pelvis` (its location moved) the bone `bone` takes along, by
    its parents and its constraints (an Armature constraint by its targets' weights, as Rigify's parent
    switches are, a Child Of, Copy Transforms or Copy Location by its influence), as the pose has them now:
    1 for a bone under the pelvis, 0 for one under the rig's root only."""
    pbs = obj.pose.bones
    memo: dict[str, float] = {}

    def follow(name: str, depth: int) -> float:
        if name == pelvis:
            return 1.0
        if name in memo:
            return memo[name]
        pb = pbs.get(name)
        if pb is None or depth > 64:
            return 0.0
        f = follow(pb.parent.name, depth + 1) if pb.parent is not None else 0.0
        for c in pb.constraints:
            if c.mute or not getattr(c, "enabled", True) or c.influence <= 0.0:
                continue
            if c.type == "ARMATURE":
                g = sum(t.weight * follow(t.subtarget, depth + 1) for t in c.targets
                        if t.target == obj and t.subtarget)
            elif c.type in _FOLLOWING and getattr(c, "target", None) == obj and getattr(c, "subtarget", ""):
                g = follow(c.subtarget, depth + 1)
            else:
                continue
            f = (1.0 - c.influence) * f + c.influence * g
        memo[name] = f
        return f

    own = pbs.get(bone)
    if own is None or not pelvis:
        return 0.0
    return follow(own.parent.name, 0) if own.parent is not None else 0.0


def has_limbs(obj: bpy.types.Object) -> bool:
    """True when the rig has an enabled limb whose bones can be solved."""
    return any(lb.enabled and limb_is_usable(obj, lb) for lb in settings(obj).limbs)


class RigReader:
    """A rig's settings and its animation over `frames` frames from frame `first`, read into arrays."""

    def __init__(self, obj: bpy.types.Object, terrain: Optional[Terrain], frames: int, first: float = 1,
                 fps: float = 24.0, context: tuple[int, int] = (0, 0)):
        self.obj = obj
        self.terrain = terrain
        self.frames = frames
        self.first = first
        self.fps = fps
        # Rows read before and after the frames wanted (`model.context_rows`), which `compute` leaves out
        # of what it returns: the frames wanted then come out as they do in any longer range.
        self.context = context
        # Rows are allocated as the sweep reaches them (`_room`): starting a very long sweep allocates little.
        rows = min(frames, ROWS_CHUNK)
        s = settings(obj)
        pbs = obj.pose.bones
        self.count = len(pbs)

        def find(name: str) -> int:  # a pose bone's index by name, -1 for none
            return bone_index(obj, name, self.count)

        self.pelvis = find(s.pelvis_bone) if s.body_follow else -1
        self.floor = s.floor_height
        self.softness = s.softness
        self.reach_margin = leg_stretch(obj)
        self.detect_cuts = s.detect_cuts
        paths = anim_paths(obj)
        moves = object_moves(obj, paths)
        self.limbs: list[LimbSpec] = []
        meshes: Optional[list[bpy.types.Object]] = None  # the rig's bound meshes, found once for every foot
        for i, lb in enumerate(s.limbs):
            if not (lb.enabled and limb_is_usable(obj, lb)):
                continue
            names = bone_names(lb)
            end, toe = find(lb.end_bone), find(lb.toe_bone)
            if lb.kind == "FOOT" and end < 0:
                continue  # a foot without its foot bone has no sole to plant (`checks.limb_error`)
            pole_object = lb.pole_object if lb.pole_mode == "OBJECT" else None
            if end >= 0 and meshes is None:
                meshes = bound_meshes(obj)
            sole = sole_of(obj, lb.end_bone, lb.toe_bone if toe >= 0 else "", lb.foot_offset, meshes) if end >= 0 else None
            spec = LimbSpec(
                index=i, name=lb.name, kind=lb.kind, chain=tuple(find(b) for b in names), end=end, toe=toe,
                pole_bone=find(lb.pole_bone) if lb.pole_mode == "BONE" else -1,
                soles=[(find(b), np.array(tuple(p))) for b, p in sole.points] if sole is not None else [],
                ball=sole.ball if sole is not None else -1,
                tail_length=obj.data.bones[names[-1]].length,
                ray_length=lb.ray_length, align=lb.align_to_normal, max_align=lb.max_align_angle,
                use_target_rotation=lb.use_target_rotation, auto_pole=lb.pole_mode == "AUTO",
                rest_length=chain_length(obj, names, lb.end_bone), use_lock=lb.use_lock,
                limits=[rig.limits_of(pbs[b]) for b in names],
                end_limits=rig.limits_of(pbs[lb.end_bone]) if end >= 0 else None,
                pole_object=pole_object, target_object=lb.target_object, target_bone=lb.target_bone,
                static_target=_static(lb.target_object) and not lb.target_bone, static_pole=_static(pole_object),
                weights=np.empty(rows), targets=np.empty((rows, 4, 4)) if lb.target_object is not None else None,
                poles=np.empty((rows, 3)) if pole_object is not None else None,
            )
            hinge = rig.measured_hinge(lb)
            if hinge is not None:
                spec.hinge = np.array(hinge, dtype=np.float64)
            if lb.kind == "FOOT" and terrain is not None:
                spec.placed = placed_locks(obj, lb, terrain, rest_leg_length(obj, names, lb.end_bone))
            if lb.control_bone:
                spec.control = find(lb.control_bone)
                spec.control_follow = pelvis_follow(obj, lb.control_bone, s.pelvis_bone) if self.pelvis >= 0 else 0.0
            self.limbs.append(spec)
        used = {self.pelvis} | {b for lb in self.limbs for b in (*lb.chain, lb.end, lb.toe, lb.pole_bone, lb.control)}
        # Bones whose location is written (the pelvis, control bones): read on every frame.
        self.located = sorted(({self.pelvis} | {lb.control for lb in self.limbs}) - {-1})
        self.used = np.array(sorted(u for u in used if u >= 0), dtype=np.int64)
        self.slot = {int(b): k for k, b in enumerate(self.used)}
        k = len(self.used)
        # What `foreach_get` gives (float32), kept as such: a long bake's arrays take half the memory.
        self.mw = np.empty((rows, 4, 4))
        self.matrix = np.empty((rows, k, 4, 4), dtype=np.float32)
        self.quat = np.empty((rows, k, 4), dtype=np.float32)
        self.euler = np.empty((rows, k, 3), dtype=np.float32)
        self.aa = np.empty((rows, k, 4), dtype=np.float32)
        self.loc = np.empty((rows, k, 3), dtype=np.float32)
        self.scale = np.empty((rows, k, 3), dtype=np.float32)
        used_bones = [pbs[int(b)] for b in self.used]
        self.modes = [pb.rotation_mode for pb in used_bones]
        self.names = [pb.name for pb in used_bones]  # by slot
        # Read per frame only what can change and is needed: matrices, the rotation channels of the modes in
        # use, the pelvis location, and scales only when something animates them.
        modes = set(self.modes)
        reads: list[tuple[str, np.ndarray, int]] = [("matrix", self.matrix, 16)]
        if "QUATERNION" in modes:
            reads.append(("rotation_quaternion", self.quat, 4))
        if "AXIS_ANGLE" in modes:
            reads.append(("rotation_axis_angle", self.aa, 4))
        if modes - {"QUATERNION", "AXIS_ANGLE"}:
            reads.append(("rotation_euler", self.euler, 3))
        self.scale_animated = any(p == "*" or p.endswith(".scale") for p in paths)
        if self.scale_animated:
            reads.append(("scale", self.scale, 3))
        self._reads = []
        for name, _dest, size in reads:
            buf = np.empty(self.count * size, dtype=np.float32)
            self._reads.append((name, buf, buf.reshape(self.count, size)))
        self._static_done = False
        # The armature object itself not animated, parented or constrained: its matrix is read once.
        self.static_object = not moves
        self._limbs = s.limbs
        self._animated_weights = any(p == "*" or p.startswith("contact_ik.") for p in paths)

    def read(self, row: int, src: Optional[bpy.types.Object] = None,
             ev: Optional[Callable[[Any], Any]] = None) -> None:
        """Row `row`: the rig as evaluated now. `src`: the evaluated armature to read (live preview reads the
        depsgraph being updated; None: the original, which the active depsgraph keeps evaluated), `ev` the
        same for the target and pole objects."""
        src = self.obj if src is None else src
        ev = ev or (lambda o: o)
        self._room(row)
        pbs = src.pose.bones
        used = self.used
        if row == 0 or not self.static_object:
            self.mw[row] = src.matrix_world
        else:
            self.mw[row] = self.mw[0]
        for name, buf, view in self._reads:
            pbs.foreach_get(name, buf)
            dest = getattr(self, _ARRAYS[name])
            dest[row] = view[used].reshape(dest.shape[1:])
        for b in self.located:
            self.loc[row, self.slot[b]] = pbs[b].location
        if not self._static_done:
            # Values nothing animates: read once (scales, rotation channels of modes not read per frame).
            for name, size in (("scale", 3), ("rotation_quaternion", 4), ("rotation_axis_angle", 4),
                               ("rotation_euler", 3), ("location", 3)):
                if any(r[0] == name for r in self._reads):
                    continue
                dest = getattr(self, _ARRAYS[name])
                buf = np.empty(self.count * size, dtype=np.float32)
                pbs.foreach_get(name, buf)
                dest[:] = buf.reshape(self.count, size)[used]
            self._static_done = True
        # Keyframed weights are evaluated in the evaluated copy of the settings.
        limbs = self._limbs if src is self.obj else settings(src).limbs
        for lb in self.limbs:
            assert lb.weights is not None
            if self._animated_weights or row == 0:
                lb.weights[row] = limbs[lb.index].weight
            else:
                lb.weights[row] = lb.weights[0]
            if lb.targets is not None and (row == 0 or not lb.static_target):
                t = ev(lb.target_object)
                m = t.matrix_world
                if lb.target_bone and t.type == "ARMATURE" and t.pose and lb.target_bone in t.pose.bones:
                    m = m @ t.pose.bones[lb.target_bone].matrix
                lb.targets[row] = m
            elif lb.targets is not None:
                lb.targets[row] = lb.targets[0]
            if lb.poles is not None:
                if row == 0 or not lb.static_pole:
                    lb.poles[row] = ev(lb.pole_object).matrix_world.translation
                else:
                    lb.poles[row] = lb.poles[0]

    def _room(self, row: int) -> None:
        """Rows up to `row` allocated (a chunk at a time, never more than `frames`); new rows start as copies
        of the first, which holds the values read once."""
        have = len(self.mw)
        if row < have:
            return
        size = min(self.frames, max(row + 1, 2 * have, have + ROWS_CHUNK))

        def grown(a: np.ndarray) -> np.ndarray:
            out = np.empty((size,) + a.shape[1:], dtype=a.dtype)
            out[:have] = a
            out[have:] = a[0]
            return out

        for name in ("mw", "matrix", "quat", "euler", "aa", "loc", "scale"):
            setattr(self, name, grown(getattr(self, name)))
        for lb in self.limbs:
            lb.weights = grown(lb.weights) if lb.weights is not None else None
            lb.targets = grown(lb.targets) if lb.targets is not None else None
            lb.poles = grown(lb.poles) if lb.poles is not None else None

    def locks(self, lb: LimbSpec, start: int, count: int) -> LockTrack:
        """Foot locking (`contacts.locks_over`) for rows start..start+count-1."""
        prop = settings(self.obj).limbs[lb.index]
        return locks_over(prop, self.first + start, count, self.fps, lb.placed, lb.kept if self.frames == 1 else None)
