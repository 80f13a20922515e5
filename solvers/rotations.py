"""Rotations and affine matrices over arrays of frames: numpy only, no `bpy`, no `mathutils`.

Quaternions are arrays (..., 4) in Blender's (w, x, y, z) order; matrices (..., 4, 4) act on column
vectors, as mathutils' do. The vectorised ground model and its solves use these on every frame at once.
"""

from __future__ import annotations

import numpy as np

_IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])  # each axis's next two, in turn


def norm(v: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """`np.linalg.norm(v, axis=axis)`, the same arithmetic without its per-call cost (a frame at a time)."""
    return np.sqrt(np.add.reduce(v * v, axis=axis, keepdims=keepdims))  # type: ignore[no-any-return]


def _empty(shape: tuple[int, ...], *arrays: np.ndarray) -> np.ndarray:
    """An array for a result built part by part (no `np.stack`: its cost per call counts a frame at a time)."""
    return np.empty(shape, dtype=np.result_type(*arrays))


def _shape(a: np.ndarray, b: np.ndarray) -> tuple[int, ...]:
    return a.shape if a.shape == b.shape else np.broadcast(a, b).shape  # not `np.broadcast_shapes`: its cost per call


def qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out = _empty(_shape(a, b), a, b)
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def qconj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def qnormalize(q: np.ndarray) -> np.ndarray:
    n = norm(q, keepdims=True)
    positive = n > 0.0
    if positive.all():
        return q / n
    return np.where(positive, q / np.where(positive, n, 1.0), _IDENTITY)


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.cross` of (..., 3) arrays, the same arithmetic without its per-call cost (a frame at a time)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = _empty(_shape(a, b), a, b)
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def qrot(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors (..., 3) by unit quaternions (..., 4)."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def qmat(q: np.ndarray) -> np.ndarray:
    """3x3 rotation matrices of unit quaternions."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = _empty(q.shape[:-1] + (3, 3), q)
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 0, 1] = 2 * (x * y - w * z)
    out[..., 0, 2] = 2 * (x * z + w * y)
    out[..., 1, 0] = 2 * (x * y + w * z)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 1, 2] = 2 * (y * z - w * x)
    out[..., 2, 0] = 2 * (x * z - w * y)
    out[..., 2, 1] = 2 * (y * z + w * x)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def mat_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternions of the rotation part of (..., 3+, 3+) matrices (columns normalised first)."""
    r = m[..., :3, :3]
    n = norm(r, axis=-2, keepdims=True)
    r = (r / np.where(n > 0.0, n, 1.0)).reshape(-1, 3, 3)  # a column scaled to zero stays zero (finite, no warning)
    d0, d1, d2 = r[:, 0, 0], r[:, 1, 1], r[:, 2, 2]
    case = np.where(d0 + d1 + d2 > 0.0, 0, np.where((d0 > d1) & (d0 > d2), 1, np.where(d1 > d2, 2, 3)))
    out = np.empty((len(r), 4), dtype=r.dtype)
    # Each row by the formula of its case (the trace, or the largest diagonal term): only those computed.
    counts = np.bincount(case, minlength=4)
    for k in np.flatnonzero(counts):
        rows = slice(None) if counts[k] == len(r) else case == k
        t = r[rows]
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (t[:, i, j] for i in range(3) for j in range(3))
        if k == 0:
            s = np.sqrt(np.maximum(r00 + r11 + r22 + 1.0, 1e-300)) * 2.0
            q = (0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s)
        elif k == 1:
            s = np.sqrt(np.maximum(1.0 + r00 - r11 - r22, 1e-300)) * 2.0
            q = ((r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s)
        elif k == 2:
            s = np.sqrt(np.maximum(1.0 + r11 - r00 - r22, 1e-300)) * 2.0
            q = ((r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s)
        else:
            s = np.sqrt(np.maximum(1.0 + r22 - r00 - r11, 1e-300)) * 2.0
            q = ((r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s)
        if counts[k] == len(r):
            for c in range(4):
                out[:, c] = q[c]
        else:
            out[rows] = np.stack(q, -1)
    return qnormalize(out.reshape(m.shape[:-2] + (4,)))


def q_between(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The shortest-arc rotation taking direction `u` to direction `v` (identity for zero vectors)."""
    un = norm(u, keepdims=True)
    vn = norm(v, keepdims=True)
    zero = ((un == 0.0) | (vn == 0.0))[..., 0]
    a = u / np.where(un > 0.0, un, 1.0)
    b = v / np.where(vn > 0.0, vn, 1.0)
    w = 1.0 + np.einsum("...i,...i->...", a, b)
    xyz = cross(a, b)
    opposite = w < 1e-12
    if opposite.any():  # half a turn about any axis across `a`
        ortho = np.cross(a, np.where(np.abs(a[..., :1]) < 0.9, np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])))
        xyz = np.where(opposite[..., None], ortho, xyz)
        w = np.where(opposite, 0.0, w)
    q = _empty(w.shape + (4,), w, xyz)
    q[..., 0] = w
    q[..., 1:] = xyz
    q = qnormalize(q)
    return np.where(zero[..., None], _IDENTITY, q) if zero.any() else q


def qslerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Shortest-path spherical interpolation, per row (as mathutils' Quaternion.slerp)."""
    cos = np.einsum("...i,...i->...", a, b)
    b = np.where((cos < 0.0)[..., None], -b, b)
    cos = np.abs(cos)
    t = np.asarray(t, dtype=np.float64)
    near = cos > 1.0 - 1e-4
    omega = np.arccos(np.minimum(np.maximum(cos, -1.0), 1.0))
    so = np.where(near, 1.0, np.sin(omega))
    wa = np.where(near, 1.0 - t, np.sin((1.0 - t) * omega) / so)
    wb = np.where(near, t, np.sin(t * omega) / so)
    return wa[..., None] * a + wb[..., None] * b


def euler_to_quat(e: np.ndarray, order: str) -> np.ndarray:
    axes = {"X": 0, "Y": 1, "Z": 2}
    q = np.zeros(e.shape[:-1] + (4,))
    q[..., 0] = 1.0
    for ch in order:  # Blender's 'XYZ' applies X first: q = qZ qY qX
        k = axes[ch]
        half = 0.5 * e[..., k]
        r = np.zeros_like(q)
        r[..., 0] = np.cos(half)
        r[..., 1 + k] = np.sin(half)
        q = qmul(r, q)
    return q


def channel_quat(mode: str, quat: np.ndarray, euler: np.ndarray, aa: np.ndarray) -> np.ndarray:
    """`rig.rotation_of` over arrays of channel values."""
    if mode == "QUATERNION":
        return qnormalize(quat)
    if mode == "AXIS_ANGLE":
        axis = aa[..., 1:]
        n = norm(axis, keepdims=True)
        half = 0.5 * aa[..., :1]
        q = np.concatenate((np.cos(half), np.sin(half) * axis / np.where(n > 0, n, 1.0)), -1)
        return np.where(n > 0, q, _IDENTITY)
    return euler_to_quat(euler, mode)


def affine_inv(m: np.ndarray) -> np.ndarray:
    """Inverses of affine 4x4 matrices (..., 4, 4), by the adjugate (much faster than LAPACK per matrix)."""
    inv3 = linear_inv(m)
    out = np.zeros(m.shape)
    out[..., :3, :3] = inv3
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", inv3, m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def linear_inv(m: np.ndarray) -> np.ndarray:
    """Inverses of the 3x3 linear parts of (..., 3+, 3+) matrices (`affine_inv`'s, without the translation)."""
    a = m[..., :3, :3]
    # The rows of the inverse times the determinant: cross(c1, c2), cross(c2, c0), cross(c0, c1) of the
    # columns c, all three at once (p and q: the columns in turn).
    p, q = a[..., _NEXT], a[..., _AFTER]
    rows = _empty(a.shape, a)
    rows[..., 0, :] = p[..., 1, :] * q[..., 2, :] - p[..., 2, :] * q[..., 1, :]
    rows[..., 1, :] = p[..., 2, :] * q[..., 0, :] - p[..., 0, :] * q[..., 2, :]
    rows[..., 2, :] = p[..., 0, :] * q[..., 1, :] - p[..., 1, :] * q[..., 0, :]
    det = np.einsum("...i,...i->...", a[..., :, 0], rows[..., :, 0])
    det = np.where(det != 0.0, det, 1.0)[..., None, None]
    return np.swapaxes(rows, -1, -2) / det  # type: ignore[no-any-return]


def xform(m: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Affine matrices (..., 4, 4) applied to points (..., 3)."""
    return np.einsum("...ij,...j->...i", m[..., :3, :3], p) + m[..., :3, 3]
