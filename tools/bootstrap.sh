#!/usr/bin/env bash
# Creates (or refreshes) a virtual environment with the pinned development dependencies of
# requirements-dev.txt: Blender as a Python module (bpy), pytest, hypothesis, ruff, mypy, ...
#
#   tools/bootstrap.sh            -> .venv       (the bpy of requirements-dev.txt: the main version)
#   tools/bootstrap.sh 4.2.23     -> .venv-4.2   (the same test dependencies with bpy==4.2.23)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
req="$here/requirements-dev.txt"
blender="${1:-}"
if [ -z "$blender" ]; then
  venv="${CONTACT_IK_VENV:-$here/.venv}"
  wanted="$(cat "$req")"
else
  venv="$here/.venv-$(echo "$blender" | cut -d. -f1-2)"
  # Only what the tests need (the linters run once, in .venv), with this Blender's bpy.
  wanted="$(grep -v -E '^(ruff|mypy|fake-bpy-module)==' "$req" | sed "s/^bpy==.*/bpy==$blender/")"
fi
stamp="$venv/.requirements.sha256"
want="$(echo "$wanted" | sha256sum | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "[bootstrap] setting up $venv (first run downloads Blender as a Python module, ~400 MB)" >&2
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
tmp="$(mktemp)"
echo "$wanted" > "$tmp"
"$venv/bin/python" -m pip install --quiet -r "$tmp"
rm -f "$tmp"
echo "$want" > "$stamp"
