"""The learners by name (``TrainConfig.algo``): :data:`LEARNERS`, :func:`learner_class`
and :func:`register_learner`. Each class carries what the population loop asks of it
besides the :class:`~socialjax.agents.learner.Learner` contract: the hyperparameters it
reads (``hparams``, declared in :mod:`socialjax.agents.hparams`), whether it can be
recurrent (``RECURRENT``), whether its ``prepare`` gives advantages that Advantage
Alignment may mix (``ALIGNS``), whether it sees the game's global observation
(``CENTRAL_CRITIC``), whether it reads ``TrainConfig.value_norm`` (``VALUE_NORM``), its
construction from a config (``from_config``) and the batch checks (``check_batch``).

The names are read when asked for (:func:`algos`), so a learner registered by user code
is a valid ``TrainConfig.algo`` from then on (docs/architecture.md, "Adding a learner").
"""

from __future__ import annotations

from socialjax.agents import hparams as hp
from socialjax.agents.dqn import DQNLearner
from socialjax.agents.irat import IRATLearner
from socialjax.agents.mappo import MAPPOLearner
from socialjax.agents.ppo import ActorCriticLearner
from socialjax.agents.vdn import VDNLearner

LEARNERS: dict[str, type] = {"ppo": ActorCriticLearner, "a2c": ActorCriticLearner, "mappo": MAPPOLearner,
                             "irat": IRATLearner, "dqn": DQNLearner, "vdn": VDNLearner}
# what register_learner checks a class for (the Learner protocol's class-level part;
# recurrent and hidden_size are set per instance)
PROTOCOL_FLAGS = ("RECURRENT", "ALIGNS", "CENTRAL_CRITIC", "VALUE_NORM")
PROTOCOL_METHODS = ("from_config", "check_batch", "init", "act", "play", "greedy", "prepare", "update")


def algos() -> tuple[str, ...]:
    """The registered names, in registration order."""
    return tuple(LEARNERS)


def learner_class(algo: str) -> type:
    """The learner class of ``algo`` (``ValueError`` for an unknown name)."""
    if algo not in LEARNERS:
        raise ValueError(f"algo must be one of {algos()}, got {algo!r}")
    return LEARNERS[algo]


def algos_where(flag: str) -> tuple[str, ...]:
    """The names whose learner class has the class attribute ``flag`` true (one of
    :data:`PROTOCOL_FLAGS`), for error messages."""
    return tuple(name for name, cls in LEARNERS.items() if getattr(cls, flag))


def register_learner(name: str, cls: type) -> type:
    """Make ``cls`` the learner of ``TrainConfig(algo=name)``; returns ``cls``.

    ``ValueError`` for a name already taken, a class without the protocol's class
    attributes (``hparams`` and :data:`PROTOCOL_FLAGS`) or methods, or a hyperparameter
    not declared in :data:`socialjax.agents.hparams.HPARAMS` (each declared one is a
    ``TrainConfig`` field; fields are not added at run time)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a learner's name must be a non-empty string, got {name!r}")
    if name in LEARNERS:
        raise ValueError(f"a learner is already registered as {name!r} ({LEARNERS[name].__name__}); "
                         f"registered: {algos()}")
    missing = [a for a in ("hparams",) + PROTOCOL_FLAGS if not hasattr(cls, a)]
    missing += [m for m in PROTOCOL_METHODS if not callable(getattr(cls, m, None))]
    if missing:
        raise ValueError(f"{cls.__name__} does not keep the Learner protocol (socialjax.agents.learner): "
                         f"missing {missing}")
    bad_flags = [f for f in PROTOCOL_FLAGS if not isinstance(getattr(cls, f), bool)]
    if bad_flags:
        raise ValueError(f"{cls.__name__}.{' and .'.join(bad_flags)} must be True or False")
    names = cls.hparams
    if not isinstance(names, tuple) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{cls.__name__}.hparams must be a tuple of hyperparameter names, got {names!r}")
    undeclared = [n for n in names if n not in hp.HPARAMS]
    if undeclared:
        raise ValueError(f"{cls.__name__}.hparams names {undeclared}, not declared in socialjax.agents.hparams: "
                         f"a learner reads declared hyperparameters, each a TrainConfig field "
                         f"({', '.join(hp.HPARAMS)})")
    LEARNERS[name] = cls
    return cls
