"""Down-rays in bulk: the first terrain hit straight down (along an `up` axis) for many points at once.

The live preview casts a handful of rays per frame through `mathutils.bvhtree.BVHTree`; a bake casts
tens of thousands, so it asks the same question in numpy: the triangles are projected onto the plane
across `up` and binned into a uniform grid; each query point looks only at the triangles of its cell,
finds those whose projection contains it (barycentric test) and takes the highest surface point
within the ray's span, exactly what a BVH ray cast from `point + up * reach` down over `2 * reach`
returns. Vertical faces (risers) have no area across `up` and are never hit by a vertical ray.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_EDGE_EPS = 1e-9


@dataclass
class DownHits:
    hit: np.ndarray  # (Q,) bool
    height: np.ndarray  # (Q,) the hit's coordinate along up (nan where missed)
    normal: np.ndarray  # (Q, 3) unit face normals facing up (nan where missed)


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
        cell_id = cx * self.dims[1] + cy
        order = np.argsort(cell_id, kind="stable")
        self.items = tri_id[order]
        self.starts = np.searchsorted(cell_id[order], np.arange(self.dims[0] * self.dims[1] + 1))

    def cast(self, points: np.ndarray, reach: np.ndarray, chunk: int = 16384) -> DownHits:
        """First hit of rays from `points + up * reach` going down over `2 * reach` (reach per point)."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(p) > chunk:  # bounded memory for the candidate pairs
            r = np.broadcast_to(np.asarray(reach, dtype=np.float64), (len(p),))
            parts = [self.cast(p[i:i + chunk], r[i:i + chunk], chunk) for i in range(0, len(p), chunk)]
            return DownHits(np.concatenate([x.hit for x in parts]), np.concatenate([x.height for x in parts]),
                            np.concatenate([x.normal for x in parts]))
        q = len(p)
        reach = np.broadcast_to(np.asarray(reach, dtype=np.float64), (q,))
        height = np.full(q, np.nan)
        normal = np.full((q, 3), np.nan)
        hit = np.zeros(q, dtype=bool)
        if q == 0 or len(self.items) == 0:
            return DownHits(hit, height, normal)
        q2 = p @ self.basis.T
        top = p @ self.up + reach
        bottom = top - 2.0 * reach
        ij = np.floor((q2 - self.origin) / self.cell).astype(np.int64)
        inside = (ij >= 0).all(1) & (ij < self.dims).all(1)
        cid = np.where(inside, ij[:, 0] * self.dims[1] + ij[:, 1], 0)
        start = self.starts[cid]
        counts = np.where(inside, self.starts[cid + 1] - start, 0)
        total = int(counts.sum())
        if total == 0:
            return DownHits(hit, height, normal)
        qi = np.repeat(np.arange(q), counts)
        ti = self.items[np.repeat(start - (np.cumsum(counts) - counts), counts) + np.arange(total)]
        t = self.packed[ti]
        qq = q2[qi]
        dx, dy = qq[:, 0] - t[:, 0], qq[:, 1] - t[:, 1]
        u = (dx * t[:, 5] - dy * t[:, 4]) * t[:, 6]
        w = (t[:, 2] * dy - t[:, 3] * dx) * t[:, 6]
        ok = (u >= -_EDGE_EPS) & (w >= -_EDGE_EPS) & (u + w <= 1.0 + _EDGE_EPS)
        h = t[:, 7] + u * t[:, 8] + w * t[:, 9]
        ok &= (h <= top[qi]) & (h >= bottom[qi])
        if not ok.any():
            return DownHits(hit, height, normal)
        qi, ti, h = qi[ok], ti[ok], h[ok]  # still grouped by query, in query order
        new_group = np.r_[True, qi[1:] != qi[:-1]]
        gid = np.cumsum(new_group) - 1
        gmax = np.maximum.reduceat(h, np.flatnonzero(new_group))
        idx = np.flatnonzero(h == gmax[gid])  # the highest hit of each query (ties: the last)
        g = gid[idx]
        pick = idx[np.r_[g[1:] != g[:-1], True]]
        sel = qi[pick]
        hit[sel] = True
        height[sel] = h[pick]
        normal[sel] = self.normal[ti[pick]]
        return DownHits(hit, height, normal)
