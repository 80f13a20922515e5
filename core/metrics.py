"""Contact quality of an animation over a terrain: penetration, hover, skate, bone length error.

All distances are reported in scene units and as fractions of the limb's length, so clips of any
scale compare. A foot is *in contact* on a frame when its lowest sole point is within
`CONTACT_BAND` x leg length of the terrain and its sole moves slower than `CONTACT_SPEED` leg lengths
per second (so clips at 24, 30 or 120 fps agree); hover and skate are measured over contact frames only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Optional

from mathutils import Vector

from ..properties import settings
from .ground import Terrain
from .plant import heel_local, limb_is_usable, up_axis, world_scale

if TYPE_CHECKING:
    import bpy

CONTACT_BAND = 0.03
CONTACT_SPEED = 0.5


@dataclass
class LimbMetrics:
    limb: str
    kind: str
    frames: int
    leg_length: float
    penetration_max: float = 0.0  # deepest a sole point goes below the terrain (units)
    penetration_frames: int = 0  # frames with a sole point below the terrain by more than 1e-4 x leg
    contact_frames: int = 0
    hover_mean: float = 0.0  # mean height of the lowest sole point above the terrain on contact frames
    hover_max: float = 0.0
    skate_mean: float = 0.0  # mean sole slide along the ground per contact frame
    skate_max: float = 0.0
    bone_length_error: float = 0.0  # largest relative change of a chain bone's length
    _heights: list[float] = field(default_factory=list, repr=False)
    _prev: Optional[Vector] = field(default=None, repr=False)
    _slides: list[float] = field(default_factory=list, repr=False)
    _hovers: list[float] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        d = asdict(self)
        for k in [k for k in d if k.startswith("_")]:
            del d[k]
        leg = self.leg_length or 1.0
        for k in ("penetration_max", "hover_mean", "hover_max", "skate_mean", "skate_max"):
            d[k + "_rel"] = d[k] / leg
        return d


class Meter:
    """Accumulates metrics frame by frame for every foot and hand of one rig."""

    def __init__(self, obj: bpy.types.Object, terrain: Optional[Terrain], fps: float = 24.0):
        self.obj = obj
        self.fps = fps
        self.terrain = terrain
        s = settings(obj)
        self.limbs = [lb for lb in s.limbs if lb.enabled and limb_is_usable(obj, lb)]
        scale = world_scale(obj)
        self.rest = {lb.name: {b.bone: obj.data.bones[b.bone].length for b in lb.bones} for lb in self.limbs}
        self.metrics = {lb.name: LimbMetrics(lb.name, lb.kind, 0, sum(self.rest[lb.name].values()) * scale)
                        for lb in self.limbs}

    def sample(self) -> None:
        obj = self.obj
        up = up_axis(obj)
        mw = obj.matrix_world
        pbs = obj.pose.bones
        for lb in self.limbs:
            m = self.metrics[lb.name]
            m.frames += 1
            for name, rest in self.rest[lb.name].items():
                if rest > 0.0:
                    m.bone_length_error = max(m.bone_length_error, abs(pbs[name].length - rest) / rest)
            if lb.kind != "FOOT" or self.terrain is None or not lb.end_bone:
                continue
            leg = m.leg_length
            foot = pbs[lb.end_bone]
            pts = [mw @ (foot.matrix @ heel_local(obj, lb.end_bone, lb.foot_offset))]
            if lb.toe_bone and lb.toe_bone in pbs:
                pts.append(mw @ pbs[lb.toe_bone].tail)
            heights = []
            for p in pts:
                hit = self.terrain.ray(p + up * (2.0 * leg), -up, 4.0 * leg)
                if hit is not None:
                    heights.append((p - hit.location).dot(up))
            if not heights:
                m._prev = None
                continue
            low = min(heights)
            if low < -1e-4 * leg:
                m.penetration_frames += 1
            m.penetration_max = max(m.penetration_max, -low)
            sole = pts[heights.index(low)]
            slide = None
            if m._prev is not None:
                d = sole - m._prev
                slide = (d - up * d.dot(up)).length
            m._prev = sole
            if low <= CONTACT_BAND * leg and slide is not None and slide <= CONTACT_SPEED * leg / self.fps:
                m.contact_frames += 1
                m._hovers.append(max(0.0, low))
                m._slides.append(slide)

    def result(self) -> list[LimbMetrics]:
        for m in self.metrics.values():
            if m._hovers:
                m.hover_mean = sum(m._hovers) / len(m._hovers)
                m.hover_max = max(m._hovers)
                m.skate_mean = sum(m._slides) / len(m._slides)
                m.skate_max = max(m._slides)
        return list(self.metrics.values())


def measure(obj: bpy.types.Object, terrain: Optional[Terrain], frames: list[int], scene: bpy.types.Scene) -> list[LimbMetrics]:
    """Metrics of `obj` as it plays (whatever it plays: the source with live preview, or a bake)."""
    meter = Meter(obj, terrain, scene.render.fps / scene.render.fps_base)
    current = scene.frame_current
    for f in frames:
        scene.frame_set(f)
        meter.sample()
    scene.frame_set(current)
    return meter.result()
