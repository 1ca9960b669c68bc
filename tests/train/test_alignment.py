"""Advantage Alignment reads each learner's own discount, the one its GAE used
(``state.hparams["gamma"]``), so the two agree when PBT or a sweep gives members
different discounts."""

import jax
import jax.numpy as jnp
import numpy as np

import socialjax as sj
from socialjax.agents.learner import Rollout
from socialjax.agents.ppo import advantage_alignment
from socialjax.train import TrainConfig, make_train, rollout
from socialjax.train.seated import Seating, Table
from socialjax.train.seating import make_plan

GAMMAS = np.array([0.5, 0.9], np.float32)


def test_align_uses_each_learners_own_gamma():
    """Independent seating, two learners with discounts 0.5 and 0.9: each seat's aligned
    advantage is what Advantage Alignment gives with its own learner's discount."""
    E, N, T = 3, 2, 6
    plan = make_plan(TrainConfig(num_envs=E, rollout_len=T), N)
    assign, order = plan.seat(jax.random.key(0))
    table = Table(None, None, None, plan.learner_seats(order), (), plan.num_learners,
                  Seating(assign=assign, order=order, slots=()))
    adv = jax.random.normal(jax.random.key(1), (N, T, E))  # (L, T, M): learner i holds seat i of every game
    done = jnp.zeros((N, T, E), bool).at[:, 3].set(True)
    ro = Rollout(obs=None, reset=None, action=None, reward=None, done=done, aux={}, hidden0=None, last_obs=None,
                 last_reset=None, last_hidden=None)
    out = rollout.align({"adv": adv}, ro, table, jnp.asarray(GAMMAS), jnp.float32(1.5), T)["adv"]
    seats = jnp.transpose(adv, (1, 2, 0))  # (T, E, N)
    for i, gamma in enumerate(GAMMAS):
        want = advantage_alignment(seats, done[0], jnp.float32(gamma), jnp.float32(1.5))[..., i]  # (T, E)
        np.testing.assert_allclose(np.asarray(out[i]), np.asarray(want), rtol=1e-6, atol=1e-7)
    other = advantage_alignment(seats, done[0], jnp.float32(GAMMAS[1]), jnp.float32(1.5))[..., 0]
    assert not np.allclose(np.asarray(out[0]), np.asarray(other))  # the discount matters here


def test_the_loop_aligns_with_the_members_gamma(monkeypatch):
    """In the loop, the discount handed to the alignment is the members' (here set apart
    as PBT would), not the run's."""
    env = sj.make("ipd", num_rounds=4)
    config = TrainConfig(num_envs=2, rollout_len=4, num_updates=1, hidden=8, num_minibatches=2, aa_beta=0.5,
                         evaluate=False)
    train = make_train(env, config)
    seen = []
    real = rollout.align

    def spy(prep, ro, table, gamma, beta, T):
        jax.debug.callback(lambda g: seen.append(np.asarray(g)), gamma)
        return real(prep, ro, table, gamma, beta, T)

    monkeypatch.setattr("socialjax.train.population.align", spy)
    state = train.init(jax.random.key(0))
    learners = state.learners.replace(hparams={**state.learners.hparams, "gamma": jnp.asarray(GAMMAS)})
    jax.block_until_ready(train.updates(state.replace(learners=learners), 0, length=1))
    np.testing.assert_array_equal(seen[0], GAMMAS)
