"""Selection between learners inside the compiled loop.

``fitness`` is each learner's mean reward per step since the previous selection.
Scripted members never take part. Every method returns the new learner states and
``parents`` ``(L,) int32``: member ``i`` now holds a copy of what member ``parents[i]``
held (``parents[i] == i`` for members that were kept). A copy is exact (parameters,
optimiser state, hyperparameters, DQN buffers) before any mutation.

- ``truncation``: the top ``ceil(select_frac * L)`` survive; every other member becomes
  a copy of a survivor (best first, cycling), with Gaussian noise of standard deviation
  ``mutation_std`` added to the copied weights.
- ``pbt`` (Jaderberg et al. 2017, exploit and explore): the bottom
  ``floor(select_frac * L)`` (at least 1) copy the top ones, then each copied
  hyperparameter named in ``pbt_hparams`` is multiplied by one of ``perturb``'s two
  factors, chosen at random.
- ``imitate`` (imitate the better peer): every member looks at one other member drawn
  uniformly and copies it when that peer's fitness is strictly higher.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from socialjax.agents.hparams import PROBABILITIES
from socialjax.train.config import TrainConfig


def select(config: TrainConfig, states, fitness: jax.Array, key: jax.Array):
    L = fitness.shape[0]
    keep = jnp.arange(L, dtype=jnp.int32)
    if config.selection == "none" or L < 2:
        return states, keep
    fitness = jnp.where(jnp.isfinite(fitness), fitness, -jnp.inf)
    rank = jnp.argsort(-fitness, stable=True).astype(jnp.int32)  # best first
    key_a, key_b = jax.random.split(key)
    if config.selection == "truncation":
        survivors = max(1, math.ceil(config.select_frac * L))
        if survivors >= L:
            return states, keep
        parents = keep.at[rank[survivors:]].set(rank[jnp.arange(L - survivors) % survivors])
    elif config.selection == "pbt":
        n = max(1, min(L // 2, math.floor(config.select_frac * L)))
        parents = keep.at[rank[L - n:]].set(rank[:n])
    else:  # imitate
        peer = (keep + jax.random.randint(key_a, (L,), 1, L)) % L
        parents = jnp.where(fitness[peer] > fitness, peer, keep).astype(jnp.int32)
    new = jax.tree_util.tree_map(lambda x: x[parents], states)
    replaced = parents != keep
    if config.selection == "truncation" and config.mutation_std > 0:
        leaves, treedef = jax.tree_util.tree_flatten(new.params)
        keys = jax.random.split(key_b, len(leaves))
        leaves = [
            x + jnp.where(_bcast(replaced, x), config.mutation_std * jax.random.normal(k, x.shape, x.dtype), 0.0)
            for x, k in zip(leaves, keys)
        ]
        new = new.replace(params=jax.tree_util.tree_unflatten(treedef, leaves))
    if config.selection == "pbt":
        hp = dict(new.hparams)
        for name, k in zip(config.pbt_hparams, jax.random.split(key_b, len(config.pbt_hparams))):
            factor = jnp.where(jax.random.bernoulli(k, 0.5, (L,)), config.perturb[1], config.perturb[0])
            value = hp[name] * factor
            if name in PROBABILITIES:  # discounts and exploration rates stay in [0, 1]
                value = jnp.clip(value, 0.0, 1.0)
            hp[name] = jnp.where(replaced, value, hp[name])
        new = new.replace(hparams=hp)
    return new, parents


def _bcast(mask: jax.Array, x: jax.Array) -> jax.Array:
    return mask.reshape(mask.shape + (1,) * (x.ndim - 1))
