"""A batch on a real Dask cluster on 127.0.0.1: a scheduler and two workers started here with the README's
commands ("Beyond one machine"), six clips and a corrupt one over two terrains, one worker killed while it
bakes. Every output is there, whole and identical to a local `--jobs 1` run; the report is complete; no
partial file is left; a second run skips everything it already baked; the corrupt clip fails alone.

The cluster path does not depend on the Blender version (its workers run the same `contact_ik bake` as the
local pool, which test_cli runs on every version), so this test, which bakes 26 clips, runs on the main
Blender only."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

import bpy
import harness
import pytest

MAIN = (harness.ROOT / "requirements-dev.txt").read_text().split("bpy==")[1].split()[0]
pytestmark = pytest.mark.skipif(bpy.app.version_string.split()[0] != MAIN,
                                reason=f"the cluster test runs on the main Blender ({MAIN}) only")
pytest.importorskip("distributed")

README = (harness.ROOT / "README.md").read_text()
CLIPS = sorted(p.name for p in harness.MOCAP.glob("*.bvh"))
FRAMES = ["--frame-end", "120"]  # the first 120 frames of each clip: enough to plant, quick to bake


def _readme_cluster_commands() -> dict[str, str]:
    section = README[README.index("## Beyond one machine"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    lines = [ln.split("#", 1)[0].strip() for ln in block.splitlines()]
    lines = [ln for ln in lines if ln]
    return {"scheduler": next(ln for ln in lines if " scheduler " in ln),
            "worker": next(ln for ln in lines if " worker " in ln),
            "bake": next(ln for ln in lines if "--scheduler" in ln)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_written(line: str, port: int, dash: int, out: pathlib.Path) -> list[str]:
    """A README line with this run's ports, `out/` a temporary folder and `.venv/bin/` this interpreter's."""
    line = line.replace("8786", str(port)).replace("8787", str(dash)).replace("out/", f"{out}/")
    args = shlex.split(line)
    if args[0].startswith(".venv/bin/"):
        args[0] = str(pathlib.Path(sys.executable).parent / args[0][len(".venv/bin/"):])
    return args


def _terrains(folder: pathlib.Path) -> list[pathlib.Path]:
    """A flat plane and a gentle slope (5 %) at the clips' floor (z = 0), wide enough for every clip."""
    out = []
    for name, tilt in (("flat", 0.0), ("slope", 0.05)):
        size = 2000.0
        verts = [(x, y, tilt * x) for x, y in ((-size, -size), (size, -size), (size, size), (-size, size))]
        text = "".join(f"v {x} {y} {z}\n" for x, y, z in verts) + "f 1 2 3 4\n"
        path = folder / f"{name}.obj"
        path.write_text(text)
        out.append(path)
    return out


def _start(args: list[str], env: dict, log: pathlib.Path) -> subprocess.Popen:
    return subprocess.Popen(args, cwd=harness.ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def test_a_batch_on_a_dask_cluster_survives_a_lost_worker(tmp_path):
    commands = _readme_cluster_commands()
    assert commands["scheduler"].startswith(".venv/bin/dask scheduler")
    assert commands["worker"].startswith(".venv/bin/dask worker")
    assert commands["bake"].startswith(".venv/bin/python tools/contact_ik_cli.py bake")

    clips = tmp_path / "clips"
    clips.mkdir()
    for name in CLIPS:
        (clips / name).symlink_to(harness.MOCAP / name)
    (clips / "corrupt.bvh").write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET nonsense\n")
    terrains = _terrains(tmp_path)
    extra = [a for t in terrains for a in ("--terrain", str(t))] + FRAMES + ["--export", ".bvh"]
    env = dict(os.environ)
    env.pop("BLENDER_USER_RESOURCES", None)
    env["CONTACT_IK_EXTENSION"] = str(harness.built_zip())  # the zip under test, installed by each worker
    env["CONTACT_IK_USER"] = str(tmp_path / "coordinator_user")
    runner = [sys.executable, str(harness.ROOT / "tools" / "contact_ik_cli.py")]
    jobs = 2 * (len(CLIPS) + 1)

    # The reference: the same batch with the local pool, one clip at a time.
    local = subprocess.run(runner + ["bake", str(clips), "--output-dir", str(tmp_path / "local"), "--report",
                                     str(tmp_path / "local.json"), "--jobs", "1", *extra],
                           capture_output=True, text=True, env=env, timeout=900)
    assert local.returncode == 1, local.stdout[-2000:] + local.stderr[-3000:]  # the corrupt clip fails
    local_report = json.loads((tmp_path / "local.json").read_text())
    assert len(local_report["clips"]) == 2 * len(CLIPS) and len(local_report["failed"]) == 2

    port, dash = _free_port(), _free_port()
    out = tmp_path / "out"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(_start(_as_written(commands["scheduler"], port, dash, out), env, tmp_path / "scheduler.log"))
        workers = {}
        for name in ("wA", "wB"):
            wenv = dict(env)
            wenv.pop("CONTACT_IK_USER")  # each worker process installs the extension into a folder of its own
            args = _as_written(commands["worker"], port, dash, out) + ["--name", name, "--nworkers", "1"]
            workers[name] = _start(args, wenv, tmp_path / f"{name}.log")
            procs.append(workers[name])
        bake = _as_written(commands["bake"], port, dash, out)
        bake = [sys.executable, *bake[1:]] + extra
        bake = [a if a != "tests/data/" else str(clips) for a in bake]
        assert str(clips) in bake
        report_path = pathlib.Path(bake[bake.index("--report") + 1])
        out_dir = pathlib.Path(bake[bake.index("--output-dir") + 1])

        coordinator = subprocess.Popen(bake, cwd=harness.ROOT, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
        # Once the first result is in, kill worker A while it bakes a clip (its attempt folder names it).
        killed_during = None
        deadline = time.monotonic() + 600
        while coordinator.poll() is None and time.monotonic() < deadline and killed_during is None:
            time.sleep(0.2)
            if not list(out_dir.glob("*.contact_ik.blend")):
                continue
            for marker in (out_dir / ".contact_ik_partial").glob("*/attempt-*"):
                key = marker.parent.name
                try:
                    busy = marker.read_text() == "wA"
                except OSError:
                    continue
                if busy and not (out_dir / f"{key}.contact_ik.blend").exists():
                    _stop(workers["wA"])
                    killed_during = key
                    break
        text, _ = coordinator.communicate(timeout=900)
        assert killed_during is not None, text
        assert coordinator.returncode == 1, text  # the corrupt clip's two jobs failed, nothing else
        assert "dashboard http://127.0.0.1" in text and "clips/min" in text and "left" in text, text

        report = json.loads(report_path.read_text())
        entries = {e["key"]: e for e in report["clips"]}
        assert len(entries) == jobs and report["jobs"] == jobs
        not_baked = [(e["key"], e["outcome"], e["attempts"], e["worker"], e["error"]) for e in report["clips"]
                     if e["outcome"] != "baked"]
        assert report["baked"] == jobs - 2 and report["skipped"] == 0, not_baked
        failed = [e for e in report["clips"] if e["outcome"] == "failed"]
        assert sorted(e["key"] for e in failed) == ["corrupt.flat", "corrupt.slope"]
        for e in failed:
            assert "could not be imported" in e["error"] and e["attempts"] == 1, e  # bad input: never retried
        # The clip worker A was baking when it died was baked again elsewhere, on its second attempt.
        assert entries[killed_during]["outcome"] == "baked" and entries[killed_during]["attempts"] >= 2
        assert entries[killed_during]["worker"] != "wA"
        for e in report["clips"]:
            if e["outcome"] == "baked":
                assert e["worker"] in ("wA", "wB") and e["seconds"] > 0 and e["started"] and e["finished"]
                assert [q["kind"] for q in e["report"]["quality"]].count("FOOT") == 2

        # Every output whole, identical to the local run's, and nothing else: no partial file anywhere.
        expected = {f"{k}.contact_ik.{ext}" for k in entries if not k.startswith("corrupt") for ext in ("blend", "bvh")}
        assert {p.name for p in out_dir.iterdir()} == expected | {"contact_ik_batch.manifest.json"}
        local_quality = {(pathlib.Path(c["input"]).name, pathlib.Path(c["terrain"] or "").stem): c["quality"]
                         for c in local_report["clips"]}
        for key, e in entries.items():
            if e["outcome"] != "baked":
                continue
            assert (out_dir / f"{key}.contact_ik.bvh").read_bytes() == (tmp_path / "local" / f"{key}.contact_ik.bvh").read_bytes()
            clip = pathlib.Path(e["input"]).name
            terrain = key.rsplit(".", 1)[1]
            assert e["report"]["quality"] == local_quality[clip, terrain], key

        # A second run of the same command skips every job it baked (the corrupt clip fails again, alone).
        mtimes = {p.name: p.stat().st_mtime_ns for p in out_dir.iterdir() if p.suffix in (".blend", ".bvh")}
        again = subprocess.run(bake, cwd=harness.ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 1, again.stdout + again.stderr
        report = json.loads(report_path.read_text())
        assert report["skipped"] == jobs - 2 and report["baked"] == 0 and len(report["failed"]) == 2
        assert {p.name: p.stat().st_mtime_ns for p in out_dir.iterdir() if p.suffix in (".blend", ".bvh")} == mtimes
        assert not (out_dir / ".contact_ik_partial").exists()
    finally:
        for proc in procs:
            _stop(proc)


def test_without_an_output_dir_or_a_scheduler_the_cluster_path_says_how_to_fix_it(tmp_path):
    env = dict(os.environ)
    env.pop("BLENDER_USER_RESOURCES", None)
    runner = [sys.executable, str(harness.ROOT / "tools" / "contact_ik_cli.py"), "bake", str(harness.MOCAP)]
    proc = subprocess.run(runner + ["--scheduler", "tcp://127.0.0.1:9"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 2 and "--scheduler needs --output-dir" in proc.stderr, proc.stderr
    proc = subprocess.run(runner + ["--scheduler", f"tcp://127.0.0.1:{_free_port()}", "--output-dir",
                                    str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "no Dask scheduler answers" in proc.stderr, proc.stderr
