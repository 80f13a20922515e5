#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment in .venv with the pinned
# development dependencies: Blender as a Python module (bpy), pytest, hypothesis, ruff, mypy.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CONTACT_IK_VENV:-$here/.venv}"
req="$here/requirements-dev.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "[bootstrap] setting up $venv (first run downloads Blender as a Python module, ~400 MB)" >&2
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
"$venv/bin/python" -m pip install --quiet -r "$req"
echo "$want" > "$stamp"
