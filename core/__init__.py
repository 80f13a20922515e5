"""The layer between Blender data and the solvers: rigs, terrain, live preview, bake."""

from __future__ import annotations

from . import handlers


def register() -> None:
    handlers.register()


def unregister() -> None:
    handlers.unregister()
