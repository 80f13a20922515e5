#!/usr/bin/env bash
# Creates (or refreshes) a virtual environment with the pinned development dependencies of
# requirements-dev.txt: Blender as a Python module (bpy), pytest, hypothesis, ruff, mypy, ...
#
#   tools/bootstrap.sh            -> .venv       (the bpy of requirements-dev.txt: the main version)
#   tools/bootstrap.sh 4.2.23     -> .venv-4.2   (the same test dependencies with bpy==4.2.23)
#   tools/bootstrap.sh 5.2.4      -> .venv-5.2   (Blender 5.1+ wheels need Python 3.13 and numpy 2)
#
# Each Blender's wheel is built for one Python: 4.2 to 5.0 for 3.11, 5.1 and later for 3.13. The
# Python is found on PATH (python3.11, python3.13) or under pyenv's versions folder. When it is
# missing, this exits with status 3 and says what to install (tools/test_blenders.sh turns that into
# a loud skip, or an error when CI=true).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
req="$here/requirements-dev.txt"
blender="${1:-}"
main="$(grep '^bpy==' "$req" | cut -d= -f3)"
version="${blender:-$main}"
major_minor="$(echo "$version" | cut -d. -f1-2)"

# The Python each Blender's wheel is built for, and the numpy pin that goes with it.
# numpy 1.26.4 is what Blender 4.2 to 5.0 ship; the 5.1+ wheels (Python 3.13) require numpy >= 2.2.
case "$major_minor" in
  4.*|5.0) python_version=3.11; numpy_pin="" ;;
  *)       python_version=3.13; numpy_pin="numpy==2.3.5" ;;
esac

find_python() {  # find_python 3.13 -> prints the path of a working python3.13, or nothing
  local want="$1" root="${PYENV_ROOT:-$HOME/.pyenv}" c
  for c in "$(command -v "python$want" 2>/dev/null || true)" "$root"/versions/"$want"*/bin/"python$want" \
           /usr/local/bin/"python$want" /usr/bin/"python$want"; do
    # A pyenv shim on PATH can exist without its version being selected: run it to be sure.
    if [ -n "$c" ] && [ -x "$c" ] && "$c" -c "import sys, venv; assert sys.version[:${#want}] == '$want'" >/dev/null 2>&1; then
      echo "$c"
      return 0
    fi
  done
}

python="$(find_python "$python_version")"
if [ -z "$python" ]; then
  cat >&2 <<EOF
[bootstrap] ************************************************************************************
[bootstrap] Blender $version's bpy wheel needs Python $python_version, and none was found
[bootstrap] (looked for python$python_version on PATH and under ${PYENV_ROOT:-$HOME/.pyenv}/versions).
[bootstrap] Install it, for example: pyenv install $python_version
[bootstrap]                      or: apt install python$python_version python$python_version-venv
[bootstrap] ************************************************************************************
EOF
  exit 3
fi

if [ -z "$blender" ]; then
  venv="${CONTACT_IK_VENV:-$here/.venv}"
  wanted="$(cat "$req")"
else
  venv="$here/.venv-$major_minor"
  # Only what the tests need (the linters run once, in .venv), with this Blender's bpy.
  wanted="$(grep -v -E '^(ruff|mypy|fake-bpy-module)==' "$req" | sed "s/^bpy==.*/bpy==$blender/")"
fi
if [ -n "$numpy_pin" ]; then
  wanted="$(echo "$wanted" | sed "s/^numpy==.*/$numpy_pin/")"
fi
stamp="$venv/.requirements.sha256"
want="$(echo "$wanted" | sha256sum | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "[bootstrap] setting up $venv with Python $python_version (first run downloads Blender as a Python module, ~400 MB)" >&2
# A venv made with another Python (say 3.11 where 5.1+ needs 3.13) is made anew; otherwise it is updated.
if ! "$venv/bin/python" -c "import sys; assert sys.version[:${#python_version}] == '$python_version'" >/dev/null 2>&1; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
tmp="$(mktemp)"
echo "$wanted" > "$tmp"
# pip's warnings about local index folders this machine may name but not have are noise.
"$venv/bin/python" -m pip install --quiet -r "$tmp" 2> >(grep -v "is neither a file nor a directory" >&2)
rm -f "$tmp"
echo "$want" > "$stamp"
