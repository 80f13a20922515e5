"""Test harness: real Blender (the bpy wheel) with Contact IK built and installed as a user does it.

The extension zip is built with Blender's own extension tool and installed with
`bpy.ops.extensions.package_install_files(..., enable_on_install=True)` into a temporary user
repository, inside a temporary Blender user folder, so nothing touches the real user's config.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import sys
import tempfile
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The real clips the tests read, committed with the repository (tests/data/SOURCES.md: origin and
# licence of each), so the suite runs from a fresh clone with nothing beside it.
MOCAP = ROOT / "tests" / "data"
# The broad corpus beside the checkout, for `make quality` and the benchmarks only: a fresh clone may
# not have it, and no test may need it.
CORPUS = ROOT.parent / "shared" / "mocap"
REPO_MODULE = "contact_ik_tests"
PACKAGE = f"bl_ext.{REPO_MODULE}.contact_ik"

_user_dir = tempfile.mkdtemp(prefix="contact_ik_user_")
# Must be set before Blender starts (the first `import bpy`).
os.environ.setdefault("BLENDER_USER_RESOURCES", _user_dir)

import bpy  # noqa: E402  (mathutils is importable only after bpy with the wheel)

sys.path.insert(0, str(ROOT / "tools"))
import build_extension  # noqa: E402

_zip_path: pathlib.Path | None = None


def built_zip() -> pathlib.Path:
    global _zip_path
    if _zip_path is None:
        _zip_path = build_extension.build(pathlib.Path(tempfile.mkdtemp(prefix="contact_ik_dist_")))
    return _zip_path


def _test_repo() -> bpy.types.UserExtensionRepo:
    repos = bpy.context.preferences.extensions.repos
    for repo in repos:
        if repo.module == REPO_MODULE:
            return repo
    directory = pathlib.Path(os.environ["BLENDER_USER_RESOURCES"]) / "contact_ik_repo"
    directory.mkdir(parents=True, exist_ok=True)
    return repos.new(name="Contact IK tests", module=REPO_MODULE, custom_directory=str(directory), source="USER")


def install() -> ModuleType:
    """Build, install and enable the extension once; return its package module."""
    if PACKAGE in bpy.context.preferences.addons:
        return importlib.import_module(PACKAGE)
    repo = _test_repo()
    result = bpy.ops.extensions.package_install_files(
        repo=repo.module, filepath=str(built_zip()), enable_on_install=True
    )
    if result != {"FINISHED"} or PACKAGE not in bpy.context.preferences.addons:
        raise RuntimeError(f"installing the built extension failed: {result}")
    return importlib.import_module(PACKAGE)


def reset_scene() -> None:
    """An empty scene; keeps preferences (read_factory_settings would disable the extension)."""
    bpy.ops.wm.read_homefile(use_empty=True)


def user_actions() -> list[str]:
    """The names of the file's actions, without live preview's (`core.layer`: they come and go with it)."""
    return sorted(a.name for a in bpy.data.actions if a.get("contact_ik_preview") is None)


def module(name: str) -> ModuleType:
    """A submodule of the installed extension, e.g. module('solvers')."""
    install()
    return importlib.import_module(f"{PACKAGE}.{name}")

