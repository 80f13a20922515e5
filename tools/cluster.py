"""A batch on a Dask cluster: `python tools/contact_ik_cli.py bake CLIPS... --scheduler tcp://HOST:PORT
--output-dir SHARED`.

The coordinator (this module's `run`) needs only a Python with `dask[distributed]`: no Blender, no `bpy`
(`tools/contact_ik_cli.py` runs it without importing Blender). It is not part of the extension (the zip
stays free of dask, and Dask's protocol unpickles, which the extension never does): inside Blender,
`contact_ik bake --scheduler` says where to run it. Each clip x terrain is one Dask task. A
worker runs it in a fresh Contact IK process (`run_job`, which cloudpickle ships by value, so workers
need no copy of this module): the worker's Blender, or its Python with the `bpy` wheel.

Nothing lost, nothing duplicated:
- a worker writes into a folder of its own attempt under OUTPUT_DIR/.contact_ik_partial/ and moves each
  finished file to its final name with one rename (`os.replace`, atomic on one file system), so an
  output is either whole or absent; the coordinator removes the attempt folders when it ends;
- a worker that dies mid-clip loses its task to another worker (Dask reschedules the tasks of a lost
  worker; after three lost workers a task is given up and reported as failed), and its Blender child
  dies with it (Linux: PR_SET_PDEATHSIG);
- a clip that fails (bad input: exit code 2; or an error: 1) is an outcome, not an exception: it is
  reported with its message and never retried;
- OUTPUT_DIR/contact_ik_batch.manifest.json records per job the SHA-256 of its input (and terrain
  file) and the settings that shape its outputs, and the SHA-256 of each output: a rerun skips the jobs
  whose inputs, settings and outputs are unchanged and redoes the rest.

Standard library and dask only: no `bpy` import.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import pathlib
import pickle
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any, Optional


def _cli_args():  # type: ignore[no-untyped-def]
    """The extension's cli_args.py (standard library only), loaded by path: this module is not part of the
    extension, and the extension's package would import Blender."""
    import importlib.util

    name = "contact_ik_cli_args"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__).resolve().parent.parent / "cli_args.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[name]


cli_args = _cli_args()
WARNED, InputError, Job, batch_jobs, job_args = (cli_args.WARNED, cli_args.InputError, cli_args.Job,
                                                 cli_args.batch_jobs, cli_args.job_args)

MANIFEST = "contact_ik_batch.manifest.json"
PARTIAL = ".contact_ik_partial"
POLL_S = 0.5
WARNED_EXIT = 3  # cli_args.WARNED, repeated: run_job ships by value and reads nothing from other modules
PROGRESS_S = 10.0


# ------------------------------------------------------------------------------------------ coordinator


def run(inputs: Sequence[str], args: argparse.Namespace, runner: Optional[str] = None) -> int:
    """Bake every clip x terrain on the cluster at args.scheduler; the exit code (0 all baked or skipped,
    1 some failed). `runner`: the path of tools/contact_ik_cli.py, for workers whose Python has bpy."""
    try:
        import cloudpickle
        import distributed
    except ImportError as exc:
        raise InputError("--scheduler needs dask[distributed] in the Python that runs this command "
                         f"(pip install 'dask[distributed]') ({exc})") from exc
    if not args.output_dir:
        raise InputError("--scheduler needs --output-dir: a folder every worker can write (a shared disk)")
    jobs = batch_jobs(inputs, args)
    out_dir = pathlib.Path(args.output_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    manifest = _read_json(out_dir / MANIFEST, {"jobs": {}})
    settings = _settings(args)
    entries: dict[str, dict] = {}
    todo: list[tuple[Job, dict]] = []
    for job in jobs:
        fingerprint = _fingerprint(job, settings)
        old = manifest["jobs"].get(job.key)
        if old and old.get("outcome") == "baked" and old.get("fingerprint") == fingerprint and _intact(old):
            entries[job.key] = dict(old, outcome="skipped", baked_outcome_at=old.get("finished"))
            continue
        clash = [str(p) for p in (job.output, *job.exports) if p.exists()]
        if clash and not args.overwrite and not (old and old.get("fingerprint") == fingerprint):
            entries[job.key] = _entry(job, fingerprint, outcome="failed", error=(
                f"{', '.join(clash)} already exist(s) and were not written by this batch: remove them, or add --overwrite"))
            continue
        todo.append((job, fingerprint))

    if __name__ not in cloudpickle.list_registry_pickle_by_value():
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        client = distributed.Client(args.scheduler, timeout="10s")
    except OSError as exc:
        raise InputError(f"no Dask scheduler answers at {args.scheduler} ({exc}): start one with `dask scheduler`, "
                         "and workers with `dask worker ADDRESS`") from exc
    try:
        print(f"contact_ik: cluster {args.scheduler}: {len(_workers(client))} worker(s); dashboard "
              f"{client.dashboard_link}", flush=True)
        print(f"contact_ik: {len(jobs)} job(s): {len(todo)} to bake, "
              f"{sum(e['outcome'] == 'skipped' for e in entries.values())} unchanged since the last run (skipped), "
              f"{sum(e['outcome'] == 'failed' for e in entries.values())} refused", flush=True)
        futures = {}
        for job, fingerprint in todo:
            # The task is `pickle.loads` of a payload whose unpickling runs run_job(spec): cloudpickle writes
            # run_job by value, so a worker needs neither this module nor the extension installed in its Python.
            payload = cloudpickle.dumps(_RunJob(_spec(job, args, out_dir, runner)))
            fut = client.submit(pickle.loads, payload, key=f"contact_ik-{job.key}-{uuid.uuid4().hex[:8]}", pure=False)
            futures[fut] = (job, fingerprint)
        _gather(futures, entries, manifest, out_dir, t0)
    finally:
        client.close()
    _clean_partials(out_dir, [j.key for j, _f in todo])
    # The manifest records the outputs as they are on disk at the end (each written whole by one rename).
    for key, entry in manifest["jobs"].items():
        if entry.get("outcome") == "baked" and key in {j.key for j, _f in todo}:
            entry["outputs"] = {p: _sha256(pathlib.Path(p)) for p in entry["outputs"] if pathlib.Path(p).is_file()}
    _write_json_atomic(out_dir / MANIFEST, manifest)

    ordered = [entries[j.key] for j in jobs]
    failed = [e for e in ordered if e["outcome"] == "failed"]
    summary = {"scheduler": args.scheduler, "output_dir": str(out_dir), "jobs": len(jobs),
               "baked": sum(e["outcome"] == "baked" for e in ordered),
               "skipped": sum(e["outcome"] == "skipped" for e in ordered), "failed": failed,
               "clips": ordered, "wall_s": time.perf_counter() - t0}
    if args.report:
        _write_json_atomic(pathlib.Path(args.report), summary)
    print(f"contact_ik: batch of {len(jobs)} job(s) on {args.scheduler}: {summary['baked']} baked, "
          f"{summary['skipped']} skipped (unchanged), {len(failed)} failed in {summary['wall_s']:.1f} s", flush=True)
    for f in failed:
        print(f"  FAILED {f['input']}" + (f" on {f['terrain']}" if f["terrain"] else "") + f": {f['error']}",
              file=sys.stderr)
    warned = [e for e in ordered if e["outcome"] != "failed" and (e.get("report") or {}).get("warnings")]
    for e in warned:
        print(f"  WARNING {e['input']}: {'; '.join(e['report']['warnings'])}", file=sys.stderr)
    return 1 if failed else WARNED if warned else 0


def _gather(futures: dict, entries: dict, manifest: dict, out_dir: pathlib.Path, t0: float) -> None:
    """Wait for every task, recording each result in the manifest as it arrives, with progress lines."""
    pending = dict(futures)
    fetch_errors: dict[Any, int] = {}
    done = failed = 0
    last = 0.0
    while pending:
        finished = []
        for fut in [f for f in pending if f.done()]:
            try:
                result = fut.result()
            except Exception as exc:  # noqa: BLE001  see below
                # A worker that dies after its task finished, before its result is fetched, loses the result:
                # Dask computes the task again elsewhere, and the future is pending again. Only a task Dask
                # gave up on (status "error": KilledWorker after three lost workers) is a failed job.
                fetch_errors[fut] = fetch_errors.get(fut, 0) + 1
                if fut.status != "error" and fetch_errors[fut] <= 10:
                    continue
                result = {"outcome": "failed", "error": f"{type(exc).__name__}: {exc}", "attempts": None}
            finished.append((fut, result))
        for fut, result in finished:
            # Forget the task at once: a result held by a worker that then dies would otherwise be computed
            # again, and that second run would write the outputs again behind the manifest's back.
            fut.release()
            job, fingerprint = pending.pop(fut)
            entry = _entry(job, fingerprint, **result)
            entries[job.key] = entry
            if entry["outcome"] == "baked":
                manifest["jobs"][job.key] = entry
                done += 1
            else:
                manifest["jobs"].pop(job.key, None)
                failed += 1
            _write_json_atomic(out_dir / MANIFEST, manifest)
        now = time.perf_counter()
        if finished or now - last >= PROGRESS_S:
            last = now
            elapsed = now - t0
            rate = (done + failed) / elapsed * 60.0 if elapsed > 0 else 0.0
            left = len(pending)
            eta = f"{left / rate:.1f} min" if rate > 0 else "unknown"
            running = sum(f.status == "pending" and _is_processing(f) for f in pending)
            print(f"contact_ik: {done} done, {failed} failed, {running} running, {left - running} queued; "
                  f"{rate:.1f} clips/min; about {eta} left", flush=True)
        if pending:
            time.sleep(POLL_S)


def _is_processing(fut: Any) -> bool:
    try:
        return fut.key in _processing(fut.client)
    except Exception:  # noqa: BLE001  progress is best effort
        return False


_processing_cache: dict[str, Any] = {"t": 0.0, "keys": set()}


def _processing(client: Any) -> set:
    now = time.perf_counter()
    if now - _processing_cache["t"] > 1.0:
        _processing_cache["keys"] = {k for keys in client.processing().values() for k in keys}
        _processing_cache["t"] = now
    return _processing_cache["keys"]


def _workers(client: Any) -> dict:
    return client.scheduler_info().get("workers", {})


def _spec(job: Job, args: argparse.Namespace, out_dir: pathlib.Path, runner: Optional[str]) -> dict:
    """What a worker needs to bake one job: the command's arguments with the output paths to be replaced
    by its attempt's own, the final names, and how to start Contact IK."""
    names = [job.output.name, *(e.name for e in job.exports)]
    return {"key": job.key, "out_dir": str(out_dir), "names": names,
            "args": job_args(job, args, "{report}", pathlib.Path("{work}") / names[0],
                             [pathlib.Path("{work}") / n for n in names[1:]]),
            "worker_command": args.worker_command, "runner": runner}


def _settings(args: argparse.Namespace) -> dict:
    """The arguments that shape a job's outputs (not where they go)."""
    return {"up_axis": args.up_axis, "forward_axis": args.forward_axis, "scale": args.scale,
            "armature": args.armature, "frame_start": args.frame_start, "frame_end": args.frame_end,
            "export": sorted(e.lower().lstrip(".") for e in args.export)}


def _fingerprint(job: Job, settings: dict) -> dict:
    terrain = job.terrain
    terrain_hash = _sha256(pathlib.Path(terrain)) if terrain and pathlib.Path(terrain).is_file() else None
    return {"input_sha256": _sha256(pathlib.Path(job.input)), "terrain": terrain, "terrain_sha256": terrain_hash,
            "settings": settings}


def _entry(job: Job, fingerprint: dict, **result: Any) -> dict:
    entry = {"key": job.key, "input": str(pathlib.Path(job.input).resolve()), "terrain": job.terrain,
             "fingerprint": fingerprint, "outcome": result.get("outcome"), "error": result.get("error"),
             "worker": result.get("worker"), "attempts": result.get("attempts"), "started": result.get("started"),
             "finished": result.get("finished"), "seconds": result.get("seconds"),
             "outputs": result.get("outputs", {}), "report": result.get("report")}
    return entry


def _intact(entry: dict) -> bool:
    outputs = entry.get("outputs") or {}
    return bool(outputs) and all(pathlib.Path(p).is_file() and _sha256(pathlib.Path(p)) == h for p, h in outputs.items())


def _clean_partials(out_dir: pathlib.Path, keys: list[str]) -> None:
    root = out_dir / PARTIAL
    for key in keys:
        shutil.rmtree(root / key, ignore_errors=True)
    try:
        root.rmdir()  # only when empty: another batch may be writing there
    except OSError:
        pass


def _read_json(path: pathlib.Path, default: dict) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def _write_json_atomic(path: pathlib.Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, path)


def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------- worker


class _RunJob:
    """Unpickled on a worker, this runs the job: `pickle.loads(cloudpickle.dumps(_RunJob(spec)))` is
    run_job(spec)."""

    def __init__(self, spec: dict) -> None:
        self.spec = spec

    def __reduce__(self) -> tuple:
        return run_job, (self.spec,)


def run_job(spec: dict) -> dict:
    """On a Dask worker: bake one job in a fresh Contact IK process, into this attempt's own folder, then
    move each output to its final name. Returns the outcome; never raises for a clip that fails."""
    import subprocess
    import tempfile

    started = time.time()
    out_dir = pathlib.Path(spec["out_dir"])
    attempts_dir = out_dir / PARTIAL / spec["key"]
    attempts_dir.mkdir(parents=True, exist_ok=True)
    worker = _worker_name()
    attempt = len(list(attempts_dir.glob("attempt-*"))) + 1
    (attempts_dir / f"attempt-{attempt}-{uuid.uuid4().hex[:6]}").write_text(worker)
    work = attempts_dir / f"work-{attempt}-{uuid.uuid4().hex[:6]}"
    work.mkdir()
    report = work / "report.json"
    argv = [a.replace("{work}", str(work)).replace("{report}", str(report)) for a in spec["args"]]
    base = {"worker": worker, "attempts": attempt, "started": _iso(started)}
    command, why = _worker_command(spec)
    if command is None:
        shutil.rmtree(work, ignore_errors=True)
        return dict(base, outcome="failed", error=why, finished=_iso(time.time()), seconds=time.time() - started)
    env = dict(os.environ)
    # One Blender user folder per worker process: workers on one machine never install into the same one.
    env.setdefault("CONTACT_IK_USER", str(pathlib.Path(tempfile.gettempdir()) / f"contact_ik_worker_{os.getpid()}"))
    env.pop("BLENDER_USER_RESOURCES", None)
    proc = subprocess.run(command + argv, capture_output=True, text=True, env=env, preexec_fn=_die_with_parent)
    finished = time.time()
    base.update(finished=_iso(finished), seconds=finished - started)
    if proc.returncode not in (0, WARNED_EXIT) or not report.is_file():
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("contact_ik:")]
        error = lines[-1] if lines else (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        shutil.rmtree(work, ignore_errors=True)
        return dict(base, outcome="failed", error=error, exit_code=proc.returncode)
    clip = json.loads(report.read_text())["clips"][0]
    outputs = {}
    for name in spec["names"]:
        final = out_dir / name
        digest = _sha256(work / name)
        os.replace(work / name, final)
        outputs[str(final)] = digest
    clip["output"] = str(out_dir / spec["names"][0])
    clip["exports"] = [str(out_dir / n) for n in spec["names"][1:]]
    shutil.rmtree(work, ignore_errors=True)
    return dict(base, outcome="baked", outputs=outputs, report=clip)


def _worker_command(spec: dict) -> tuple[Optional[list[str]], str]:
    """How this worker starts Contact IK: --worker-command, $CONTACT_IK_WORKER_COMMAND, its own Python
    when it has the bpy wheel (with the checkout's tools/contact_ik_cli.py), or `blender` on PATH."""
    import importlib.util

    given = spec.get("worker_command") or os.environ.get("CONTACT_IK_WORKER_COMMAND")
    if given:
        return shlex.split(given), ""
    runner = spec.get("runner")
    if runner and pathlib.Path(runner).is_file() and importlib.util.find_spec("bpy") is not None:
        return [sys.executable, runner], ""
    blender = shutil.which("blender")
    if blender:
        return [blender, "--background", "--command", "contact_ik"], ""
    return None, (f"worker {_worker_name()} cannot start Contact IK: it has no `blender` on PATH and its Python "
                  "has no bpy wheel; give --worker-command, or set CONTACT_IK_WORKER_COMMAND on the worker")


def _worker_name() -> str:
    try:
        from distributed import get_worker

        w = get_worker()
        return str(w.name if w.name is not None else w.address)
    except (ImportError, ValueError):
        import socket

        return f"{socket.gethostname()}:{os.getpid()}"


def _die_with_parent() -> None:
    """In the child, before exec: die when the worker dies (Linux), so no Blender outlives a lost worker."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat(timespec="seconds")
