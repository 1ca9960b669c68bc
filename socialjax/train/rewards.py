"""What each learner is trained on: ``TrainConfig.reward``, per learner.

``reward`` is one of :data:`REWARDS` for every learner, or a tuple naming one per
learner (some inequity-averse members among selfish ones, as in Hughes et al. 2018).
The shaped reward is computed per game from the environment's reward of every seat
(:mod:`socialjax.agents.shaping` has the formulas) and each seat gets the form of the
member sitting in it; scripted seats are not shaped (they do not learn). Returns,
reward rates and the social metrics are always reported on the environment's own
reward.

- ``individual``: the environment's reward;
- ``common``: every seat gets the sum of the game's rewards (SocialJax's common-reward
  baseline sums them);
- ``exchange``: ``s r_i + (1 - s) mean_{j != i} r_j``, ``s = self_interest``;
- ``inequity_aversion``: Hughes et al. 2018 with ``ia_alpha``, ``ia_beta`` on rewards
  smoothed with gamma 0.99, lambda 0.975; the traces restart at every episode;
- ``svo``: McKee et al. 2020, target ``svo_angle`` degrees, weight ``svo_weight``.

The numbers are hyperparameters (:mod:`socialjax.agents.hparams`): sweepable and the
same for every shaped learner of a run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.agents.shaping import (
    common_reward,
    exchange_reward,
    inequity_aversion_reward,
    inequity_traces,
    svo_reward,
)
from socialjax.core.params import brief
from socialjax.train.config import REWARDS


def learner_rewards(reward: Any, num_learners: int) -> tuple[str, ...]:
    """``TrainConfig.reward`` as one form per learner; ``ValueError`` naming the problem."""
    forms = (reward,) * num_learners if isinstance(reward, str) else tuple(reward)
    bad = [f for f in forms if f not in REWARDS]
    if bad:
        raise ValueError(f"reward must be one of {REWARDS} (or a tuple of them, one per learner), got {brief(reward)}")
    if len(forms) != num_learners:
        raise ValueError(f"reward names {len(forms)} forms but the population has {num_learners} learners: "
                         f"give one per learner, or a single name for all")
    return forms


@dataclasses.dataclass(frozen=True)
class SeatShaping:
    """The per-member forms of a run (static): ``form_of`` ``(P,)`` indices into
    :data:`REWARDS` for every population member (scripted members: ``individual``)."""

    forms: tuple[str, ...]  # the forms in use, besides "individual"
    form_of: np.ndarray

    @property
    def active(self) -> bool:
        return bool(self.forms)

    @property
    def traces(self) -> bool:
        """Whether inequity-aversion traces are carried."""
        return "inequity_aversion" in self.forms

    def shape(self, reward: jax.Array, traces, assign: jax.Array, h: dict[str, jax.Array]):
        """``(shaped (E, N), traces)`` from the games' rewards ``(E, N)``, the traces
        before this step (or ``None``) and each seat's member ``assign`` ``(E * N,)``."""
        reward = reward.astype(jnp.float32)
        if not self.active:
            return reward, traces
        seat_form = jnp.asarray(self.form_of)[assign].reshape(reward.shape)
        shaped = reward
        if self.traces:
            traces = inequity_traces(traces, reward)
        for form in self.forms:
            if form == "common":
                value = common_reward(reward)
            elif form == "exchange":
                value = exchange_reward(reward, h["self_interest"])
            elif form == "inequity_aversion":
                value = inequity_aversion_reward(reward, traces, h["ia_alpha"], h["ia_beta"])
            else:
                value = svo_reward(reward, h["svo_angle"], h["svo_weight"])
            shaped = jnp.where(seat_form == REWARDS.index(form), value, shaped)
        return shaped, traces


def make_shaping(config, num_learners: int, num_members: int, num_seats: int) -> SeatShaping:
    """The run's :class:`SeatShaping`; ``ValueError`` before compiling for a bad
    ``reward`` or a shaped reward in a one-player game."""
    forms = learner_rewards(config.reward, num_learners)
    used = tuple(f for f in REWARDS[1:] if f in forms)
    if used and num_seats < 2:
        raise ValueError(f"reward {used[0]!r} compares players: the game has {num_seats} seat(s)")
    form_of = np.zeros(num_members, np.int32)
    form_of[:num_learners] = [REWARDS.index(f) for f in forms]
    return SeatShaping(used, form_of)
