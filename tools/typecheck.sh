#!/usr/bin/env bash
# mypy over the add-on as the package `contact_ik` (types of bpy from fake-bpy-module).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ln -s "$here" "$tmp/contact_ik"
cd "$tmp"
"$here/.venv/bin/python" -m mypy --config-file "$here/pyproject.toml" --cache-dir "$tmp/.mypy_cache" \
  --exclude 'contact_ik/(tests|tools|benchmarks|docs|out|dist|\.venv)/' -p contact_ik
