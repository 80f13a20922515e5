"""Pytest setup: Blender first (mathutils needs it), the extension installed from its built zip."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness  # noqa: E402

harness.install()


@pytest.fixture
def scene():
    """An empty scene for a test that builds Blender data."""
    harness.reset_scene()
    import bpy

    yield bpy.context.scene


@pytest.fixture(autouse=True)
def no_blender_tracebacks(capfd):
    """Blender prints exceptions raised in handlers and operators instead of raising them: fail on them."""
    yield
    out, err = capfd.readouterr()
    sys.stdout.write(out)
    sys.stderr.write(err)
    assert "Traceback (most recent call last)" not in err, f"Blender printed a traceback:\n{err}"
