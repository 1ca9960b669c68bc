"""Spaces: sampling stays inside, membership is exact, bad construction raises."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax.core.spaces import Box, Discrete

KEY = jax.random.key(0)
BATCH = (1000,)


def test_discrete_sample_covers_exactly_the_range():
    space = Discrete(5)
    x = np.asarray(space.sample(KEY, BATCH))
    chex.assert_shape(x, BATCH)
    chex.assert_type(x, np.int32)
    assert set(np.unique(x)) == {0, 1, 2, 3, 4}
    assert bool(space.contains(x))


def test_discrete_valid_and_contains():
    space = Discrete(3)
    x = jnp.array([-1, 0, 2, 3])
    np.testing.assert_array_equal(space.valid(x), [False, True, True, False])
    assert not bool(space.contains(x))
    assert bool(space.contains(jnp.array([[0, 1], [2, 2]])))
    assert bool(space.contains(jnp.int32(2)))
    assert not bool(space.contains(jnp.int32(3)))


def test_discrete_and_integer_box_hold_integers_only():
    """A float that is not a whole number (or NaN) is not an action; 1.0 is."""
    space = Discrete(2)
    np.testing.assert_array_equal(space.valid(jnp.array([0.5, 1.0, jnp.nan, 0.0])), [False, True, False, True])
    assert not bool(space.contains(0.5)) and bool(space.contains(1.0))
    box = Box(0, 3, (2,), jnp.int32)
    assert not bool(box.contains(jnp.array([1.5, 2.0]))) and bool(box.contains(jnp.array([1.0, 2.0])))
    assert bool(Box(0.0, 1.0, ()).contains(0.5))  # a float box keeps its fractions


def test_discrete_valid_under_jit():
    space = Discrete(2)
    valid = jax.jit(space.valid)(jnp.array([0, 1, 2]))
    np.testing.assert_array_equal(valid, [True, True, False])


@pytest.mark.parametrize("n", [0, -3])
def test_discrete_needs_positive_n(n):
    with pytest.raises(ValueError, match="n >= 1"):
        Discrete(n)


def test_float_box_sample_inside_bounds():
    low = np.array([0.0, -2.0, 10.0], np.float32)
    high = np.array([1.0, 2.0, 10.5], np.float32)
    space = Box(low, high, (3,))
    x = np.asarray(space.sample(KEY, BATCH))
    chex.assert_shape(x, BATCH + (3,))
    chex.assert_type(x, np.float32)
    assert np.all(x >= low) and np.all(x <= high)
    assert bool(space.contains(x))


def test_int_box_sample_includes_both_bounds():
    space = Box(0, 4, (2,), jnp.int32)
    x = np.asarray(space.sample(KEY, BATCH))
    chex.assert_type(x, np.int32)
    assert set(np.unique(x)) == {0, 1, 2, 3, 4}


def test_unbounded_box_samples_finite_values():
    space = Box(-np.inf, np.inf, (4,))
    x = np.asarray(space.sample(KEY, BATCH))
    chex.assert_tree_all_finite(x)
    assert bool(space.contains(x))


def test_box_valid_reduces_over_the_space_shape():
    space = Box(0.0, 1.0, (2,))
    x = jnp.array([[0.0, 1.0], [0.5, 1.5], [-0.1, 0.5]])
    np.testing.assert_array_equal(space.valid(x), [True, False, False])
    assert not bool(space.contains(x))
    assert bool(space.contains(x[:1]))


def test_box_rejects_nan():
    space = Box(-np.inf, np.inf, (2,))
    assert bool(space.contains(jnp.array([0.0, 1e30])))
    assert not bool(space.contains(jnp.array([0.0, jnp.nan])))
    np.testing.assert_array_equal(space.valid(jnp.array([[jnp.nan, 0.0], [1.0, 2.0]])), [False, True])


def test_box_rejects_wrong_shape():
    space = Box(0.0, 1.0, (3,))
    assert not bool(space.contains(jnp.zeros((2,))))
    assert not bool(space.contains(jnp.zeros((3, 2))))
    assert bool(space.contains(jnp.zeros((5, 3))))


def test_box_with_per_element_bounds():
    space = Box(0, np.array([1, 9]), (2,), jnp.int32)
    np.testing.assert_array_equal(space.valid(jnp.array([[1, 9], [2, 9], [1, 10]])), [True, False, False])


def test_box_needs_low_below_high():
    with pytest.raises(ValueError, match="low <= high"):
        Box(1.0, 0.0, (2,))


def test_box_bounds_must_broadcast_to_shape():
    with pytest.raises(ValueError):
        Box(np.zeros(3), 1.0, (2,))


def test_equality():
    assert Discrete(3) == Discrete(3) and Discrete(3) != Discrete(4)
    assert Box(0, 1, (2,)) == Box(0.0, 1.0, (2,))
    assert Box(0, 1, (2,)) != Box(0, 2, (2,))
    assert Box(0, 1, (2,)) != Box(0, 1, (2,), jnp.int32)
