"""A newcomer's checkout: `git clone <repo> contact-ik` into a folder whose path has a hyphen and a space,
with nothing beside it (no ../shared), and the suite runs there. The clone holds what is committed
(HEAD); where this tree is not a git checkout, its files are copied instead."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import harness


def _checkout(tmp_path: pathlib.Path) -> pathlib.Path:
    dest = tmp_path / "my work" / "contact-ik"
    dest.parent.mkdir(parents=True)
    if (harness.ROOT / ".git").exists():
        subprocess.run(["git", "clone", "-q", str(harness.ROOT), str(dest)], check=True, timeout=120)
    else:
        shutil.copytree(harness.ROOT, dest, ignore=shutil.ignore_patterns(".venv*", "out", "dist", "__pycache__"))
    return dest


def _pytest(clone: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("BLENDER_USER_RESOURCES", None)  # the clone's harness makes its own user folder
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=clone, capture_output=True, text=True,
                          env=env, timeout=600)


def test_a_clone_named_contact_ik_without_shared_collects_and_runs(tmp_path):
    clone = _checkout(tmp_path)
    assert not (clone.parent / "shared").exists() and not (clone.parent.parent / "shared").exists()
    assert "-" in clone.name and " " in str(clone)

    collected = _pytest(clone, "--collect-only", "-q", "tests")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    count = re.search(r"(\d+) tests? collected", collected.stdout)
    assert count and int(count.group(1)) > 300, collected.stdout[-2000:]
    assert "error" not in collected.stdout.lower().split("tests collected")[-1], collected.stdout[-2000:]

    # Collection alone does not set up the package nodes: running tests does (that is where a root
    # imported as a package failed). One solver test file and one that reads the committed clips.
    ran = _pytest(clone, "-q", "tests/test_seed_story.py", "tests/test_mocap.py::test_rigify_metarig_detection",
                  "tests/test_mocap.py::test_detection_finds_both_legs_and_arms_with_the_right_bones")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert re.search(r"\b13 passed\b", ran.stdout), ran.stdout[-2000:]
