"""Action and observation spaces, gymnax-style, for one agent.

A multi-agent environment returns the space of a single agent; the arrays it takes and
returns carry a leading ``num_agents`` axis on top of ``space.shape``.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


class Space:
    """Base class: a set of arrays of one ``shape`` and ``dtype``."""

    shape: tuple[int, ...]
    dtype: jnp.dtype

    def sample(self, key: jax.Array, batch_shape: Sequence[int] = ()) -> jax.Array:
        """Draw uniformly from the space; ``batch_shape`` is prepended to ``shape``."""
        raise NotImplementedError

    def valid(self, x: jax.Array) -> jax.Array:
        """Elementwise membership over the trailing ``shape``: bool of shape
        ``x.shape[: x.ndim - len(self.shape)]``. Works under ``jit``."""
        raise NotImplementedError

    def contains(self, x: jax.Array) -> jax.Array:
        """Scalar bool: every element of ``x`` (any leading batch axes) is in the space."""
        x = jnp.asarray(x)
        if x.shape[x.ndim - len(self.shape):] != self.shape:
            return jnp.asarray(False)
        return jnp.all(self.valid(x))


class Discrete(Space):
    """Integers ``0 .. n-1`` (scalar per agent)."""

    def __init__(self, n: int, dtype=jnp.int32):
        if int(n) < 1:
            raise ValueError(f"Discrete space needs n >= 1, got n={n}")
        self.n = int(n)
        self.shape = ()
        self.dtype = jnp.dtype(dtype)

    def sample(self, key, batch_shape=()):
        return jax.random.randint(key, tuple(batch_shape), 0, self.n, dtype=self.dtype)

    def valid(self, x):
        x = jnp.asarray(x)
        inside = (x >= 0) & (x < self.n)
        if jnp.issubdtype(x.dtype, jnp.floating):  # 0.5 is not an action (NaN fails every comparison)
            inside = inside & (x == jnp.floor(x))
        return inside

    def __repr__(self):
        return f"Discrete({self.n})"

    def __eq__(self, other):
        return isinstance(other, Discrete) and other.n == self.n and other.dtype == self.dtype

    def __hash__(self):
        return hash(("Discrete", self.n, str(self.dtype)))


class Box(Space):
    """Arrays of ``shape`` with ``low <= x <= high`` elementwise (bounds broadcast).

    Integer boxes hold integer codes (``sample`` draws integers in ``[low, high]``);
    float boxes sample uniformly in ``[low, high)`` where both bounds are finite.
    """

    def __init__(self, low, high, shape: Sequence[int], dtype=jnp.float32):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = jnp.dtype(dtype)
        try:
            self.low = np.broadcast_to(np.asarray(low, dtype=self.dtype), self.shape)
            self.high = np.broadcast_to(np.asarray(high, dtype=self.dtype), self.shape)
        except ValueError:
            raise ValueError(
                f"Box bounds must broadcast to shape {self.shape}, got low shape {np.shape(low)} "
                f"and high shape {np.shape(high)}"
            ) from None
        if np.any(self.low > self.high):
            raise ValueError(f"Box needs low <= high, got low={low}, high={high}")

    def sample(self, key, batch_shape=()):
        full = tuple(batch_shape) + self.shape
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(
                key, full, jnp.asarray(self.low), jnp.asarray(self.high) + 1, dtype=self.dtype
            )
        low = np.where(np.isfinite(self.low), self.low, -1.0)
        high = np.where(np.isfinite(self.high), self.high, 1.0)
        return jax.random.uniform(key, full, self.dtype, jnp.asarray(low), jnp.asarray(high))

    def valid(self, x):
        x = jnp.asarray(x)
        inside = (x >= self.low) & (x <= self.high)
        if jnp.issubdtype(x.dtype, jnp.floating):
            inside = inside & ~jnp.isnan(x)
            if jnp.issubdtype(self.dtype, jnp.integer):  # an integer box holds integers only
                inside = inside & (x == jnp.floor(x))
        axes = tuple(range(x.ndim - len(self.shape), x.ndim))
        return jnp.all(inside, axis=axes) if axes else inside

    def __repr__(self):
        lo, hi = np.unique(self.low), np.unique(self.high)
        lo = lo[0] if lo.size == 1 else "..."
        hi = hi[0] if hi.size == 1 else "..."
        return f"Box({lo}, {hi}, {self.shape}, {self.dtype})"

    def __eq__(self, other):
        return (
            isinstance(other, Box)
            and other.shape == self.shape
            and other.dtype == self.dtype
            and np.array_equal(other.low, self.low)
            and np.array_equal(other.high, self.high)
        )

    def __hash__(self):
        return hash(("Box", self.shape, str(self.dtype)))


class Dict(Space):
    """A dict of named spaces; samples and observations are dicts of arrays.

    ``valid`` is the elementwise AND over the entries (per leading batch element)."""

    def __init__(self, spaces: dict[str, Space]):
        if not spaces:
            raise ValueError("Dict space needs at least one entry")
        self.spaces = dict(spaces)
        self.shape = ()
        self.dtype = None

    def sample(self, key, batch_shape=()):
        keys = jax.random.split(key, len(self.spaces))
        return {name: s.sample(k, batch_shape) for k, (name, s) in zip(keys, self.spaces.items())}

    def valid(self, x):
        if not isinstance(x, dict) or set(x) != set(self.spaces):
            raise ValueError(f"expected a dict with keys {sorted(self.spaces)}, got {type(x).__name__}")
        out = None
        for name, s in self.spaces.items():
            v = s.valid(x[name])
            out = v if out is None else out & v
        return out

    def contains(self, x):
        if not isinstance(x, dict) or set(x) != set(self.spaces):
            return jnp.asarray(False)
        return jnp.all(jnp.stack([jnp.asarray(s.contains(x[n])) for n, s in self.spaces.items()]))

    def __getitem__(self, name: str) -> Space:
        return self.spaces[name]

    def __repr__(self):
        return "Dict(" + ", ".join(f"{k}={v!r}" for k, v in self.spaces.items()) + ")"

    def __eq__(self, other):
        return isinstance(other, Dict) and other.spaces == self.spaces

    def __hash__(self):
        return hash(("Dict", tuple(self.spaces)))
