"""The ``cpu`` and ``gpu`` sizes of the Clean Up entries (``cleanup-reward``,
``schelling``, ``inequity-aversion``).

``cpu`` (at most 10 minutes on a quiet 2-core CPU per entry): the original Cleanup rules
(``cleanup_ssd``: waste spawns only while the river is below the 0.4 threshold, fines for
the fire beam) on :data:`CPU_MAP`, a small map of ours that keeps the dilemma: apples grow
only in the orchard on the right and only while the river on the left is clean, cleaning
pays nothing, and the river is three steps from the orchard, so a player cleans or eats,
not both. 3 players, a 11x11 view (5 cells each way: about the whole map), 250-step
episodes, one network shared by the 3 players (SocialJax's seating), our small CNN.

``gpu`` (about 6 minutes on one H100 per entry, not run here): SocialJax's batch (256
games x 1000-step rollouts, its PPO settings: ``gridworlds.PAPER_IPPO``) on the entry's
paper map and players, with the updates cut to fit (:func:`gpu_updates`). The budget is the
throughput measured on an H100 at SocialJax's Clean Up configuration (7 players, one
shared network, our CNN): :data:`GPU_ENV_STEPS_PER_S`, five of the six minutes training
(about one compiling), shared among the entry's runs, grid points and seeds.
"""

from __future__ import annotations

from socialjax.train.presets import PAPER_NUM_ENVS, PAPER_ROLLOUT, SMALL_CNN

# Ours (SSD legend: H river with waste at reset, R clean river, S stream that never gets
# waste, B orchard, P spawn point, @ wall): 20 river cells (13 with waste at reset: density
# 0.45, above the 0.4 at which apples stop growing), 27 orchard cells, 5 spawn points.
CPU_MAP = """
@@@@@@@@@@@@@
@HHHR  BBBBB@
@RHHH P BBBB@
@HHRR  BBBBB@
@SSSS P BBBB@
@HRHH  BBBBB@
@RHHR P BBBB@
@@@@@@@@@@@@@
"""
CPU_PLAYERS = 3
CPU_EPISODE = 250
CPU_VIEW = (5, 5, 5)  # ahead, behind, side: 11x11 centred
CPU_ENV_OPTIONS = dict(num_agents=CPU_PLAYERS, episode_length=CPU_EPISODE, view=CPU_VIEW, ascii_map=CPU_MAP)
CPU_IPPO = dict(seating="shared", num_envs=16, rollout_len=125, num_updates=20, update_epochs=2, num_minibatches=2,
                lr=1e-3, evaluate=False, **SMALL_CNN)
CPU_SEEDS = 3

# Measured on one H100 at SocialJax's Clean Up configuration (7 players, 256 games x
# 1000-step rollouts, one shared network, our CNN): env steps per second.
GPU_ENV_STEPS_PER_S = 131_943
GPU_TRAIN_SECONDS = 300  # of the 6 minutes, about one goes to compiling
GPU_SEEDS = 3
GPU_BATCH = PAPER_NUM_ENVS * PAPER_ROLLOUT  # env steps per update


def gpu_updates(runs: int) -> int:
    """Updates of :data:`GPU_BATCH` env steps that fit :data:`GPU_TRAIN_SECONDS` when
    ``runs`` trainings (conditions x grid points) of :data:`GPU_SEEDS` seeds share them."""
    return int(GPU_ENV_STEPS_PER_S * GPU_TRAIN_SECONDS // (runs * GPU_SEEDS * GPU_BATCH))
