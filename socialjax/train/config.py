"""The training configuration: one frozen dataclass, flat so that every field can be
overridden by name (``socialjax train ipd-ppo --set lr=1e-3``).

Fields come in three kinds:

- static choices that shape the compiled program (``algo``, ``num_envs``, ``seating``,
  ...): changing them recompiles;
- numeric hyperparameters (:data:`SWEEPABLE`): a float, or a list/array of values. Array
  values define a grid (the outer product over all array fields) that
  :func:`socialjax.train.run` vmaps over, one compiled call for the whole sweep;
- population, selection and evaluation settings.

Bool fields (``recurrent``, ``anneal_lr``, ``value_norm``, ``evaluate``, ``coplayer_id``) are parsed by
:func:`socialjax.core.params.parse_bool`: ``"false"`` (from ``--set`` or a file) is
False, ``"maybe"`` an error. Numbers must be finite.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import numpy as np

from socialjax.agents import hparams as hp
from socialjax.agents.registry import LEARNERS, algos, algos_where, learner_class
from socialjax.core.params import brief, parse_bool

REWARDS = ("individual", "common", "inequity_aversion", "svo", "exchange")  # socialjax.train.rewards
# the network options (socialjax.agents.networks: ENCODERS, CONVS, PRECISIONS; written
# out here so that reading a config does not import JAX)
NETWORKS = ("auto", "mlp", "onehot", "cnn", "cnn_sj")
CONVS = ("auto", "patch", "xla", "looped")
PRECISIONS = ("float32", "bfloat16")
SEATINGS = ("independent", "shared", "grouped", "random", "fixed")
SELECTIONS = ("none", "truncation", "pbt", "imitate")

# The hyperparameters the learners read from their states and the loop's own (any may be
# an array), declared with their defaults and ranges in socialjax.agents.hparams.
SWEEPABLE = tuple(dict.fromkeys([name for cls in LEARNERS.values() for name in cls.hparams] + list(hp.LOOP)))


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything about a training run except the environment.

    Sizes: each update collects ``rollout_len`` steps of ``num_envs`` games; with ``N``
    seats per game that is ``num_envs * N`` seats, shared among the members (each of the
    ``L`` learners holds ``M = num_envs * N * learner_fraction / L`` of them).
    """

    # learner ------------------------------------------------------------------------
    algo: str = "ppo"  # ppo | a2c | mappo | irat | dqn | vdn, or a name given to register_learner
    network: str = "auto"  # auto | mlp | onehot | cnn | cnn_sj (see socialjax.agents.networks)
    hidden: int = 64
    recurrent: bool = False  # GRU core (PPO/A2C)
    embed_dim: int = 8  # CNN: embedding width of a grid code
    channels: int = 32  # CNN: channels of each convolution
    conv: str = "auto"  # CNN: looped (fast on CPU) | xla (fast on GPU) | patch | auto (by backend)
    precision: str = "float32"  # float32 | bfloat16 (bf16 compute; float32 parameters and optimiser state)
    # schedule -----------------------------------------------------------------------
    num_envs: int = 16
    rollout_len: int = 128
    num_updates: int = 100
    update_epochs: int = 4
    num_minibatches: int = 4
    anneal_lr: bool = True
    value_norm: bool = False  # actor-critic: the value head learns normalised returns (MAPPO's ValueNorm)
    # hyperparameters (float, or a sequence of floats to sweep) -----------------------
    lr: Any = hp.HPARAMS["lr"].field()
    gamma: Any = hp.HPARAMS["gamma"].field()
    gae_lambda: Any = hp.HPARAMS["gae_lambda"].field()
    clip_eps: Any = hp.HPARAMS["clip_eps"].field()
    ent_coef: Any = hp.HPARAMS["ent_coef"].field()
    vf_coef: Any = hp.HPARAMS["vf_coef"].field()
    max_grad_norm: Any = hp.HPARAMS["max_grad_norm"].field()
    reward_scale: Any = hp.HPARAMS["reward_scale"].field()  # actor-critic: rewards x this before GAE
    aa_beta: Any = hp.HPARAMS["aa_beta"].field()  # Advantage Alignment strength (PPO/A2C); 0 = off
    # IRAT (see socialjax.agents.irat) ------------------------------------------------------
    irat_idv_clip_start: Any = hp.HPARAMS["irat_idv_clip_start"].field()
    irat_idv_clip_end: Any = hp.HPARAMS["irat_idv_clip_end"].field()
    irat_team_clip_start: Any = hp.HPARAMS["irat_team_clip_start"].field()
    irat_team_clip_end: Any = hp.HPARAMS["irat_team_clip_end"].field()
    irat_idv_kl_start: Any = hp.HPARAMS["irat_idv_kl_start"].field()
    irat_idv_kl_end: Any = hp.HPARAMS["irat_idv_kl_end"].field()
    irat_team_kl_start: Any = hp.HPARAMS["irat_team_kl_start"].field()
    irat_team_kl_end: Any = hp.HPARAMS["irat_team_kl_end"].field()
    irat_anneal: Any = hp.HPARAMS["irat_anneal"].field()
    # DQN ------------------------------------------------------------------------------
    eps_start: Any = hp.HPARAMS["eps_start"].field()
    eps_end: Any = hp.HPARAMS["eps_end"].field()
    eps_decay: Any = hp.HPARAMS["eps_decay"].field()  # fraction of training over which epsilon decays linearly
    temperature: Any = hp.HPARAMS["temperature"].field()
    # reward shaping (socialjax.train.rewards): a form for all learners or one per learner
    reward: Any = "individual"  # individual | common | inequity_aversion | svo | exchange
    ia_alpha: Any = hp.HPARAMS["ia_alpha"].field()
    ia_beta: Any = hp.HPARAMS["ia_beta"].field()
    svo_angle: Any = hp.HPARAMS["svo_angle"].field()
    svo_weight: Any = hp.HPARAMS["svo_weight"].field()
    self_interest: Any = hp.HPARAMS["self_interest"].field()  # Boltzmann exploration
    exploration: str = "epsilon"  # epsilon | boltzmann
    buffer_rollouts: int = 8
    dqn_updates: int = 4  # gradient steps per rollout
    dqn_batch: int = 256
    n_step: int = 3
    target_update_every: int = 10  # updates between target-network copies
    # population -------------------------------------------------------------------------
    seating: str = "independent"  # independent | shared | grouped | random | fixed
    num_learners: int | None = None  # learners in the population (default from seating)
    groups: tuple[int, ...] | None = None  # grouped: group (= learner) of each seat
    seats: tuple[int, ...] | None = None  # fixed: member of each seat (learners first, then scripted); k*N: k games'
    scripted: tuple[str, ...] = ()  # scripted members, after the learners
    learner_fraction: float | None = None  # random seating: share of seats held by learners
    coplayer_id: bool = False  # learners also see their co-players (scripted: described; learners: zeros)
    # selection --------------------------------------------------------------------------
    selection: str = "none"  # none | truncation | pbt | imitate
    select_every: int = 10  # updates between selection events
    select_frac: float = 0.25  # truncation: share that survives; pbt: share replaced
    mutation_std: float = 0.0  # truncation: Gaussian noise added to copied weights
    perturb: tuple[float, float] = (0.8, 1.2)  # pbt: factors applied to copied hyperparameters
    pbt_hparams: tuple[str, ...] = ("lr", "ent_coef")
    # evaluation -------------------------------------------------------------------------
    evaluate: bool = True
    eval_envs: int = 0  # 0: num_envs
    eval_steps: int = 0  # 0: rollout_len
    background: tuple[str, ...] = ()  # held-out scripted bots for focal-vs-background
    num_focal: int | None = None  # focal seats in that scenario (default: half, at least 1)
    # output -------------------------------------------------------------------------------
    log_every: int = 0  # progress line every k updates (0 = none)

    def __post_init__(self):
        for name in BOOL_FIELDS:
            object.__setattr__(self, name, parse_bool(name, getattr(self, name)))
        for name in INT_FIELDS:  # a numpy int as a Python int: sizes computed from it must not wrap (int8)
            value = getattr(self, name)
            if isinstance(value, np.integer) and not isinstance(value, np.timedelta64):
                object.__setattr__(self, name, int(value))

    # -- derived ------------------------------------------------------------------------
    def replace(self, **changes: Any) -> TrainConfig:
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ValueError(f"TrainConfig has no field(s) {unknown}; fields: {field_names()}")
        return dataclasses.replace(self, **changes)

    def hparam_names(self) -> tuple[str, ...]:
        """The hyperparameters of this config's learner (looked up in the registry now),
        then the loop's."""
        return learner_class(self.algo).hparams + hp.LOOP

    def sweep_axes(self) -> dict[str, np.ndarray]:
        """The hyperparameters given as arrays: ``{name: (k,) values}``."""
        out = {}
        for name in SWEEPABLE:
            v = np.asarray(getattr(self, name), np.float32)
            if v.ndim > 1:
                raise ValueError(f"{name} must be a number or a 1-D list of numbers, got shape {v.shape}")
            if v.ndim == 1:
                if v.size == 0:
                    raise ValueError(f"{name} is an empty list")
                out[name] = v
        return out

    def hparam_grid(self) -> dict[str, np.ndarray]:
        """All hyperparameters as ``(G,)`` arrays over the outer product of the swept ones
        (``G = 1`` without a sweep)."""
        axes = self.sweep_axes()
        names = list(axes)
        combos = list(itertools.product(*[axes[n] for n in names])) or [()]
        grid = {}
        for name in SWEEPABLE:
            if name in axes:
                grid[name] = np.array([c[names.index(name)] for c in combos], np.float32)
            else:
                grid[name] = np.full((len(combos),), float(getattr(self, name)), np.float32)
        return grid

    def scalar_hparams(self) -> dict[str, float]:
        if self.sweep_axes():
            raise ValueError(
                f"hyperparameters {sorted(self.sweep_axes())} are arrays: pass hparams= to train, "
                "or use socialjax.train.run, which vmaps over the grid"
            )
        return {name: float(getattr(self, name)) for name in SWEEPABLE}

    def validate(self) -> None:
        """Errors for settings that cannot work, before anything is compiled."""
        _choice("algo", self.algo, algos())  # read now: learners registered later count
        _choice("seating", self.seating, SEATINGS)
        _choice("selection", self.selection, SELECTIONS)
        _choice("exploration", self.exploration, ("epsilon", "boltzmann"))
        forms = (self.reward,) if isinstance(self.reward, str) else self.reward
        if not isinstance(forms, (tuple, list)) or not forms or any(f not in REWARDS for f in forms):
            raise ValueError(f"reward must be one of {REWARDS}, or a list of them (one per learner); "
                             f"got {brief(self.reward)}")
        _choice("network", self.network, NETWORKS)
        _choice("conv", self.conv, CONVS)
        _choice("precision", self.precision, PRECISIONS)
        for name in ("hidden", "embed_dim", "channels", "num_envs", "rollout_len", "num_updates", "update_epochs",
                     "num_minibatches", "buffer_rollouts", "dqn_updates", "dqn_batch", "n_step",
                     "target_update_every", "select_every"):
            _check_int(name, getattr(self, name), 1, "a positive int")
        for name in ("eval_envs", "eval_steps", "log_every"):
            _check_int(name, getattr(self, name), 0, "an int >= 0")
        for name in ("num_learners", "num_focal"):
            if getattr(self, name) is not None:
                _check_int(name, getattr(self, name), 1, "None or a positive int")
        for name in ("scripted", "background", "pbt_hparams"):
            names = getattr(self, name)
            if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
                raise ValueError(f"{name} must be a list of names, got {brief(names)}")
        for name in ("groups", "seats"):
            indices = getattr(self, name)
            if indices is not None and (not isinstance(indices, (tuple, list))
                                        or not all(_int_in(i, 0) for i in indices)):
                raise ValueError(f"{name} must be None or a list of ints >= 0, got {brief(indices)}")
        for name in SWEEPABLE:  # finite and in the declared range (socialjax.agents.hparams)
            hp.HPARAMS[name].check(name, getattr(self, name))
        grid = self.hparam_grid()
        if not _finite(self.select_frac) or not 0.0 < self.select_frac <= 1.0:
            raise ValueError(f"select_frac must be in (0, 1], got {brief(self.select_frac)}")
        if not _finite(self.mutation_std) or self.mutation_std < 0:
            raise ValueError(f"mutation_std must be a finite number >= 0, got {brief(self.mutation_std)}")
        perturb = tuple(self.perturb) if isinstance(self.perturb, (tuple, list)) else ()
        if len(perturb) != 2 or not all(_finite(p) and p > 0 for p in perturb):
            raise ValueError(f"perturb must be two finite positive factors, got {brief(self.perturb)}")
        bad = [n for n in self.pbt_hparams if n not in self.hparam_names()]
        if bad and self.selection == "pbt":
            raise ValueError(f"pbt_hparams {bad} are not hyperparameters of {self.algo}: {self.hparam_names()}")
        if self.learner_fraction is not None and (not _finite(self.learner_fraction)
                                                  or not 0.0 < self.learner_fraction <= 1.0):
            raise ValueError(f"learner_fraction must be None or in (0, 1], got {brief(self.learner_fraction)}")
        inert = [(name, rule) for name, rule, applies in (
            ("groups", "seating='grouped'", self.seating == "grouped"),
            ("seats", "seating='fixed'", self.seating == "fixed"),
            ("learner_fraction", "seating='random'", self.seating == "random"),
            ("num_focal", "background bots (background=...)", bool(self.background)),
        ) if getattr(self, name) is not None and not applies]
        if self.mutation_std != 0 and self.selection != "truncation":
            inert.append(("mutation_std", "selection='truncation'"))
        if inert:  # as for env params: a setting nothing reads is an error, not a silent no-op
            raise ValueError("; ".join(f"{name}={brief(getattr(self, name))} is read only with {rule}, and this "
                                       f"config has seating={brief(self.seating)}, selection={brief(self.selection)}"
                                       f", background={brief(self.background)}" for name, rule in inert))
        learner = learner_class(self.algo)
        if self.recurrent and not learner.RECURRENT:
            raise ValueError(f"recurrent=True is only supported by {' and '.join(algos_where('RECURRENT'))}")
        if self.value_norm and not learner.VALUE_NORM:
            raise ValueError(f"value_norm=True is only read by {' and '.join(algos_where('VALUE_NORM'))}")
        if not learner.ALIGNS and np.any(grid["aa_beta"] != 0):
            raise ValueError(f"aa_beta (Advantage Alignment) needs an actor-critic learner "
                             f"({' or '.join(algos_where('ALIGNS'))})")
        unread = self.unread()
        if unread:  # a sweep over a setting nothing reads would give identical runs
            raise ValueError("; ".join(f"{name}={brief(getattr(self, name))} is not read {why}"
                                       for name, why in unread.items()) + ": leave it at its default")

    def without_unread(self, keep: tuple[str, ...] = ()) -> TrainConfig:
        """This config with the fields its learner, reward forms and exploration never read
        (:meth:`unread`) back at their defaults, except those named in ``keep``: what a
        preset made for one learner becomes when another is asked for (``--set
        algo=vdn`` on an IPPO preset drops its ``num_minibatches``)."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        return self.replace(**{name: defaults[name] for name in self.unread() if name not in keep})

    def unread(self) -> dict[str, str]:
        """The fields set away from their defaults that this config's learner, reward forms
        and exploration never read, each with the reason: ``{name: "by algo='ppo'"}``."""
        learner = learner_class(self.algo) if isinstance(self.algo, str) and self.algo in LEARNERS else None
        if learner is None:  # an unknown algo is validate's to report
            return {}
        # a reward that is neither a form nor a list of forms is validate's to report
        forms = (self.reward,) if isinstance(self.reward, str) else \
            tuple(f for f in self.reward if isinstance(f, str)) if isinstance(self.reward, (tuple, list)) else ()
        own = set(learner.hparams) | set(getattr(learner, "settings", ()))
        others = {n for cls in LEARNERS.values() for n in (*cls.hparams, *getattr(cls, "settings", ()))}
        unread = {name: f"by algo={self.algo!r}" for name in others - own - set(hp.LOOP)}
        shaping = {name for form in forms for name in hp.SHAPING_BY_FORM.get(form, ())}
        unread.update({name: f"with reward={brief(self.reward)}" for name in set(hp.SHAPING) - shaping})
        if "exploration" in own:
            idle = ("temperature",) if self.exploration == "epsilon" else ("eps_start", "eps_end", "eps_decay")
            unread.update({name: f"with exploration={self.exploration!r}" for name in idle})
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        return {name: why for name, why in sorted(unread.items()) if not _same(getattr(self, name), defaults[name])}


BOOL_FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig) if f.type in ("bool", bool))
INT_FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig) if f.type in ("int", "int | None"))


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(TrainConfig)]


INT32_MAX = 2**31 - 1  # sizes and counts are int32 in the compiled program


def _check_int(name: str, value: Any, low: int, what: str) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is an int in ``[low, INT32_MAX]``."""
    if not _int_in(value, low, None):
        raise ValueError(f"{name} must be {what}, got {brief(value)}")
    if value > INT32_MAX:
        raise ValueError(f"{name}={value} does not fit int32 (at most {INT32_MAX})")


def _int_in(value: Any, low: int, high: int | None = INT32_MAX) -> bool:
    """An int (numpy's too, not a bool) in ``[low, high]`` (``None``: unbounded)."""
    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_, np.timedelta64))
    return is_int and low <= value and (high is None or value <= high)


def _finite(value: Any) -> bool:
    """A real number (not a bool or a string) that is neither NaN nor infinite."""
    if isinstance(value, (bool, np.timedelta64)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond float64
        return False


def _same(value: Any, default: Any) -> bool:
    """Whether a field holds its default (a list of values, a sweep, never does)."""
    if isinstance(value, (tuple, list, np.ndarray)) and not isinstance(default, (tuple, list)):
        return False
    try:
        return bool(np.all(np.asarray(value) == np.asarray(default)))
    except (TypeError, ValueError):
        return False


def _choice(name: str, value: Any, options: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {brief(value)}")
