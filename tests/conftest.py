"""Pytest setup: Blender first (mathutils needs it), the extension installed from its built zip."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness  # noqa: E402

harness.install()

# Hypothesis draws new examples on every run, which is how a developer's run finds a new failure (it is
# then kept in .hypothesis/ and replayed). CI runs a fresh clone, where a new draw would make a red
# build out of a change that did not cause it: there the draws are fixed (`derandomize`), and every
# failure a developer's run found is kept as an explicit `@example`.
if os.environ.get("CI") == "true":
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True)
    _hypothesis_settings.load_profile("ci")


@pytest.fixture
def scene():
    """An empty scene for a test that builds Blender data."""
    harness.reset_scene()
    import bpy

    yield bpy.context.scene


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory):
    """The demo (`tools/demo.py --quick`), run once as its own process into a temporary `out/` with the
    zip under test: (its output folder, the finished process). Its own test checks the outputs; the
    README's headless commands run on the scene it saved."""
    import os
    import subprocess

    out = tmp_path_factory.mktemp("demo") / "out"
    env = dict(os.environ)
    env.pop("BLENDER_USER_RESOURCES", None)
    proc = subprocess.run([sys.executable, str(harness.ROOT / "tools" / "demo.py"), "--quick", "--out", str(out),
                           "--extension", str(harness.built_zip())],
                          capture_output=True, text=True, env=env, timeout=600)
    return out, proc


@pytest.fixture(autouse=True)
def no_blender_tracebacks(capfd):
    """Blender prints exceptions raised in handlers and operators instead of raising them: fail on them."""
    yield
    out, err = capfd.readouterr()
    sys.stdout.write(out)
    sys.stderr.write(err)
    assert "Traceback (most recent call last)" not in err, f"Blender printed a traceback:\n{err}"


# The Blender 4.2 and 4.5 `bpy` wheels cannot always leave once Rigify has been enabled (these tests
# build the Rigify metarig): see tools/bpy_kit.py and docs/robustness.md. On those versions the session
# leaves at once after pytest has written its report, keeping pytest's exit status.
_exit_status = 0


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    import bpy_kit

    bpy_kit.leave_now_if_exit_is_broken(_exit_status)
