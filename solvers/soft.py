"""Soft IK: an exponential ease-in of the reach near full extension, so a knee does not snap straight.

With chain length L and softness s (a fraction of L), reach distances up to L(1 - s) pass unchanged;
beyond that the distance approaches L asymptotically: d' = L(1-s) + sL(1 - exp(-(d - L(1-s)) / (sL))).
The curve is continuous with slope 1 where the ease begins, and never reaches full extension.
"""

from __future__ import annotations

import math

import numpy as np


def soft_distance(distance: float, chain_length: float, softness: float) -> float:
    """The eased reach distance for a target `distance` from the root; softness 0 turns it off."""
    soft_span = softness * chain_length
    if soft_span <= 0.0:
        return distance
    start = chain_length - soft_span
    if distance <= start:
        return distance
    return start + soft_span * (1.0 - math.exp(-(distance - start) / soft_span))


def soft_distance_array(distance: np.ndarray, chain_length: np.ndarray, softness: float) -> np.ndarray:
    """`soft_distance` over arrays."""
    soft_span = softness * np.asarray(chain_length, dtype=np.float64)
    if softness <= 0.0:
        return distance
    start = chain_length - soft_span
    safe_span = np.where(soft_span > 0, soft_span, 1.0)
    eased = start + soft_span * (1.0 - np.exp(-(distance - start) / safe_span))
    return np.where((distance > start) & (soft_span > 0), eased, distance)
