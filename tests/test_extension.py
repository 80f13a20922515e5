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


def _our_classes():
    seen, stack, out = set(), [bpy.types.bpy_struct], []
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
                if "contact_ik" in sub.__module__ and getattr(sub, "is_registered", False):
                    out.append(sub)
    return out


def test_every_operator_and_setting_has_a_tooltip():
    missing = []
    classes = _our_classes()
    assert any(issubclass(c, bpy.types.Operator) for c in classes)
    for cls in classes:
        if issubclass(cls, bpy.types.Operator):
            rna = getattr(bpy.ops.contact_ik, cls.bl_idname.split(".")[1]).get_rna_type()
            if len(rna.description.strip()) < 10:
                missing.append(cls.bl_idname)
            for p in rna.properties:
                if p.identifier != "rna_type" and not p.description.strip():
                    missing.append(f"{cls.bl_idname}.{p.identifier}")
        elif issubclass(cls, bpy.types.PropertyGroup):
            for p in cls.bl_rna.properties:
                # name: the collection item's label; active_*: list indices, not shown as fields
                if p.identifier in {"rna_type", "name"} or p.identifier.startswith("active_"):
                    continue
                if not p.description.strip():
                    missing.append(f"{cls.__name__}.{p.identifier}")
    assert not missing, f"no tooltip: {missing}"


def test_lengths_are_shown_in_the_scene_unit_system():
    # A distance setting carries the LENGTH unit, so Blender shows it in metres, feet, ... as the scene says.
    groups = [c for c in _our_classes() if issubclass(c, bpy.types.PropertyGroup)]
    lengths = {f"{c.__name__}.{p.identifier}": p.unit for c in groups for p in c.bl_rna.properties
               if p.identifier in {"foot_offset", "ray_length", "floor_height", "length", "drop_in", "drop_out"}}
    assert len(lengths) == 6, lengths
    assert set(lengths.values()) == {"LENGTH"}, lengths
