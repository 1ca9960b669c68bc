"""Why the README's trained populations without punishment contribute more in the last
period of the public goods game than in the others.

Trains the ``stranger/without`` population of ``socialjax reproduce punishment-learners
--scale small`` (8 independent PPO learners, 80 updates of 8 games, gamma 0.95, GAE
lambda 0.95) on ``--seeds`` seeds, and variants that each remove one candidate cause:
``gamma 0`` (no credit for later periods), ``lambda 0`` (one-step bootstrapped
advantages), ``4x updates`` (the same learning, longer). For each it plays the trained
populations back (16 episodes per seed) and prints the mean contribution (fraction of
the endowment) in each of the 10 periods, and, for the default, how persistent a
player's contribution is from one period to the next (the chance of contributing again
after contributing, and after not).

    python scripts/last_period.py --seeds 4
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

import socialjax as sj
from socialjax.reproduce.punishment_learners import CONDITIONS, PLAYBACK_EPISODES, row_name
from socialjax.train import TrainConfig, as_run, make_train, play, run

VARIANTS = {"default": {}, "gamma 0": {"gamma": 0.0}, "lambda 0": {"gae_lambda": 0.0},
            "4x updates": {"num_updates": 320}}


def played(env, config: TrainConfig, seeds: int) -> np.ndarray:
    """``(S, E, P, N)`` contributions of the trained populations: seed, episode, period, player."""
    result = run(env, config, seeds=seeds, progress=False)
    train = make_train(env, config)
    out = []
    for s in range(seeds):
        back = play(train, as_run(result.states.learners, 0, s), jax.random.key(7 + s),
                    env.episode_length * PLAYBACK_EPISODES)
        out.append(np.asarray(back.actions, np.float64).reshape(PLAYBACK_EPISODES, env.num_periods, env.num_agents))
    return np.stack(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args(argv)
    cond = next(c for c in CONDITIONS if c.name == row_name("stranger", False))
    env = sj.make(cond.env["small"], **cond.env_options["small"])
    for name, change in VARIANTS.items():
        config = TrainConfig().replace(**dict(cond.config["small"], **change))
        a = played(env, config, args.seeds)
        per_period = a.mean(axis=(1, 3)) / env.endowment  # (S, P)
        print(f"{name:10s} contribution per period (mean of {args.seeds} seeds): "
              + " ".join(f"{v:.3f}" for v in per_period.mean(axis=0)), flush=True)
        if name == "default":
            now, after = a[:, :, :-1, :] > 0, a[:, :, 1:, :] > 0
            print(f"{'':10s} persistence: P(contribute next period | contributed) {after[now].mean():.2f}, "
                  f"P(contribute next period | did not) {after[~now].mean():.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
