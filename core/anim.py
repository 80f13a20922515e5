"""Actions and F-curves across Blender versions: legacy actions (4.2 LTS) and layered actions with
slots (4.4+, the only kind from 5.0). Everything the bake writes goes through here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import bpy

if TYPE_CHECKING:
    from bpy.types import Action, Object

LAYERED = bpy.app.version >= (4, 4, 0)


def action_of(obj: Object) -> Optional[Action]:
    ad = obj.animation_data
    return ad.action if ad is not None else None


def slot_of(obj: Object) -> Any:
    ad = obj.animation_data
    return getattr(ad, "action_slot", None) if ad is not None else None


def channels(action: Action, slot: Any = None, create: bool = False) -> Any:
    """What holds `action`'s F-curves for `slot`: its channelbag (layered) or the action itself (legacy);
    None if the slot has no channels yet and `create` is False."""
    if LAYERED and (getattr(action, "is_action_layered", False) or not hasattr(action, "fcurves")):
        from bpy_extras import anim_utils

        if slot is None:
            return None
        if create:
            ensure = getattr(anim_utils, "action_ensure_channelbag_for_slot", None)  # 5.0+
            if ensure is not None:
                return ensure(action, slot)
            layer = action.layers[0] if action.layers else action.layers.new("Layer")  # 4.4, 4.5
            strip = layer.strips[0] if layer.strips else layer.strips.new(type="KEYFRAME")
            return strip.channelbag(slot, ensure=True)
        get = getattr(anim_utils, "action_get_channelbag_for_slot", None)
        if get is not None:
            return get(action, slot)
        for layer in action.layers:
            for strip in layer.strips:
                bag = strip.channelbag(slot)
                if bag is not None:
                    return bag
        return None
    return action


def fcurves(action: Action, slot: Any = None) -> Any:
    owner = channels(action, slot)
    return owner.fcurves if owner is not None else None


def assign(obj: Object, action: Action, slot_identifier: Optional[str] = None) -> None:
    """Make `obj` play `action` (in 4.4+ through the slot named like the one it used, or a new one)."""
    ad = obj.animation_data or obj.animation_data_create()
    ad.action = action
    if not LAYERED:
        return
    slot = None
    if slot_identifier:
        slot = next((s for s in action.slots if s.identifier == slot_identifier), None)
    if slot is None:
        slot = next((s for s in action.slots if s.target_id_type == "OBJECT"), None)
    if slot is None:
        slot = action.slots.new(id_type="OBJECT", name=obj.name)
    ad.action_slot = slot


def new_fcurve(owner: Any, data_path: str, index: int, group: str, groups: Optional[dict[str, Any]] = None) -> Any:
    """A new F-curve for (data_path, index) of `owner` (from `channels`), in group `group`: looked up in
    `groups` (name -> group, for an owner whose curves are all made here: a rig's preview track, thousands of
    curves in a crowd) where given, else in the owner; made if missing."""
    if isinstance(owner, bpy.types.Action):
        return owner.fcurves.new(data_path, index=index, action_group=group)
    fc = owner.fcurves.new(data_path, index=index)
    got = groups.get(group) if groups is not None else owner.groups.get(group)
    if got is None:
        got = owner.groups.new(group)
        if groups is not None:
            groups[group] = got
    fc.group = got
    return fc


def ensure_fcurve(owner: Any, data_path: str, index: int, group: str) -> Any:
    """The F-curve for (data_path, index) of `owner` (from `channels`), created in group `group` if missing."""
    fc = owner.fcurves.find(data_path, index=index)
    return fc if fc is not None else new_fcurve(owner, data_path, index, group)


def channel_snapshot(action: Action, slot: Any = None) -> list[tuple[str, int, tuple[float, ...]]]:
    """Every key of every F-curve: to check an action is untouched."""
    fcs = fcurves(action, slot)
    out = []
    for fc in fcs or []:
        co = [0.0] * (2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        out.append((fc.data_path, fc.array_index, tuple(co)))
    return sorted(out)
