"""The demo's measurements and pictures, from the baked file `contact_ik bake` wrote.

Feet are measured independently of Contact IK's own metrics: for each foot, its sole points (the heel
under the ankle and the toe tip, at the rest pose's sole height: where Contact IK puts the sole) against
the terrain straight under them, by Blender's BVH ray cast on the terrain mesh. The renders put two
copies of the walker one above the other: the source animation (top lane) and the baked one (bottom
lane), each over a cutaway of the terrain through the near foot, seen from the side by one camera.
"""

from __future__ import annotations

import contextlib
import math
import os
import pathlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import bpy
import demo_scene as ds
import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

LANE_HEIGHT = 3.0  # metres of world per lane, from LANE_BELOW under the ground under the body
LANE_BELOW = 0.85  # the cutaway's slab (0.3 m thick) stays inside its lane on the slopes of the terrain,
# and the source's feet, 0.75 m under the top of the stairs, still show below it
VIEW_WIDTH = 2.0
ELEVATION = math.radians(10.0)  # the camera looks slightly down, so treads and rocks show
STILL_PHASE = 0.45  # where in the near foot's stride the stills are (its stance is 0 to 0.6)
CUT_MARGIN = 0.08  # the cutaway's face passes this far in front of the near foot's middle


def _media_type(scene: Any, kind: str) -> None:
    """Blender 5.0 splits image and video output (`media_type`); 4.2 and 4.5 pick it by file format."""
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):
        settings.media_type = kind


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Blender's own log lines (a line per rendered frame) off the standard output; errors still show."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


# --------------------------------------------------------------------------------------------- feet


def _heel_local(rig: bpy.types.Object, side: str) -> Vector:
    foot = rig.data.bones[ds.LEGS[side][2]]
    heel = foot.head_local.copy()
    heel.z = ds.sole_height_at_rest(rig, side)
    return foot.matrix_local.inverted() @ heel


def _use_action(rig: bpy.types.Object, action: bpy.types.Action) -> None:
    rig.animation_data.action = action
    if getattr(rig.animation_data, "action_slot", True) is None and len(action.slots):
        rig.animation_data.action_slot = action.slots[0]


def _track(rig: bpy.types.Object, tree: BVHTree, frames: list[int]) -> dict[str, dict[str, list[float]]]:
    scene = bpy.context.scene
    heels = {s: _heel_local(rig, s) for s in "LR"}
    out: dict[str, dict[str, list[float]]] = {s: {"sole": [], "terrain": [], "clearance": []} for s in "LR"}
    for f in frames:
        scene.frame_set(f)
        for side in "LR":
            _t, _s, foot, toe = ds.LEGS[side]
            pts = [rig.matrix_world @ rig.pose.bones[foot].matrix @ heels[side],
                   rig.matrix_world @ rig.pose.bones[toe].tail]
            grounds = []
            for p in pts:
                loc, _n, _i, _d = tree.ray_cast(Vector((p.x, p.y, 20.0)), Vector((0.0, 0.0, -1.0)))
                grounds.append(loc.z if loc is not None else math.nan)
            out[side]["sole"].append(min(p.z for p in pts))
            out[side]["terrain"].append(max(grounds))
            out[side]["clearance"].append(min(p.z - g for p, g in zip(pts, grounds)))
    return out


def measure_feet(source_action: str) -> dict[str, Any]:
    """Sole heights, terrain heights and clearances per foot and frame, for the source and the bake."""
    scene = bpy.context.scene
    rig = bpy.data.objects["Walker"]
    terrain = bpy.data.objects["Terrain"]
    tree = BVHTree.FromObject(terrain, bpy.context.evaluated_depsgraph_get())
    frames = list(range(scene.frame_start, scene.frame_end + 1))
    leg = rig.data.bones["thigh.L"].length + rig.data.bones["shin.L"].length
    baked_action = rig.animation_data.action
    baked = _track(rig, tree, frames)
    _use_action(rig, bpy.data.actions[source_action])
    source = _track(rig, tree, frames)
    _use_action(rig, baked_action)
    scene.frame_set(scene.frame_start)
    feet = {}
    for side in "LR":
        feet[ds.LEGS[side][2]] = {
            "terrain": baked[side]["terrain"], "source_terrain": source[side]["terrain"],
            "source_sole": source[side]["sole"], "baked_sole": baked[side]["sole"],
            "source_clearance": source[side]["clearance"], "baked_clearance": baked[side]["clearance"],
        }
    src_pen = max(0.0, -min(min(v["source_clearance"]) for v in feet.values()))
    baked_pen = max(0.0, -min(min(v["baked_clearance"]) for v in feet.values()))
    change = max(float(np.max(np.abs(np.subtract(v["baked_sole"], v["source_sole"])))) for v in feet.values())
    return {
        "about": "per frame and foot: sole = lowest sole point (heel under the ankle, toe tip) in metres; terrain = "
                 "terrain height under it (the highest under the heel and the toe); clearance = the smallest height "
                 "of a sole point above the terrain straight under it (negative: below the surface)",
        "leg_length": leg, "fps": scene.render.fps, "frames": frames, "feet": feet,
        "summary": {"source_penetration": src_pen, "source_penetration_rel": src_pen / leg,
                    "baked_penetration": baked_pen, "baked_penetration_rel": baked_pen / leg,
                    "sole_change_max_rel": change / leg},
    }


def plot_feet(feet: dict[str, Any], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frames = np.asarray(feet["frames"])
    leg = feet["leg_length"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 6.5), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    for col, (name, f) in enumerate(feet["feet"].items()):
        ax = axes[0, col]
        ax.fill_between(frames, np.asarray(f["terrain"]) - 1.0, f["terrain"], color="0.8", label="terrain under the foot")
        ax.plot(frames, f["source_sole"], color="tab:red", lw=1.3, ls="--", label="sole, source animation")
        ax.plot(frames, f["baked_sole"], color="tab:blue", lw=1.6, label="sole, Contact IK (baked)")
        top = max(max(f["baked_sole"]), max(f["terrain"]))
        ax.set_ylim(min(min(f["source_sole"]), 0.0) - 0.05, top + 0.1)
        ax.set_title(f"{name}: sole height against the terrain under it")
        ax.set_ylabel("height (m)")
        ax.legend(loc="upper left", fontsize=8)
        ax = axes[1, col]
        ax.axhline(0.0, color="0.4", lw=0.8)
        ax.axhspan(-0.005, 0.0, color="tab:green", alpha=0.25, label="0.5 % of the leg below")
        ax.plot(frames, np.asarray(f["source_clearance"]) / leg, color="tab:red", lw=1.2, ls="--", label="source")
        ax.plot(frames, np.asarray(f["baked_clearance"]) / leg, color="tab:blue", lw=1.5, label="Contact IK")
        ax.set_ylabel("sole above terrain\n(x leg length)")
        ax.set_xlabel(f"frame ({feet['fps']} fps)")
        ax.legend(loc="lower left", fontsize=8)
    s = feet["summary"]
    fig.suptitle(f"Deepest sole point below the terrain: source {s['source_penetration_rel']:.0%} of the leg, "
                 f"Contact IK {s['baked_penetration_rel']:.2%}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------------------------- stage


@dataclass
class Stage:
    camera: bpy.types.Object
    width: int
    height: int


def _text(name: str, body: str, parent: bpy.types.Object, x: float, y: float, size: float) -> bpy.types.Object:
    curve = bpy.data.curves.new(name, "FONT")
    curve.body = body
    curve.size = size
    obj = bpy.data.objects.new(name, curve)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = parent
    obj.location = (x, y, -1.0)
    mat = bpy.data.materials.new(name)
    mat.diffuse_color = (0.05, 0.05, 0.08, 1.0)
    curve.materials.append(mat)
    return obj


def _quad_mesh(name: str, width: float, height: float) -> bpy.types.Mesh:
    me = bpy.data.meshes.new(name)
    w, h = width / 2, height / 2
    me.from_pydata([(-w, -h, 0.0), (w, -h, 0.0), (w, h, 0.0), (-w, h, 0.0)], [], [(0, 1, 2, 3)])
    mat = bpy.data.materials.new(name)
    mat.diffuse_color = (0.1, 0.1, 0.12, 1.0)
    me.materials.append(mat)
    return me


def _smooth(values: np.ndarray, half: int) -> np.ndarray:
    padded = np.concatenate((np.full(half, values[0]), values, np.full(half, values[-1])))
    kernel = np.ones(2 * half + 1) / (2 * half + 1)
    return np.convolve(padded, kernel, mode="valid")


def stage(source_action: str, cfg: Any) -> Stage:
    """Lanes (source above, bake below), cutaway terrains, a side camera following the walk, labels."""
    scene = bpy.context.scene
    rig, body, terrain = bpy.data.objects["Walker"], bpy.data.objects["Body"], bpy.data.objects["Terrain"]
    # Just in front of the near foot: what goes below the surface is hidden, as it would be behind real
    # stairs, and the face's top edge is the terrain's profile under the foot.
    cut_x = rig.data.bones[ds.LEGS[ds.NEAR][2]].head_local.x - CUT_MARGIN
    terrain.hide_render = True
    lane = LANE_HEIGHT
    # The source's copy, one lane up.
    src = rig.copy()
    src.name = "Walker (source animation)"
    scene.collection.objects.link(src)
    src.location.z += lane
    src.animation_data.action = bpy.data.actions[source_action]
    src_body = body.copy()
    src_body.name = "Body (source animation)"
    scene.collection.objects.link(src_body)
    src_body.parent = src
    src_body.modifiers["Armature"].object = src
    for z, name in ((0.0, "Terrain cutaway"), (lane, "Terrain cutaway (source lane)")):
        cut = ds.terrain_mesh(name, x_from=cut_x, thickness=0.3)
        cut.location.z = z
        cut.hide_select = True
        cut.hide_viewport = z == 0.0  # in the viewport the bake's own terrain shows there
    # The camera: from the near side (-X), following the body and the ground under it (the terrain's own
    # height function, smoothed over a stride).
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    s = np.array([ds.SPEED * (f - 1) for f in frames])
    ground = _smooth(np.array([float(ds.ground_height(0.0, v + 0.2)) for v in s]), 18)
    cam_data = bpy.data.cameras.new("Side camera")
    cam_data.type = "ORTHO"
    screen_lane = lane * math.cos(ELEVATION)  # a lane's height on the camera's image plane
    cam_data.ortho_scale = 2 * screen_lane
    cam = bpy.data.objects.new("Side camera", cam_data)
    scene.collection.objects.link(cam)
    scene.camera = cam
    cam.rotation_euler = (math.pi / 2 - ELEVATION, 0.0, -math.pi / 2)
    look = Vector((math.cos(ELEVATION), 0.0, -math.sin(ELEVATION)))
    centre_up = lane - LANE_BELOW  # the two lanes' middle, above the ground
    for f, sv, g in zip(frames, s, ground):
        cam.location = Vector((0.0, -sv - 0.15, g + centre_up)) - look * 10.0
        cam.keyframe_insert("location", frame=int(f))
    for fc in _fcurves(cam):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    _text("Label source", "Source: a flat-ground walk", cam, -VIEW_WIDTH / 2 + 0.06, screen_lane - 0.18, 0.12)
    _text("Label baked", "Contact IK, baked", cam, -VIEW_WIDTH / 2 + 0.06, -0.18, 0.12)
    line = bpy.data.objects.new("Lane separator", _quad_mesh("Lane separator", VIEW_WIDTH, 0.012))
    scene.collection.objects.link(line)
    line.parent = cam
    line.location = (0.0, 0.0, -1.0)
    # Workbench: flat colours from the materials, studio light, outlines (shadows would triple the time).
    scene.render.engine = "BLENDER_WORKBENCH"
    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.color_type = "MATERIAL"
    shading.show_shadows = False
    shading.show_object_outline = True
    shading.show_cavity = False
    world = bpy.data.worlds.new("Sky")
    world.color = (0.78, 0.84, 0.9)
    scene.world = world
    scene.render.film_transparent = False
    width = _even(VIEW_WIDTH * cfg.px_per_m)
    height = _even(2 * screen_lane * cfg.px_per_m)
    scene.render.resolution_x, scene.render.resolution_y = width, height
    scene.render.resolution_percentage = 100
    scene.frame_set(scene.frame_start)
    return Stage(cam, width, height)


def _even(v: float) -> int:
    return max(2, int(round(v / 2.0)) * 2)


def _fcurves(obj: bpy.types.Object) -> list[Any]:
    action = obj.animation_data.action
    try:
        from bpy_extras import anim_utils

        bag = anim_utils.action_get_channelbag_for_slot(action, obj.animation_data.action_slot)
        return list(bag.fcurves) if bag is not None else []
    except (ImportError, AttributeError):
        return list(action.fcurves)


# --------------------------------------------------------------------------------------------- renders


def pick_frames(feet: dict[str, Any], cfg: Any) -> list[int]:
    """Late in the near foot's stances (the other foot about to land ahead), on the stairs and the rocks."""
    out = []
    for n in cfg.strides:
        f = int(round(1 + ds.CYCLE * (n + STILL_PHASE - ds.PHASE[ds.NEAR])))
        if f <= feet["frames"][-1]:
            out.append(f)
    return out


def _section(f: int) -> str:
    s = ds.SPEED * (f - 1)
    if s < ds.FIRST_RISER:
        return "flat ground"
    if s < ds.LANDING_END - 0.7:
        return "stairs"
    if s < ds.LANDING_END:
        return "landing"
    return "rocky slope"


def before_after(stage_: Stage, frames: list[int], feet: dict[str, Any], path: pathlib.Path,
                 folder: pathlib.Path, cfg: Any) -> None:
    """Renders of `frames` (each: source above, bake below) side by side, titled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scene = bpy.context.scene
    folder.mkdir(parents=True, exist_ok=True)
    scene.render.resolution_percentage = cfg.still_percent
    images = []
    for f in frames:
        scene.frame_set(f)
        scene.render.filepath = str(folder / f"frame_{f:04d}.png")
        _media_type(scene, "IMAGE")
        scene.render.image_settings.file_format = "PNG"
        with quiet():
            bpy.ops.render.render(write_still=True)
        images.append(plt.imread(scene.render.filepath))
    near = ds.LEGS[ds.NEAR][2]
    i0 = feet["frames"][0]
    h, w = images[0].shape[:2]
    head = 52
    fig = plt.figure(figsize=(len(frames) * w / 100, (h + head) / 100), dpi=100)
    for i, (f, img) in enumerate(zip(frames, images)):
        ax = fig.add_axes((i / len(frames), 0.0, 1.0 / len(frames), h / (h + head)))
        ax.imshow(img, interpolation="nearest")
        ax.set_axis_off()
        depth = -feet["feet"][near]["source_clearance"][f - i0]
        fig.text((i + 0.5) / len(frames), 1.0 - 0.5 * head / (h + head),
                 f"frame {f}, {_section(f)}\nnear foot {depth * 100:.0f} cm into the ground in the source",
                 ha="center", va="center", fontsize=max(4.0, min(12.0, w / 32)))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    scene.render.resolution_percentage = 100


def animation(stage_: Stage, cfg: Any, path: pathlib.Path) -> pathlib.Path:
    """The whole walk as an H.264 MP4 (Blender's FFmpeg); an animated GIF if FFmpeg is missing."""
    scene = bpy.context.scene
    scene.frame_step = cfg.video_step
    scene.display.render_aa = "FXAA"  # a third of the default 8 samples' time; the stills keep those
    scene.render.fps = max(1, round(ds.FPS / cfg.video_step))
    try:
        _media_type(scene, "VIDEO")
        scene.render.image_settings.file_format = "FFMPEG"
        scene.render.ffmpeg.format = "MPEG4"
        scene.render.ffmpeg.codec = "H264"
        scene.render.ffmpeg.constant_rate_factor = "MEDIUM"
        scene.render.filepath = str(path)
        path.unlink(missing_ok=True)
        with quiet():
            bpy.ops.render.render(animation=True)
        if path.is_file() and path.stat().st_size > 0:
            return path
    except (TypeError, RuntimeError, AttributeError) as exc:
        print(f"demo: FFmpeg output failed ({exc}); writing an animated GIF instead")
    return _gif(path.with_suffix(".gif"), cfg)


def _gif(path: pathlib.Path, cfg: Any) -> pathlib.Path:
    from PIL import Image

    scene = bpy.context.scene
    folder = path.parent / "frames_gif"
    folder.mkdir(exist_ok=True)
    _media_type(scene, "IMAGE")
    scene.render.image_settings.file_format = "PNG"
    images = []
    for f in range(scene.frame_start, scene.frame_end + 1, max(2, cfg.video_step)):
        scene.frame_set(f)
        scene.render.filepath = str(folder / f"{f:04d}.png")
        with quiet():
            bpy.ops.render.render(write_still=True)
        images.append(Image.open(scene.render.filepath).convert("P", palette=Image.Palette.ADAPTIVE))
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(1000 * max(2, cfg.video_step) / ds.FPS),
                   loop=0)
    return path


def docs_copy(src: pathlib.Path, dst: pathlib.Path, max_width: int = 1800) -> int:
    """A smaller palette PNG copy (to commit); its size in bytes."""
    from PIL import Image

    img = Image.open(src).convert("RGB")
    if img.width > max_width:
        img = img.resize((max_width, round(img.height * max_width / img.width)), Image.Resampling.LANCZOS)
    # Octree keeps the few saturated colours (the feet); median cut merges them into the legs'.
    img.quantize(colors=128, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(dst, optimize=True)
    return dst.stat().st_size
