"""Live preview: plant every rig that has it on, whenever the frame changes.

Idempotent: channels the animation does not key keep what we wrote on the previous frame (Blender
does not reset them), so before solving we put back the animation's own values of every channel we
wrote whose value is still ours. The pose at a frame is then the same however the frame was reached.

Fast: when live preview turns on, the whole frame range is solved at once by the bake's computation
(`batch.py`) into a per-frame cache, and a frame change then only writes the cached channel values. Any
edit (keys, pose, settings, terrain, targets) drops the cache; each frame is then planted by the same
computation over that one frame (`batch.plant_frame`), with what the pelvis's speed limit and the feet's
smoothing did to it in the last cache, until the cache is rebuilt (after a short pause in the UI, or by
`precompute`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

import bpy
import numpy as np

from . import batch, checks, fkread, layer, model
from .batch import Carried, RigResult
from .contacts import fps_of
from .errors import UserError
from .ground import terrain_objects
from .reader import has_limbs
from .rig import settings
from .state import (  # noqa: F401  (live_rigs, Key and forget are part of live preview's interface)
    PROPS,
    FrameCache,
    Key,
    RigMemory,
    caches,
    forget,
    live_rigs,
    paused,
    restore_all,
    restore_animation_values,
    restore_for_edit,
)

log = logging.getLogger(__name__)

# True while Contact IK itself writes and re-evaluates: its own updates must not drop the cache.
writing = False
# Solve whole frame ranges at once for fast scrubbing (tests switch it off to check the frame-by-frame path).
USE_FRAME_CACHE = True
# Play the frame cache from an NLA track Blender evaluates itself (`layer`), where the rig allows it.
USE_LAYER = True
# In the UI, the live preview switch builds the frame cache in a timer right after the click, not inside the
# switch's update: Blender tags the rig for re-evaluation after that update returns, and the tag, evaluated
# outside `writing`, would look like an edit and drop the cache just built (it was built twice per click).
BUILD_LATER = not bpy.app.background
# Longest frame range solved at once into the frame cache (its arrays hold every frame, as the bake's do).
MAX_CACHE_FRAMES = 20_000
# Inside `together`: the rigs whose frame cache is built when it ends (None outside).
_deferred: Optional[set[str]] = None
# Set by `refresh` when every live rig plays from its preview track: (the live rigs, the first and last frame
# every track covers, the scene's pointer, how many objects the file has: a rig deleted changes it). A frame
# change inside it has nothing to do (`played`).
_played: Optional[tuple[frozenset[str], int, int, int, int]] = None


def played(scene: bpy.types.Scene) -> bool:
    """True when Blender plays every live rig at `scene`'s frame from its preview track: the frame change
    handler then returns at once (a few set operations: no Python per rig)."""
    p = _played
    return (p is not None and p[1] <= scene.frame_current <= p[2] and live_rigs == p[0]
            and caches.layers >= p[0] and scene.as_pointer() == p[3] and len(bpy.data.objects) == p[4])


def _channels(pb: bpy.types.PoseBone) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(getattr(pb, p)) for p in PROPS)


def _set_channels(pb: bpy.types.PoseBone, ch: tuple[tuple[float, ...], ...]) -> None:
    for p, v in zip(PROPS, ch):
        setattr(pb, p, v)


def _sync_from_evaluated(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> None:
    evaluated = obj.evaluated_get(depsgraph).pose.bones
    for pb in obj.pose.bones:
        ch = _channels(evaluated[pb.name])
        if _channels(pb) != ch:
            _set_channels(pb, ch)


def plays_baked(obj: bpy.types.Object) -> bool:
    """True while the rig plays a Contact IK bake: its keys already hold the IK, so preview adds nothing."""
    ad = obj.animation_data
    return ad is not None and ad.action is not None and bool(ad.action.get("contact_ik_baked", False))


def sync_registry() -> None:
    live_rigs.clear()
    for obj in bpy.data.objects:
        # Linked library data is never written to (its pose is the library's): only local or overridden rigs.
        if obj.type == "ARMATURE" and obj.library is None and settings(obj).live_preview:
            live_rigs.add(obj.name)


def _memory(obj: bpy.types.Object) -> RigMemory:
    memory = caches.rigs.get(obj.name)
    if not isinstance(memory, RigMemory):
        memory = caches.rigs[obj.name] = RigMemory()
    return memory


def solve_and_remember(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> RigResult:
    """Plant `obj` for its pose evaluated in `depsgraph`, remembering what was there and what we wrote."""
    s = settings(obj)
    error = checks.transform_error(obj) or checks.settings_error(obj)
    if error:
        raise UserError(error)
    terrain = caches.terrain.get(terrain_objects(s), depsgraph)
    memory = _memory(obj)
    memory.settle()
    frame = depsgraph.scene.frame_current
    result = batch.plant_frame(obj, terrain, depsgraph, frame, fps_of(depsgraph.scene), _carried(obj.name, frame))
    for name, prop, old, new in result.changed:
        memory.fk[(name, prop)] = old
        memory.ours[(name, prop)] = new
    return result


def _carried(name: str, frame: int) -> Optional[Carried]:
    """What the pelvis's speed limit and the feet's smoothing did to `frame` when the rig's frame cache was
    last built, and how fast each foot's front moved there (`state.caches.pelvis`, `feet`, `fronts`): exact
    when nothing they depend on changed since (undo, redo, an edit elsewhere); otherwise the cache is back a
    moment later. None: no cache yet."""
    delta = caches.pelvis.get(name)
    smoothed = caches.feet.get(name)
    fronts = caches.fronts.get(name)
    if delta is None and smoothed is None and fronts is None:
        return None
    pelvis = 0.0
    if delta is not None and 0 <= frame - delta[0] < len(delta[1]):
        pelvis = float(delta[1][frame - delta[0]])

    def row(kept: Optional[tuple[int, dict[int, Any]]]) -> dict[int, np.ndarray]:
        """`frame`'s value of each foot's array in `kept` (first frame, per foot by limb index)."""
        if kept is None:
            return {}
        i = frame - kept[0]
        return {k: np.array([float(v[i])]) for k, v in kept[1].items() if 0 <= i < len(v)}

    return Carried(np.array([pelvis]), row(smoothed), row(fronts))


def write_cached(obj: bpy.types.Object, cache: FrameCache, frame: int) -> None:
    """Write the cached solution of `frame` (in the cache's range) and remember it like a solve.

    One `foreach_get`/`foreach_set` pair per property over the rig's pose bones rather than one `setattr`
    per channel (which also looked each bone up by name): a third of the Python time per rig, which
    counts with a crowd. `foreach_set` runs no update, so the rig is tagged for re-evaluation here."""
    i = frame - cache.start
    bones = obj.pose.bones
    count = len(bones)
    if count != cache.bone_count:
        raise KeyError(f"{obj.name!r}: the bones changed since the frame cache was built")
    for prop, (index, block) in cache.blocks.items():
        size = block.shape[2]
        flat = np.empty(count * size, dtype=np.float32)
        bones.foreach_get(prop, flat)
        flat.reshape(count, size)[index] = block[i]
        bones.foreach_set(prop, flat)
    obj.update_tag(refresh={"DATA"})
    _memory(obj).pending = (cache, i)


def refresh(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> dict[str, RigResult]:
    """Plant every live rig of `scene` for its current frame, evaluated in `depsgraph` (the one being
    updated: the viewport's, or a render's during F12), which is then updated with the result.

    A rig whose frame cache covers the frame plays it from its preview track (`layer`), which Blender
    evaluates itself: nothing to do here once the track is on. Other rigs are written from the cache, or
    solved frame by frame. Errors switch that rig's preview off."""
    global writing, _played
    if _deferred is not None:
        return {}  # inside `together`: planted when it ends
    _played = None
    frame = scene.frame_current
    objects = scene.objects
    results: dict[str, RigResult] = {}
    todo: list[bpy.types.Object] = []
    for name in live_rigs:
        obj = objects.get(name)
        if obj is None or obj.type != "ARMATURE" or plays_baked(obj):
            continue
        cache = caches.frames.get(name)
        if name in caches.layers and isinstance(cache, FrameCache) and cache.start <= frame <= cache.end:
            results[name] = RigResult(written=list(cache.written))  # Blender plays it
        else:
            todo.append(obj)
    if not todo:
        if depsgraph is None:  # called by an operator: what it changed is evaluated here, as ours
            was_writing, writing = writing, True
            try:
                bpy.context.evaluated_depsgraph_get()
            finally:
                writing = was_writing
        _remember_played(scene)
        return results
    was_writing, writing = writing, True
    try:
        if depsgraph is None:  # called by an operator: what it changed is evaluated here, as ours
            depsgraph = bpy.context.evaluated_depsgraph_get()
        render = depsgraph.mode == "RENDER"
        if render:
            # A render's depsgraph evaluates the animation into its own copies only: bring the frame's
            # animated values into the original bones first, or a re-evaluation would copy stale ones back.
            for obj in todo:
                _sync_from_evaluated(obj, depsgraph)
        slow, cached = [], []
        for obj in todo:
            cache = caches.frames.get(obj.name)
            if isinstance(cache, FrameCache) and cache.start <= frame <= cache.end:
                cached.append((obj, cache))
            else:
                if obj.name in caches.layers:  # out of the track's range: frame by frame
                    caches.layers.difference_update(layer.detach(obj))
                slow.append(obj)
        if not render:
            _onto_tracks(cached, results)
        for obj, cache in cached:
            if obj.name in caches.layers:
                continue
            try:
                write_cached(obj, cache, frame)
                results[obj.name] = RigResult(written=list(cache.written))
            except Exception as exc:  # a bone renamed or removed since: solve frame by frame
                log.debug("cached preview failed", exc_info=True)
                caches.frames.pop(obj.name, None)
                del exc
                slow.append(obj)
        if slow:
            if any([restore_animation_values(obj) for obj in slow]):
                depsgraph.update()
            for obj in slow:
                try:
                    results[obj.name] = solve_and_remember(obj, depsgraph)
                except Exception as exc:  # never raise into Blender: report once and stop this rig's preview
                    _disable(obj, exc)
        depsgraph.update()
    finally:
        writing = was_writing
    _remember_played(scene)
    return results


def _onto_tracks(cached: list[tuple[bpy.types.Object, FrameCache]], results: dict[str, RigResult]) -> None:
    """Rigs (with frame caches covering the frame) onto their preview tracks, where they can play there;
    each one that does is in `caches.layers` and `results`."""
    if not USE_LAYER:
        return
    for group in layer.groups([(obj, c) for obj, c in cached if layer.why_not(obj) is None]):
        for obj, cache in group:
            restore_animation_values(obj)
            if layer.attach(obj, cache.start, cache.values):
                caches.layers.add(obj.name)
                caches.rigs.pop(obj.name, None)  # nothing of ours is left in the channels
                results[obj.name] = RigResult(written=list(cache.written))


def _remember_played(scene: bpy.types.Scene) -> None:
    global _played
    if not live_rigs or not caches.layers >= live_rigs:
        return
    ranges = [(c.start, c.end) for c in (caches.frames.get(n) for n in live_rigs) if isinstance(c, FrameCache)]
    if len(ranges) == len(live_rigs):
        _played = (frozenset(live_rigs), max(r[0] for r in ranges), min(r[1] for r in ranges), scene.as_pointer(),
                   len(bpy.data.objects))


def precompute(obj: bpy.types.Object, scene: bpy.types.Scene) -> Optional[FrameCache]:
    """Solve the scene's frame range for `obj` in one vectorised pass into its frame cache; None (and
    frame-by-frame preview) when the fast path does not cover the rig or it cannot be planted."""
    if _deferred is not None:  # inside `together`: built with the others when it ends
        _deferred.add(obj.name)
        return None
    return precompute_all([obj], scene).get(obj.name)


@contextmanager
def together(scene: bpy.types.Scene) -> Iterator[None]:
    """Turn live preview on for many rigs (or edit them) at once: their frame caches are then built in one
    sweep of the frame range when the block ends, instead of one sweep per rig (100 rigs: 100 sweeps
    of a scene of 100 rigs)."""
    global _deferred
    if _deferred is not None:
        yield
        return
    _deferred = set()
    try:
        yield
    finally:
        names, _deferred = _deferred, None
        objs = [o for o in scene.objects if o.name in names and o.name in live_rigs]
        built = precompute_all(objs, scene)
        if len(built) < len(objs):
            refresh(scene)  # rigs the fast path does not cover: frame by frame


def precompute_all(objs: list[bpy.types.Object], scene: bpy.types.Scene) -> dict[str, FrameCache]:
    """`precompute` for several rigs with one sweep of the frame range (every rig read on each frame);
    the caches built, by rig name (rigs the fast path does not cover are left out)."""
    for obj in objs:
        caches.frames.pop(obj.name, None)
    if not USE_FRAME_CACHE:
        return {}
    if scene.use_preview_range:
        start, end = scene.frame_preview_start, scene.frame_preview_end
    else:
        start, end = scene.frame_start, scene.frame_end
    if end < start or end - start + 1 > MAX_CACHE_FRAMES:
        return {}  # frame by frame: a very long range is not swept at once
    todo = []
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for obj in objs:
        if obj.name not in live_rigs or plays_baked(obj) or not has_limbs(obj):
            continue
        if checks.transform_error(obj) or checks.settings_error(obj):
            continue  # frame by frame, where a broken rig is reported
        s = settings(obj)
        terrain_objs = terrain_objects(s)
        try:
            terrain = caches.terrain.get(terrain_objs, depsgraph) if terrain_objs else None
        except UserError:
            continue
        if terrain is None and any(lb.kind == "FOOT" and lb.enabled for lb in s.limbs):
            continue
        todo.append((obj, terrain))
    if not todo:
        return {}
    saved_frame: Optional[int] = scene.frame_current
    global writing
    was_writing, writing = writing, True  # what the sweep stirs up is ours, not an edit
    try:
        with paused():  # nothing is planted while the range is swept
            rigs = []
            # The frames around, for the feet's smoothing, within the scene's frame range (as a bake reads them).
            before, after = model.context_rows(start, end, scene.frame_start, scene.frame_end, fps_of(scene))
            restore_all([obj for obj, _terrain in todo])
            for obj, terrain in todo:
                rigs.append((obj, batch.BatchRig(obj, terrain, end - start + 1 + before + after, start - before,
                                                 fps_of(scene), context=(before, after))))
            # Rigs only their action moves are read from its F-curves; the others by setting each frame.
            why = fkread.read_rigs([rig for _obj, rig in rigs], scene, restore=False)  # the frame is set below
            swept = [rig for (_obj, rig), reason in zip(rigs, why) if reason is not None]
            for i, f in enumerate(range(start - before, end + after + 1) if swept else ()):
                scene.frame_set(f)
                for rig in swept:
                    rig.read(i)
            # Solved together: the feet of rigs on one terrain are planned in one pass (`batch.compute_all`).
            outs = [(obj, rig, out) for (obj, rig), out in zip(rigs, batch.compute_all([rig for _obj, rig in rigs]))]
        stored = [(obj, _store(obj, rig, out, start, end)) for obj, rig, out in outs]
        built = {obj.name: cache for obj, cache in stored}
        saved_frame, back = None, saved_frame
        if start <= back <= end:  # on their tracks before the frame is set: Blender evaluates them once
            _onto_tracks(stored, {})
        scene.frame_set(back)  # with the caches in place: the current frame is planted from them
        if bpy.context.view_layer is not None:
            bpy.context.view_layer.update()
        return built
    finally:
        writing = was_writing
        if saved_frame is not None:  # failed half way: the frame the user was on, as it was
            scene.frame_set(saved_frame)


def _store(obj: bpy.types.Object, rig: batch.BatchRig, out: batch.Channels, start: int, end: int) -> FrameCache:
    """The rig's frame cache from what `compute` wrote (`out`), and the changes carried for its fallback."""
    both = rig.channel_values(out, checks.driven_channels(obj))
    values = {key: np.ascontiguousarray(v, dtype=np.float32) for key, (v, _fk) in both.items()}
    fk = {key: np.ascontiguousarray(base, dtype=np.float32) for key, (_v, base) in both.items()}
    index = {pb.name: k for k, pb in enumerate(obj.pose.bones)}
    blocks = {}
    for prop in PROPS:
        keys = [key for key in values if key[1] == prop]
        if keys:
            blocks[prop] = (np.array([index[key[0]] for key in keys], dtype=np.int64),
                            np.ascontiguousarray(np.stack([values[key] for key in keys], axis=1)))
    cache = FrameCache(start, end, values, fk, blocks, len(index), sorted({key[0] for key in values}))
    caches.frames[obj.name] = cache
    if rig.pelvis_delta is not None:
        caches.pelvis[obj.name] = (start, rig.pelvis_delta.copy())
    caches.feet[obj.name] = (start, {k: v.copy() for k, v in rig.foot_delta.items()})
    caches.fronts[obj.name] = (start, {k: v.copy() for k, v in rig.front_speed.items()})
    return cache


def invalidate_frames() -> None:
    """Drop every rig's frame cache and fallback set-up (something they depend on changed); rebuild the
    frame caches in a moment."""
    caches.drop_setups()
    detach_layers()
    if not caches.frames:
        return
    caches.frames.clear()
    if not bpy.app.background and not bpy.app.timers.is_registered(_rebuild):
        bpy.app.timers.register(_rebuild, first_interval=0.5)


def detach_layers() -> None:
    """Take every rig off its preview track (its frame cache is being dropped), and any track or mute
    left behind by a renamed rig or a track the user deleted."""
    caches.layers.clear()
    layer.detach_everywhere()


def settings_changed(obj: Any) -> None:
    """A Contact IK setting of `obj` changed: drop the frame caches; in the UI, show the change now."""
    if writing:
        return
    caches.drop_setups()
    if not (caches.frames or obj.name in live_rigs):
        return
    invalidate_frames()
    if not bpy.app.background and obj.name in live_rigs and not bpy.app.timers.is_registered(_refresh_now):
        bpy.app.timers.register(_refresh_now, first_interval=0.0)


def _refresh_now() -> None:
    try:
        if bpy.context.scene is not None:
            refresh(bpy.context.scene)
    except Exception as exc:  # a timer never raises into Blender
        print(f"Contact IK: live preview not refreshed: {type(exc).__name__}: {exc}")


def build_soon() -> None:
    """Build the frame caches of live rigs that have none in a moment (a timer; the UI only)."""
    if not bpy.app.timers.is_registered(_rebuild):
        bpy.app.timers.register(_rebuild, first_interval=0.0)


def _rebuild() -> Optional[float]:
    """Timer: rebuild the frame caches of live rigs once edits have settled."""
    try:
        if bpy.context.screen is not None and getattr(bpy.context.screen, "is_animation_playing", False):
            return 0.5  # not in the middle of playback
        scene = bpy.context.scene
        missing = [o for o in scene.objects if o.name in live_rigs and o.name not in caches.frames]
        if missing:
            precompute_all(missing, scene)  # one sweep for all of them
    except Exception as exc:  # a timer never raises into Blender
        print(f"Contact IK: live preview cache not rebuilt: {type(exc).__name__}: {exc}")
    return None


def _disable(obj: bpy.types.Object, exc: Exception) -> None:
    reason = str(exc) if isinstance(exc, (UserError, ValueError, KeyError)) else f"{type(exc).__name__}: {exc}"
    print(f"Contact IK: live preview turned off for {obj.name!r}: {reason}")
    log.debug("live preview failure", exc_info=True)
    live_rigs.discard(obj.name)
    try:
        restore_for_edit(obj)  # the animation's values back in every channel that still holds ours
    except Exception:  # noqa: BLE001  the pose may be read-only (library data): nothing of ours is in it
        forget(obj.name)
    try:
        settings(obj).live_preview = False
    except Exception:  # the object may be read-only (library data); the registry already dropped it
        pass


def on_frame_change(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
    try:
        refresh(scene, depsgraph)
    except Exception as exc:  # the handler never throws into Blender
        print(f"Contact IK: live preview error: {type(exc).__name__}: {exc}")


