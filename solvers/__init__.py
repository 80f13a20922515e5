"""Pure IK math for Contact IK: plain values in, plain values out; `mathutils` and `numpy`, no `bpy`."""

from .chains import ChainSolve, ccd, fabrik
from .limits import JointLimits, compose_swing_twist, swing_twist_angles
from .pose import ChainPose, LimbSolution, bone_frame, solve_limb
from .soft import soft_distance, soft_distance_array
from .two_bone import (
    DEGENERATE,
    REACHED,
    TOO_CLOSE,
    TOO_FAR,
    TwoBoneResult,
    solve_two_bone,
    solve_two_bone_batch,
)

__all__ = [
    "DEGENERATE", "REACHED", "TOO_CLOSE", "TOO_FAR",
    "ChainPose", "ChainSolve", "JointLimits", "LimbSolution", "TwoBoneResult",
    "bone_frame", "ccd", "compose_swing_twist", "fabrik", "soft_distance", "soft_distance_array",
    "solve_limb", "solve_two_bone", "solve_two_bone_batch", "swing_twist_angles",
]
