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


# The Blender 4.2 and 4.5 `bpy` wheels cannot always leave: once Rigify has been enabled (these tests
# build the Rigify metarig), 4.2 segfaults at interpreter exit (SpaceType::~SpaceType -> bpy_class_free
# after Python has finalized) and 4.5 hangs there (~GlobalState waits on its delayed-close thread).
# Both reproduce with a three-line script that only enables Rigify, without Contact IK (see
# docs/robustness.md). So on those versions the session leaves with os._exit once pytest has written
# its report, keeping pytest's exit status.
_exit_status = 0


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    import bpy

    if bpy.app.version < (5, 0, 0):
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)
