"""Live preview played by Blender's own animation system: the frame cache as an action on an NLA track.

When a rig's frame cache is built, its solved channels become an action (one sampled point per frame and
channel, interpolated linearly between frames like linear keys but found by index instead of a search, in
each bone's own rotation mode, quaternions and Eulers made continuous) on a locked NLA track
named `TRACK` at the top of the rig's stack, blend Replace. Blender then evaluates the planted pose in the
frame's single animation pass: no Python on a frame change, no second evaluation of the armature, and
renders and playback show it as they show any animation.

The active action is evaluated above every NLA track, so the active action's F-curves of the solved
channels are muted while the track plays (the others keep playing). Channels the active action does not
key are given back the value they held. What was muted and what was held is recorded on the preview
action itself (`MARK`, `MUTED`, `HELD`), so `detach` undoes it exactly even after undo, a reload or a
crash, without any state kept in Python; the user's own muted F-curves and NLA tracks are left as they
were. `detach` runs on every edit, when live preview turns off, before a save, on undo and redo, on load,
and when the extension is disabled; actions of deleted rigs are removed by `remove_orphans`.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import bpy
import numpy as np

from . import anim
from .checks import Channel

TRACK = "Contact IK preview"
MARK = "contact_ik_preview"  # on the preview action: the rig's name
SOURCE = "contact_ik_preview_source"  # the active action muted under it, and its slot's identifier
MUTED = "contact_ik_preview_muted"  # JSON: [[data_path, index], ...] muted in the source by Contact IK
HELD = "contact_ik_preview_held"  # JSON: [[data_path, index, value], ...] channels the source does not key

_LINEAR = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value


def continuous(prop: str, block: np.ndarray) -> None:
    """No quaternion sign flips and no Euler wrap jumps from one frame to the next (rows are frames), so
    keys interpolate the short way between frames; in place. The bake's keys and the preview track's.
    `block` (frames, size), or (frames, ..., size): each channel along the frames."""
    if prop == "rotation_quaternion" and len(block) > 1:
        dots = np.einsum("...j,...j->...", block[1:], block[:-1])
        signs = np.concatenate((np.ones((1,) + dots.shape[1:]), np.cumprod(np.where(dots < 0.0, -1.0, 1.0), axis=0)))
        block *= signs[..., None].astype(block.dtype)
    elif prop == "rotation_euler":
        block[:] = np.unwrap(block, axis=0)


def why_not(obj: bpy.types.Object) -> Optional[str]:
    """Why a track at the top of the rig's NLA stack would not play over its animation (None: it would)."""
    ad = obj.animation_data
    if ad is None:
        return "the rig has no animation data"
    if not ad.use_nla:
        return "the rig's NLA is switched off"
    if ad.use_tweak_mode:
        return "an NLA strip of the rig is being tweaked"
    if any(t.is_solo for t in ad.nla_tracks):
        return "an NLA track of the rig plays solo"
    action = ad.action
    if action is not None and action.get("contact_ik_baked", False):
        return "the rig plays a Contact IK bake"
    return None


def groups(rigs: list[tuple[bpy.types.Object, Any]]) -> list[list[tuple[bpy.types.Object, Any]]]:
    """`rigs` ((rig, frame cache) that could play from a track) in the groups that can: the rigs sharing an
    active action go together or not at all, since its solved channels are muted under every track. A
    group plays when the rigs in it are all of the action's users and solve the same channels."""
    by_action: dict[int, list[tuple[bpy.types.Object, Any]]] = {}
    out = []
    for obj, cache in rigs:
        action = obj.animation_data.action
        if action is None:
            out.append([(obj, cache)])
        else:
            by_action.setdefault(action.as_pointer(), []).append((obj, cache))
    for group in by_action.values():
        action = group[0][0].animation_data.action
        keys = set(group[0][1].values)
        # Its users: the rigs, and strips of their own NLA (a stash track, say: whatever they play of it, the
        # rig's track above replaces the muted channels); anything else would lose those channels.
        own = 0
        for o, _c in group:
            own += 1 + len([st for t in o.animation_data.nla_tracks for st in t.strips if st.action == action])
        if action.users - int(action.use_fake_user) == own and all(set(c.values) == keys for _o, c in group):
            out.append(group)
    return out


def attach(obj: bpy.types.Object, start: int, values: dict[tuple[str, str], np.ndarray]) -> bool:
    """Play `values` ((bone, property) -> (frames, size) array from frame `start`) on the rig's preview
    track; False (nothing changed) where the track would not play (`why_not`) or there is one frame only."""
    frames_n = len(next(iter(values.values()))) if values else 0
    if frames_n < 2 or why_not(obj) is not None:
        return False
    _detach_one(obj)  # a track left from before (not the rigs sharing its action: they are being attached)
    ad = obj.animation_data
    source, source_slot = ad.action, anim.slot_of(obj)
    keyed = {}
    if source is not None:
        keyed = {(fc.data_path, fc.array_index): fc for fc in anim.fcurves(source, source_slot) or []}
    action = bpy.data.actions.new(TRACK)
    slot = action.slots.new(id_type="OBJECT", name=obj.name) if anim.LAYERED else None
    owner = anim.channels(action, slot, create=True)
    co = np.empty((frames_n, 2), dtype=np.float32)
    co[:, 0] = np.arange(start, start + frames_n, dtype=np.float32)
    linear = np.full(frames_n, _LINEAR, dtype=np.int32)
    muted, held = [], []
    made: dict[str, Any] = {}  # the new action's groups
    bones = obj.pose.bones
    by_prop: dict[str, list[tuple[str, np.ndarray]]] = {}
    for (bone, prop), block in values.items():
        by_prop.setdefault(prop, []).append((bone, block))
    # Each property's channels made continuous at once: (frames, bones, size).
    blocks = []
    for prop, items in by_prop.items():
        stack = np.stack([b for _bone, b in items], axis=1).astype(np.float32)
        continuous(prop, stack)
        blocks += [(bone, prop, stack[:, k]) for k, (bone, _b) in enumerate(items)]
    for bone, prop, block in blocks:
        path = Channel(bone, prop, block.shape[1]).data_path
        current = tuple(getattr(bones[bone], prop))
        for j in range(block.shape[1]):
            fc = anim.new_fcurve(owner, path, j, bone, made)
            co[:, 1] = block[:, j]
            kp = fc.keyframe_points
            kp.add(frames_n)
            kp.foreach_set("co", co.ravel())
            # Sampled points: one per frame, evaluated by index with the same linear interpolation between
            # frames, where keys take a binary search through a thousand of them (0.020 -> 0.008 ms a
            # frame for the benchmark's 51 channels). Sampling stops before `end` (4.2 and 5.0): one more.
            # A sample is the curve's value on a key's own frame, which no interpolation or handle changes:
            # neither is set first (a third of the track's cost in a crowd). Not before frame 0 (a preview
            # range can start there): Blender interpolates a sampled curve's negative subframes toward the
            # wrong neighbour, so such a range keeps linear keys.
            if start >= 0:
                fc.convert_to_samples(int(start), int(start) + frames_n)
            else:
                kp.foreach_set("interpolation", linear)
                fc.update()
            src = keyed.get((path, j))
            if src is None:
                held.append([path, j, float(current[j])])
            elif not src.mute:
                src.mute = True
                muted.append([path, j])
    action[MARK] = obj.name
    action[SOURCE] = json.dumps([source.name if source is not None else "", getattr(source_slot, "identifier", "")])
    action[MUTED] = json.dumps(muted)
    action[HELD] = json.dumps(held)
    track = ad.nla_tracks.new()  # at the top of the stack
    track.name = TRACK
    strip = track.strips.new(TRACK, int(start), action)
    if slot is not None and hasattr(strip, "action_slot"):
        strip.action_slot = slot
    strip.action_frame_start, strip.action_frame_end = float(start), float(start + frames_n - 1)
    strip.frame_end = float(start + frames_n - 1)
    strip.blend_type = "REPLACE"
    strip.extrapolation = "NOTHING"
    track.lock = True
    if source is not None:
        source.update_tag()
    obj.update_tag(refresh={"OBJECT", "TIME"})
    return True


def _marked(track: Any) -> list[bpy.types.Action]:
    return [s.action for s in track.strips if s.action is not None and s.action.get(MARK) is not None]


def _give_back(obj: Optional[bpy.types.Object], action: bpy.types.Action) -> None:
    """Undo what `attach` did to the source action (and, with the rig, to the channels it does not key)."""
    try:
        source_name, slot_id = json.loads(action.get(SOURCE, '["", ""]'))
        muted = json.loads(action.get(MUTED, "[]"))
        held = json.loads(action.get(HELD, "[]"))
    except (TypeError, ValueError):
        return
    source = bpy.data.actions.get(source_name) if source_name else None
    if source is not None and muted:
        slot = next((s for s in getattr(source, "slots", ()) if s.identifier == slot_id), None)
        fcs = anim.fcurves(source, slot)
        for path, j in muted:
            fc = fcs.find(path, index=j) if fcs is not None else None
            if fc is not None:
                fc.mute = False
        source.update_tag()
    if obj is not None and obj.pose is not None:
        for path, j, value in held:
            try:
                owner, prop = obj.path_resolve(path.rpartition(".")[0]), path.rpartition(".")[2]
                values = list(getattr(owner, prop))
                values[j] = value
                setattr(owner, prop, values)
            except (ValueError, AttributeError, IndexError):
                continue  # the bone is gone


def _source_name(action: bpy.types.Action) -> str:
    try:
        return str(json.loads(action.get(SOURCE, '[""]'))[0])
    except (TypeError, ValueError, IndexError):
        return ""


def _detach_one(obj: bpy.types.Object) -> Optional[list[str]]:
    """Remove the rig's preview track and action, giving back what they changed: the names of the source
    actions they muted under it (None: there was no track)."""
    ad = obj.animation_data
    if ad is None:
        return None
    sources = None
    for track in [t for t in ad.nla_tracks if _marked(t)]:
        actions = _marked(track)
        for action in actions:
            _give_back(obj, action)
        sources = (sources or []) + [_source_name(a) for a in actions]
        ad.nla_tracks.remove(track)
        for action in actions:
            if action.users == 0:
                bpy.data.actions.remove(action)
    if sources is not None:
        obj.update_tag(refresh={"OBJECT", "DATA", "TIME"})
    return sources


def _sharers(sources: list[str]) -> list[bpy.types.Object]:
    """The rigs whose preview tracks play over one of `sources` (a muted action they share)."""
    wanted = {name for name in sources if name}
    if not wanted:
        return []
    names = {str(a[MARK]) for a in bpy.data.actions
             if a.get(MARK) is not None and a.users > 0 and _source_name(a) in wanted}
    return [bpy.data.objects[n] for n in sorted(names) if n in bpy.data.objects]


def detach(obj: bpy.types.Object) -> list[str]:
    """Take the rig off its preview track (and every rig sharing its muted action with it, which would
    otherwise lose those channels): the names of the rigs taken off."""
    sources = _detach_one(obj)
    if sources is None:
        return []
    names = [obj.name]
    for other in _sharers(sources):
        if _detach_one(other) is not None:
            names.append(other.name)
    return names


def detach_everywhere(keep: frozenset[str] = frozenset()) -> list[str]:
    """`detach` on every rig in the file but those named in `keep`, and `remove_orphans`; the names of the
    rigs detached. (A track whose rig was renamed, or that the user deleted, leaves no mute behind.)"""
    names = [name for obj in bpy.data.objects if obj.type == "ARMATURE" and obj.library is None
             and obj.name not in keep and obj.animation_data is not None for name in detach(obj)]
    return names + remove_orphans()


def remove_orphans() -> list[str]:
    """Preview actions no rig plays any more (their rig deleted): give back their source's F-curves and
    remove them; the rigs that shared the source are taken off their tracks too (their names)."""
    sources = []
    for action in [a for a in bpy.data.actions if a.get(MARK) is not None and a.users == 0 and a.library is None]:
        _give_back(None, action)
        sources.append(_source_name(action))
        bpy.data.actions.remove(action)
    return [o.name for o in _sharers(sources) if _detach_one(o) is not None]
