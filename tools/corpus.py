"""The broad corpus (../shared/mocap), split in two BEFORE any tuning on it (declared 2026-11-25, before
any constant was changed for these clips): constants may be tuned on TUNING only; CHECK is measured, never
tuned on. `make quality` reports both halves apart (docs/quality.md). A change that helps TUNING and hurts
CHECK is not an improvement. `tools/quality.py --half tuning` measures the tuning half alone, and
`tools/compare.py` compares two such runs half by half.

How it was split: the six development clips (tuned on since issue 5, pinned in tests/data) are TUNING by
necessity. The other 28 go to both sides by kind (walks, runs, jumps, dance, idle, stylised walks, kicks),
by skeleton convention (CMU MotionBuilder, 3ds Max, Daz without toes, ASF, Biovision, FAIR, SFU, PyMO,
Perfume, Rigify-named, Xia retargets), frame rate and unit, so that each kind and each convention with two
or more clips has a clip on each side. Conventions with a single clip (ASF, Biovision, SFU, PyMO, Perfume)
alternate between the sides.
"""

from __future__ import annotations

TUNING = (
    # the development clips
    "cmu_01_01_forward_jumps.bvh",  # jumps, MotionBuilder names, 120 fps
    "cmu_12_01_walk.bvh",  # walk, MotionBuilder names
    "cmu_131_01_start_walk_stop_maxnames.bvh",  # walk, 3ds Max names
    "cmu_131_03_start_hop_stop_maxnames.bvh",  # hops, 3ds Max names
    "fair1_jumping_zup.bvh",  # jump, FAIR, Z-up
    "fair1_zombie_walk_zup.bvh",  # stylised walk, FAIR, Z-up, 30 fps
    # from the broad corpus
    "cmu_03_02_uneven_terrain_daznames.bvh",  # walk over real obstacles, Daz (no toes)
    "cmu_09_01_run_daznames.bvh",  # run
    "cmu_07_12_brisk_walk_fast_daznames.bvh",  # fast walk
    "cmu_08_07_exaggerated_stride_walk_daznames.bvh",  # long stride
    "cmu_12_02_walk_daznames.bvh",  # plain walk, Daz
    "cmu_13_42_jump_in_place_daznames.bvh",  # jump in place
    "cmu_02_04_jump_balance_daznames.bvh",  # jump, one-leg balance
    "cmu_10_01_soccer_kick_biovision_notoes_30fps.bvh",  # kick, Biovision names, no toes, 30 fps
    "cmu_60_10_salsa_dance_daznames_metres.bvh",  # dance, metres
    "pymo_av8_emotional_walk_loop.bvh",  # walk with turns, PyMO
    "reactidle_003_genuine_idle_rigify_24fps.bvh",  # idle, Rigify names, 24 fps
    "xia_old_13_000_old_walk_cmuretarget.bvh",  # stylised walk, Xia retarget
    "xia_strutting_01_000_strut_walk_cmuretarget.bvh",  # stylised walk, Xia retarget
)

CHECK = (
    "cmu_02_01_walk_daznames.bvh",  # plain walk, Daz
    "cmu_05_01_walk_daznames.bvh",  # walk with a turn
    "cmu_06_01_walk_daznames.bvh",  # plain walk, Daz
    "cmu_07_04_slow_walk_daznames.bvh",  # slow walk
    "cmu_09_06_run_daznames.bvh",  # run
    "cmu_13_11_forward_jump_daznames.bvh",  # forward jump
    "cmu_13_32_forward_jump_daznames.bvh",  # forward jump
    "cmu_14_07_jump_grab_tiptoe_daznames.bvh",  # jump, tiptoe, turns
    "cmu_16_01_jump_asfnames_30fps.bvh",  # jump, ASF names, 30 fps
    "cmu_131_02_start_walk_stop_maxnames_metres.bvh",  # walk, 3ds Max names, metres
    "perfume_dance_chest4_40fps.bvh",  # dance, Perfume, 40 fps
    "reactidle_002_genuine_idle_rigify_24fps.bvh",  # idle, Rigify names
    "sfu_0005_walking001_walk.bvh",  # walk, SFU
    "xia_angry_13_000_angry_walk_cmuretarget.bvh",  # stylised walk, Xia retarget
    "xia_sexy_01_000_stylised_walk_cmuretarget.bvh",  # stylised walk, Xia retarget
)


def half(clip: str) -> str:
    """'tuning', 'check', or 'undeclared' (a clip added to the corpus later: declare it before tuning)."""
    return "tuning" if clip in TUNING else "check" if clip in CHECK else "undeclared"
