"""The centralised learners MAPPO, IRAT and VDN in the population loop, beyond their own
tests (tests/agents/test_mappo.py, test_irat.py, test_vdn.py):

- (slow tier) every registered grid game (those whose class is a ``GridEnv``) and every
  matrix game builds a training run of each of them that traces (``jax.eval_shape``:
  no compilation) to the metrics and states of the documented shapes, evaluation
  included. Every game plays with 2 players (all of them allow 2; some allow 1, but
  with one player the seat's one-hot, the team's sum and cross-play are single
  entries) and on the small map where an option gives one (Coins 6 x 6; the "in the
  Matrix" games' repeated variant). One trace per game and learner, 0.3 to 3 s each
  on a 2-core CPU (about 75 s for all 63), so no trace is shared;
- MAPPO and IRAT runs repeat bit for bit, a run cut into segments, checkpointed and
  resumed gives the bits of one whole run, and a saved result loads back with the same
  learners (slow tier; the pattern of tests/train/test_survive.py, on a one-round
  matrix game);
- the evaluation plays IRAT's team policy: with a hand-made population whose individual
  policy always picks one action and team policy the other, ``play`` and ``greedy``
  give the team's action, ``act`` the individual's, and the compiled evaluation's
  cross-play earns the team action's payoff.
"""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import assert_tree_same

import socialjax as sj
from socialjax.agents.irat import INDIVIDUAL, TEAM
from socialjax.agents.networks import GLOBAL, SEAT, init_hidden, sample_obs
from socialjax.core import registry
from socialjax.envs.grid.base import GridEnv
from socialjax.envs.matrix.env import COOPERATE, DEFECT
from socialjax.train import TrainConfig, make_train, results, store
from socialjax.train.evaluation import SOCIAL_KEYS

ALGOS = ("mappo", "irat", "vdn")
GRID_GAMES = tuple(n for n in sj.registered_envs() if issubclass(registry.env_class(n), GridEnv))
MATRIX_GAMES = ("ipd", "stag_hunt", "chicken", "matrix_game", "nplayer_matrix")
# the small map where a game has an option for one
SMALL_MAPS = {"coins": {"width": 6, "height": 6},
              **{f"{g}_in_the_matrix": {"variant": "repeated"} for g in ("prisoners_dilemma", "stag_hunt", "chicken")}}
# what each learner reports besides "loss" (U, L)
LEARNER_STATS = {
    "mappo": ("policy_loss", "value_loss", "entropy", "approx_kl"),
    "irat": ("policy_loss", "value_loss", "entropy", "idv_kl", "team_policy_loss", "team_value_loss",
             "team_entropy", "team_kl", "idv_clip", "team_clip"),
    "vdn": ("q_mean", "target_mean", "epsilon"),
}
TINY = TrainConfig(seating="shared", num_envs=2, rollout_len=4, num_updates=1, hidden=8, channels=4, embed_dim=4,
                   evaluate=True, eval_envs=1, eval_steps=2)
# each learner's own sizes, small (a config that sets another learner's is refused)
TINY_OWN = {"ppo": dict(update_epochs=1, num_minibatches=1), "dqn": dict(dqn_batch=4, buffer_rollouts=1)}


def tiny(config: TrainConfig, algo: str, **changes) -> TrainConfig:
    """``config`` for ``algo``, with that learner's small sizes."""
    family = "dqn" if algo in ("dqn", "vdn") else "ppo"
    return config.replace(algo=algo, **TINY_OWN[family], **changes)


def small_env(name: str):
    """``name`` with 2 players (where the number is an option), few rounds (matrix
    games) and its small map (:data:`SMALL_MAPS`)."""
    options = dict(SMALL_MAPS.get(name, {}))
    accepts = inspect.signature(registry.env_class(name).__init__).parameters
    if "num_agents" in accepts and "variant" not in options:
        options["num_agents"] = 2
    if "num_rounds" in accepts:
        options["num_rounds"] = 4
    env = sj.make(name, **options)
    assert env.num_agents == 2, (name, env.num_agents)
    return env


# ----------------------------------------------------------------------- every game, traced
@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("game", GRID_GAMES + MATRIX_GAMES)
def test_every_game_traces_to_the_documented_shapes(game, algo):
    """``make_train`` accepts the game and the learner, and the whole run (rollout,
    update, evaluation) traces to metrics of the shapes ``make_train`` documents (``U``
    updates, ``P`` members, ``L`` learners; one shared learner here) and learners
    stacked on ``L``. The centralised learners see the game's global observation and
    the seat's one-hot; VDN sums over the game's seats."""
    env = small_env(game)
    train = make_train(env, tiny(TINY, algo))
    state, metrics = jax.eval_shape(train, jax.random.key(0))
    U, L, P, N = TINY.num_updates, train.plan.num_learners, train.plan.num_members, env.num_agents
    assert (L, P) == (1, 1)
    want = {name: (U, P) for name in ("return", "reward_rate", "seat_count")}
    want.update({name: (U,) for name in SOCIAL_KEYS + ("episodes", "halted")})
    want.update({f"events/{k}": (U,) for k in env.event_keys})
    want.update({name: (U, L) for name in ("loss", "parents") + LEARNER_STATS[algo]})
    want.update({f"hparams/{h}": (U, L) for h in train.learner.hparams})
    want.update({"nan_update": (), "nan_member": (), "eval/crossplay": (L, L), "eval/reward_rate": (P,)})
    want.update({f"eval/{k}": () for k in SOCIAL_KEYS})
    got = {k: metrics[k].shape for k in want if k in metrics}
    assert got == want
    for name in ("loss",) + LEARNER_STATS[algo]:
        assert metrics[name].dtype == jnp.float32, name
    assert all(v.shape[:1] == (U,) for k, v in metrics.items() if not k.startswith(("eval/", "nan_"))), \
        {k: v.shape for k, v in metrics.items()}
    assert all(x.shape[:1] == (L,) for x in jax.tree_util.tree_leaves(state.learners))
    space = train.learner.obs_space
    if algo == "vdn":
        assert train.learner.num_seats == N
        assert space == env.observation_space(train.env_params)
    else:
        assert space.spaces[GLOBAL] == env.global_observation_space(train.env_params)
        assert space.spaces[SEAT].shape == (N,)
    if algo == "irat":
        assert set(state.learners.params) == {INDIVIDUAL, TEAM}


# ----------------------------------------------------------------------- bits and resume
SEEDS = 2
SEGMENT = 2  # 3 updates: segments of 2 and 1
ONE_ROUND = {"num_rounds": 1}
SMALL = TINY.replace(num_envs=4, num_updates=3, evaluate=False)


def one_round():
    return sj.make("matrix_game", **ONE_ROUND)


# slow tier: one learner's runs take over 10 s on a 2-core CPU (IRAT: 8 s to compile the
# first, 3 s for the cut and resumed one, whose programs come from the compilation cache
# but are traced again)
@pytest.fixture(scope="module", params=("mappo", "irat"))
def whole(request):
    """A run of 2 seeds in one call, never cut."""
    return sj.train.run(one_round(), tiny(SMALL, request.param), seeds=SEEDS, progress=False)


@pytest.mark.slow
def test_a_run_repeats_bit_for_bit(whole):
    again = sj.train.run(one_round(), whole.config, seeds=SEEDS, progress=False)
    assert_tree_same(again.metrics, whole.metrics)
    assert_tree_same(again.states, whole.states)


@pytest.mark.slow
def test_segments_and_a_resumed_run_give_the_bits_of_an_uncut_run(whole, tmp_path):
    """A second run, cut into segments of 2 and 1 updates, checkpointed after the first
    and "killed" there, then resumed from the files: the metrics and the learners of the
    uncut run, bit for bit (on the CPU), the first segment's included."""
    config = whole.config
    spec = results.population_spec(config, "matrix_game", ONE_ROUND, range(SEEDS), 0)
    loss = whole.metrics["loss"]  # (G, S, U, L): the seeds are different runs, the updates move
    assert not np.array_equal(loss[0, 0], loss[0, 1]) and not np.array_equal(loss[0, 0, 0], loss[0, 0, -1])

    def save_then_die(snapshot):
        results.save_checkpoint(tmp_path / "run", snapshot, spec, segment=SEGMENT)
        assert_tree_same(snapshot.metrics, {k: v[0, :, :SEGMENT] for k, v in whole.metrics.items()
                                            if not k.startswith(("eval/", "nan_"))})
        raise RuntimeError(f"killed after update {snapshot.updates_done}")

    with pytest.raises(RuntimeError, match="killed after update 2"):
        sj.train.run(one_round(), config, seeds=SEEDS, progress=False, segment=SEGMENT, on_segment=save_then_die)
    assert store.folder_state(tmp_path / "run") == "unfinished"
    checkpoint = results.load_checkpoint(tmp_path / "run")
    snapshot = results.restore_snapshot(checkpoint, make_train(checkpoint.env, checkpoint.config))
    assert snapshot.updates_done == SEGMENT
    resumed = sj.train.run(checkpoint.env, checkpoint.config, seeds=SEEDS, progress=False, segment=SEGMENT,
                           resume=snapshot)
    assert_tree_same(resumed.metrics, whole.metrics)
    assert_tree_same(resumed.states, whole.states)


@pytest.mark.slow
def test_a_saved_result_loads_back_with_the_same_learners(whole, tmp_path):
    results.save_run(whole, tmp_path / "result", env_name="matrix_game", env_options=ONE_ROUND, plot=False)
    loaded = results.load_run(tmp_path / "result")
    assert loaded.config == whole.config
    assert_tree_same(loaded.states, whole.states)
    assert_tree_same(loaded.metrics, whole.metrics)


# ----------------------------------------------------------------------- IRAT plays its team policy
FAVOURED = 50.0  # logit margin: the other action's probability is about exp(-100)


def favouring(params, num_actions: int, action: int):
    """``params`` with the policy head's bias (the network's one bias of ``num_actions``
    entries) making ``action`` all but certain."""
    heads = [path for path, x in jax.tree_util.tree_leaves_with_path(params)
             if path[-1].key == "bias" and x.shape == (num_actions,)]
    assert len(heads) == 1, heads
    bias = jnp.where(jnp.arange(num_actions) == action, FAVOURED, -FAVOURED)
    return jax.tree_util.tree_map_with_path(lambda path, x: bias if path == heads[0] else x, params)


@pytest.fixture(scope="module")
def split_minds():
    """An IRAT learner of the one-round prisoner's dilemma (the IPD's payoffs) with one
    member whose individual policy always cooperates and team policy always defects."""
    env = sj.make("ipd", **ONE_ROUND)
    train = make_train(env, tiny(TINY, "irat", num_envs=4, eval_envs=4, eval_steps=4))
    A = env.action_space().n
    state = train.learner.init(jax.random.key(0), train.config.scalar_hparams())
    params = {INDIVIDUAL: favouring(state.params[INDIVIDUAL], A, COOPERATE),
              TEAM: favouring(state.params[TEAM], A, DEFECT)}
    return env, train, state.replace(params=params)


def test_play_and_greedy_use_the_team_policy_and_act_the_individual_one(split_minds):
    _, train, state = split_minds
    learner, B = train.learner, 64
    hidden, obs, reset = init_hidden(learner.net, B), sample_obs(learner.obs_space, B), jnp.zeros((B,), bool)
    _, played = jax.jit(learner.play)(state, hidden, obs, reset, jax.random.key(1))
    _, best = jax.jit(learner.greedy)(state, hidden, obs, reset)
    _, acted, aux = jax.jit(learner.act)(state, hidden, obs, reset, jax.random.key(1), 0.5)
    np.testing.assert_array_equal(played, DEFECT)
    np.testing.assert_array_equal(best, DEFECT)
    np.testing.assert_array_equal(acted, COOPERATE)
    assert played.dtype == acted.dtype == jnp.int32
    # what act keeps for the update: the team policy's log-probability of the individual's action
    np.testing.assert_allclose(aux["team_logp"], -2 * FAVOURED, rtol=1e-4)


def test_the_evaluation_plays_the_team_policy(split_minds):
    """Played against itself in cross-play and in its training seating, the population
    earns mutual defection's payoff (P = 1), not mutual cooperation's (R = 3)."""
    env, train, state = split_minds
    population = jax.tree_util.tree_map(lambda x: x[None], state)  # L = 1 learner
    rows = jnp.zeros((1, env.num_agents), jnp.int32)
    out = jax.jit(train.evaluator)(population, jax.random.key(2), rows)
    payoff = np.asarray(env.default_params.payoffs)
    mutual_defection = payoff[0, DEFECT, DEFECT]  # payoffs[i, a0, a1]
    assert mutual_defection != payoff[0, COOPERATE, COOPERATE]
    np.testing.assert_allclose(out["eval/crossplay"], [[mutual_defection]])
    np.testing.assert_allclose(out["eval/reward_rate"], [mutual_defection])
