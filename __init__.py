"""Contact IK: plants the feet and hands of animated armatures on the world, live and baked."""

from __future__ import annotations

from . import cli, core, operators, panels, properties

_modules = (properties, core, operators, panels, cli)


def register() -> None:
    for module in _modules:
        module.register()


def unregister() -> None:
    for module in reversed(_modules):
        module.unregister()
