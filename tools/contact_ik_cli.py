"""Run Contact IK's command line with only the `bpy` wheel (Blender as a Python module) installed.

    python tools/contact_ik_cli.py bake walk.bvh --up-axis Z --terrain stairs.obj --report report.json

takes exactly the arguments of `blender --background --command contact_ik ...`. The extension is
built from this checkout (or taken from $CONTACT_IK_EXTENSION, a built zip) and installed the way a
user installs it, into a Blender user folder of its own ($CONTACT_IK_USER, default out/runner_user)
so a real Blender configuration is never touched. Batch workers reuse that installation.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def coordinate(argv: list[str]) -> int:
    """`bake ... --scheduler ADDRESS`: the Dask coordinator, in this Python, without starting Blender."""
    sys.path.insert(0, str(ROOT / "tools"))
    import cluster

    cli_args = cluster.cli_args
    try:
        args = cli_args.parser().parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage
        return int(exc.code or 0) and 2
    try:
        return int(cluster.run(cli_args.expand_inputs(args.inputs), args, runner=str(pathlib.Path(__file__).resolve())))
    except cli_args.InputError as exc:
        print(f"contact_ik: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__" and any(a == "--scheduler" or a.startswith("--scheduler=") for a in sys.argv[1:]):
    sys.exit(coordinate(sys.argv[1:]))
REPO_MODULE = "contact_ik_runner"
USER = pathlib.Path(os.environ.get("CONTACT_IK_USER", ROOT / "out" / "runner_user")).resolve()
USER.mkdir(parents=True, exist_ok=True)
os.environ["BLENDER_USER_RESOURCES"] = str(USER)  # before Blender starts
os.environ["CONTACT_IK_RUNNER"] = str(pathlib.Path(__file__).resolve())
os.environ["CONTACT_IK_USER"] = str(USER)

import bpy  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))


def _sources_newer_than(zip_path: pathlib.Path) -> bool:
    if not zip_path.exists():
        return True
    built = zip_path.stat().st_mtime
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in {"out", "dist", "__pycache__"}]
        for f in files:
            if f.endswith((".py", ".toml")) and os.stat(os.path.join(folder, f)).st_mtime > built:
                return True
    return False


def extension_zip() -> pathlib.Path:
    given = os.environ.get("CONTACT_IK_EXTENSION")
    if given:
        return pathlib.Path(given).resolve()
    dist = ROOT / "out" / "runner_dist"
    dist.mkdir(parents=True, exist_ok=True)
    import fcntl

    # Batch and cluster workers start at once: one builds, the others wait and take its zip.
    with open(dist / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _fresh_zip(dist)


def _fresh_zip(dist: pathlib.Path) -> pathlib.Path:
    zips = sorted(dist.glob("contact_ik-*.zip"))
    if zips and not _sources_newer_than(zips[-1]):
        return zips[-1]
    import build_extension

    for z in zips:
        z.unlink()
    return build_extension.build(dist)


def _repo() -> bpy.types.UserExtensionRepo:
    repos = bpy.context.preferences.extensions.repos
    for repo in repos:
        if repo.module == REPO_MODULE:
            return repo
    directory = USER / "contact_ik_repo"
    directory.mkdir(parents=True, exist_ok=True)
    return repos.new(name="Contact IK runner", module=REPO_MODULE, custom_directory=str(directory), source="USER")


def install() -> str:
    """Install (when the zip changed) and enable the extension; its package name."""
    package = f"bl_ext.{REPO_MODULE}.contact_ik"
    zip_path = extension_zip()
    digest = hashlib.sha256(zip_path.read_bytes()).hexdigest()
    stamp = USER / "installed.sha256"
    repo = _repo()
    if not stamp.exists() or stamp.read_text() != digest or not (pathlib.Path(repo.directory) / "contact_ik").is_dir():
        result = bpy.ops.extensions.package_install_files(repo=repo.module, filepath=str(zip_path), enable_on_install=True)
        if result != {"FINISHED"}:
            sys.exit(f"contact_ik: installing {zip_path} failed: {result}")
        stamp.write_text(digest)
    if package not in bpy.context.preferences.addons:
        import addon_utils

        addon_utils.enable(package, default_set=True)
    if package not in bpy.context.preferences.addons:
        sys.exit(f"contact_ik: the extension {package} could not be enabled")
    return package


def main(argv: list[str]) -> int:
    package = install()
    cli = importlib.import_module(f"{package}.cli")
    return int(cli.execute(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
