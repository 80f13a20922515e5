"""The built extension: Blender's tool accepts it, it holds only the add-on, and it registers cleanly."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import addon_utils
import bpy
import harness


def test_zip_validates_with_blenders_extension_tool():
    script = harness.build_extension.blender_ext_script()
    proc = subprocess.run([sys.executable, str(script), "validate", str(harness.built_zip())],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zip_holds_the_addon_and_no_tests_or_dev_files():
    names = zipfile.ZipFile(harness.built_zip()).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert any(n.startswith("solvers/") for n in names)
    for n in names:
        first = n.split("/")[0]
        assert first not in {"tests", "tools", "benchmarks", "docs", ".ci", ".git", "out", "dist"}, n
        assert not any(part.startswith(".") for part in n.split("/")), n
        assert "__pycache__" not in n and not n.endswith((".pyc", ".zip", ".blend1")), n
        assert n not in {"Makefile", "pyproject.toml", "requirements-dev.txt", "README.md"}, n


def test_solvers_do_not_import_bpy():
    for n in zipfile.ZipFile(harness.built_zip()).namelist():
        if n.startswith("solvers/") and n.endswith(".py"):
            text = zipfile.ZipFile(harness.built_zip()).read(n).decode()
            assert "import bpy" not in text and "from bpy" not in text, n


def _registered_classes():
    seen, stack, out = set(), [bpy.types.bpy_struct], []
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            stack.append(sub)
            if "contact_ik" in sub.__module__ and getattr(sub, "is_registered", False):
                out.append(f"{sub.__module__}.{sub.__name__}")
    return out


def _registry_snapshot():
    handlers = {
        name: sorted(f"{getattr(fn, '__module__', '')}.{getattr(fn, '__name__', '')}"
                     for fn in getattr(bpy.app.handlers, name))
        for name in dir(bpy.app.handlers)
        if isinstance(getattr(bpy.app.handlers, name), list)
    }
    types = sorted(_registered_classes())
    obj_props = sorted(p.identifier for p in bpy.types.Object.bl_rna.properties)
    return handlers, types, obj_props


def _ours(snapshot):
    handlers, types, props = snapshot
    hs = [h for hl in handlers.values() for h in hl if "contact_ik" in h]
    return hs, types, [p for p in props if "contact" in p]


def test_enable_disable_three_times_leaves_nothing_behind():
    pkg = harness.PACKAGE
    assert pkg in bpy.context.preferences.addons
    enabled = _ours(_registry_snapshot())
    assert enabled[1], "the extension registered no classes"
    assert "contact_ik" in enabled[2]
    for _ in range(3):
        addon_utils.disable(pkg, default_set=True)
        assert pkg not in bpy.context.preferences.addons
        assert _ours(_registry_snapshot()) == ([], [], []), _ours(_registry_snapshot())
        addon_utils.enable(pkg, default_set=True)
        assert pkg in bpy.context.preferences.addons
        assert _ours(_registry_snapshot()) == enabled
