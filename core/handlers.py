"""Application handlers: the caches live in one object, reset when a file loads."""

from __future__ import annotations

from typing import Any

import bpy


class Caches:
    """Per-session caches (terrain BVH trees, rig layouts); `reset()` drops them all."""

    def __init__(self) -> None:
        self.terrain: dict[Any, Any] = {}
        self.rigs: dict[Any, Any] = {}

    def reset(self) -> None:
        self.terrain.clear()
        self.rigs.clear()


caches = Caches()


@bpy.app.handlers.persistent
def contact_ik_load_post(*_args: Any) -> None:
    caches.reset()


_handlers = ((bpy.app.handlers.load_post, contact_ik_load_post),)


def register() -> None:
    for handler_list, fn in _handlers:
        if fn not in handler_list:
            handler_list.append(fn)


def unregister() -> None:
    for handler_list, fn in _handlers:
        while fn in handler_list:
            handler_list.remove(fn)
    caches.reset()
