"""Reading a rig's animation without replaying it (issue 21, item 2).

A sweep sets every frame (`scene.frame_set`) to read the pose Blender evaluates. Where nothing but the
rig's own action moves the bones the solve reads, the same values come from the action alone: each of its
F-curves is evaluated at every frame (`FCurve.evaluate`: keys, interpolation, extrapolation and modifiers,
as Blender evaluates them), and the pose matrices follow by forward kinematics in numpy (rest matrices,
location, rotation in each bone's mode, scale), as `BKE_pose_where_is` computes them.

A rig whose animation is in one NLA strip (pushed down, or an imported clip) is read through the strip's
time mapping, with its active action's F-curves over it. The armature object, limb targets and poles
that move by their own keys alone (`mover_curves`) are read
the same way: their world matrices from their transform F-curves.

`why_not` says when this does not hold and the sweep must run: NLA, drivers, an armature object, target
or pole moved by more than its own keys (a parent, constraint, NLA, driver or delta transform), a target
bone, constraints or non-default inheritance on a bone the solve reads or any of its parents, animated
limb weights, time remapping. `read_rigs` then checks itself against Blender: it sets
a few frames spread over the range (`CHECKS`; one of them the scene's own frame, which Blender has
evaluated already) and compares the pose Blender evaluated there with its own, channels and matrices, and
declines on any difference (copies of one rig: in full on one of them, `read_rigs`). Whatever the list misses (an action whose
evaluated copy is stale, say: F-curve modifiers added from Python without `update_tag`) then falls back
to the sweep instead of baking something Blender would not play.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

import bpy
import numpy as np

from ..solvers.rotations import channel_quat, qmat
from . import anim

if TYPE_CHECKING:
    from .reader import RigReader

# What the bake reports when it read the animation this way (`bake.BakeReport.read`).
FCURVES = "sampled the action's F-curves (no replay)"
# The current frame's pose, as Blender evaluated it, against the F-curves and the forward kinematics here:
# differences larger than this (x the armature's size, or in a rotation matrix entry) decline the read.
TOLERANCE = 1e-4
# Frames set to check the read against Blender's own evaluation (spread over the range, both ends included).
CHECKS = 6
# Longest range read this way: it runs before a bake's steps, so it shows no progress and cannot be
# cancelled (about 0.05 ms per frame for a mocap skeleton's 100 F-curves); longer ranges are swept.
MAX_FRAMES = 20_000
# Frames computed at a time (bounds the memory of the channel values and matrices).
CHUNK = 2048
_CHANNELS = (("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3), ("rotation_axis_angle", 4),
             ("scale", 3))


def _closure(obj: bpy.types.Object, used: Sequence[int]) -> list[int]:
    """The pose-bone indices of `used` and all their parents, parents before children."""
    pbs = obj.pose.bones
    index = {pb.name: i for i, pb in enumerate(pbs)}
    seen: set[int] = set()
    order: list[int] = []

    def visit(i: int) -> None:
        if i in seen:
            return
        parent = pbs[i].parent
        if parent is not None:
            visit(index[parent.name])
        seen.add(i)
        order.append(i)

    for i in used:
        visit(int(i))
    return order


def why_not(reader: RigReader, scene: bpy.types.Scene) -> Optional[str]:
    """None when `reader`'s rig can be read from its action alone; else why the animation must be replayed."""
    obj = reader.obj
    if reader.frames > MAX_FRAMES:
        return f"the range is longer than {MAX_FRAMES:,} frames (read with progress, and Esc to cancel)"
    ad = obj.animation_data
    if obj.data.pose_position != "POSE":
        return "the armature shows its rest position"
    if ad is not None:
        strip_why = _strip_why(obj, *_span(reader))
        if strip_why:
            return strip_why
        if len(ad.drivers):
            return "it has drivers"
        if ad.action is not None and (ad.action_influence != 1.0 or ad.action_blend_type != "REPLACE"):
            return "its action is blended (influence or blend type)"
    data_ad = obj.data.animation_data
    if data_ad is not None and (data_ad.action is not None or len(data_ad.drivers) or len(data_ad.nla_tracks)):
        return "its armature data is animated"
    if not reader.static_object and mover_curves(obj, _span(reader)) is None:
        return f"the armature object moves {_NOT_KEYS}"
    if reader._animated_weights:
        return "limb weights are animated"
    for lb in reader.limbs:
        if lb.targets is not None and not lb.static_target and (lb.target_bone or mover_curves(lb.target_object) is None):
            return f"{lb.name}'s target moves {'with a bone' if lb.target_bone else _NOT_KEYS}"
        if lb.poles is not None and not lb.static_pole and mover_curves(lb.pole_object) is None:
            return f"{lb.name}'s pole moves {_NOT_KEYS}"
    render = scene.render
    if render.frame_map_old != render.frame_map_new:
        return "the scene remaps time"
    pbs = obj.pose.bones
    for pb in pbs:  # IK constraints move the bones up their chain: wherever they sit, the pose is not FK
        if any(c.type in ("IK", "SPLINE_IK") and not c.mute and c.influence > 0.0 for c in pb.constraints):
            return f"bone {pb.name!r} has an IK constraint"
    for i in _closure(obj, reader.used):
        pb = pbs[i]
        if any(not c.mute and c.influence > 0.0 for c in pb.constraints):
            return f"bone {pb.name!r} has constraints"
        b = pb.bone
        if not (b.use_inherit_rotation and b.inherit_scale == "FULL" and b.use_local_location
                and not b.use_relative_parent):
            return f"bone {pb.name!r} does not inherit its parent's transform in full"
    return None


_NOT_KEYS = "by more than its own keys (a parent, constraint, NLA, driver or delta transform)"
_IDENTITY_DELTAS = (("delta_location", (0.0, 0.0, 0.0)), ("delta_rotation_euler", (0.0, 0.0, 0.0)),
                    ("delta_rotation_quaternion", (1.0, 0.0, 0.0, 0.0)), ("delta_scale", (1.0, 1.0, 1.0)))


def mover_curves(o: bpy.types.Object, span: Optional[tuple[float, float]] = None) -> Optional[dict[tuple[str, int], Any]]:
    """The F-curves of object `o`'s action when they alone move it (no parent, constraint, driver or blended
    action, no delta transform; no NLA, or with `span` (first, last frame) one strip `_strip_why` accepts):
    its world matrix is then their value; None otherwise."""
    if o.parent is not None or any(not c.mute and c.influence > 0.0 for c in o.constraints):
        return None
    if any(tuple(getattr(o, name)) != value for name, value in _IDENTITY_DELTAS):
        return None
    ad = o.animation_data
    if ad is not None:
        if len(ad.drivers) or (_playing(o) and (span is None or _strip_why(o, *span))):
            return None
        if ad.action is not None and (ad.action_influence != 1.0 or ad.action_blend_type != "REPLACE"):
            return None
    return _curves(o)


def _span(reader: RigReader) -> tuple[float, float]:
    return reader.first, reader.first + reader.frames - 1


def _world(o: bpy.types.Object, curves: dict[tuple[str, int], Any], frames: np.ndarray) -> np.ndarray:
    """Object `o`'s world matrices (len(frames), 4, 4) from its transform F-curves (`mover_curves`) and, where
    not keyed, its transform as it is: T(location) R(rotation, in its mode) S(scale), as Blender composes it."""
    ch = {}
    for prop, size in _CHANNELS:
        out = np.repeat(np.array(getattr(o, prop), dtype=np.float64)[None], len(frames), axis=0)
        for c in range(size):
            fc = curves.get((prop, c))
            if fc is not None:
                ev = fc.evaluate
                out[:, c] = [ev(f) for f in frames]
        ch[prop] = out
    q = channel_quat(o.rotation_mode, ch["rotation_quaternion"], ch["rotation_euler"], ch["rotation_axis_angle"])
    m = np.zeros((len(frames), 4, 4))
    m[:, :3, :3] = qmat(q) * ch["scale"][:, None, :]
    m[:, :3, 3] = ch["location"]
    m[:, 3, 3] = 1.0
    return m


def _movers(reader: RigReader) -> list[tuple[bpy.types.Object, dict[tuple[str, int], Any], np.ndarray, bool]]:
    """The objects whose motion the reader reads per frame (the armature object, targets, poles), each with
    its F-curves, the reader's array it goes to, and whether that array holds positions only (poles)."""
    out = []
    if not reader.static_object:
        out.append((reader.obj, mover_curves(reader.obj, _span(reader)) or {}, reader.mw, False))
    for lb in reader.limbs:
        if lb.targets is not None and not lb.static_target:
            out.append((lb.target_object, mover_curves(lb.target_object) or {}, lb.targets, False))
        if lb.poles is not None and not lb.static_pole:
            out.append((lb.pole_object, mover_curves(lb.pole_object) or {}, lb.poles, True))
    return out


def _playing(obj: bpy.types.Object) -> list[Any]:
    """The rig's NLA tracks Blender evaluates."""
    ad = obj.animation_data
    if ad is None or not ad.use_nla:
        return []
    return [t for t in ad.nla_tracks if not t.mute]


def _strip_why(obj: bpy.types.Object, first: float, last: float) -> Optional[str]:
    """None when the rig's NLA plays nothing, or one strip that frames `first`..`last` read as the action it
    holds (`_StripCurve`): one track, one action strip, Replace at full influence, no blending in or out,
    no animated time or influence, not reversed, no strip modifiers, held where the range passes its ends;
    else why the NLA must be replayed."""
    ad = obj.animation_data
    tracks = _playing(obj)
    if not tracks:
        return None
    if ad.use_tweak_mode or any(t.is_solo for t in ad.nla_tracks):
        return "an NLA strip is tweaked or a track plays solo"
    strips = [st for t in tracks for st in t.strips if not st.mute]
    if len(strips) != 1:
        return "its NLA plays more than one strip"
    st = strips[0]
    # (Its influence counts only when animated: `use_animated_influence`.)
    if (st.type != "CLIP" or st.action is None or st.blend_type != "REPLACE"
            or st.blend_in or st.blend_out or st.use_animated_influence or st.use_animated_time
            or st.use_reverse or len(st.modifiers)):
        return f"its NLA strip {st.name!r} blends, is reversed or retimed"
    if anim.fcurves(st.action, getattr(st, "action_slot", None)) is None:
        return f"its NLA strip {st.name!r} plays no slot of its action"
    if (first < st.frame_start and st.extrapolation != "HOLD") or (last > st.frame_end and st.extrapolation == "NOTHING"):
        return f"its NLA strip {st.name!r} does not cover the frames"
    return None


class _StripCurve:
    """An F-curve of an NLA strip's action, evaluated at scene frames: Blender's time mapping of an action
    strip (scale, repeats), held at the strip's ends outside it (`_strip_why` checked that it holds)."""

    def __init__(self, fc: Any, strip: Any) -> None:
        self.fc = fc
        self.start, self.end = float(strip.frame_start), float(strip.frame_end)
        self.act_start, self.act_end = float(strip.action_frame_start), float(strip.action_frame_end)
        self.scale = abs(float(strip.scale)) or 1.0
        self.whole = float(strip.repeat) == math.floor(float(strip.repeat))

    def evaluate(self, frame: float) -> float:
        f = min(max(float(frame), self.start), self.end)
        length = (self.act_end - self.act_start) or 1.0
        if f == self.end and self.whole:
            return float(self.fc.evaluate(self.act_end))
        return float(self.fc.evaluate(self.act_start + math.fmod(f - self.start, length * self.scale) / self.scale))


def _curves(obj: bpy.types.Object) -> dict[tuple[str, int], Any]:
    """What gives each animated channel of `obj` its value, by (data path, index): the active action's
    F-curves over the NLA strip's (`_strip_why` made sure there is at most one, read as it plays)."""
    ad = obj.animation_data
    if ad is None:
        return {}
    out: dict[tuple[str, int], Any] = {}
    for track in _playing(obj):
        for st in track.strips:
            if not st.mute and st.action is not None:
                for fc in anim.fcurves(st.action, getattr(st, "action_slot", None)) or []:
                    if not fc.mute:
                        out[(fc.data_path, fc.array_index)] = _StripCurve(fc, st)
    if ad.action is not None:
        out.update({(fc.data_path, fc.array_index): fc for fc in anim.fcurves(ad.action, anim.slot_of(obj)) or []
                    if not fc.mute})
    return out


def _few(obj: bpy.types.Object, bones: list[int]) -> bool:
    """Whether `bones` are few enough of the rig's to read one by one: `foreach_get` reads every bone, at
    about a third of the cost per bone (a metarig's legs and spine: 20 of its 159 bones, 0.13 against 0.34 ms
    for the channels and matrices)."""
    return 3 * len(bones) < len(obj.pose.bones)


def _pose(obj: bpy.types.Object, bones: list[int]) -> dict[str, np.ndarray]:
    """The pose's channel values now (len(bones), size) per channel property."""
    pbs = obj.pose.bones
    if _few(obj, bones):
        chosen = [pbs[i] for i in bones]
        return {prop: np.array([tuple(getattr(pb, prop)) for pb in chosen], dtype=np.float64).reshape(len(bones), size)
                for prop, size in _CHANNELS}
    out = {}
    for prop, size in _CHANNELS:
        buf = np.empty(len(pbs) * size, dtype=np.float64)
        pbs.foreach_get(prop, buf)
        out[prop] = buf.reshape(len(pbs), size)[bones]
    return out


def _matrices(obj: bpy.types.Object, bones: list[int]) -> np.ndarray:
    """The pose's armature-space matrices now (len(bones), 4, 4), as Blender evaluated them."""
    pbs = obj.pose.bones
    if _few(obj, bones):
        return np.array([pbs[i].matrix for i in bones], dtype=np.float64).reshape(len(bones), 4, 4)
    count = len(pbs)
    buf = np.empty(count * 16, dtype=np.float64)
    pbs.foreach_get("matrix", buf)
    return np.swapaxes(buf.reshape(count, 4, 4), -1, -2)[bones]  # type: ignore[no-any-return]


def _channels(obj: bpy.types.Object, bones: list[int], frames: np.ndarray,
              curves: dict[tuple[str, int], Any]) -> dict[str, np.ndarray]:
    """Per channel property: its values over `frames` (F, len(bones), size), from the F-curves where keyed
    and from the pose (as it is now) where not."""
    pbs = obj.pose.bones
    values: dict[str, np.ndarray] = {}
    for prop, pose in _pose(obj, bones).items():
        out = np.repeat(pose[None], len(frames), axis=0)
        for k, i in enumerate(bones):
            path = f'pose.bones["{pbs[i].name}"].{prop}'
            for c in range(pose.shape[1]):
                fc = curves.get((path, c))
                if fc is not None:
                    ev = fc.evaluate
                    out[:, k, c] = [ev(f) for f in frames]
        values[prop] = out
    return values


def _sharing_key(obj: bpy.types.Object, bones: list[int], curves: dict[tuple[str, int], Any]) -> Optional[tuple[Any, ...]]:
    """What `_channels` and `_fk` read of a rig, for rigs that share it (a crowd of copies: one armature, one
    action, the same rest of the pose): equal keys give equal values and matrices. None where a curve is an
    NLA strip's (not worth telling apart)."""
    if any(isinstance(c, _StripCurve) for c in curves.values()):
        return None
    pbs = obj.pose.bones
    pose = _pose(obj, bones)
    return (obj.data.as_pointer(), tuple(bones), tuple(pbs[i].rotation_mode for i in bones),
            tuple(sorted((k, c.as_pointer()) for k, c in curves.items())),
            b"".join(v.tobytes() for v in pose.values()))


class _Shared:
    """`_channels` and `_fk` computed once for the rigs whose `_sharing_key` is equal (only those keys are
    kept: a lone rig's arrays are not held on to)."""

    def __init__(self, keys: list[Optional[tuple[Any, ...]]]):
        seen: dict[tuple[Any, ...], int] = {}
        for k in keys:
            if k is not None:
                seen[k] = seen.get(k, 0) + 1
        self.shared = {k for k, n in seen.items() if n > 1}
        self.memo: dict[tuple[Any, ...], tuple[dict[str, np.ndarray], np.ndarray]] = {}

    def get(self, key: Optional[tuple[Any, ...]], obj: bpy.types.Object, bones: list[int], frames: np.ndarray,
            curves: dict[tuple[str, int], Any]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        if key is None or key not in self.shared:
            values = _channels(obj, bones, frames, curves)
            return values, _fk(obj, bones, values)
        full = key + (frames.tobytes(),)
        got = self.memo.get(full)
        if got is None:
            values = _channels(obj, bones, frames, curves)
            got = self.memo[full] = (values, _fk(obj, bones, values))
        return got


def _differs(a: np.ndarray, b: np.ndarray, size: float = 1.0) -> bool:
    return bool(np.abs(a - b).max() > TOLERANCE * size) if a.size else False


def _disagrees(obj: bpy.types.Object, bones: list[int], frame: int, values: dict[str, np.ndarray],
               matrices: np.ndarray, worlds: list[tuple[bpy.types.Object, np.ndarray]], pose: bool = True) -> Optional[str]:
    """Blender's evaluated pose now (at `frame`) against what was computed for it (unless `pose` is False),
    and the world matrices of the objects that move (`worlds`); None when they agree."""
    for o, m in worlds:
        evaluated = np.array(o.matrix_world, dtype=np.float64)
        size = max(1.0, float(np.abs(evaluated[:3, 3]).max()))
        if _differs(evaluated[:3, :3], m[:3, :3]) or _differs(evaluated[:3, 3], m[:3, 3], size):
            return f"{o.name!r}'s keys, on frame {frame}, do not give where Blender puts it"
    if not pose:
        return None
    for prop, v in _pose(obj, bones).items():
        if _differs(v, values[prop], max(1.0, float(np.abs(v).max()))):
            return f"its action, on frame {frame}, does not give the pose Blender evaluates ({prop})"
    evaluated = _matrices(obj, bones)
    size = max(1.0, float(np.abs(evaluated[:, :3, 3]).max()))
    if _differs(evaluated[:, :3, :3], matrices[:, :3, :3]) or _differs(evaluated[:, :3, 3], matrices[:, :3, 3], size):
        return f"the pose on frame {frame} is not the forward kinematics of its channels"
    return None


def _fk(obj: bpy.types.Object, bones: list[int], ch: dict[str, np.ndarray]) -> np.ndarray:
    """Armature-space pose matrices (..., len(bones), 4, 4) of `bones` (parents first) from channel values
    (..., len(bones), size): matrix = parent's matrix @ offset from the parent at rest @ T(loc) R S."""
    pbs = obj.pose.bones
    slot = {i: k for k, i in enumerate(bones)}
    lead = ch["location"].shape[:-2]
    out = np.empty(lead + (len(bones), 4, 4))
    for k, i in enumerate(bones):
        pb = pbs[i]
        parent = pb.parent
        # (mathutils' inverse: numpy's LAPACK call costs far more on one 4x4 matrix, above all on a busy machine)
        rest = pb.bone.matrix_local if parent is None else parent.bone.matrix_local.inverted() @ pb.bone.matrix_local
        offset = np.array(rest, dtype=np.float64)
        q = channel_quat(pb.rotation_mode, ch["rotation_quaternion"][..., k, :], ch["rotation_euler"][..., k, :],
                         ch["rotation_axis_angle"][..., k, :])
        local = np.zeros(lead + (4, 4))
        local[..., :3, :3] = qmat(q) * ch["scale"][..., k, None, :]
        local[..., :3, 3] = ch["location"][..., k, :]
        local[..., 3, 3] = 1.0
        m = offset @ local
        if parent is not None:
            m = out[..., slot[int(pbs.find(parent.name))], :, :] @ m
        out[..., k, :, :] = m
    return out


def _check_group(obj: bpy.types.Object, key: Optional[tuple[Any, ...]], frames: np.ndarray) -> Optional[tuple[Any, ...]]:
    """Rigs with equal groups are evaluated by Blender from the same inputs (`_sharing_key`: one armature,
    one action's F-curves, the same unkeyed pose; and the same way of playing the action), over the same
    frames: their poses are checked in full on one of them (None: on its own)."""
    if key is None:
        return None
    ad = obj.animation_data
    play = None if ad is None else (ad.action_extrapolation, ad.action_blend_type, ad.action_influence, ad.use_nla,
                                    len(ad.nla_tracks), ad.use_tweak_mode)
    return key + (play, frames[0], len(frames))


def _check_rows(count: int, now: Optional[int]) -> list[int]:
    """The rows (of `count`) checked against Blender: CHECKS spread over them, both ends included, the
    one inside nearest to row `now` (the scene's current frame, None: not known) moved onto it."""
    rows = sorted({int(r) for r in np.linspace(0, count - 1, min(count, CHECKS)).round()})
    if now is not None and 0 < now < count - 1 and len(rows) > 2 and now not in rows:
        inner = min(range(1, len(rows) - 1), key=lambda k: abs(rows[k] - now))
        rows[inner] = now
    return sorted(rows)


def read_rigs(readers: Sequence[RigReader], scene: bpy.types.Scene, restore: bool = True) -> list[Optional[str]]:
    """Fill every row of each reader (frames `reader.first` on) from its rig's action. Per reader: None when
    done, else why not (that reader is then left for the sweep to read, untouched). The check frames are
    set once for all of them (in a crowd, each `frame_set` evaluates every rig); then the scene's frame
    again, unless `restore` is False (the caller sets a frame next: one evaluation of every rig fewer).

    Copies of one rig (`_check_group`) have their poses compared on every check frame for the first of
    them and on the first check frame for the others (the objects that move them, on every check frame
    for each): Blender evaluates each from the same inputs, so what the first passes the others pass,
    and what it declines they decline too."""
    reasons: list[Optional[str]] = [why_not(r, scene) for r in readers]
    # The scene's frame is a check frame that needs no `frame_set` (Blender evaluated it already; in a crowd
    # each one evaluates every rig): the context's scene, on a whole frame.
    now = scene.frame_current if scene == bpy.context.scene and scene.frame_subframe == 0.0 else None
    todo = []  # (index, bones, curves, frames, {check frame: (values, matrices)}, sharing key)
    found = {}
    for n, reader in enumerate(readers):
        if reasons[n] is None:
            bones = _closure(reader.obj, reader.used)
            curves = _curves(reader.obj)
            found[n] = (bones, curves, _sharing_key(reader.obj, bones, curves))
    shared = _Shared([key for _b, _c, key in found.values()])
    first_of: dict[tuple[Any, ...], int] = {}  # check group -> the reader checked in full
    copy_of: dict[int, int] = {}  # reader -> the one checked in full for it
    for n, (bones, curves, key) in found.items():
        reader = readers[n]
        obj = reader.obj
        frames = reader.first + np.arange(reader.frames, dtype=np.float64)
        group = _check_group(obj, key if key in shared.shared else None, frames)
        if group is not None:
            copy_of[n] = first_of.setdefault(group, n)
        rows = _check_rows(len(frames), None if now is None else now - reader.first)
        values, matrices = shared.get(key, obj, bones, frames[rows], curves)
        worlds = [(o, _world(o, c, frames[rows])) for o, c, _dest, _pos in _movers(reader)]
        checks = {int(frames[r]): ({p: v[k] for p, v in values.items()}, matrices[k], [(o, w[k]) for o, w in worlds])
                  for k, r in enumerate(rows)}
        todo.append((n, bones, curves, frames, checks, key))
    saved = scene.frame_current
    try:
        wanted = sorted({f for *_rest, checks, _k in todo for f in checks})
        for frame in sorted(wanted, key=lambda f: f != now):  # the current frame first: no frame to set
            if frame == now:
                bpy.context.evaluated_depsgraph_get()  # (what is still to be evaluated there)
            else:
                scene.frame_set(frame)
            for n, bones, _c, frames, checks, _k in todo:
                if reasons[n] is None and frame in checks:
                    pose = copy_of.get(n, n) == n or frame == int(frames[0])
                    reasons[n] = _disagrees(readers[n].obj, bones, frame, *checks[frame], pose=pose)
    finally:
        if todo and restore:
            scene.frame_set(saved)
    for n, first in copy_of.items():
        if reasons[n] is None and reasons[first] is not None:
            reasons[n] = reasons[first]
    shared.memo.clear()
    for n, bones, curves, frames, _checks, key in todo:
        if reasons[n] is None:
            _fill(readers[n], bones, curves, frames, shared, key)
    return reasons


def _fill(reader: RigReader, bones: list[int], curves: dict[tuple[str, int], Any], frames: np.ndarray,
          shared: _Shared, key: Optional[tuple[Any, ...]]) -> None:
    obj = reader.obj
    # Row 0 as a sweep reads it (the values read once: weights, static targets and poles, the object's
    # matrix), copied to every row; then the per-frame arrays from the action.
    reader.read(0)
    reader._room(reader.frames - 1)
    for name in ("mw", "matrix", "quat", "euler", "aa", "loc", "scale"):
        arr = getattr(reader, name)
        arr[1:] = arr[0]
    for lb in reader.limbs:
        for arr in (lb.weights, lb.targets, lb.poles):
            if arr is not None:
                arr[1:] = arr[0]
    pick = [bones.index(int(b)) for b in reader.used]
    per_frame = {name for name, _buf, _view in reader._reads}
    for a in range(0, len(frames), CHUNK):
        rows = slice(a, a + CHUNK)
        values, matrices = shared.get(key, obj, bones, frames[rows], curves)
        reader.matrix[rows] = np.swapaxes(matrices[:, pick], -1, -2)
        if a == 0:
            first = {prop: v[:1, pick] for prop, v in values.items()}
        # The other channels as a sweep keeps them: on every frame those it reads per frame
        # (`RigReader._reads`), the others once, on the first frame.
        for prop, dest in (("rotation_quaternion", reader.quat), ("rotation_euler", reader.euler),
                           ("rotation_axis_angle", reader.aa), ("scale", reader.scale)):
            dest[rows] = values[prop][:, pick] if prop in per_frame else first[prop]
        # Locations: on every frame for the bones whose location is written, once for the others.
        reader.loc[rows] = first["location"]
        for b in reader.located:
            reader.loc[rows, reader.slot[b]] = values["location"][:, bones.index(b)]
        for o, c, dest, positions in _movers(reader):  # the armature object, targets and poles that move
            w = _world(o, c, frames[rows])
            dest[rows] = w[:, :3, 3] if positions else w
    return None
