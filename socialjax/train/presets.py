"""Named experiments for ``socialjax train PRESET``.

A preset is an environment (registered name and options for :func:`socialjax.make`), the
:class:`~socialjax.train.TrainConfig` fields that differ from the defaults, a default
number of seeds and a one-line description::

    from socialjax.train.presets import get_preset
    preset = get_preset("harvest-ippo-small")
    env = preset.make_env()                          # or make_env(num_agents=2)
    config = preset.make_config(num_updates=20)      # overrides by field name
    result = sj.train.run(env, config, seeds=preset.seeds)

``donor-evolution`` is the one preset that is not a population of learners: it runs the
cultural evolution of donor-game strategies (:mod:`socialjax.train.cultural_evolution`)
with its own flags.

Where a number comes from a paper or a published configuration, a comment says which.
The ``-small`` presets are sized for a laptop CPU (2 cores: minutes, compilation
included); ``cleanup-ippo-paper`` is the published scale and needs an accelerator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from socialjax.core.registry import make, unknown_name
from socialjax.train.config import TrainConfig

POPULATION = "population"  # sj.train.run on a TrainConfig
DONOR_EVOLUTION = "donor-evolution"  # socialjax.train.cultural_evolution.run_experiment
PROGRESS_LINES = 10  # progress lines per run when a preset leaves log_every unset
# the small CNN presets: a narrow network and independent PPO learners, sized for a CPU
SMALL_CNN = dict(hidden=32, channels=8, embed_dim=4)
SMALL_IPPO = dict(seating="independent", update_epochs=2, num_minibatches=2, lr=1e-3, **SMALL_CNN)
SMALL_SEEDS = 4  # the CNN presets: seeds per run (a mean and a spread; one vmapped call on a CPU)

# Weis et al. (2026): 100-round IPD; co-players drawn from a pool mixing learners and
# random memory-one tabular strategies (half each here).
WEIS_ROUNDS = 100
WEIS_LEARNER_FRACTION = 0.5

# The IPPO Clean Up baseline of SocialJax (Guo et al. 2025, arXiv:2503.14576; repository
# cooperativex/SocialJax, algorithms/IPPO/config/ippo_base.yaml, which
# algorithms/IPPO/config/ippo_cnn_cleanup.yaml extends): 1e8 env steps, 256 envs, 1000-step
# rollouts, lr 5e-4, 2 epochs, clip 0.2, entropy 0.01, gamma 0.99, lambda 0.95,
# value coefficient 0.5, gradient norm 0.5, 500 minibatches, lr annealed; episodes of
# 1000 steps (their num_inner_steps).
PAPER_ENV_STEPS = 100_000_000
PAPER_NUM_ENVS = 256
PAPER_ROLLOUT = 1000
PAPER_EPISODE = 1000
PAPER_MINIBATCHES = 500


@dataclasses.dataclass(frozen=True)
class Preset:
    """One named experiment (see the module docstring)."""

    name: str
    description: str
    env: str = ""
    env_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    seeds: int = 4
    kind: str = POPULATION

    def make_env(self, **option_overrides: Any):
        """The environment: ``sj.make(env, **{**env_options, **option_overrides})``."""
        return make(self.env, **self.options(**option_overrides))

    def options(self, **option_overrides: Any) -> dict[str, Any]:
        return {**dict(self.env_options), **option_overrides}

    def make_config(self, **overrides: Any) -> TrainConfig:
        """The preset's :class:`TrainConfig` with ``overrides`` applied and validated.

        Raises ``ValueError`` for a field that does not exist or a value that cannot work,
        before anything is compiled. Settings of the preset that the learner, reward or
        exploration the overrides choose never reads are left at their defaults. Unless the preset or ``overrides`` set
        ``log_every``, a progress line is printed every ``num_updates // 10`` updates."""
        if self.kind != POPULATION:
            raise ValueError(f"preset {self.name!r} is not a population-training preset (it has no TrainConfig)")
        config = TrainConfig().replace(**dict(self.config))
        # another learner or reward form asked for: the preset's settings it never reads go back to their
        # defaults (one given in overrides stays, and is refused by validate)
        config = config.replace(**overrides).without_unread(keep=tuple(overrides))
        if "log_every" not in overrides and "log_every" not in self.config:
            updates = config.num_updates if isinstance(config.num_updates, int) else 0
            config = config.replace(log_every=max(1, updates // PROGRESS_LINES))
        config.validate()
        return config


def _population(name: str, description: str, env: str, env_options: dict, config: dict, seeds: int) -> Preset:
    return Preset(name, description, env, env_options, config, seeds)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        _population(
            "ipd-ppo",
            "two independent PPO learners in the 100-round iterated PD (they learn to defect)",
            "ipd",
            dict(num_rounds=100),
            dict(seating="independent", num_envs=16, rollout_len=100, num_updates=60, hidden=32,
                 update_epochs=4, num_minibatches=4, lr=3e-3),
            seeds=8,
        ),
        _population(
            "ipd-tft",
            "one PPO learner against tit-for-tat in the 100-round iterated PD (it learns to cooperate)",
            "ipd",
            dict(num_rounds=100),
            dict(seating="fixed", seats=(0, 1), scripted=("tft",), num_envs=16, rollout_len=100, num_updates=60,
                 hidden=32, update_epochs=4, num_minibatches=4, lr=3e-3),
            seeds=8,
        ),
        _population(
            "ipd-mixed",
            "population play in the 100-round IPD: 4 PPO learners seated at random, half the seats "
            "random memory-one co-players (Weis et al. 2026 setting)",
            "ipd",
            dict(num_rounds=WEIS_ROUNDS),
            dict(seating="random", num_learners=4, scripted=("random_memory_one",),
                 learner_fraction=WEIS_LEARNER_FRACTION, num_envs=32, rollout_len=WEIS_ROUNDS, num_updates=60,
                 hidden=32, update_epochs=4, num_minibatches=4, lr=3e-3),
            seeds=8,
        ),
        Preset(
            DONOR_EVOLUTION,
            "cultural evolution of parametric donor strategies (Vallinder & Hughes 2024 setting); "
            "flags --generations --multipliers --schedule --punishment",
            "donor_game",
            seeds=256,
            kind=DONOR_EVOLUTION,
        ),
        _population(
            "harvest-ippo-small",
            "IPPO (one CNN learner per seat) in Commons Harvest (open map), 3 players, 500-step episodes",
            "harvest_open",
            dict(num_agents=3, episode="fixed", episode_length=500),
            dict(num_envs=8, rollout_len=125, num_updates=40, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            # ore 25x as common as in Melting Pot (liveRates 0.0002, 0.00008), where random play
            # extracts about 16 iron per 500 steps among 6 players: too little to learn from in a small run
            "coop_mining-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Cooperative Mining, 3 players, 500-step episodes, "
            "ore 25x as common",
            "coop_mining",
            dict(num_agents=3, episode="fixed", episode_length=500, iron_regrowth=0.005, gold_regrowth=0.002),
            dict(num_envs=8, rollout_len=125, num_updates=40, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            # tokens 25x as common as in Melting Pot (regrowRate 0.0002: about 32 tokens appear per
            # 300 steps on the whole map), so that a small run sees rewards to learn from
            "gift_refinements-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Gift Refinements, 3 players, 300-step episodes, "
            "tokens 25x as common",
            "gift_refinements",
            dict(num_agents=3, episode="fixed", episode_length=300, regrow_rate=0.005),
            dict(num_envs=8, rollout_len=100, num_updates=60, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            # Melting Pot's __repeated variant (2 players, 5x5 view); 500-step episodes instead of the
            # stochastic ending (at least 1000 steps). Rewards are sparse (random players meet about once
            # per 1000 steps each): 40 updates show no learning, 1200 (about 2.5 min on 2 CPU cores) do
            "prisoners_dilemma_in_the_matrix-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Prisoner's Dilemma in the Matrix (repeated), "
            "2 players, 500-step episodes",
            "prisoners_dilemma_in_the_matrix",
            dict(variant="repeated", episode="fixed", episode_length=500),
            dict(num_envs=8, rollout_len=125, num_updates=1200, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            "stag_hunt_in_the_matrix-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Stag Hunt in the Matrix (repeated), "
            "2 players, 500-step episodes",
            "stag_hunt_in_the_matrix",
            dict(variant="repeated", episode="fixed", episode_length=500),
            dict(num_envs=8, rollout_len=125, num_updates=1200, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            "chicken_in_the_matrix-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Chicken in the Matrix (repeated), "
            "2 players, 500-step episodes",
            "chicken_in_the_matrix",
            dict(variant="repeated", episode="fixed", episode_length=500),
            dict(num_envs=8, rollout_len=125, num_updates=1200, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            # Melting Pot's smallest map (10x10 interior) and coins 10x as common (regrowRate 0.0005), where
            # random play takes about 8 coins per 300 steps between the two players: too few to learn from
            # in a small run; 300-step episodes (Melting Pot's minimum) instead of the stochastic ending.
            # The payoffs make greed reward-neutral on average (+1 per coin, -2 to the owner for half of
            # them), so learning shows in coins taken per episode (events/coins_collected), not reward
            "coins-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Coins, 2 players, 10x10 map, 300-step episodes, "
            "coins 10x as common",
            "coins",
            dict(width=10, height=10, episode="fixed", episode_length=300, regrow_rate=0.005),
            dict(num_envs=8, rollout_len=100, num_updates=100, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            # Melting Pot's numbers; 200-step episodes, since the 10 starting mushrooms perish
            # within 75-200 steps and new ones grow only from eaten ones
            "mushrooms-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Externality Mushrooms (dense), 3 players, "
            "200-step episodes",
            "mushrooms",
            dict(num_agents=3, episode="fixed", episode_length=200),
            dict(num_envs=8, rollout_len=100, num_updates=60, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            # Melting Pot's numbers; 3 players in 3 of the 9 rooms, 300-step episodes instead of the
            # stochastic ending (at least 1000 steps). A wall pays 1 with probability 0.01 per step
            # once held 25 steps, so the reward is noisy: 60 updates showed little, 200 do
            "territory_rooms-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Territory (rooms), 3 players, 300-step episodes",
            "territory_rooms",
            dict(num_agents=3, episode="fixed", episode_length=300),
            dict(num_envs=8, rollout_len=100, num_updates=200, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            "territory_open-ippo-small",
            "IPPO (one CNN learner per seat) in Melting Pot Territory (open), 3 players, 300-step episodes",
            "territory_open",
            dict(num_agents=3, episode="fixed", episode_length=300),
            dict(num_envs=8, rollout_len=100, num_updates=200, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            # the SSD map, not Melting Pot's: there random play grows no apple in the first 1000 steps
            # (docs/gridworlds.md), so a small run gets no reward to learn from
            "cleanup-ippo-small",
            "IPPO (one CNN learner per seat) in the original Cleanup (Hughes et al. 2018 map), 3 players, "
            "500-step episodes",
            "cleanup_ssd",
            dict(num_agents=3, episode_length=500),
            dict(num_envs=4, rollout_len=125, num_updates=24, **SMALL_IPPO),
            seeds=SMALL_SEEDS,
        ),
        _population(
            "cleanup-ippo-paper",
            "the published IPPO Clean Up baseline: 7 players, 1e8 env steps, 256 envs x 1000-step rollouts "
            "(for a GPU)",
            "cleanup",
            dict(num_agents=7, episode="fixed", episode_length=PAPER_EPISODE),
            dict(seating="independent", num_envs=PAPER_NUM_ENVS, rollout_len=PAPER_ROLLOUT,
                 num_updates=PAPER_ENV_STEPS // (PAPER_NUM_ENVS * PAPER_ROLLOUT),  # 390
                 lr=5e-4, update_epochs=2, num_minibatches=PAPER_MINIBATCHES, clip_eps=0.2, ent_coef=0.01,
                 gamma=0.99, gae_lambda=0.95, vf_coef=0.5, max_grad_norm=0.5, anneal_lr=True),
            seeds=1,
        ),
        _population(
            "cleanup-shared-dqn",
            "one double-DQN policy shared by all seats of the original Cleanup (Hughes et al. 2018 map), "
            "3 players, 500-step episodes",
            "cleanup_ssd",
            dict(num_agents=3, episode_length=500),
            dict(algo="dqn", seating="shared", num_envs=8, rollout_len=125, num_updates=40, **SMALL_CNN, lr=1e-3,
                 dqn_batch=256, dqn_updates=4, buffer_rollouts=8, n_step=3,
                 target_update_every=10),
            seeds=SMALL_SEEDS,
        ),
    )
}


def preset_names() -> list[str]:
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ``ValueError`` naming the presets otherwise."""
    if name not in PRESETS:
        raise unknown_name("preset", name, PRESETS)
    return PRESETS[name]
