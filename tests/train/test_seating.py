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


@pytest.mark.parametrize("changes, field, rule", [
    (dict(irat_idv_clip_start=0.3), "irat_idv_clip_start", "by algo='ppo'"),
    (dict(algo="dqn", clip_eps=0.3), "clip_eps", "by algo='dqn'"),
    (dict(algo="vdn", num_minibatches=8), "num_minibatches", "by algo='vdn'"),
    (dict(n_step=5), "n_step", "by algo='ppo'"),
    (dict(ia_alpha=2.0), "ia_alpha", "with reward='individual'"),
    (dict(reward="svo", ia_beta=(0.0, 0.1)), "ia_beta", "with reward='svo'"),
    (dict(algo="dqn", temperature=(0.5, 2.0)), "temperature", "with exploration='epsilon'"),
    (dict(algo="dqn", exploration="boltzmann", eps_start=0.5), "eps_start", "with exploration='boltzmann'"),
])
def test_a_hyperparameter_the_learner_never_reads_is_an_error(changes, field, rule):
    """A learner's setting under another learner, a reward form's weight under another
    form, an exploration's rate under the other: refused with the field and the reason
    (a sweep over one gave identical runs), and accepted where it is read."""
    with pytest.raises(ValueError, match=rf"{field}=.* is not read {rule}"):
        TrainConfig(**changes).validate()
    TrainConfig(algo="irat", irat_idv_clip_start=0.3).validate()
    TrainConfig(algo="dqn", n_step=5, exploration="boltzmann", temperature=(0.5, 2.0)).validate()
    TrainConfig(reward=("inequity_aversion", "svo"), ia_alpha=2.0, svo_angle=30.0).validate()
    TrainConfig(algo="ppo", clip_eps=0.1, num_minibatches=8).validate()


def test_a_preset_run_with_another_learner_drops_the_settings_it_never_reads():
    """``socialjax train harvest-ippo-small --set algo=vdn``: the preset's PPO sizes
    (2 epochs, 2 minibatches) go back to their defaults instead of refusing the run; the
    same setting given by the user is still refused."""
    from socialjax.train.presets import get_preset

    preset = get_preset("harvest-ippo-small")
    assert (preset.make_config().update_epochs, preset.make_config().num_minibatches) == (2, 2)
    vdn = preset.make_config(algo="vdn", seating="shared")
    defaults = TrainConfig()
    assert (vdn.update_epochs, vdn.num_minibatches) == (defaults.update_epochs, defaults.num_minibatches)
    assert vdn.without_unread() == vdn
    with pytest.raises(ValueError, match="num_minibatches=2 is not read by algo='vdn'"):
        preset.make_config(algo="vdn", seating="shared", num_minibatches=2)


@pytest.mark.parametrize("changes, message", [(dict(reward=5), "reward must be one of"),
                                              (dict(algo="sarsa"), "algo must be one of")])
def test_a_bad_reward_or_algo_on_a_preset_is_its_own_error(changes, message):
    """Dropping a preset's unread settings never hides what is wrong with the override."""
    from socialjax.train.presets import get_preset

    with pytest.raises(ValueError, match=message):
        get_preset("harvest-ippo-small").make_config(**changes)
