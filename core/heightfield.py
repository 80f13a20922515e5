"""Down-rays in bulk: the first terrain hit straight down (along an `up` axis) for many points at once.

The live preview casts a handful of rays per frame through `mathutils.bvhtree.BVHTree`; a bake casts
tens of thousands, so it asks the same question in numpy: the triangles are projected onto the plane
across `up` and binned into a uniform grid; each query point looks only at the triangles of its cell,
finds those whose projection contains it (barycentric test) and takes the highest surface point
within the ray's span, exactly what a BVH ray cast from `point + up * reach` down over `2 * reach`
returns. Vertical faces (risers) have no area across `up` and are never hit by a vertical ray.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .tuning import CLEAR_RADIUS, CLEAR_SLOPE, CLEAR_SPACING, CLEAR_TILE

_EDGE_EPS = 1e-9
_DX, _DY = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])  # a raster cell's corners


@dataclass
class DownHits:
    hit: np.ndarray  # (Q,) bool
    height: np.ndarray  # (Q,) the hit's coordinate along up (nan where missed)
    normal: np.ndarray  # (Q, 3) unit face normals facing up (nan where missed)

    def rows(self, sl: slice) -> DownHits:
        return DownHits(self.hit[sl], self.height[sl], self.normal[sl])


def _missed(q: int) -> DownHits:
    """`q` rays that hit nothing (yet)."""
    return DownHits(np.zeros(q, dtype=bool), np.full(q, np.nan), np.full((q, 3), np.nan))


class DownRays:
    def __init__(self, verts: np.ndarray, tris: np.ndarray, up: np.ndarray, cell_factor: float = 0.34):
        up = np.asarray(up, dtype=np.float64)
        self.up = up / np.linalg.norm(up)
        helper = np.array([1.0, 0.0, 0.0]) if abs(self.up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        s = np.cross(self.up, helper)
        s /= np.linalg.norm(s)
        t = np.cross(self.up, s)
        self.basis = np.stack((s, t))  # (2, 3)
        v = np.asarray(verts, dtype=np.float64)
        tri = np.asarray(tris, dtype=np.int64)
        p2 = v @ self.basis.T
        h = v @ self.up
        a, b, c = p2[tri[:, 0]], p2[tri[:, 1]], p2[tri[:, 2]]
        e1, e2 = b - a, c - a
        det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
        keep = np.abs(det) > 1e-12 * np.maximum(1e-300, (np.abs(e1).max(1) * np.abs(e2).max(1)))
        tri, a, e1, e2, det = tri[keep], a[keep], e1[keep], e2[keep], det[keep]
        v3 = v[tri]
        n = np.cross(v3[:, 1] - v3[:, 0], v3[:, 2] - v3[:, 0])
        n /= np.linalg.norm(n, axis=1)[:, None]
        n *= np.where(n @ self.up < 0.0, -1.0, 1.0)[:, None]
        ha = h[tri[:, 0]]
        # One row per triangle for a single gather per query: a (2), e1 (2), e2 (2), 1/det, heights (3).
        self.packed = np.column_stack((a, e1, e2, 1.0 / det, ha, h[tri[:, 1]] - ha, h[tri[:, 2]] - ha))
        self.normal = n
        count = len(tri)
        lo = np.minimum(np.minimum(a, a + e1), a + e2)
        hi = np.maximum(np.maximum(a, a + e1), a + e2)
        if count == 0:
            self.origin, self.cell, self.dims = np.zeros(2), 1.0, np.array([1, 1])
            self.starts, self.items = np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64)
            self.counts, self._dims = np.zeros(1, dtype=np.int64), self.dims.astype(np.uint64)
            return
        self.origin = lo.min(0)
        extent = np.maximum(hi.max(0) - self.origin, 1e-12)
        size = float(np.median((hi - lo).max(1))) * cell_factor
        cells = extent / max(size, 1e-12)
        scale = max(1.0, float(np.sqrt(cells[0] * cells[1] / 4e6)))  # at most ~4M cells
        self.cell = max(size, 1e-12) * scale
        self.dims = np.maximum(1, np.ceil(extent / self.cell).astype(np.int64) + 1)
        i0 = np.floor((lo - self.origin) / self.cell).astype(np.int64)
        i1 = np.floor((hi - self.origin) / self.cell).astype(np.int64)
        nx, ny = i1[:, 0] - i0[:, 0] + 1, i1[:, 1] - i0[:, 1] + 1
        per = nx * ny
        tri_id = np.repeat(np.arange(count), per)
        k = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)
        cx = i0[tri_id, 0] + k % nx[tri_id]
        cy = i0[tri_id, 1] + k // nx[tri_id]
        # Only the cells a triangle's projection touches, not every cell of its bounding box (a terrain's
        # triangles fill half their boxes: a third fewer candidates per ray). A cell is dropped only when it
        # lies outside the line of an edge by more than a margin a million times what the cast's barycentric
        # test lets through, so every triangle a ray could hit is still among its cell's.
        keep = self._touches(tri_id, cx, cy, a, e1, e2, det)
        tri_id, cx, cy = tri_id[keep], cx[keep], cy[keep]
        cell_id = cx * self.dims[1] + cy
        order = np.argsort(cell_id, kind="stable")
        self.items = tri_id[order]
        self.starts = np.searchsorted(cell_id[order], np.arange(self.dims[0] * self.dims[1] + 1))
        self.counts = np.diff(self.starts)  # the triangles in each cell
        self._dims = self.dims.astype(np.uint64)

    def _touches(self, tri_id: np.ndarray, cx: np.ndarray, cy: np.ndarray, a: np.ndarray, e1: np.ndarray,
                 e2: np.ndarray, det: np.ndarray) -> np.ndarray:
        """Per (triangle, cell) pair: False where the cell lies wholly outside the triangle's projection, beyond
        the line of one of its edges by more than 1e-6 of a cell."""
        keep = np.ones(len(tri_id), dtype=bool)
        x0 = self.origin[0] + cx * self.cell
        y0 = self.origin[1] + cy * self.cell
        sign = np.sign(det)  # the triangle's winding: its inside lies left of each edge when positive
        for p, d in ((a, e1), (a + e1, e2 - e1), (a + e2, -e2)):
            # The edge's outward normal n (d turned a quarter away from the inside), per triangle; the cell's
            # corner deepest toward the inside is outside when n . (corner - p) > margin |n|, that is
            # n . (x0, y0) > n . p - n . (the corner's offset from (x0, y0)) + margin |n|.
            nx, ny = d[:, 1] * sign, -d[:, 0] * sign
            bound = (nx * p[:, 0] + ny * p[:, 1] - self.cell * (np.minimum(nx, 0.0) + np.minimum(ny, 0.0))
                     + 1e-6 * self.cell * np.hypot(nx, ny))
            keep &= nx[tri_id] * x0 + ny[tri_id] * y0 <= bound[tri_id]
        return keep

    def cast(self, points: np.ndarray, reach: np.ndarray, chunk: int = 16384) -> DownHits:
        """First hit of rays from `points + up * reach` going down over `2 * reach` (reach per point)."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(p) > chunk:  # bounded memory for the candidate pairs
            r = np.broadcast_to(np.asarray(reach, dtype=np.float64), (len(p),))
            parts = [self.cast(p[i:i + chunk], r[i:i + chunk], chunk) for i in range(0, len(p), chunk)]
            return DownHits(np.concatenate([x.hit for x in parts]), np.concatenate([x.height for x in parts]),
                            np.concatenate([x.normal for x in parts]))
        q = len(p)
        reach = np.asarray(reach, dtype=np.float64)  # one per point, or one for all
        if q == 0 or len(self.items) == 0:
            return _missed(q)
        q2 = p @ self.basis.T
        top = p @ self.up + reach
        bottom = top - 2.0 * reach
        ij = np.floor((q2 - self.origin) / self.cell).astype(np.int64)
        iu = ij.view(np.uint64)  # a negative index wraps to a huge unsigned one
        inside = (iu[:, 0] < self._dims[0]) & (iu[:, 1] < self._dims[1])
        cid = np.where(inside, ij[:, 0] * self.dims[1] + ij[:, 1], 0)
        counts = np.where(inside, self.counts[cid], 0)
        total = int(counts.sum())
        if total == 0:
            return _missed(q)
        qi = np.repeat(np.arange(q), counts)
        ti = self.items[(self.starts[cid] + counts - np.cumsum(counts))[qi] + np.arange(total)]
        t = self.packed[ti]
        dx, dy = q2[:, 0][qi] - t[:, 0], q2[:, 1][qi] - t[:, 1]
        u = (dx * t[:, 5] - dy * t[:, 4]) * t[:, 6]
        w = (t[:, 2] * dy - t[:, 3] * dx) * t[:, 6]
        ok = np.flatnonzero((u >= -_EDGE_EPS) & (w >= -_EDGE_EPS) & (u + w <= 1.0 + _EDGE_EPS))
        # The surface's height only where the ray's line crosses the triangle (about one candidate in four).
        qi, ti, u, w, k = qi[ok], ti[ok], u[ok], w[ok], t[ok, 7:]
        h = k[:, 0] + u * k[:, 1] + w * k[:, 2]
        ok = (h <= top[qi]) & (h >= bottom[qi])
        if not ok.any():
            return _missed(q)
        qi, ti, h = qi[ok], ti[ok], h[ok]  # still grouped by query, in query order
        if len(qi) > 1 and not (qi[1:] != qi[:-1]).all():  # a query with several hits: the highest
            order = np.lexsort((h, qi))  # by query, then height; equal heights in their order
            last = qi[order]
            pick = order[np.concatenate((last[1:] != last[:-1], [True]))]  # the highest hit of each query (ties: the last)
            qi, ti, h = qi[pick], ti[pick], h[pick]
        out = _missed(q)
        out.hit[qi] = True
        out.height[qi] = h
        out.normal[qi] = self.normal[ti]
        return out




class ClearanceField:
    """An upper envelope of the terrain for a foot in the air: at each place, the highest terrain nearby
    lowered by CLEAR_SLOPE x its distance (up to CLEAR_RADIUS x leg away). It never lies below the
    terrain at its nodes and changes by at most CLEAR_SLOPE x the distance moved, so a foot kept above
    it rises before a step edge and comes down after it, smoothly, instead of jumping when an edge
    passes under the sole. A raster (node spacing CLEAR_SPACING x leg) read bilinearly, computed tile
    by tile where feet go, once per terrain and leg length."""

    def __init__(self, rays: DownRays, leg: float):
        self.rays, self.leg = rays, leg
        self.up, self.basis = rays.up, rays.basis
        self.spacing = CLEAR_SPACING * leg
        lo = rays.origin
        hi = rays.origin + rays.cell * (rays.dims - 1)
        self.origin = lo - self.spacing
        self.dims = np.ceil((hi - lo) / self.spacing).astype(np.int64) + 3  # nodes along each axis
        self._last = (self.dims - 1).astype(np.uint64)  # the cells along each axis
        self.steps = max(1, int(round(CLEAR_RADIUS / CLEAR_SPACING)))
        if len(rays.packed):
            k = rays.packed[:, 7:10]
            self.top = float((k[:, 0] + np.maximum(0.0, k[:, 1:].max(1))).max()) + leg
            self.bottom = float((k[:, 0] + np.minimum(0.0, k[:, 1:].min(1))).min()) - leg
        else:
            self.top, self.bottom = leg, -leg
        self.tiles: dict[tuple[int, int], np.ndarray] = {}

    def _tile(self, ti: int, tj: int) -> np.ndarray:
        """Nodes [ti*T, ti*T + T] x [tj*T, tj*T + T] of the field (T = CLEAR_TILE; one node shared with
        the next tile for bilinear reads), from the raw heights with a halo of the dilation's reach."""
        t, h = CLEAR_TILE, self.steps
        ix = np.arange(ti * t - h, ti * t + t + 1 + h)
        iy = np.arange(tj * t - h, tj * t + t + 1 + h)
        gx, gy = np.meshgrid(self.origin[0] + self.spacing * ix, self.origin[1] + self.spacing * iy, indexing="ij")
        q2 = np.stack((gx.ravel(), gy.ravel()), -1)
        mid, reach = 0.5 * (self.top + self.bottom), 0.5 * (self.top - self.bottom) + self.leg
        hits = self.rays.cast(q2 @ self.basis + self.up * mid, np.full(len(q2), reach))
        field = np.where(hits.hit, hits.height, -1e30).reshape(len(ix), len(iy))
        # Cone dilation by repeated 3x3 steps (an octagonal distance): each step spreads heights one node
        # further, lowered by the slope times the step; the halo keeps the tile's own nodes exact.
        straight = CLEAR_SLOPE * self.spacing
        diagonal = straight * math.sqrt(2.0)
        nx, ny = field.shape
        for _ in range(h):
            grown = field.copy()
            for dx, dy, drop in ((1, 0, straight), (-1, 0, straight), (0, 1, straight), (0, -1, straight),
                                 (1, 1, diagonal), (1, -1, diagonal), (-1, 1, diagonal), (-1, -1, diagonal)):
                src = field[max(0, -dx):nx - max(0, dx), max(0, -dy):ny - max(0, dy)]
                dst = grown[max(0, dx):nx - max(0, -dx), max(0, dy):ny - max(0, -dy)]
                np.maximum(dst, src - drop, out=dst)
            field = grown
        return field[h:h + t + 1, h:h + t + 1]

    def height(self, points: np.ndarray) -> np.ndarray:
        """The field's height (coordinate along up) under `points` (..., 3); -inf off the terrain."""
        p = np.asarray(points, dtype=np.float64)
        shape = p.shape[:-1]
        q = ((p.reshape(-1, 3) @ self.basis.T) - self.origin) / self.spacing
        i = np.floor(q).astype(np.int64)
        ok = (i.view(np.uint64) < self._last).all(-1)  # a negative index wraps to a huge unsigned one
        i = np.where(ok[:, None], i, 0)
        f = q - i
        tile = i // CLEAR_TILE
        local = i - tile * CLEAR_TILE
        out = np.full(len(q), -np.inf)
        rows = np.flatnonzero(ok)
        if len(rows):
            wide = int(self.dims[1] // CLEAR_TILE + 1)
            code = tile[rows, 0] * wide + tile[rows, 1]  # a tile's number
            x, y = local[rows, 0], local[rows, 1]
            corners = np.empty((len(rows), 4))  # (x, y), (x + 1, y), (x, y + 1), (x + 1, y + 1)
            groups: list[tuple[int, Any]]  # (tile, its rows)
            if (code == code[0]).all():  # a frame at a time: mostly one tile
                groups = [(int(code[0]), slice(None))]
            else:  # the rows of each tile (a crowd's feet are over many): sorted by tile once
                order = np.argsort(code, kind="stable")
                sorted_code = code[order]
                cuts = np.flatnonzero(sorted_code[1:] != sorted_code[:-1]) + 1
                groups = [(int(sorted_code[a]), order[a:b]) for a, b in zip([0, *cuts], [*cuts, len(order)])]
            for key, sel in groups:
                ti, tj = divmod(key, wide)
                field = self.tiles.get((ti, tj))
                if field is None:
                    field = self.tiles[(ti, tj)] = self._tile(ti, tj)
                corners[sel] = field[x[sel, None] + _DX, y[sel, None] + _DY]
            fx, fy = f[rows, 0], f[rows, 1]
            gx = 1 - fx
            out[rows] = ((corners[:, 0] * gx + corners[:, 1] * fx) * (1 - fy)
                         + (corners[:, 2] * gx + corners[:, 3] * fx) * fy)
        out = np.where(out > -1e29, out, -np.inf)
        return out.reshape(shape)
