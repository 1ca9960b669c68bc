"""The population loop: matchmaking, scripted members, selection, NaN halting, input
checks, evaluation outputs, and the LAPACK-free compiled program.

Compilation dominates the run time: the tests that need a trained population read the
session fixtures of tests/train/conftest.py (each one compiled program); selection and
seating are tested on hand-made arrays.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import cpu_only
from train_configs import IPD_ROUNDS, IPD_TFT, IPD_TFT_SEEDS, ONESHOT, ipd_env

import socialjax as sj
from socialjax.agents.learner import LearnerState
from socialjax.train import TrainConfig, make_train
from socialjax.train.seating import make_plan
from socialjax.train.selection import select


def tree_leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


# ------------------------------------------------------------------------ matchmaking
def seat_counts(assign, members):
    return np.bincount(np.asarray(assign).ravel(), minlength=members)


@pytest.mark.parametrize(
    "options, seats, counts",
    [
        (dict(seating="independent"), 3, [4, 4, 4]),
        (dict(seating="shared"), 3, [12]),
        (dict(seating="grouped", groups=(0, 0, 1, 1)), 4, [8, 8]),
        (dict(seating="fixed", seats=(0, 1, 2, 2), scripted=("random",)), 4, [4, 4, 8]),
        (dict(seating="fixed", seats=(2, 0, 1), scripted=("random", "noop")), 3, [4, 4, 4]),
    ],
)
def test_fixed_seatings_seat_each_member_as_intended(options, seats, counts):
    """Fixed modes: every game has the same row; each member holds its intended number
    of seats; ``order`` lists the learners' seats first, learner by learner."""
    plan = make_plan(TrainConfig(num_envs=4, **options), seats)
    assign, order = (np.asarray(x) for x in plan.seat(jax.random.key(0)))
    assert assign.shape == (4, seats)
    assert (assign == assign[0]).all()
    np.testing.assert_array_equal(seat_counts(assign, plan.num_members), counts)
    L, M = plan.num_learners, plan.seats_per_learner
    assert counts[0] == M
    np.testing.assert_array_equal(assign.ravel()[order[: L * M]], np.repeat(np.arange(L), M))
    assert sorted(order.tolist()) == list(range(4 * seats))  # a permutation of the seats


def test_fixed_seats_of_several_games_repeat_over_the_batch():
    """``seats`` of ``k * N`` members are ``k`` games' seats, repeated over the games: the
    mixed pool of Weis et al. (0 vs 1, 0 vs tabular, tabular vs 1) gives each learner the
    other learner in half its games and the tabular agent in the other half."""
    plan = make_plan(TrainConfig(num_envs=6, seating="fixed", seats=(0, 1, 0, 2, 2, 1), num_learners=2,
                                 scripted=("random_memory_one",)), 2)
    assign, order = (np.asarray(x) for x in plan.seat(jax.random.key(0)))
    np.testing.assert_array_equal(assign, [[0, 1], [0, 2], [2, 1]] * 2)
    assert plan.seats_per_learner == 4
    np.testing.assert_array_equal(assign.ravel()[order[:8]], [0, 0, 0, 0, 1, 1, 1, 1])
    for learner in (0, 1):  # co-players over the learner's games: the other learner twice, tabular twice
        rows = assign[(assign == learner).any(axis=1)]
        coplayers = rows[rows != learner]
        np.testing.assert_array_equal(np.sort(coplayers), [1 - learner] * 2 + [2] * 2)
    with pytest.raises(ValueError, match="multiple of 3"):
        make_plan(TrainConfig(num_envs=4, seating="fixed", seats=(0, 1, 0, 2, 2, 1), num_learners=2,
                              scripted=("random_memory_one",)), 2)
    with pytest.raises(ValueError, match="fixed seating needs seats"):
        make_plan(TrainConfig(num_envs=4, seating="fixed", seats=(0, 1, 2), scripted=("random",)), 2)


def test_independent_seating_puts_learner_i_in_seat_i():
    """Independent learners: learner ``i`` always sits in seat ``i``."""
    assign, _ = make_plan(TrainConfig(num_envs=3), 3).seat(jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(assign), np.tile(np.arange(3), (3, 1)))


def test_random_seating_gives_each_learner_exactly_m_seats_every_draw():
    """Random seating: every draw gives each learner exactly ``M`` seats, the scripted
    members share the rest about equally, every seat position is used, and ``order``
    lists the learners' seats first."""
    cfg = TrainConfig(num_envs=6, seating="random", num_learners=2, scripted=("random", "noop"), learner_fraction=0.5)
    plan = make_plan(cfg, 2)  # 12 seats: 3 per learner, 6 for the scripted members
    assert plan.dynamic and plan.seats_per_learner == 3
    assign, order = jax.jit(jax.vmap(plan.seat))(jax.random.split(jax.random.key(0), 400))
    assign, order = np.asarray(assign).reshape(400, 12), np.asarray(order)
    counts = np.stack([np.bincount(a, minlength=4) for a in assign])
    assert (counts[:, :2] == 3).all()
    assert (counts[:, 2:].sum(axis=1) == 6).all()
    share = counts[:, 2].sum() / counts[:, 2:].sum()  # 2400 scripted seats: sd of the share ~0.01
    assert 0.45 < share < 0.55, share
    for learner in range(2):  # every seat position hosts each learner sometimes (~100 of 400)
        assert ((assign == learner).sum(axis=0) > 50).all()
    first = np.take_along_axis(assign, order, axis=1)[:, :6]
    np.testing.assert_array_equal(first, np.tile(np.repeat(np.arange(2), 3), (400, 1)))
    assert not (assign == assign[0]).all()  # re-seated: the draws differ


# -------------------------------------------------------------- scripted members, loop
def test_scripted_tft_copies_its_co_players_last_move(ipd_tft):
    """A scripted member acts as its strategy: in the PPO-vs-TFT population, TFT opens
    each game with C and then plays its co-player's previous action. The co-player is the
    trained learner with its weights zeroed (all-zero logits: a uniformly random player),
    so that both of TFT's responses occur. Scripted members have no parameters: the
    trained state holds the one learner only."""
    train = make_train(ipd_env(), IPD_TFT.replace(lr=3e-3))
    learners = sj.train.as_run(ipd_tft.states.learners, 0, 0)
    assert all(x.shape[0] == 1 for x in tree_leaves(learners.params))  # 1 learner, not 2 members
    random_player = learners.replace(params=jax.tree_util.tree_map(np.zeros_like, learners.params))
    out = sj.train.play(train, random_player, jax.random.key(5), 5 * IPD_ROUNDS)  # seats: learner, TFT
    learner, tft = out.actions[:, 0], out.actions[:, 1]
    assert 0.3 < learner.mean() < 0.7  # both moves, often
    first = np.r_[True, out.dones[:-1]]  # first round of a game
    assert first.sum() == 5
    np.testing.assert_array_equal(tft[first], 0)
    np.testing.assert_array_equal(tft[1:][~first[1:]], learner[:-1][~first[1:]])
    # a game without frames keeps its info for the viewer's table: per seat, and the game's round
    np.testing.assert_array_equal(out.events["cooperated"], out.actions == 0)
    np.testing.assert_array_equal(out.values["round"], np.tile(np.arange(1, IPD_ROUNDS + 1), 5))


def test_selection_runs_in_the_loop_on_mean_reward_since_the_last_one(oneshot):
    """Truncation with 2 learners and ``select_frac=0.5`` every 10 updates: at each
    selection the learner with the lower mean reward per step over the 10 updates since
    the previous selection becomes a copy of the other (ties: learner 0 survives); in
    between, ``parents`` is the identity."""
    parents, rate = oneshot.metrics["parents"][0], oneshot.metrics["reward_rate"][0]  # (S, U, L), (S, U, P)
    K = ONESHOT.select_every
    for s in range(parents.shape[0]):
        for u in range(ONESHOT.num_updates):
            if (u + 1) % K:
                np.testing.assert_array_equal(parents[s, u], [0, 1])
                continue
            fit_sum = np.zeros(2, np.float32)  # the loop's float32 running sum
            for v in range(u + 1 - K, u + 1):
                fit_sum = fit_sum + rate[s, v, :2]
            fitness = fit_sum / np.float32(K)
            best = 0 if fitness[0] >= fitness[1] else 1
            np.testing.assert_array_equal(parents[s, u], [best, best], err_msg=f"seed {s} update {u}: {fitness}")


# ------------------------------------------------------------------------- selection
L8 = 8
FITNESS = np.array([3, 7, 1, 5, 0, 6, 2, 4], np.float32)  # ranking: 1, 5, 3, 7, 0, 6, 2, 4


def fake_states(L=L8):
    """Stacked learner states whose leaves identify their member (distinct values)."""
    i = np.arange(L, dtype=np.float32)
    return LearnerState(
        params={"w": i[:, None, None] * 10 + np.arange(6, dtype=np.float32).reshape(1, 2, 3), "b": i + 0.5},
        opt_state=(np.arange(L, dtype=np.int32) * 3, {"mu": -i[:, None] * np.ones((1, 4), np.float32)}),
        hparams={"lr": 1e-3 * (i + 1), "ent_coef": 0.01 * (i + 1), "gamma": 0.9 + 0.01 * i},
        extra=(),
    )


def check_copies(new, old, parents):
    """Every leaf of member ``i`` of ``new`` is bitwise that of member ``parents[i]``."""
    for a, b in zip(tree_leaves(new), tree_leaves(old)):
        np.testing.assert_array_equal(a, b[np.asarray(parents)])


def test_truncation_copies_the_top_into_the_bottom_exactly():
    """Truncation (``select_frac=0.25``, 8 learners): the top 2 survive, the other 6
    become exact copies of them, best first and cycling; survivors are untouched."""
    cfg = TrainConfig(selection="truncation", select_frac=0.25, mutation_std=0.0)
    old = fake_states()
    new, parents = select(cfg, old, jnp.asarray(FITNESS), jax.random.key(0))
    # ranks 2.. (members 3, 7, 0, 6, 2, 4) copy 1, 5, 1, 5, 1, 5
    np.testing.assert_array_equal(np.asarray(parents), [1, 1, 1, 1, 5, 5, 5, 5])
    check_copies(new, old, parents)


def test_truncation_replaces_a_member_with_non_finite_fitness():
    """A NaN fitness ranks last: that member is replaced even if the rest tie."""
    cfg = TrainConfig(selection="truncation", select_frac=0.5)
    fitness = jnp.array([1.0, 1.0, jnp.nan, 1.0])
    _, parents = select(cfg, fake_states(4), fitness, jax.random.key(0))
    parents = np.asarray(parents)
    assert parents[2] != 2
    assert parents[0] == 0 and parents[1] == 1  # stable ranking: the first two survive


def test_truncation_mutation_perturbs_only_the_copies_weights():
    """With ``mutation_std > 0`` the copies' weights get noise (about that size); the
    survivors, and everything but the weights, stay exact copies."""
    cfg = TrainConfig(selection="truncation", select_frac=0.25, mutation_std=0.01)
    old = fake_states()
    new, parents = select(cfg, old, jnp.asarray(FITNESS), jax.random.key(0))
    parents = np.asarray(parents)
    check_copies(new.opt_state, old.opt_state, parents)
    check_copies(new.hparams, old.hparams, parents)
    replaced = parents != np.arange(L8)
    for a, b in zip(tree_leaves(new.params), tree_leaves(old.params)):
        parent = b[parents]
        np.testing.assert_array_equal(a[~replaced], parent[~replaced])
        diff = np.abs(a[replaced] - parent[replaced])
        assert (diff > 0).all() and diff.max() < 0.1


def test_pbt_copies_the_bottom_and_perturbs_only_the_named_hparams():
    """PBT: the bottom ``floor(select_frac * L)`` copy the top ones; of the copies, each
    hyperparameter in ``pbt_hparams`` is the parent's times 0.8 or 1.2 (both occur over
    draws); everything else is an exact copy, and kept members are untouched."""
    cfg = TrainConfig(selection="pbt", select_frac=0.25, pbt_hparams=("lr", "ent_coef"), perturb=(0.8, 1.2))
    old = fake_states()
    factors = set()
    for seed in range(8):
        new, parents = select(cfg, old, jnp.asarray(FITNESS), jax.random.key(seed))
        parents = np.asarray(parents)
        # bottom two (members 2, 4) copy the top two (members 1, 5)
        np.testing.assert_array_equal(parents, [0, 1, 1, 3, 5, 5, 6, 7])
        check_copies(new.params, old.params, parents)
        check_copies(new.opt_state, old.opt_state, parents)
        check_copies(new.hparams["gamma"], old.hparams["gamma"], parents)
        replaced = parents != np.arange(L8)
        for name in ("lr", "ent_coef"):
            got, parent = np.asarray(new.hparams[name]), np.asarray(old.hparams[name])[parents]
            np.testing.assert_array_equal(got[~replaced], parent[~replaced])
            ratio = got[replaced] / parent[replaced]
            close = np.isclose(ratio[:, None], [0.8, 1.2], rtol=1e-6)
            assert close.any(axis=1).all(), ratio
            factors.update(np.asarray([0.8, 1.2])[close.argmax(axis=1)].tolist())
    assert factors == {0.8, 1.2}


def test_imitate_copies_only_a_strictly_better_peer():
    """Imitation: a member copies the peer it looks at only when that peer's fitness is
    strictly higher (two members: always the other one); ties never copy; the worst
    member always copies and the best never does."""
    cfg = TrainConfig(selection="imitate")
    old = fake_states(2)
    for fitness, expected in (([0.0, 1.0], [1, 1]), ([2.0, 1.0], [0, 0]), ([1.0, 1.0], [0, 1])):
        new, parents = select(cfg, old, jnp.asarray(fitness), jax.random.key(3))
        np.testing.assert_array_equal(np.asarray(parents), expected)
        check_copies(new, old, parents)
    fitness = np.arange(6, dtype=np.float32)
    old6 = fake_states(6)
    copied = np.zeros(6, int)
    for seed in range(20):
        new, parents = select(cfg, old6, jnp.asarray(fitness), jax.random.key(seed))
        parents = np.asarray(parents)
        kept = parents == np.arange(6)
        assert (fitness[parents[~kept]] > fitness[~kept]).all()
        check_copies(new, old6, parents)
        copied += ~kept
    assert copied[0] == 20 and copied[5] == 0
    assert 0 < copied[1:5].sum() < 80


def test_selection_none_returns_the_states_unchanged():
    """``selection='none'``: the states come back as they are, parents the identity."""
    old = fake_states()
    new, parents = select(TrainConfig(selection="none"), old, jnp.asarray(FITNESS), jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(parents), np.arange(L8))
    check_copies(new, old, np.arange(L8))


# ------------------------------------------------------------------------ NaN halting
def test_a_nan_run_halts_and_is_reported(ipd_tft):
    """lr=1e30 makes the loss non-finite: those runs report the update and learner in
    ``nan_update``/``nan_member``, are flagged ``halted`` from that update on and keep
    their last finite parameters; the lr=3e-3 runs in the same vmapped batch are not
    flagged (test_run.py checks that their bits are unaffected). ``nan_runs`` (what the
    CLI prints) names each halted run's grid point, seed, update and learner."""
    m = ipd_tft.metrics
    U, S = IPD_TFT.num_updates, IPD_TFT_SEEDS
    np.testing.assert_array_equal(m["nan_update"][0], -1)
    np.testing.assert_array_equal(m["nan_member"][0], -1)
    assert not m["halted"][0].any()
    assert np.isfinite(m["loss"][0]).all()
    nan_update, nan_member = m["nan_update"][1], m["nan_member"][1]
    assert ((nan_update >= 0) & (nan_update < U)).all(), nan_update
    np.testing.assert_array_equal(nan_member, 0)  # the only learner
    for s in range(S):
        u = nan_update[s]
        assert not m["halted"][1, s, :u].any() and m["halted"][1, s, u:].all()
        assert np.isfinite(m["loss"][1, s, :u]).all() and not np.isfinite(m["loss"][1, s, u]).all()
    for x in tree_leaves(ipd_tft.states.learners.params):
        assert np.isfinite(x).all()  # the halted runs kept their last finite parameters
    assert ipd_tft.states.halted[1].all() and not ipd_tft.states.halted[0].any()
    assert len(ipd_tft.nan_runs) == S
    for s, line in enumerate(ipd_tft.nan_runs):
        assert f"seed {s}:" in line and f"update {nan_update[s]} " in line, line
        assert "grid point 1" in line and "lr=1e+30" in line and "learner 0" in line, line


# ------------------------------------------------------------------------ evaluation
def test_evaluation_outputs_have_the_documented_shapes(oneshot):
    """Evaluation after training (one-shot PD, 2 learners, held-out ALLD background):
    ``eval/crossplay`` ``(L, L)``, ``eval/reward_rate`` ``(P,)``, focal and background
    rates ``(L,)``, social metrics as scalars, behind the ``(G, S)`` run axes; rates lie
    within the payoffs, and a focal learner facing ALLD earns at most P = 1 per step
    while ALLD earns at least 1."""
    m = oneshot.metrics
    G, S, L, P = 1, 4, 2, 2
    assert m["eval/crossplay"].shape == (G, S, L, L)
    assert m["eval/reward_rate"].shape == (G, S, P)
    assert m["eval/focal_reward_rate"].shape == (G, S, L)
    assert m["eval/background_reward_rate"].shape == (G, S, L)
    for k in ("collective_return", "efficiency", "equality", "sustainability", "peace"):
        assert m[f"eval/{k}"].shape == (G, S) and m[f"eval/focal/{k}"].shape == (G, S)
    assert m["reward_rate"].shape == (G, S, ONESHOT.num_updates, P)
    for k in ("eval/crossplay", "eval/reward_rate", "eval/focal_reward_rate", "eval/background_reward_rate"):
        assert np.isfinite(m[k]).all() and (m[k] >= 0).all() and (m[k] <= 5).all(), k
    assert (m["eval/focal_reward_rate"] <= 1.0).all()
    assert (m["eval/background_reward_rate"] >= 1.0).all()
    # one-round games: every step ends an episode, so the social metrics are defined
    assert np.isfinite(m["eval/efficiency"]).all() and np.isfinite(m["eval/focal/efficiency"]).all()


# ------------------------------------------------------------------------ bad input
IPD = sj.make("ipd", num_rounds=4)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(algo="sac"), "algo"),
        (dict(seating="round_robin"), "seating"),
        (dict(selection="tournament"), "selection"),
        (dict(seating="random", num_envs=3, num_learners=4), "cannot fill the seats"),
        (dict(seating="fixed", seats=(0, 2), scripted=("tft",)), "hold no seat"),
        (dict(seating="grouped", groups=(0, 2)), "groups"),
        (dict(rollout_len=5, num_envs=1, num_minibatches=4), "minibatches"),
        (dict(seating="shared", selection="truncation"), "at least 2 learners"),
        (dict(gamma=1.5), "gamma"),
        (dict(lr=-1.0), "lr"),
        (dict(lr=[1e-3, float("inf")]), "lr"),
        (dict(gae_lambda=[0.9, -0.1]), "gae_lambda"),
        (dict(num_envs=0), "num_envs"),
        (dict(seating="fixed", seats=(0, 1), scripted=("copycat",)), "copycat"),
        (dict(background=("alld",), num_focal=2), "num_focal"),
        (dict(background=("nobody",)), "nobody"),
        (dict(selection="pbt", num_learners=2, pbt_hparams=("eps_start",)), "eps_start"),
        (dict(algo="dqn", recurrent=True), "recurrent"),
    ],
)
def test_bad_settings_raise_before_compiling(options, message):
    """Settings that cannot work raise ``ValueError`` naming the culprit when the train
    function is built (``make_train`` compiles nothing)."""
    with pytest.raises(ValueError, match=message):
        make_train(IPD, TrainConfig(**{**dict(num_envs=4, rollout_len=4), **options}))


def test_unknown_config_field_and_env_specific_scripted_member():
    """Overriding a field that does not exist names it; a matrix-game strategy in a game
    that is not a two-player matrix game names the strategy and the game's options."""
    with pytest.raises(ValueError, match="foo"):
        TrainConfig().replace(foo=1)
    harvest = sj.make("harvest_open", num_agents=2)
    with pytest.raises(ValueError, match="tft.*random"):
        make_train(harvest, TrainConfig(seating="fixed", seats=(0, 1), scripted=("tft",)))


# --------------------------------------------------------------------------- LAPACK
@cpu_only("LAPACK custom calls exist only in XLA:CPU lowerings (the control below would fail elsewhere)")
def test_compiled_recurrent_train_has_no_lapack_call(gru):
    """Regression (deadlock on 2 cores): the recurrent population's program has no LAPACK
    custom call, while Flax's QR-based orthogonal initialiser, which
    ``networks.orthogonal`` replaces, would put one there."""
    text, _ = gru
    assert "lapack" not in text.lower()
    flax_init = jax.nn.initializers.orthogonal()
    control = jax.jit(jax.vmap(lambda k: flax_init(k, (8, 8)))).lower(jax.random.split(jax.random.key(0), 2)).as_text()
    assert "lapack" in control.lower()  # the check above would see such a call
