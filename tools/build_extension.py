"""Builds and validates the extension zip with Blender's own extension tool.

Uses `blender --command extension build` semantics through the `blender_ext.py` script that
ships inside the bpy wheel, so no Blender binary is needed. Prints the zip's path.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def blender_ext_script() -> pathlib.Path:
    import bpy

    scripts = pathlib.Path(bpy.utils.system_resource("SCRIPTS"))
    script = scripts / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    if not script.is_file():
        sys.exit(f"blender_ext.py not found in {scripts}: is the bpy wheel installed?")
    return script


def run(args: list[str]) -> str:
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        sys.exit(f"command failed ({proc.returncode}): {' '.join(args)}")
    return proc.stdout


def build(output_dir: pathlib.Path) -> pathlib.Path:
    script = blender_ext_script()
    output_dir.mkdir(parents=True, exist_ok=True)
    run([sys.executable, str(script), "validate", str(ROOT)])
    run([sys.executable, str(script), "build", "--source-dir", str(ROOT), "--output-dir", str(output_dir)])
    zips = sorted(output_dir.glob("contact_ik-*.zip"), key=lambda p: p.stat().st_mtime)
    if not zips:
        sys.exit(f"the build wrote no zip into {output_dir}")
    run([sys.executable, str(script), "validate", str(zips[-1])])
    return zips[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output-dir", type=pathlib.Path, default=ROOT / "dist")
    args = parser.parse_args()
    print(build(args.output_dir.resolve()))


if __name__ == "__main__":
    main()
