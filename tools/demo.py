"""The main job: builds and validates the extension zip and says where it is.

(The full headless demo scene, renders and plots come with the demo issue.)
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import build_extension  # noqa: E402


def main() -> None:
    out = build_extension.build(build_extension.ROOT / "dist")
    print(f"Contact IK extension built and validated: {out}")
    print("Install it in Blender: Preferences > Get Extensions > Install from Disk.")


if __name__ == "__main__":
    main()
