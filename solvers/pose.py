"""From joint positions back to bone rotations, and the whole limb solve on a chain's FK pose.

A `ChainPose` is a limb as the solvers see it: for every bone, the world-space frame its local
rotation acts in (for a Blender pose bone: armature world matrix @ pose matrix @ inverse of the
bone's own scale) and that local rotation. Writing a new pose back follows the article: parent
first, each bone turned by the smallest rotation, expressed in its own frame, that takes its child
joint from where it was to where the solver put it; children follow their parent's change rigidly.
Joint limits clamp each bone's rotation as it is written, so every solver honours them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Optional

from mathutils import Matrix, Quaternion, Vector

from ._types import VecLike, components, vec
from .chains import fabrik
from .limits import JointLimits
from .soft import soft_distance
from .two_bone import TOO_CLOSE, TOO_FAR, solve_two_bone

log = logging.getLogger(__name__)

Method = Literal["auto", "analytic", "fabrik", "ccd"]


def _is_finite_matrix(m: Matrix) -> bool:
    return all(math.isfinite(m[i][j]) for i in range(4) for j in range(4))


@dataclass
class ChainPose:
    """A limb's FK pose: bone frames (world), local rotations, optional limits and end-effector bone.

    `tip_local` is the chain's tip (the ankle or wrist) in the last bone's frame. `end_frame` and
    `end_rotation` describe the bone hanging at the tip (the foot or hand) when its orientation is
    to be set too.
    """

    frames: list[Matrix]
    rotations: list[Quaternion]
    tip_local: Vector
    limits: list[Optional[JointLimits]] = field(default_factory=list)
    end_frame: Optional[Matrix] = None
    end_rotation: Optional[Quaternion] = None
    end_limits: Optional[JointLimits] = None

    def __post_init__(self) -> None:
        if len(self.frames) != len(self.rotations) or not self.frames:
            raise ValueError("a chain needs one frame and one rotation per bone, and at least one bone")
        if not self.limits:
            self.limits = [None] * len(self.frames)
        self._inv = [f.inverted_safe() for f in self.frames]
        self._child_local = [self._inv[i] @ self.frames[i + 1].translation for i in range(len(self.frames) - 1)]
        self._child_local.append(self.tip_local.copy())

    @classmethod
    def from_points(
        cls,
        points: Sequence[VecLike],
        rolls: Optional[VecLike] = None,
        limits: Optional[Sequence[Optional[JointLimits]]] = None,
    ) -> ChainPose:
        """A chain of bones through `points` in rest pose (each bone's Y axis along it, like Blender's)."""
        pts = [vec(p) for p in points]
        frames = []
        for i in range(len(pts) - 1):
            frames.append(bone_frame(pts[i], pts[i + 1], rolls[i] if rolls else 0.0))
        length = (pts[-1] - pts[-2]).length
        return cls(frames, [Quaternion() for _ in frames], Vector((0.0, length, 0.0)), list(limits or []))

    @property
    def bone_count(self) -> int:
        return len(self.frames)

    def positions(self) -> list[Vector]:
        """Joint positions root to tip in the FK pose."""
        return [f.translation.copy() for f in self.frames] + [self.frames[-1] @ self._child_local[-1]]

    def chain_length(self) -> float:
        pts = self.positions()
        return sum((pts[i + 1] - pts[i]).length for i in range(len(pts) - 1))

    def forward(self, rotations: Sequence[Quaternion]) -> tuple[list[Matrix], list[Vector]]:
        """Frames and joint positions for new local rotations (forward kinematics)."""
        frames: list[Matrix] = []
        points = [self.frames[0].translation.copy()]
        delta = Matrix.Identity(4)
        for i, frame in enumerate(self.frames):
            change = (self.rotations[i].inverted() @ rotations[i]).to_matrix().to_4x4()
            new = delta @ frame @ change
            frames.append(new)
            points.append(new @ self._child_local[i])
            delta = new @ self._inv[i]
        return frames, points

    def end_frame_for(self, frames: Sequence[Matrix]) -> Optional[Matrix]:
        """The end-effector bone's frame once the chain's last bone has moved to `frames[-1]`."""
        if self.end_frame is None:
            return None
        return frames[-1] @ self._inv[-1] @ self.end_frame

    def rotations_for(self, new_positions: Sequence[VecLike]) -> list[Quaternion]:
        """Local rotations that bring the joints to `new_positions` (as far as the limits allow)."""
        out: list[Quaternion] = []
        delta = Matrix.Identity(4)
        for i, frame in enumerate(self.frames):
            current = delta @ frame
            wanted = current.inverted_safe() @ vec(new_positions[i + 1])
            turn = _rotation_between(self._child_local[i], wanted)
            q = self._limited(i, self.rotations[i] @ turn)
            out.append(q)
            change = (self.rotations[i].inverted() @ q).to_matrix().to_4x4()
            delta = current @ change @ self._inv[i]
        return out

    def _limited(self, i: int, q: Quaternion) -> Quaternion:
        lim = self.limits[i]
        q = q.normalized()
        return lim.clamp(q) if lim is not None else q

    def ccd(
        self, target: Vector, rotations: Sequence[Quaternion], tolerance: float, max_iterations: int
    ) -> tuple[list[Quaternion], int, float]:
        """Cyclic coordinate descent on the local rotations, clamping every joint to its limits."""
        rots = [q.copy() for q in rotations]
        frames, points = self.forward(rots)
        error = (points[-1] - target).length
        iterations = 0
        while error > tolerance and iterations < max_iterations:
            iterations += 1
            for i in range(self.bone_count - 1, -1, -1):
                inv = frames[i].inverted_safe()
                turn = _rotation_between(inv @ points[-1], inv @ target)
                rots[i] = self._limited(i, rots[i] @ turn)
                frames, points = self.forward(rots)
            new_error = (points[-1] - target).length
            if new_error >= error - tolerance * 1e-3:
                error = min(error, new_error)
                break  # stalled: the limits or the reach allow no better
            error = new_error
        return rots, iterations, error


def bone_frame(head: Vector, tail: Vector, roll: float = 0.0) -> Matrix:
    """A frame at `head` whose Y axis points to `tail`, turned by `roll` about it (as Blender's rest)."""
    y = tail - head
    if y.length == 0.0:
        y = Vector((0.0, 1.0, 0.0))
    rot = Vector((0.0, 1.0, 0.0)).rotation_difference(y.normalized()).to_matrix()
    rot = rot @ Matrix.Rotation(roll, 3, "Y")
    m = rot.to_4x4()
    m.translation = head
    return m


def _rotation_between(u: Vector, v: Vector) -> Quaternion:
    if u.length == 0.0 or v.length == 0.0:
        return Quaternion()
    return u.rotation_difference(v)


@dataclass(frozen=True)
class LimbSolution:
    """Local rotations for the chain (and the end-effector bone), the joints they give, and how well."""

    rotations: list[Quaternion]
    end_rotation: Optional[Quaternion]
    positions: list[Vector]
    iterations: int
    error: float
    method: str


def solve_limb(
    pose: ChainPose,
    target: VecLike,
    *,
    pole: Optional[VecLike] = None,
    weight: float = 1.0,
    softness: float = 0.0,
    target_rotation: Optional[Quaternion] = None,
    method: Method = "auto",
    tolerance: Optional[float] = None,
    max_iterations: int = 64,
) -> LimbSolution:
    """Solve a limb toward `target` and blend with its FK pose by `weight` (0 = FK bit for bit).

    Two bones use the closed-form solver (`method="auto"`), longer chains FABRIK; "ccd" turns joints
    directly. Joint limits are honoured by all of them; where a limit stops the closed form, CCD
    refines within the limits. `target_rotation` (world) orients the end-effector bone.
    """
    fk_positions = pose.positions()
    fk_end = pose.end_rotation.copy() if pose.end_rotation is not None else None
    if not math.isfinite(weight):
        log.warning("IK weight %r is not finite; using 0 (the FK pose)", weight)
        weight = 0.0
    weight = min(1.0, max(0.0, weight))
    fk = LimbSolution([q.copy() for q in pose.rotations], fk_end, fk_positions, 0, math.nan, "fk")
    goal = vec(target)
    if weight == 0.0:
        return fk
    if not all(math.isfinite(v) for v in components(goal)) or not all(_is_finite_matrix(f) for f in pose.frames):
        log.warning("IK: non-finite target or chain; keeping the FK pose")
        return fk

    chain = pose.chain_length()
    tol = tolerance if tolerance is not None else 1e-6 * chain
    reach_goal = goal
    if softness > 0.0:
        offset = goal - fk_positions[0]
        eased = soft_distance(offset.length, chain, softness)
        if offset.length > 0.0:
            reach_goal = fk_positions[0] + offset * (eased / offset.length)

    if method == "auto":
        method = "analytic" if pose.bone_count == 2 else "fabrik"
    iterations = 0
    limited = any(lim is not None and not lim.is_free for lim in pose.limits)
    if method == "analytic":
        if pose.bone_count != 2:
            raise ValueError(f"the closed-form solver takes two bones, this chain has {pose.bone_count}")
        res = solve_two_bone(fk_positions[0], fk_positions[1], fk_positions[2], reach_goal, pole=pole)
        rots = pose.rotations_for([fk_positions[0], res.knee, res.tip])
        iterations = 1
        unreachable = res.case in (TOO_FAR, TOO_CLOSE)
    elif method == "fabrik":
        sol = fabrik(fk_positions, reach_goal, tol, max_iterations)
        rots = pose.rotations_for(sol.positions)
        iterations = sol.iterations
        unreachable = (reach_goal - fk_positions[0]).length >= chain
    elif method == "ccd":
        rots, iterations, _ = pose.ccd(reach_goal, pose.rotations, tol, max_iterations)
        limited = False
        unreachable = False
    else:
        raise ValueError(f"unknown IK method {method!r}: use 'auto', 'analytic', 'fabrik' or 'ccd'")

    frames, points = pose.forward(rots)
    if limited and not unreachable and (points[-1] - reach_goal).length > tol:
        rots, more, _ = pose.ccd(reach_goal, rots, tol, max_iterations)
        iterations += more
        frames, points = pose.forward(rots)

    end_rot = fk_end
    if target_rotation is not None and pose.end_rotation is not None:
        end_frame = pose.end_frame_for(frames)
        assert end_frame is not None
        current_world = end_frame.to_quaternion()
        turn = current_world.inverted() @ target_rotation.normalized()
        end_rot = pose.end_rotation @ turn
        if pose.end_limits is not None:
            end_rot = pose.end_limits.clamp(end_rot)

    if weight < 1.0:
        rots = [fk_q.slerp(ik_q, weight) for fk_q, ik_q in zip(pose.rotations, rots)]
        if end_rot is not None and fk_end is not None:
            end_rot = fk_end.slerp(end_rot, weight)
        frames, points = pose.forward(rots)
    error = (points[-1] - goal).length
    return LimbSolution(rots, end_rot, points, iterations, error, method)
