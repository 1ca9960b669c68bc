"""How the learners' ``(L, M)`` block maps onto the seats: the reshape and transpose
shortcuts of fixed seatings move exactly the seats that the general gather moves."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax.train import TrainConfig
from socialjax.train.seating import make_plan

E, N = 3, 4


@pytest.mark.parametrize("changes, layout", [
    (dict(seating="shared"), "reshape"),
    (dict(seating="independent"), "transpose"),
    (dict(seating="grouped", groups=(0, 1, 0, 1)), "gather"),
    (dict(seating="fixed", seats=(0, 1, 2, 2), scripted=("tft",)), "gather"),
    (dict(seating="fixed", seats=(0, 0, 1, 1), scripted=("tft",)), "gather"),
    (dict(seating="random", num_learners=2, scripted=("tft",), learner_fraction=0.5), "gather"),
])
def test_learner_block_gathers_and_scatters_the_learners_seats(changes, layout):
    plan = make_plan(TrainConfig(num_envs=E, **changes), N)
    assign, order = plan.seat(jax.random.key(0))
    seats = plan.learner_seats(order)
    assert seats.layout == layout
    L, M = plan.num_learners, plan.seats_per_learner
    flat = np.arange(E * N, dtype=np.int32) * 10 + 7  # a distinct value per seat
    block = np.asarray(seats.gather(flat))
    assert block.shape == (L, M)
    assign = np.asarray(assign).reshape(-1)
    for learner in range(L):  # each learner's row holds its own seats, in seat order
        np.testing.assert_array_equal(block[learner], flat[assign == learner])
    # scatter writes the block back into exactly those seats and leaves the others
    base = -jnp.ones(E * N, jnp.int32)
    back = np.asarray(seats.scatter(base, block))
    mine = assign < L
    np.testing.assert_array_equal(back[mine], flat[mine])
    assert (back[~mine] == -1).all()
    # trailing axes travel with the seat
    wide = np.stack([flat, -flat], axis=-1)
    np.testing.assert_array_equal(np.asarray(seats.gather(wide))[..., 1], -block)


@pytest.mark.parametrize("changes, field, rule", [
    (dict(groups=(0, 0)), "groups", "seating='grouped'"),
    (dict(seats=(0, 1)), "seats", "seating='fixed'"),
    (dict(seating="fixed", seats=(0, 1), scripted=("tft",), learner_fraction=0.5), "learner_fraction",
     "seating='random'"),
    (dict(num_focal=100), "num_focal", "background bots"),
    (dict(selection="pbt", mutation_std=0.1), "mutation_std", "selection='truncation'"),
])
def test_a_setting_nothing_reads_is_an_error(changes, field, rule):
    """As for env params: a population or evaluation setting that this config's seating,
    selection or evaluation never reads is refused, not silently ignored (``--set
    groups=[0,0]`` on an independent-seating preset did nothing)."""
    with pytest.raises(ValueError, match=rf"{field}=.* is read only with {rule}"):
        TrainConfig(**changes).validate()
    # the same settings where they are read: no error
    TrainConfig(seating="grouped", groups=(0, 0)).validate()
    TrainConfig(selection="truncation", mutation_std=0.1).validate()
    TrainConfig(background=("alld",), num_focal=1).validate()
