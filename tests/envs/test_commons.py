"""Common-pool resources: Ostrom optimum and Nash derived from the payoff function and
reproduced by the env, stock bounds, GovSim collapse, rationing, institutions, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from socialjax import testing
from socialjax.envs.institutions.commons import Commons

KEY = jax.random.key(0)


def rollout(env, key, num_steps, params=None, actions=None):
    """Per-step (state before, actions, reward, done, info) of random play (or the
    given ``actions (T, N)``)."""
    traj = testing.rollout(env, key, num_steps, params=params, actions=actions)
    return jax.tree_util.tree_map(lambda x: x[:-1], traj.state), traj.actions, traj.reward, traj.done, traj.info


# -- Ostrom lab CPR -------------------------------------------------------------
W, A, B, N_OSTROM = 5.0, 23.0, 0.25, 8  # Ostrom, Gardner & Walker 1994


def ostrom_payoff(x_i, x_others, e):
    """One player's payoff from the OGW rules, written independently of the env:
    market pay plus its proportional share of F(X) = 23 X - 0.25 X^2."""
    X = x_i + x_others
    share = np.where(X > 0, x_i / np.maximum(X, 1) * (A * X - B * X**2), 0.0)
    return W * (e - x_i) + share


def derived_optimum_and_nash(e):
    """Brute force over integer tokens: the total X maximising the group payoff, and
    the symmetric x that is a best response to 7 others playing x."""
    X = np.arange(N_OSTROM * e + 1)
    group = W * (N_OSTROM * e - X) + A * X - B * X**2
    x_opt = int(X[np.argmax(group)])
    ys = np.arange(e + 1)
    nash = [x for x in ys if np.argmax(ostrom_payoff(ys, (N_OSTROM - 1) * x, e)) == x
            and np.sum(ostrom_payoff(ys, (N_OSTROM - 1) * x, e) == ostrom_payoff(x, (N_OSTROM - 1) * x, e)) == 1]
    return x_opt, nash


def spread(total, n, e):
    """``(n,)`` integer tokens adding up to ``total`` as evenly as possible."""
    base, extra = divmod(total, n)
    return np.minimum(np.array([base + (i < extra) for i in range(n)]), e)


@pytest.fixture(scope="module", params=[25, 10])
def ostrom(request):
    e = request.param
    env = Commons(preset="ostrom", num_levels=e + 1)
    assert int(env.default_params.endowment) == e
    _, state = env.reset(KEY)
    step = jax.jit(jax.vmap(lambda a: env.step(KEY, state, a)[2]))
    return env, e, step


def test_ostrom_social_optimum_and_symmetric_nash(ostrom):
    env, e, rewards_of = ostrom
    x_opt, nash = derived_optimum_and_nash(e)
    assert x_opt == 36  # 18 - 0.5 X = 0
    assert nash == [8]  # 18 - 0.25 X - 0.25 x = 0 with X = 8 x
    # the env's total reward over every total X peaks at the derived optimum
    totals = np.arange(N_OSTROM * e + 1)
    profiles = np.stack([spread(t, N_OSTROM, e) for t in totals]).astype(np.int32)
    r = np.asarray(rewards_of(jnp.asarray(profiles)))
    assert int(totals[np.argmax(r.sum(1))]) == x_opt
    # and pays each player exactly the outside option plus its proportional share
    expected = ostrom_payoff(profiles, profiles.sum(1, keepdims=True) - profiles, e)
    np.testing.assert_allclose(r, expected, rtol=1e-6, atol=1e-3)
    # symmetric Nash: with the 7 others at 8, agent 0's env reward peaks at 8 ...
    dev = np.full((e + 1, N_OSTROM), 8, np.int32)
    dev[:, 0] = np.arange(e + 1)
    r_dev = np.asarray(rewards_of(jnp.asarray(dev)))[:, 0]
    assert int(np.argmax(r_dev)) == 8
    # ... while at the optimum (4 or 5 each) a unilateral increase pays: a dilemma
    opt = spread(x_opt, N_OSTROM, e).astype(np.int32)
    up = opt.copy()
    up[0] += 3
    r_opt, r_up = np.asarray(rewards_of(jnp.asarray(np.stack([opt, up]))))
    assert r_up[0] > r_opt[0] and r_up.sum() < r_opt.sum()


def test_ostrom_tokens_above_endowment_param_are_invalid():
    env = Commons(preset="ostrom").with_params(endowment=10)
    _, state = env.reset(KEY)
    actions = jnp.array([15, 10, 0, 0, 0, 0, 0, 26], jnp.int32)
    obs, _, reward, _, info = jax.jit(env.step)(KEY, state, actions)
    np.testing.assert_array_equal(info["invalid_action"], [True, False] + [False] * 5 + [True])
    np.testing.assert_array_equal(info["harvest"], [0, 10, 0, 0, 0, 0, 0, 0])
    assert reward[0] == pytest.approx(5 * 10)  # everything in the market
    assert obs[0, env.obs_index["stock"]] == 10  # the endowment is observed


# -- stock dynamics under random play -------------------------------------------
@pytest.fixture(scope="module")
def logistic_batch():
    """128 envs x 100 steps (12,800 steps) of uniformly random harvests."""
    env = Commons(preset="logistic")
    keys = jax.random.split(jax.random.key(1), 128)
    run = jax.jit(jax.vmap(lambda k: rollout(env, k, 100)))
    return env, jax.device_get(run(keys))


def test_logistic_stock_stays_in_bounds_and_follows_the_rule(logistic_batch):
    env, (state, actions, reward, done, info) = logistic_batch
    p = env.default_params
    K, r = float(p.capacity), float(p.growth_rate)
    assert (info["stock"] >= 0).all() and (info["stock"] <= K).all()
    S = info["stock_before"]
    expected = np.clip(S + r * S * (1 - S / K) - info["total_harvest"], 0, K)
    np.testing.assert_allclose(info["stock"], expected, rtol=1e-5, atol=1e-4)
    # the reward is the harvest; the episode is 50 steps, then a fresh stock of 50
    np.testing.assert_allclose(reward, info["harvest"], rtol=1e-6)
    assert done.sum() == 128 * 2 and done[:, 49].all()
    assert (state.stock[:, 50] == 50).all()


@pytest.mark.parametrize("preset", ["logistic", "govsim"])
def test_rationing_never_hands_out_more_than_the_stock(preset, logistic_batch):
    if preset == "logistic":
        env, (state, actions, reward, done, info) = logistic_batch
    else:
        env = Commons(preset="govsim").with_params(end_on_collapse=False)
        keys = jax.random.split(jax.random.key(2), 128)
        state, actions, reward, done, info = jax.device_get(jax.jit(jax.vmap(lambda k: rollout(env, k, 24)))(keys))
    stock, demand, harvest = info["stock_before"], info["demand"], info["harvest"]
    assert (harvest.sum(-1) <= stock * (1 + 1e-6)).all()
    assert (harvest <= demand * (1 + 1e-6)).all() and (harvest >= 0).all()
    short = (demand.sum(-1) > stock) & (stock > 0)
    assert short.sum() > 100  # rationing really happened, so the checks bite
    # when short, the stock is shared in proportion to demand (stocks well above
    # float32's denormals: a fully taken logistic stock regrows r S, r S^2, ...)
    rows = short & (stock > 1e-3)
    np.testing.assert_allclose(
        harvest[rows] / stock[rows][:, None], demand[rows] / demand[rows].sum(-1, keepdims=True), rtol=1e-5, atol=1e-6
    )
    fits = demand.sum(-1) <= stock
    np.testing.assert_array_equal(harvest[fits], demand[fits])
    assert (harvest[stock == 0] == 0).all()


# -- GovSim ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def govsim():
    env = Commons(preset="govsim")
    run = jax.jit(lambda levels, params: rollout(env, KEY, 12, params, levels))
    return env, run


def constant_levels(*per_round):
    return jnp.asarray(np.array([np.full(5, lv) for lv in per_round], np.int32))


def test_govsim_sustainable_harvest_never_collapses(govsim):
    env, run = govsim
    _, _, reward, done, info = run(constant_levels(*[10] * 12), env.default_params)
    # 5 x 10 = 50 taken, the remaining 50 doubles back to 100 every month
    np.testing.assert_allclose(info["stock"], 100.0)
    assert not info["collapsed"].any() and done[-1] and not done[:-1].any()
    np.testing.assert_allclose(reward.sum(), 12 * 50.0)


def test_govsim_collapse_is_permanent(govsim):
    env, run = govsim
    params = env.default_params.replace(end_on_collapse=jnp.asarray(False))
    # month 1 leaves 100 - 95 = 5 (not below 5): doubles to 10; month 2 leaves 10 - 10 = 0 -> collapse
    levels = constant_levels(19, 2, *[20] * 4, *[0] * 6)
    _, _, reward, done, info = run(levels, params)
    collapsed = np.asarray(info["collapsed"])
    np.testing.assert_array_equal(collapsed, [False] + [True] * 11)
    assert info["stock"][0] == 10.0 and (info["stock"][1:] == 0).all()
    assert (reward[2:] == 0).all()  # nothing left to take, ever
    assert not done[:-1].any()  # the episode runs its 12 months ...
    # ... and by default a collapse ends it at once
    _, _, _, done, info = run(levels, env.default_params)
    assert done[1] and bool(info["terminated"][1])


def test_govsim_collapse_threshold_boundary(govsim):
    env, run = govsim
    params = env.default_params.replace(end_on_collapse=jnp.asarray(False))
    # 4 agents take 20, one takes 16: remainder 4 < 5 -> collapse
    levels = jnp.asarray(np.tile(np.array([20, 20, 20, 20, 16], np.int32), (12, 1)))
    info = run(levels, params)[4]
    assert bool(info["collapsed"][0]) and (info["stock"] == 0).all()


def test_govsim_random_play_collapse_sticks():
    env = Commons(preset="govsim").with_params(end_on_collapse=False)
    keys = jax.random.split(jax.random.key(5), 64)
    info = jax.device_get(jax.jit(jax.vmap(lambda k: rollout(env, k, 12)))(keys))[4]
    c = info["collapsed"]
    assert c.any()
    assert (np.diff(c.astype(int), axis=1) >= 0).all()  # once collapsed, always collapsed
    assert (info["stock"][c] == 0).all() and (info["total_harvest"][:, 1:][c[:, :-1]] == 0).all()


# -- institutions ---------------------------------------------------------------
@pytest.fixture(scope="module")
def full():
    env = Commons(preset="logistic", monitoring=True, sanctions="pot", quota_vote=True)
    return env, jax.jit(env.step)


def test_monitoring_reveals_others_at_a_cost(full):
    env, step = full
    _, state = env.reset(KEY)
    # [level, monitor, vote]: only agent 0 monitors; everyone abstains
    acts = jnp.array([[1, 1, 11], [2, 0, 11], [0, 0, 11], [2, 0, 11], [1, 0, 11]], jnp.int32)
    obs, _, reward, _, info = step(KEY, state, acts)
    ix = env.obs_index
    np.testing.assert_array_equal(obs[0, ix["others"]:ix["seen"]], [2, 0, 2, 1])  # agents 1, 2, 3, 4
    assert obs[0, ix["seen"]] == 1
    assert (obs[1:, ix["others"]:ix["seen"] + 1] == 0).all()  # hidden from the others
    np.testing.assert_array_equal(obs[:, ix["own"]], [1, 2, 0, 2, 1])
    np.testing.assert_allclose(reward, [1 - 0.5, 2, 0, 2, 1])  # quota 2.5: nobody over
    assert float(info["quota"]) == 2.5 and float(info["next_quota"]) == 2.5  # all abstained


def test_sanctions_fine_the_excess_into_a_pot(full):
    env, step = full
    _, state = env.reset(KEY)
    acts = jnp.array([[5, 0, 11], [2, 0, 11], [2, 0, 11], [10, 0, 11], [0, 0, 11]], jnp.int32)
    _, _, reward, _, info = step(KEY, state, acts)
    fine = np.array([2 * 2.5, 0, 0, 2 * 7.5, 0])  # fine_rate 2 on the excess over 2.5
    np.testing.assert_allclose(info["fine"], fine)
    np.testing.assert_allclose(reward, info["harvest"] - fine + fine.sum() / 5, rtol=1e-6)
    np.testing.assert_allclose(reward.sum(), info["harvest"].sum(), rtol=1e-6)  # pot conserves
    destroy = Commons(preset="logistic", sanctions="destroy")
    _, s = destroy.reset(KEY)
    r = destroy.step(KEY, s, acts[:, 0])[2]
    np.testing.assert_allclose(r, info["harvest"] - fine, rtol=1e-6)


def test_sanction_detection_rate():
    env = Commons(preset="logistic", sanctions="destroy")
    env = env.with_params(detection_prob=0.3, initial_stock=100.0, capacity=100.0)
    _, state = env.reset(KEY)
    acts = jnp.full((5,), 10, jnp.int32)
    keys = jax.random.split(jax.random.key(7), 2000)
    fined = np.asarray(jax.jit(jax.vmap(lambda k: env.step(k, state, acts)[4]["fined"]))(keys))
    n = fined.size  # 10,000 Bernoulli(0.3) draws: 5 standard errors ~ 0.023
    assert abs(fined.mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / n)


def test_quota_vote_median_on_vote_steps(full):
    env, step = full
    _, state = env.reset(KEY)
    L = env.num_levels
    acts = jnp.array([[0, 0, 8], [0, 0, 4], [0, 0, 10], [0, 0, 9], [0, 0, L]], jnp.int32)
    _, s1, _, _, info = step(KEY, state, acts)
    # 4 votes cast (one abstains): median of 4, 8, 9, 10 = 8.5, in force from step 1
    assert float(info["quota"]) == 2.5 and float(s1.quota) == 8.5
    # step 1 is not a vote step (vote_every = 10): the quota stays
    _, s2, _, _, info = step(KEY, s1, acts.at[:, 2].set(0))
    assert not bool(info["vote_step"]) and float(s2.quota) == 8.5
    # a vote step with an odd number of votes takes the middle one
    odd = acts.at[:, 2].set(jnp.array([1, 2, 3, 4, 5]))
    _, s3, _, _, _ = step(KEY, state, odd)
    assert float(s3.quota) == 3.0


# -- bad input ------------------------------------------------------------------
def test_out_of_range_actions_are_noops_under_jit(full):
    env, step = full
    _, state = env.reset(KEY)
    acts = jnp.array([[11, 0, 0], [-1, 0, 0], [1, 2, 0], [1, 0, 12], [3, 1, 5]], jnp.int32)
    _, s1, reward, _, info = step(KEY, state, acts)
    np.testing.assert_array_equal(info["invalid_action"], [True, True, True, True, False])
    np.testing.assert_array_equal(info["harvest"], [0, 0, 0, 0, 3])
    np.testing.assert_array_equal(info["monitored"], [0, 0, 0, 0, 1])
    assert float(s1.quota) == 5.0  # the invalid ones abstained: only agent 4 voted
    plain = Commons(preset="govsim")
    _, s = plain.reset(KEY)
    info = jax.jit(plain.step)(KEY, s, jnp.array([21, 20, 0, 0, -3], jnp.int32))[4]
    np.testing.assert_array_equal(info["invalid_action"], [True, False, False, False, True])
    np.testing.assert_array_equal(info["harvest"], [0, 20, 0, 0, 0])


@pytest.mark.parametrize(
    "changes, field",
    [
        (dict(growth_rate=-0.1), "growth_rate"),
        (dict(detection_prob=1.5), "detection_prob"),
        (dict(initial_stock=150.0), "initial_stock"),
        (dict(vote_every=0), "vote_every"),
        (dict(monitor_cost=float("nan")), "monitor_cost"),
    ],
)
def test_bad_params_raise_naming_the_field(changes, field):
    env = Commons()
    with pytest.raises(ValueError, match=field):
        env.with_params(**changes)
    with pytest.raises(ValueError, match=field):
        env.reset(KEY, env.default_params.replace(**changes))


def test_bad_static_options_raise():
    with pytest.raises(ValueError, match="endowment"):
        Commons(preset="ostrom", num_levels=11).with_params(endowment=25)
    for kwargs, name in [
        (dict(preset="fishery"), "preset"),
        (dict(num_levels=1), "num_levels"),
        (dict(num_agents=1), "num_agents"),
        (dict(sanctions="fine"), "sanctions"),
        (dict(monitoring="maybe"), "monitoring"),
        (dict(episode_length=0), "episode_length"),
    ]:
        with pytest.raises(ValueError, match=name):
            Commons(**kwargs)


def test_params_sweep_is_a_vmap():
    env = Commons(preset="logistic", episode_length=20)
    rates = jnp.array([0.1, 0.5, 1.0])
    params = jax.vmap(lambda r: env.default_params.replace(growth_rate=r))(rates)
    stocks = jax.jit(jax.vmap(lambda p: rollout(env, KEY, 5, p, jnp.zeros((5, 5), jnp.int32))[4]["stock"]))(params)
    # no harvest: S' = S + r S (1 - S / K) from 50
    np.testing.assert_allclose(stocks[:, 0], 50 + rates * 25, rtol=1e-6)
    assert (np.diff(np.asarray(stocks), axis=1) >= 0).all()
