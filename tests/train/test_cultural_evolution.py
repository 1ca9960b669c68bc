"""Cultural evolution loop: selection, determinism across batches, the CLI main job."""

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import assert_same

import socialjax as sj
from socialjax.agents import donor_strategies as ds
from socialjax.cli import main
from socialjax.train.cultural_evolution import DonorEvolutionConfig, make_donor_evolution, truncation_select
from socialjax.train.progress import Progress


def test_truncation_keeps_the_top_half_and_copies_them():
    thetas = jnp.arange(12.0)[:, None] * jnp.ones((12, 5))
    fitness = jnp.array([5, 1, 9, 3, 7, 0, 11, 2, 8, 4, 10, 6], jnp.float32)
    new = truncation_select(jax.random.key(0), thetas, fitness, 6, mutation_std=0.0)
    top = np.argsort(-np.asarray(fitness))[:6]
    np.testing.assert_array_equal(new[:6, 0], top)  # survivors, in rank order, unchanged
    np.testing.assert_array_equal(new[6:, 0], top)  # one exact copy each with no mutation
    mutated = truncation_select(jax.random.key(0), thetas, fitness, 6, mutation_std=0.1)
    np.testing.assert_array_equal(mutated[:6], new[:6])
    assert not np.allclose(mutated[6:], new[6:])
    assert np.abs(np.asarray(mutated[6:] - new[6:])).max() < 1.0


def test_ties_are_broken_at_random():
    thetas = jnp.arange(4.0)[:, None] * jnp.ones((4, 3))
    keys = jax.random.split(jax.random.key(0), 400)
    winners = jax.jit(jax.vmap(lambda k: truncation_select(k, thetas, jnp.zeros(4), 1, 0.0)[0, 0]))(keys)
    wins = np.bincount(np.asarray(winners).astype(int), minlength=4)
    assert (np.abs(wins - 100) < 40).all(), wins  # each ~100 of 400, sd ~8.7


def test_strategy_fraction_rule():
    theta = ds.reciprocator(3, unknown=0.25)
    obs = np.zeros(11, np.float32)
    assert float(ds.donation_fraction(theta, obs, 3)) == pytest.approx(0.25)  # no history
    obs[5], obs[8] = 0.8, 1.0  # recipient gave 0.8 last time (known)
    assert float(ds.donation_fraction(theta, obs, 3)) == pytest.approx(0.8)
    assert float(ds.donation_fraction(ds.fixed_fraction(1.7, 3), obs, 3)) == 1.0
    assert float(ds.donation_fraction(ds.fixed_fraction(-0.5, 3), obs, 3)) == 0.0
    assert float(ds.donation_fraction(ds.fixed_fraction(-0.5, 3), obs, 3, punishment=True)) == -0.5


def test_reciprocal_strategy_rule():
    """[opening, reciprocity]: the opening gift to a recipient with no history, otherwise
    reciprocity times the recipient's last gift: nothing to a free rider, punishment back
    to a punisher."""
    theta = jnp.array([0.3, 1.5])
    obs = np.zeros(11, np.float32)
    assert float(ds.reciprocal_fraction(theta, obs, 3)) == pytest.approx(0.3)
    obs[8] = 1.0  # the recipient's last gift is known: it gave 0
    assert float(ds.reciprocal_fraction(theta, obs, 3)) == 0.0
    obs[5] = 0.4
    assert float(ds.reciprocal_fraction(theta, obs, 3)) == pytest.approx(0.6)
    obs[5] = 0.8
    assert float(ds.reciprocal_fraction(theta, obs, 3)) == 1.0
    obs[5] = -0.4  # it punished
    assert float(ds.reciprocal_fraction(theta, obs, 3)) == 0.0
    assert float(ds.reciprocal_fraction(theta, obs, 3, punishment=True)) == pytest.approx(-0.6)
    np.testing.assert_allclose(ds.act(jnp.stack([theta, theta]), jnp.stack([obs, obs]), 3, True, "reciprocal"),
                               [-0.6, -0.6], rtol=1e-6)


def test_sanctioning_strategy_rule():
    """[opening, reciprocity, standard, fine]: the opening gift to a stranger, reciprocity
    times a last gift at or above the standard, and below it a fine where punishment is
    allowed (nothing where it is not), a punisher included."""
    theta = jnp.array([0.3, 1.5, 0.2, 0.25])
    obs = np.zeros(11, np.float32)
    assert float(ds.sanctioning_fraction(theta, obs, 3)) == pytest.approx(0.3)
    obs[8] = 1.0  # known: it gave 0, below the standard
    assert float(ds.sanctioning_fraction(theta, obs, 3)) == 0.0
    assert float(ds.sanctioning_fraction(theta, obs, 3, punishment=True)) == pytest.approx(-0.25)
    obs[5] = 0.1999  # just short of the standard
    assert float(ds.sanctioning_fraction(theta, obs, 3, punishment=True)) == pytest.approx(-0.25)
    obs[5] = 0.2  # at the standard: reciprocated
    assert float(ds.sanctioning_fraction(theta, obs, 3, punishment=True)) == pytest.approx(0.3)
    obs[5] = 0.8
    assert float(ds.sanctioning_fraction(theta, obs, 3)) == 1.0
    obs[5] = -0.4  # it punished: below any standard >= 0
    assert float(ds.sanctioning_fraction(theta, obs, 3, punishment=True)) == pytest.approx(-0.25)
    strict = theta.at[3].set(3.0)  # a fine beyond the donor's resources is clipped to all of them
    assert float(ds.sanctioning_fraction(strict, obs, 3, punishment=True)) == -1.0
    np.testing.assert_allclose(ds.act(jnp.stack([theta, strict]), jnp.stack([obs, obs]), 3, True, "sanctioning"),
                               [-0.25, -1.0], rtol=1e-6)


def test_initial_populations_of_each_space():
    key = jax.random.key(3)
    linear = ds.random_strategies(key, 400, 3, 0.5, gift_max=0.1)
    assert linear.shape == (400, ds.num_params(3)) == (400, 5)
    assert float(linear[:, 0].min()) >= 0 and float(linear[:, 0].max()) <= 0.1
    np.testing.assert_array_equal(ds.random_strategies(key, 400, 3, 0.5), ds.random_strategies(key, 400, 3, 0.5, 1.0))
    recip = ds.random_strategies(key, 400, 3, 0.5, gift_max=0.1, space="reciprocal")
    assert recip.shape == (400, ds.num_params(3, "reciprocal")) == (400, 2)
    assert float(recip[:, 0].min()) >= 0 and float(recip[:, 0].max()) <= 0.1
    assert float(recip[:, 1].min()) >= 0 and 1.8 < float(recip[:, 1].max()) <= ds.RECIPROCITY_MAX
    sanction = ds.random_strategies(key, 400, 3, 0.5, gift_max=0.1, space="sanctioning")
    assert sanction.shape == (400, ds.num_params(3, "sanctioning")) == (400, 4)
    np.testing.assert_array_equal(sanction[:, :2], recip)  # the reciprocal part drawn as in that space
    norms = np.asarray(sanction[:, 2:])
    assert (norms >= 0).all() and (norms <= 0.1).all() and norms.max() > 0.09
    assert abs(np.corrcoef(norms[:, 0], norms[:, 1])[0, 1]) < 0.15  # standard and fine drawn apart
    with pytest.raises(ValueError, match="strategy_space must be one of"):
        DonorEvolutionConfig(strategy_space="neural")
    for bad in (1.5, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match="init_gift_max"):
            DonorEvolutionConfig(init_gift_max=bad)


def test_reciprocal_space_evolves():
    """The job runs the reciprocal space end to end: (N, 2) strategies out, giving within
    [0, 1]."""
    env = sj.make("donor_game", num_agents=6)
    config = DonorEvolutionConfig(num_generations=2, strategy_space="reciprocal", init_gift_max=0.1)
    thetas, m = jax.jit(jax.vmap(make_donor_evolution(env, config)))(jax.random.split(jax.random.key(2), 3))
    assert thetas.shape == (3, 6, 2)
    given = np.asarray(m["mean_fraction_given"])
    assert given.shape == (3, 2) and ((given >= 0) & (given <= 1)).all()


@pytest.fixture(scope="module")
def small_evolve():
    env = sj.make("donor_game", num_agents=6)
    return jax.jit(jax.vmap(make_donor_evolution(env, DonorEvolutionConfig(num_generations=3))))


def test_same_seed_same_bits_whatever_the_batch(small_evolve):
    """Batches of 8 and of 1 are two compiled programs: the same bits on the CPU; on
    other backends ``assert_same`` asks for closeness only (tests/support.py)."""
    base = jax.random.key(7)
    keys = jax.vmap(lambda s: jax.random.fold_in(base, s))(jnp.arange(8))
    thetas_all, metrics_all = small_evolve(keys)
    thetas_one, metrics_one = small_evolve(keys[5:6])
    assert_same(thetas_all[5], thetas_one[0])
    for k in metrics_all:
        assert_same(metrics_all[k][5], metrics_one[k][0], err_msg=k)
    assert not np.array_equal(metrics_all["mean_final_resources"][0], metrics_all["mean_final_resources"][1])


def test_generosity_is_selected_against_without_reciprocity():
    """Pure free-riding pays in the donor game: with no trace weights to exploit, the
    population's giving falls over the generations."""
    env = sj.make("donor_game")
    config = DonorEvolutionConfig(num_generations=6, init_weight_scale=0.0)
    _, m = jax.jit(jax.vmap(make_donor_evolution(env, config)))(jax.random.split(jax.random.key(1), 32))
    given = np.asarray(m["mean_fraction_given"]).mean(0)
    assert given[-1] < 0.5 * given[0], given


def test_progress_waits_for_every_run():
    out = io.StringIO()
    prog = Progress(total_steps=2, num_runs=3, label="t", stream=out)

    def f(x):
        def body(c, i):
            prog.report(i, value=c)
            return c + 1.0, None
        return jax.lax.scan(body, x, jnp.arange(2))[0]

    jax.block_until_ready(jax.jit(jax.vmap(f))(jnp.arange(3.0)))
    jax.effects_barrier()
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("t [1/2] value=1") and lines[1].startswith("t [2/2] value=2")


def test_cli_main_job_writes_summary_and_plot(tmp_path, capsys):
    assert main(["train", "donor-evolution", "--seeds", "4", "--generations", "2", "--multipliers", "2",
                 "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Average final resources per generation" in text and "g = 2" in text
    assert (tmp_path / "donor_evolution.png").stat().st_size > 10_000
    data = np.load(tmp_path / "metrics.npz")
    assert data["mean_final_resources"].shape == (1, 4, 2)
    csv = (tmp_path / "summary.csv").read_text().splitlines()
    assert csv[0] == "multiplier,metric,generation,mean,ci95_low,ci95_high" and len(csv) == 1 + 2 * 2


def test_cli_rejects_bad_input(capsys):
    for argv in (["train", "nope"], ["train", "donor-evolution", "--seeds", "0"],
                 ["train", "donor-evolution", "--multipliers", "a,b"],
                 ["train", "donor-evolution", "--seeds", "1"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
    assert main(["envs"]) == 0
    assert "donor_game" in capsys.readouterr().out


def test_evolution_rejects_wrong_env():
    with pytest.raises(TypeError, match="donor_game"):
        make_donor_evolution(sj.make("ipd"))
    with pytest.raises(ValueError, match="action_levels"):
        make_donor_evolution(sj.make("donor_game", action_levels=5))
    with pytest.raises(ValueError, match="survival_fraction"):
        DonorEvolutionConfig(survival_fraction=0.0)
