"""Rotations and affine matrices over arrays of frames: numpy only, no `bpy`, no `mathutils`.

Quaternions are arrays (..., 4) in Blender's (w, x, y, z) order; matrices (..., 4, 4) act on column
vectors, as mathutils' do. The vectorised ground model and its solves use these on every frame at once.
"""

from __future__ import annotations

import numpy as np


def qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack((aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw), axis=-1)


def qconj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def qnormalize(q: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(n > 0.0, q / np.where(n > 0.0, n, 1.0), np.array([1.0, 0.0, 0.0, 0.0]))


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.cross` of (..., 3) arrays, the same arithmetic without its per-call cost (a frame at a time)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), -1)


def qrot(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors (..., 3) by unit quaternions (..., 4)."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def qmat(q: np.ndarray) -> np.ndarray:
    """3x3 rotation matrices of unit quaternions."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack((
        np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)), -1),
        np.stack((2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)), -1),
        np.stack((2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)), -1)), -2)


def mat_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternions of the rotation part of (..., 3+, 3+) matrices (columns normalised first)."""
    r = m[..., :3, :3]
    norm = np.linalg.norm(r, axis=-2, keepdims=True)
    r = r / np.where(norm > 0.0, norm, 1.0)  # a column scaled to zero stays zero (finite, no warning)
    tr = r[..., 0, 0] + r[..., 1, 1] + r[..., 2, 2]
    out = np.empty(r.shape[:-2] + (4,))
    c0 = tr > 0.0
    s = np.sqrt(np.maximum(tr + 1.0, 1e-300)) * 2.0
    out0 = np.stack((0.25 * s, (r[..., 2, 1] - r[..., 1, 2]) / s, (r[..., 0, 2] - r[..., 2, 0]) / s,
                     (r[..., 1, 0] - r[..., 0, 1]) / s), -1)
    c1 = ~c0 & (r[..., 0, 0] > r[..., 1, 1]) & (r[..., 0, 0] > r[..., 2, 2])
    s1 = np.sqrt(np.maximum(1.0 + r[..., 0, 0] - r[..., 1, 1] - r[..., 2, 2], 1e-300)) * 2.0
    out1 = np.stack(((r[..., 2, 1] - r[..., 1, 2]) / s1, 0.25 * s1, (r[..., 0, 1] + r[..., 1, 0]) / s1,
                     (r[..., 0, 2] + r[..., 2, 0]) / s1), -1)
    c2 = ~c0 & ~c1 & (r[..., 1, 1] > r[..., 2, 2])
    s2 = np.sqrt(np.maximum(1.0 + r[..., 1, 1] - r[..., 0, 0] - r[..., 2, 2], 1e-300)) * 2.0
    out2 = np.stack(((r[..., 0, 2] - r[..., 2, 0]) / s2, (r[..., 0, 1] + r[..., 1, 0]) / s2, 0.25 * s2,
                     (r[..., 1, 2] + r[..., 2, 1]) / s2), -1)
    s3 = np.sqrt(np.maximum(1.0 + r[..., 2, 2] - r[..., 0, 0] - r[..., 1, 1], 1e-300)) * 2.0
    out3 = np.stack(((r[..., 1, 0] - r[..., 0, 1]) / s3, (r[..., 0, 2] + r[..., 2, 0]) / s3,
                     (r[..., 1, 2] + r[..., 2, 1]) / s3, 0.25 * s3), -1)
    out = np.where(c0[..., None], out0, np.where(c1[..., None], out1, np.where(c2[..., None], out2, out3)))
    return qnormalize(out)


def q_between(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The shortest-arc rotation taking direction `u` to direction `v` (identity for zero vectors)."""
    un = np.linalg.norm(u, axis=-1, keepdims=True)
    vn = np.linalg.norm(v, axis=-1, keepdims=True)
    zero = ((un == 0.0) | (vn == 0.0))[..., 0]
    a = u / np.where(un > 0.0, un, 1.0)
    b = v / np.where(vn > 0.0, vn, 1.0)
    w = 1.0 + np.einsum("...i,...i->...", a, b)
    xyz = cross(a, b)
    opposite = w < 1e-12
    if np.any(opposite):  # half a turn about any axis across `a`
        ortho = np.cross(a, np.where(np.abs(a[..., :1]) < 0.9, np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])))
        xyz = np.where(opposite[..., None], ortho, xyz)
        w = np.where(opposite, 0.0, w)
    q = qnormalize(np.concatenate((w[..., None], xyz), -1))
    return np.where(zero[..., None], np.array([1.0, 0.0, 0.0, 0.0]), q)


def qslerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Shortest-path spherical interpolation, per row (as mathutils' Quaternion.slerp)."""
    cos = np.einsum("...i,...i->...", a, b)
    b = np.where((cos < 0.0)[..., None], -b, b)
    cos = np.abs(cos)
    t = np.asarray(t, dtype=np.float64)
    near = cos > 1.0 - 1e-4
    omega = np.arccos(np.clip(cos, -1.0, 1.0))
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
        n = np.linalg.norm(axis, axis=-1, keepdims=True)
        half = 0.5 * aa[..., :1]
        q = np.concatenate((np.cos(half), np.sin(half) * axis / np.where(n > 0, n, 1.0)), -1)
        return np.where(n > 0, q, np.array([1.0, 0.0, 0.0, 0.0]))
    return euler_to_quat(euler, mode)


def affine_inv(m: np.ndarray) -> np.ndarray:
    """Inverses of affine 4x4 matrices (..., 4, 4), by the adjugate (much faster than LAPACK per matrix)."""
    a = m[..., :3, :3]
    c0, c1, c2 = a[..., :, 0], a[..., :, 1], a[..., :, 2]
    r0, r1, r2 = cross(c1, c2), cross(c2, c0), cross(c0, c1)
    det = np.einsum("...i,...i->...", c0, r0)
    det = np.where(det != 0.0, det, 1.0)[..., None]
    inv3 = np.stack((r0 / det, r1 / det, r2 / det), -2)
    out = np.zeros(m.shape)
    out[..., :3, :3] = inv3
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", inv3, m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def xform(m: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Affine matrices (..., 4, 4) applied to points (..., 3)."""
    return np.einsum("...ij,...j->...i", m[..., :3, :3], p) + m[..., :3, 3]
