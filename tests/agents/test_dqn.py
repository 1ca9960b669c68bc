"""DQN learner: n-step targets on hand-made streams, the replay buffer, the exploration
schedule, the target network, option checks, and learning a two-armed bandit.

XLA compilation dominates the run time, so the tests share one small learner, one
initial state and one compiled copy of each method (module-scoped fixture), and build
their rollouts with numpy.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import OFF_CPU_ATOL, OFF_CPU_RTOL, tol

from socialjax.agents.dqn import DEFAULT_HPARAMS, HPARAMS, DQNLearner, epsilon, n_step_targets
from socialjax.agents.learner import Rollout, as_hparams
from socialjax.agents.networks import encoder_spec
from socialjax.core.spaces import Box

# the values these tests were written with (a DQN-typical step size and gradient clip)
DQN_HPARAMS = {**DEFAULT_HPARAMS, "lr": 5e-4, "max_grad_norm": 10.0}

SPACE = Box(0, 4, (1,), jnp.int32)
SPEC = encoder_spec(SPACE)
T, M, P = 4, 3, 2  # rollout length, seats, population members (vmapped)


def make(**kw):
    opts = dict(rollout_len=T, seats=M, hidden=8, batch_size=16, updates_per_rollout=2)
    opts.update(kw)
    return DQNLearner(SPACE, SPEC, 2, **opts)


def rollout(seed, reward=None, done=None, lead=(), T=T, M=M):
    """A rollout of random observations, actions and rewards (numpy: nothing to compile)."""
    rng = np.random.default_rng(seed)
    shape = (*lead, T, M)
    return Rollout(
        obs=rng.integers(0, 5, (*shape, 1)).astype(np.int32),
        reset=np.zeros(shape, bool),
        action=rng.integers(0, 2, shape).astype(np.int32),
        reward=(rng.normal(size=shape) if reward is None else np.broadcast_to(reward, shape)).astype(np.float32),
        done=np.zeros(shape, bool) if done is None else np.broadcast_to(done, shape),
        aux={},
        hidden0=np.zeros((*lead, M, 1), np.float32),
        last_obs=rng.integers(0, 5, (*lead, M, 1)).astype(np.int32),
        last_reset=np.zeros((*lead, M), bool),
        last_hidden=np.zeros((*lead, M, 1), np.float32),
    )


def with_hparams(state, **values):
    return state.replace(hparams={**state.hparams, **as_hparams(values)})


def tree_equal(a, b):
    eq = jax.tree_util.tree_map(lambda x, y: np.array_equal(np.asarray(x), np.asarray(y)), a, b)
    return all(jax.tree_util.tree_leaves(eq))


def member(tree, i):
    return jax.tree_util.tree_map(lambda x: x[i], tree)


@pytest.fixture(scope="module")
def small():
    """One learner, its initial state, and compiled methods shared by the tests below.
    ``update`` is vmapped over ``P`` members, as the population loop calls it."""
    learner = make(buffer_rollouts=3, target_update_every=2, n_step=2)
    state = jax.jit(learner.init)(jax.random.key(0), DQN_HPARAMS)
    fns = {
        "update": jax.jit(jax.vmap(learner.update, in_axes=(0, 0, None, 0, None))),
        "act": jax.jit(learner.act),
    }
    return learner, state, fns


def stack(state):
    return jax.tree_util.tree_map(lambda x: np.stack([np.asarray(x)] * P), state)


nst = jax.jit(n_step_targets, static_argnums=4)


# --------------------------------------------------------------------- n-step targets
def test_n_step_one_is_td():
    r = jnp.array([[1.0], [2.0], [3.0], [4.0]])
    d = jnp.array([[False], [True], [False], [False]])
    bq = jnp.array([[10.0], [20.0], [30.0], [40.0]])
    g = 0.9
    np.testing.assert_allclose(nst(r, d, bq, g, 1), r + g * bq * (1.0 - d), rtol=1e-6)


def test_n_step_done_in_the_middle_and_truncation():
    g = 0.5
    r = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
    d = jnp.array([False, True, False, False, False])
    bq = jnp.array([10.0, 20.0, 30.0, 40.0, 50.0])
    want = [
        1 + g * 2,  # the episode ends after step 1: no reward beyond it, no bootstrap
        2,  # ends at its own step
        3 + g * 4 + g**2 * 5 + g**3 * 50,  # window truncated at T = 5: bootstrap from last_obs
        4 + g * 5 + g**2 * 50,
        5 + g * 50,
    ]
    np.testing.assert_allclose(nst(r, d, bq, g, 3), want, rtol=1e-6)
    # a full window inside the rollout bootstraps from the state after its last step
    out = np.asarray(nst(r, jnp.zeros(5, bool), bq, g, 2))
    want2 = [1 + g * 2 + g**2 * 20, 2 + g * 3 + g**2 * 30, 3 + g * 4 + g**2 * 40, 4 + g * 5 + g**2 * 50, 5 + g * 50]
    np.testing.assert_allclose(out, want2, rtol=1e-6)
    # seats are independent streams
    two = nst(jnp.stack([r, r], 1), jnp.stack([d, jnp.zeros(5, bool)], 1), jnp.stack([bq, bq], 1), g, 3)
    np.testing.assert_allclose(two[:, 0], want, rtol=1e-6)
    np.testing.assert_allclose(two[:, 1], nst(r, jnp.zeros(5, bool), bq, g, 3), rtol=1e-6)


def test_n_step_longer_than_rollout():
    g = 0.5
    out = nst(jnp.array([1.0, 2.0]), jnp.zeros(2, bool), jnp.array([7.0, 8.0]), g, 10)
    np.testing.assert_allclose(out, [1 + g * 2 + g**2 * 8, 2 + g * 8], rtol=1e-6)


def test_sampled_targets_match_whole_rollout_targets(small):
    """The update reads the n-step windows of sampled transitions out of the buffer; they
    must agree with :func:`n_step_targets` on the whole stored rollout."""
    learner, state, _ = small  # n_step=2
    done = np.zeros((T, M), bool)
    done[1, 0] = done[3, 2] = True
    ro = rollout(1, done=done)

    @jax.jit
    def both(state, other, ro):
        params = state.params
        target = jax.tree_util.tree_map(lambda x: x + 0.1, params)  # a different target net
        buffer = learner.store(learner.store(state.extra.buffer, other), ro)  # ro in slot 1
        gamma = jnp.float32(0.9)
        nxt = jnp.concatenate([ro.obs[1:], ro.last_obs[None]], 0)  # (T, M, 1): state after each step
        flat = nxt.reshape(T * M, 1)
        best = jnp.argmax(learner.q_values(params, flat), -1)
        bq = jnp.take_along_axis(learner.q_values(target, flat), best[:, None], -1).reshape(T, M)
        want = n_step_targets(ro.reward, ro.done, bq, gamma, 2)
        t, m = jnp.meshgrid(jnp.arange(T), jnp.arange(M), indexing="ij")
        got = learner.targets(params, target, buffer, jnp.ones(T * M, jnp.int32), t.ravel(), m.ravel(), gamma)
        return got.reshape(T, M), want, bq

    got, want, bq = both(state, rollout(2), ro)
    assert np.all(np.asarray(bq) != 0.0)
    # two separate evaluations of the Q-network (matrix products): TF32 on a GPU
    np.testing.assert_allclose(got, want, rtol=tol(1e-5, OFF_CPU_RTOL), atol=tol(1e-6, OFF_CPU_ATOL))


# --------------------------------------------------------------------- buffer
def test_buffer_wraps_around(small):
    """Five updates into a three-rollout buffer, for two members at once (vmapped)."""
    learner, state, fns = small
    states = stack(state)
    chex.assert_shape([states.extra.buffer.reward, states.extra.buffer.last_obs], [(P, 3, T, M), (P, 3, M, 1)])
    ros = []
    for i in range(5):
        reward = np.stack([np.full((T, M), i), np.full((T, M), 10 + i)])  # member 1: 10 + i
        ros.append(rollout(i, reward=reward, lead=(P,)))
        states, metrics = fns["update"](states, ros[-1], {}, jax.random.split(jax.random.key(100 + i), P), 0.0)
        assert states.extra.buffer.size.tolist() == [min(i + 1, 3)] * P
        chex.assert_shape(metrics["loss"], (P,))
        chex.assert_tree_all_finite(metrics["loss"])
        assert set(metrics) >= {"loss", "q_mean", "epsilon"}
    buf = states.extra.buffer
    assert buf.ptr.tolist() == [5 % 3] * P
    np.testing.assert_array_equal(buf.reward[:, :, 0, 0], [[3, 4, 2], [13, 14, 12]])  # 0 and 1 overwritten
    for slot, i in enumerate([3, 4, 2]):
        np.testing.assert_array_equal(buf.obs[:, slot], ros[i].obs)
        np.testing.assert_array_equal(buf.action[:, slot], ros[i].action)
        np.testing.assert_array_equal(buf.last_obs[:, slot], ros[i].last_obs)
    assert states.extra.updates.tolist() == [5] * P


# --------------------------------------------------------------------- exploration
def test_epsilon_schedule():
    h = as_hparams(DQN_HPARAMS)
    assert set(HPARAMS) == set(DEFAULT_HPARAMS)
    np.testing.assert_allclose(epsilon(h, 0.0), 1.0)
    np.testing.assert_allclose(epsilon(h, 0.25), 0.525, rtol=1e-6)  # half way through the decay
    np.testing.assert_allclose(epsilon(h, 0.5), 0.05, rtol=1e-6)
    np.testing.assert_allclose(epsilon(h, 1.0), 0.05, rtol=1e-6)


def test_act_greedy_random_and_boltzmann(small):
    learner, state, fns = small
    B = 400
    obs, hidden, reset = np.zeros((B, 1), np.int32), np.zeros((B, 1), np.float32), np.zeros(B, bool)
    state = with_hparams(state, eps_start=1.0, eps_end=0.0, eps_decay=0.5)
    _, a, aux = fns["act"](state, hidden, obs, reset, jax.random.key(1), 1.0)
    chex.assert_type(a, jnp.int32)
    chex.assert_shape([a, aux["q_max"]], (B,))
    greedy = int(np.argmax(learner.q_values(state.params, obs[:1])[0]))
    assert np.all(np.asarray(a) == greedy)  # epsilon 0
    _, a, _ = fns["act"](state, hidden, obs, reset, jax.random.key(1), 0.0)
    assert 0.4 < float(a.mean()) < 0.6  # epsilon 1: uniform
    _, a, _ = fns["act"](state, hidden, obs, reset, jax.random.key(1), 0.25)
    assert 0.1 < float(np.mean(a != greedy)) < 0.4  # epsilon 0.5: a quarter not greedy
    # Boltzmann: same network, so the same parameters fit
    boltz = make(exploration="boltzmann")
    hot = with_hparams(state, temperature=1e4)
    _, a, _ = jax.jit(boltz.act)(hot, hidden, obs, reset, jax.random.key(1), 0.0)
    assert 0.4 < float(a.mean()) < 0.6  # very hot: uniform


# --------------------------------------------------------------------- target network
def test_target_network_hard_copies(small):
    learner, state, fns = small  # target_update_every=2
    states = stack(with_hparams(state, lr=1e-2))
    assert tree_equal(states.extra.target_params, states.params)
    copies = [member(states.extra.target_params, 0)]
    for i in range(4):
        states, _ = fns["update"](states, rollout(i, lead=(P,)), {}, jax.random.split(jax.random.key(50 + i), P), 0.0)
        online, target = member(states.params, 0), member(states.extra.target_params, 0)
        same = tree_equal(target, online)
        assert same == ((i + 1) % 2 == 0), i
        if same:
            copies.append(target)
        else:  # held fixed between copies
            assert tree_equal(target, copies[-1])
    assert len(copies) == 3
    assert not tree_equal(copies[1], copies[0]) and not tree_equal(copies[2], copies[1])


# --------------------------------------------------------------------- options
@pytest.mark.parametrize(
    "kw",
    [
        {"recurrent": True},
        {"exploration": "softmax"},
        {"n_step": 0},
        {"batch_size": -1},
        {"buffer_rollouts": 0},
        {"updates_per_rollout": 1.5},
        {"target_update_every": 0},
        {"rollout_len": 0},
        {"seats": 0},
    ],
)
def test_bad_options(kw):
    with pytest.raises(ValueError):
        make(**kw)


def test_recurrent_message():
    with pytest.raises(ValueError, match="recurrent"):
        make(recurrent=True)


def test_rollout_shape_mismatch(small):
    learner, state, _ = small
    with pytest.raises(ValueError, match="rollouts"):
        jax.eval_shape(learner.update, state, rollout(0, T=T + 1), {}, jax.random.key(1), 0.0)


# --------------------------------------------------------------------- learning
def test_learns_two_armed_bandit():
    """Action 1 pays 1, action 0 pays 0, every episode one step long: the greedy action
    becomes 1 for every seat and the Q-values approach the payoffs."""
    T_, M_ = 8, 4
    learner = DQNLearner(
        SPACE, SPEC, 2, rollout_len=T_, seats=M_, hidden=16, batch_size=32, updates_per_rollout=4,
        buffer_rollouts=4, target_update_every=5,
    )  # fmt: skip
    steps = 50
    obs = jnp.zeros((M_, 1), jnp.int32)
    hidden = jnp.zeros((M_, 1))
    reset = jnp.ones((M_,), bool)

    def iteration(state, i):
        key = jax.random.fold_in(jax.random.key(1), i)
        progress = i / steps
        k_act, k_upd = jax.random.split(key)

        def step(_, k):
            _, a, aux = learner.act(state, hidden, obs, reset, k, progress)
            return None, (a, aux)

        _, (action, aux) = jax.lax.scan(step, None, jax.random.split(k_act, T_))
        ro = Rollout(
            obs=jnp.zeros((T_, M_, 1), jnp.int32),
            reset=jnp.ones((T_, M_), bool),
            action=action,
            reward=action.astype(jnp.float32),
            done=jnp.ones((T_, M_), bool),
            aux=aux,
            hidden0=hidden,
            last_obs=obs,
            last_reset=reset,
            last_hidden=hidden,
        )
        return learner.update(state, ro, learner.prepare(state, ro), k_upd, progress)

    @jax.jit
    def train(key):
        state = learner.init(key, {**DQN_HPARAMS, "lr": 3e-3})
        state, metrics = jax.lax.scan(iteration, state, jnp.arange(steps))
        return learner.q_values(state.params, obs), metrics

    q, metrics = jax.tree_util.tree_map(np.asarray, train(jax.random.key(0)))
    assert np.all(np.argmax(q, -1) == 1)
    np.testing.assert_allclose(q[0], [0.0, 1.0], atol=0.3)
    np.testing.assert_allclose(metrics["epsilon"][[0, -1]], [1.0, 0.05], rtol=1e-5)
    assert metrics["loss"][-5:].mean() < metrics["loss"][:5].mean()
