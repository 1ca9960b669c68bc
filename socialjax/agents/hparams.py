"""Numeric hyperparameters, declared once: default, closed range, and whether the value
is a probability (a discount, a trace weight or an exploration rate, kept in ``[0, 1]``
when PBT perturbs it).

Each learner names the ones it reads (:data:`ACTOR_CRITIC`, :data:`DQN`, as its class's
``hparams``, found by ``algo`` in :mod:`socialjax.agents.registry`); the population loop
reads :data:`LOOP` (Advantage Alignment and the reward forms' :data:`SHAPING_BY_FORM`).
:class:`~socialjax.train.TrainConfig` takes its defaults and checks from here, sweeps and
PBT act on these names, and ``socialjax train --set`` accepts them. A learner reads them
from ``LearnerState.hparams`` (not attributes), so that they can be vmapped over and
perturbed per member.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from socialjax.core.params import brief, check_number, param

FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclasses.dataclass(frozen=True)
class HParam:
    """A numeric hyperparameter: ``default``, the closed range ``[low, high]`` (``None``:
    unbounded) and ``probability`` (PBT keeps it in ``[0, 1]``)."""

    default: float
    low: float | None = 0.0
    high: float | None = None
    probability: bool = False
    doc: str = ""

    def check(self, name: str, values) -> None:
        """Raise ``ValueError`` naming ``name`` unless every value is finite and in range
        (:func:`socialjax.core.params.check_number`, the check env params get) and stays
        finite in float32, the dtype training computes in (``1e39`` does not)."""
        check_number(name, values, self.low, self.high)
        if np.any(np.abs(np.asarray(values, np.float64)) > FLOAT32_MAX):
            raise ValueError(f"{name}={brief(values)} overflows float32 (largest {FLOAT32_MAX:.3g})")

    def field(self):
        """The :class:`~socialjax.train.TrainConfig` field declaring this hyperparameter:
        :func:`socialjax.core.params.param` (the helper env params are declared with),
        so the config's field carries the default, range and doc."""
        return param(self.default, self.low, self.high, self.doc)


# Actor-critic defaults: Adam 2.5e-4, gamma 0.99, lambda 0.95 and entropy weight 0.01 as in
# Schulman et al. 2017 (PPO, Table 5, Atari); clip 0.2, value weight 0.5 and a global
# gradient-norm clip of 0.5 as in the CleanRL and PureJaxRL PPO baselines. DQN takes the
# same lr, gamma and clip unless a config says otherwise.
HPARAMS: dict[str, HParam] = {
    "lr": HParam(2.5e-4, doc="Adam step size (annealed to 0 with anneal_lr)"),
    "gamma": HParam(0.99, 0.0, 1.0, probability=True, doc="discount"),
    "gae_lambda": HParam(0.95, 0.0, 1.0, probability=True, doc="GAE trace weight"),
    "clip_eps": HParam(0.2, doc="PPO ratio clip"),
    "ent_coef": HParam(0.01, doc="entropy bonus weight"),
    "vf_coef": HParam(0.5, doc="value loss weight"),
    "max_grad_norm": HParam(0.5, doc="global gradient-norm clip"),
    "reward_scale": HParam(1.0, doc="actor-critic: rewards are multiplied by this before the advantages and value "
                                    "targets are computed (1 = off)"),
    "eps_start": HParam(1.0, 0.0, 1.0, probability=True, doc="DQN: epsilon at the start"),
    "eps_end": HParam(0.05, 0.0, 1.0, probability=True, doc="DQN: epsilon at the end of the decay"),
    "eps_decay": HParam(0.5, 0.0, 1.0, probability=True, doc="DQN: share of training over which epsilon decays"),
    "temperature": HParam(1.0, doc="DQN: Boltzmann exploration temperature"),
    "aa_beta": HParam(0.0, 0.0, None, doc="Advantage Alignment strength (actor-critic), at least 0; 0 = off"),
    # IRAT (Wang et al. 2022): the clip ranges and KL weights that tie the individual and team
    # policies, each moved linearly from its start to its end value over the first irat_anneal
    # of training. Defaults: the authors' training scripts for MPE predator-prey and attack
    # (github.com/MDrW/ICML2022-IRAT): the individual policy's clip around the team policy
    # from 3.0 to 0.5, the team policy's clip 0.2 throughout, KL weights 0 -> 1 (individual)
    # and 1 -> 0 (team), each over the whole run.
    "irat_idv_clip_start": HParam(3.0, doc="IRAT: clip range of the individual policy's ratio to the team policy, "
                                          "at the start"),
    "irat_idv_clip_end": HParam(0.5, doc="IRAT: that clip range at the end of the annealing"),
    "irat_team_clip_start": HParam(0.2, doc="IRAT: clip range of the team policy's ratio to the individual "
                                            "(behaviour) policy, at the start"),
    "irat_team_clip_end": HParam(0.2, doc="IRAT: that clip range at the end of the annealing"),
    "irat_idv_kl_start": HParam(0.0, doc="IRAT: weight of KL(team || individual) in the individual loss, at the "
                                         "start"),
    "irat_idv_kl_end": HParam(1.0, doc="IRAT: that weight at the end of the annealing"),
    "irat_team_kl_start": HParam(1.0, doc="IRAT: weight of KL(individual || team) in the team loss, at the start"),
    "irat_team_kl_end": HParam(0.0, doc="IRAT: that weight at the end of the annealing"),
    "irat_anneal": HParam(1.0, 0.0, 1.0, probability=True, doc="IRAT: share of training over which the clip "
                                                                "ranges and KL weights move to their end values"),
    # reward shaping (TrainConfig.reward). Inequity aversion: alpha 5 and beta 0.05 as in
    # Hughes et al. 2018. SVO: a prosocial 45-degree target (McKee et al. 2020's
    # prosocial orientation) with weight 1, our default. Exchange: s = 1 is selfish.
    "ia_alpha": HParam(5.0, doc="inequity aversion: weight of being behind the others"),
    "ia_beta": HParam(0.05, doc="inequity aversion: weight of being ahead of the others"),
    "svo_angle": HParam(45.0, -180.0, 180.0, doc="SVO: target angle in degrees (0 selfish, 45 prosocial)"),
    "svo_weight": HParam(1.0, doc="SVO: weight of the angle's distance from its target"),
    "self_interest": HParam(1.0, 0.0, 1.0, probability=True, doc="reward exchange: weight of one's own reward"),
}

ACTOR_CRITIC = ("lr", "gamma", "gae_lambda", "clip_eps", "ent_coef", "vf_coef", "max_grad_norm", "reward_scale")
DQN = ("lr", "gamma", "max_grad_norm", "eps_start", "eps_end", "eps_decay", "temperature")
IRAT_TIES = ("irat_idv_clip_start", "irat_idv_clip_end", "irat_team_clip_start", "irat_team_clip_end",
             "irat_idv_kl_start", "irat_idv_kl_end", "irat_team_kl_start", "irat_team_kl_end", "irat_anneal")
IRAT = ACTOR_CRITIC + IRAT_TIES
# the hyperparameters each reward form of TrainConfig.reward reads (socialjax.train.rewards)
SHAPING_BY_FORM = {
    "individual": (),
    "common": (),
    "inequity_aversion": ("ia_alpha", "ia_beta"),
    "svo": ("svo_angle", "svo_weight"),
    "exchange": ("self_interest",),
}
SHAPING = tuple(name for names in SHAPING_BY_FORM.values() for name in names)
LOOP = ("aa_beta",) + SHAPING
PROBABILITIES = tuple(name for name, hp in HPARAMS.items() if hp.probability)


def defaults(names) -> dict[str, float]:
    """``{name: default}`` for ``names``."""
    return {name: HPARAMS[name].default for name in names}

