"""The terrain: the evaluated meshes (modifiers applied), cached, with the ground model's down-ray engine
(`down_rays`, `heightfield.DownRays`) and a BVH tree, the independent ruler `metrics` measures with.

The tree is built in world space from every mesh of the terrain (an object or a collection) and is
rebuilt only when one of them changes: its geometry, its modifiers' result or its transform.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

from .errors import UserError

if TYPE_CHECKING:
    import bpy

log = logging.getLogger(__name__)


# The terrain cannot be used; the message says how to fix it.
TerrainError = UserError


@dataclass(frozen=True)
class Hit:
    location: Vector
    normal: Vector


class Terrain:
    """A BVH tree over world-space triangles, with a down-ray query."""

    def __init__(self, tree: BVHTree, triangle_count: int, verts: Optional[np.ndarray] = None,
                 tris: Optional[np.ndarray] = None):
        self.tree = tree
        self.triangle_count = triangle_count
        self.verts = verts
        self.tris = tris
        self._down: dict[tuple[Any, ...], Any] = {}

    def extent(self, up: Sequence[float]) -> tuple[float, float]:
        """Lowest and highest point of the terrain along `up`."""
        key = ("extent",) + tuple(round(float(c), 12) for c in up)
        if key not in self._down:
            if self.verts is None or not len(self.verts):
                self._down[key] = (0.0, 0.0)
            else:
                h = self.verts @ np.asarray(up, dtype=np.float64)
                self._down[key] = (float(h.min()), float(h.max()))
        return self._down[key]  # type: ignore[no-any-return]

    def down_rays(self, up: Sequence[float]) -> Any:
        """The bulk down-ray caster (`heightfield.DownRays`) for this terrain and `up`, built once."""
        from .heightfield import DownRays

        key = tuple(round(float(c), 12) for c in up)
        if key not in self._down:
            assert self.verts is not None and self.tris is not None
            self._down[key] = DownRays(self.verts, self.tris, np.asarray(key))
        return self._down[key]

    def memo(self, key: tuple[Any, ...], make: Any) -> Any:
        """A value computed once per terrain: `make()` the first time `key` is asked for."""
        if key not in self._down:
            self._down[key] = make()
        return self._down[key]

    def clearance(self, up: Sequence[float], leg: float) -> Any:
        """The clearance field (`heightfield.ClearanceField`) of this terrain for `up` and a leg length,
        built once."""
        from .heightfield import ClearanceField

        key = ("clearance", float(f"{leg:.6g}")) + tuple(round(float(c), 12) for c in up)
        return self.memo(key, lambda: ClearanceField(self.down_rays(up), key[1]))

    def ray(self, origin: Vector, direction: Vector, distance: float) -> Optional[Hit]:
        location, normal, _index, _dist = self.tree.ray_cast(origin, direction, distance)
        if location is None:
            return None
        if normal.dot(direction) > 0.0:
            normal = -normal  # a face seen from below still gives an upward ground normal
        return Hit(location, normal)


def terrain_objects(settings: object) -> list[bpy.types.Object]:
    """The meshes that make up a rig's terrain: its terrain object and the meshes of its collection."""
    objs: list[bpy.types.Object] = []
    terrain = getattr(settings, "terrain", None)
    if terrain is not None:
        objs.append(terrain)
    coll = getattr(settings, "terrain_collection", None)
    if coll is not None:
        objs.extend(o for o in coll.all_objects if o.type == "MESH" and o not in objs)
    return objs


def _signature(objs: Iterable[bpy.types.Object]) -> tuple:
    return tuple((o.name, tuple(tuple(row) for row in o.matrix_world)) for o in objs)


def build_terrain(objs: list[bpy.types.Object], depsgraph: bpy.types.Depsgraph) -> Terrain:
    """A BVH tree over the evaluated meshes of `objs`, in world space."""
    if not objs:
        raise TerrainError("no terrain: select a mesh (or set Terrain in the Contact IK panel)")
    all_verts: list[np.ndarray] = []
    all_tris: list[np.ndarray] = []
    offset = 0
    for obj in objs:
        if obj.type != "MESH":
            raise TerrainError(f"terrain {obj.name!r} is a {obj.type.lower()}, not a mesh: pick a mesh object")
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        try:
            mesh.calc_loop_triangles()
            n_verts, n_tris = len(mesh.vertices), len(mesh.loop_triangles)
            if n_tris == 0:
                continue
            co = np.empty(n_verts * 3, dtype=np.float32)
            mesh.vertices.foreach_get("co", co)
            tris = np.empty(n_tris * 3, dtype=np.int32)
            mesh.loop_triangles.foreach_get("vertices", tris)
        finally:
            evaluated.to_mesh_clear()
        mat = np.array(evaluated.matrix_world, dtype=np.float64)
        co64 = co.reshape(-1, 3).astype(np.float64)
        world = co64 @ mat[:3, :3].T + mat[:3, 3]
        all_verts.append(world)
        all_tris.append(tris.reshape(-1, 3) + offset)
        offset += n_verts
    if not all_tris:
        names = ", ".join(o.name for o in objs)
        raise TerrainError(f"terrain {names} has no faces: give it a mesh with faces (a plane, stairs, a landscape)")
    verts = np.concatenate(all_verts)
    tris = np.concatenate(all_tris)
    tree = BVHTree.FromPolygons(verts.tolist(), tris.tolist(), all_triangles=True)
    return Terrain(tree, len(tris), verts, tris)


class TerrainCache:
    """Terrain trees by terrain signature; `invalidate(name)` drops those using a changed object."""

    def __init__(self) -> None:
        self._trees: dict[tuple, Terrain] = {}
        self.builds = 0

    def get(self, objs: list[bpy.types.Object], depsgraph: bpy.types.Depsgraph) -> Terrain:
        key = _signature(objs)
        terrain = self._trees.get(key)
        if terrain is None:
            terrain = build_terrain(objs, depsgraph)
            self._trees[key] = terrain
            self.builds += 1
        return terrain

    def invalidate(self, names: set[str]) -> None:
        for key in [k for k in self._trees if any(name in names for name, _m in k)]:
            del self._trees[key]

    def names(self) -> set[str]:
        return {name for key in self._trees for name, _m in key}

    def reset(self) -> None:
        self._trees.clear()

