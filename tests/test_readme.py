"""Every command in README.md works as written.

- The set-up block is exactly `make demo` and `make test`, the Makefile has those targets, and CI
  (`.ci/run`) calls `make test`. `make demo` itself runs in tests/test_demo.py (its --quick form: the
  full one takes a minute) and `make test` is this very run; `make build`, `make quality` and
  `make bench` are checked to resolve (`make -n`), their scripts run in test_extension, test_quality
  and test_benchmarks.
- The supported Blender versions the README names are the ones `make test` runs, and the manifest admits
  exactly those.
- Every headless command of the README is run as written, from the repository root, after the quick
  demo has written `out/demo_source.blend`. Two substitutions keep the checkout clean: `out/` is a
  temporary folder, and `.venv/bin/python` is this interpreter (the venv of the Blender under test).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import harness
import pytest

README = (harness.ROOT / "README.md").read_text()


def _sh_blocks() -> list[list[str]]:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    return [[ln.strip() for ln in b.splitlines() if ln.strip() and not ln.strip().startswith("#")] for b in blocks]


def _command(line: str) -> str:
    return line.split("#", 1)[0].strip()


def test_setup_is_two_commands_that_the_makefile_and_ci_run():
    setup = [_command(ln) for ln in _sh_blocks()[0]]
    assert setup == ["make demo", "make test"], setup
    makefile = (harness.ROOT / "Makefile").read_text()
    for target in ("demo", "test", "build", "quality", "bench"):
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert re.search(r"^\s*make test\s*$", (harness.ROOT / ".ci" / "run").read_text(), re.M)


def test_the_blenders_make_test_runs_are_the_ones_the_readme_names_and_the_manifest_admits():
    """The Blenders `make test` runs (requirements-dev.txt's `bpy` and the Makefile's OTHER_BLENDERS) are the
    supported versions the README names, with their wheels' versions, and the manifest's range is exactly
    theirs: from the oldest tested to, not including, the minor release after the newest. A newer Blender
    tested but left out of the manifest cannot install the extension at all (Blender 5.3 could not, while
    the range ended at 5.3.0); one admitted but never tested is a promise nothing checks."""
    others = re.search(r"^OTHER_BLENDERS := (.+)$", (harness.ROOT / "Makefile").read_text(), re.M)
    main = re.search(r"^bpy==(\S+)$", (harness.ROOT / "requirements-dev.txt").read_text(), re.M)
    assert others and main
    tested = [main.group(1), *others.group(1).split()]
    minors = {tuple(int(x) for x in v.split(".")[:2]) for v in tested}

    para = re.search(r"\*\*Supported Blender versions: (.*?)\*\*(.*?)\n\n", README, re.S)
    assert para, "README.md has no '**Supported Blender versions: ...**' paragraph"
    named = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"\d+\.\d+", para.group(1))}
    assert named == minors, (sorted(named), sorted(minors))
    body = " ".join(para.group(2).split())
    for version in tested:
        assert re.search(rf"(?<![\d.]){re.escape(version)}(?![\d])", body), version

    manifest = (harness.ROOT / "blender_manifest.toml").read_text()
    lo = re.search(r'^blender_version_min = "(\d+)\.(\d+)\.0"$', manifest, re.M)
    hi = re.search(r'^blender_version_max = "(\d+)\.(\d+)\.0"$', manifest, re.M)
    assert lo and hi, "blender_manifest.toml: blender_version_min and _max as 'X.Y.0'"
    newest = max(minors)
    assert (int(lo.group(1)), int(lo.group(2))) == min(minors)
    assert (int(hi.group(1)), int(hi.group(2))) == (newest[0], newest[1] + 1)
    assert f"up to, not including, {hi.group(1)}.{hi.group(2)}.0" in body


@pytest.mark.parametrize("target", ["build", "demo", "test", "quality", "bench", "bench-quick"])
def test_every_make_target_named_in_the_readme_resolves(target):
    assert f"make {target}" in README
    proc = subprocess.run(["make", "-n", target], cwd=harness.ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_headless_commands_work_as_written(tmp_path, quick_demo):
    out, demo = quick_demo  # the demo's `out/` (the commands add their files beside its own)
    env = dict(os.environ)
    env.pop("BLENDER_USER_RESOURCES", None)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert (out / "demo_source.blend").exists()

    # The cluster commands ("Beyond one machine") need a scheduler and workers: tests/test_cluster.py runs them.
    lines = [_command(ln) for block in _sh_blocks() for ln in block
             if "tools/contact_ik_cli.py" in ln and "--scheduler" not in ln]
    assert len(lines) == 4, lines
    env["CONTACT_IK_EXTENSION"] = str(harness.built_zip())  # the zip under test (else the runner builds one)
    env["CONTACT_IK_USER"] = str(tmp_path / "runner_user")
    for line in lines:
        args = shlex.split(line.replace("out/", f"{out}/"))
        assert args[:2] == [".venv/bin/python", "tools/contact_ik_cli.py"], args
        proc = subprocess.run([sys.executable, *args[1:]], cwd=harness.ROOT, capture_output=True, text=True,
                              env=env, timeout=900)
        # 0, or 3 (README: "done, with a warning") with the warnings printed.
        assert proc.returncode == 0 or (proc.returncode == 3 and "warning" in proc.stderr.lower()), (
            line, proc.stdout[-3000:], proc.stderr[-3000:])

    assert (out / "planted.blend").exists()
    assert json.loads((out / "planted.json").read_text())
    assert (out / "walk.blend").exists() and (out / "walk.fbx").stat().st_size > 1000
    report = json.loads((out / "zombie.json").read_text())
    assert report
    batch = json.loads((out / "batch.json").read_text())
    clips = sorted(p.name for p in (harness.MOCAP).glob("*.bvh"))
    baked = sorted(p.name for p in (out / "baked").glob("*.blend"))
    assert len(baked) == len(clips), (baked, clips)
    assert batch
    # Nothing written beside the inputs.
    assert not list(harness.MOCAP.glob("*.contact_ik.*"))


def test_solver_snippet_runs_as_written():
    # The README's Python block, with the extension's package as this test run installed it (the README
    # names the `user_default` repository a user installs into).
    block = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(block) == 1
    code = block[0].replace("bl_ext.user_default.contact_ik", harness.PACKAGE)
    assert harness.PACKAGE in code
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - our own README, not user data
    assert scope["res"].case_name == "reached"
    assert (scope["res"].tip - scope["target"]).length < 1e-5
    assert len(scope["sol"].rotations) == 2
