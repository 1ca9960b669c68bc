"""The learners by name (``TrainConfig.algo``): :data:`LEARNERS` and
:func:`learner_class`. Each class carries what the population loop asks of it besides
the :class:`~socialjax.agents.learner.Learner` contract: the hyperparameters it reads
(``hparams``, declared in :mod:`socialjax.agents.hparams`), whether it can be recurrent
(``RECURRENT``) and whether its ``prepare`` gives advantages that Advantage Alignment may
mix (``ALIGNS``), its construction from a config (``from_config``) and the batch checks
(``check_batch``).
"""

from __future__ import annotations

from socialjax.agents.dqn import DQNLearner
from socialjax.agents.ppo import ActorCriticLearner

LEARNERS: dict[str, type] = {"ppo": ActorCriticLearner, "a2c": ActorCriticLearner, "dqn": DQNLearner}
ALGOS = tuple(LEARNERS)


def learner_class(algo: str) -> type:
    """The learner class of ``algo`` (``ValueError`` for an unknown name)."""
    if algo not in LEARNERS:
        raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
    return LEARNERS[algo]


def algos_where(flag: str) -> tuple[str, ...]:
    """The names whose learner class has the class attribute ``flag`` true
    (``"RECURRENT"``, ``"ALIGNS"``), for error messages."""
    return tuple(name for name, cls in LEARNERS.items() if getattr(cls, flag))
