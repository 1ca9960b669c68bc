# Regenerates notebooks/01_quickstart.ipynb (outputs stripped; the tests execute it).
import nbformat as nbf
nb = nbf.v4.new_notebook()
md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
md("""# socialjax quickstart

Make an environment, step it, run 10,000 copies at once, play scripted strategies
against each other, and plot the result. Runs top to bottom on a laptop CPU in well
under a minute."""),
code("""import time
import jax
import jax.numpy as jnp
import numpy as np
import matplotlib.pyplot as plt
import socialjax as sj
from socialjax.agents import memory_one as m1

print(sj.registered_envs())"""),
md("""## One environment

`make` takes static options (array shapes: rounds, memory) and params (numbers that can be
swept with `vmap`). Actions are an array over agents: `0` = cooperate, `1` = defect."""),
code("""env = sj.make("ipd", num_rounds=10)
params = env.default_params
print(env, params.payoffs[0], sep="\\n")
print("action space:", env.action_space(params), " observation space:", env.observation_space(params))

obs, state = env.reset(jax.random.key(0), params)
for t, joint in enumerate([[0, 0], [0, 1], [1, 1]]):
    obs, state, reward, done, info = env.step(jax.random.key(t), state, jnp.array(joint), params)
    print(f"actions {joint} -> reward {reward}, obs codes {obs.ravel()} (1=CC 2=CD 3=DC 4=DD, own first)")"""),
md("""## 10,000 environments in one call

A whole episode is a `lax.scan`; `vmap` runs many at once. Here: random play, 100 rounds,
10,000 games."""),
code("""env = sj.make("ipd", num_rounds=100)

def random_episode(key):
    obs, state = env.reset(key)
    def body(carry, k):
        obs, state = carry
        k_act, k_step = jax.random.split(k)
        obs, state, reward, done, info = env.step(k_step, state, env.sample_actions(k_act), env.default_params)
        return (obs, state), reward
    _, rewards = jax.lax.scan(body, (obs, state), jax.random.split(key, 100))
    return rewards.sum(0)

run = jax.jit(jax.vmap(random_episode))
keys = jax.random.split(jax.random.key(1), 10_000)
returns = jax.block_until_ready(run(keys))            # compiles once
start = time.perf_counter(); returns = jax.block_until_ready(run(keys)); elapsed = time.perf_counter() - start
print(f"{10_000 * 100 / elapsed:,.0f} env-steps/s; mean return per player {float(returns.mean()):.1f} "
      f"(expected 100 * 2.25 = 225 for uniform random play)")"""),
md("""## Scripted strategies: a noisy tournament

Memory-one strategies are vectors of cooperation probabilities
`[p_first, p_CC, p_CD, p_DC, p_DD]`. Every pair plays 256 games of 200 rounds with 5%
execution noise, all 49 pairings in a single compiled call. The dots compare each
simulated mean payoff with the exact long-run value from the Markov chain
(`stationary_payoffs`)."""),
code("""names = ["ALLC", "ALLD", "TFT", "WSLS", "GTFT", "GRIM", "RANDOM"]
strategies = jnp.stack([m1.STRATEGIES[n.lower()] for n in names])
noisy = sj.make("ipd", num_rounds=200, noise=0.05)

def match(key, s0, s1):
    obs, state = noisy.reset(key)
    def body(carry, k):
        obs, state = carry
        k0, k1, k_step = jax.random.split(k, 3)
        a = jnp.stack([m1.act(k0, s0, m1.last_outcome(obs[0], 1)), m1.act(k1, s1, m1.last_outcome(obs[1], 1))])
        obs, state, reward, _, _ = noisy.step(k_step, state, a)
        return (obs, state), reward
    _, rewards = jax.lax.scan(body, (obs, state), jax.random.split(key, 200))
    return rewards.mean(0)                       # per-round payoff of both players

n = len(names)
i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
games = jax.vmap(jax.vmap(match, in_axes=(0, None, None)), in_axes=(None, 0, 0))
keys = jax.random.split(jax.random.key(2), 256)
payoff = np.asarray(games(keys, strategies[i.ravel()], strategies[j.ravel()]).mean(1))[:, 0].reshape(n, n)

fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
im = axes[0].imshow(payoff, cmap="viridis")
axes[0].set_xticks(range(n), names, rotation=45); axes[0].set_yticks(range(n), names)
axes[0].set_xlabel("co-player"); axes[0].set_title("mean payoff per round (row player), noise 0.05")
for a in range(n):
    for b in range(n):
        axes[0].text(b, a, f"{payoff[a, b]:.2f}", ha="center", va="center", fontsize=7, color="w")
fig.colorbar(im, ax=axes[0])
exact = np.array([[m1.stationary_payoffs(strategies[a], strategies[b], noise=0.05)[0] for b in range(n)] for a in range(n)])
axes[1].plot([0, 5], [0, 5], "k--", lw=0.8)
axes[1].scatter(exact.ravel(), payoff.ravel(), s=12)
axes[1].set_xlabel("exact long-run payoff (Markov chain)"); axes[1].set_ylabel("simulated, 200 rounds")
axes[1].set_title("simulation vs theory")
fig.tight_layout(); plt.show()
print("largest gap:", float(np.abs(exact - payoff).max()), "(finite games start from the first move, so small gaps remain)")"""),
md("""## Sweeping a parameter without recompiling

Noise is a param, so a sweep is a `vmap` over params. Classic result: TFT against itself
collapses under noise (a single error starts an echo of retaliation) while WSLS
recovers."""),
code("""noise_levels = jnp.linspace(0.0, 0.2, 9)

def self_play(noise, key, s):
    params = noisy.default_params.replace(noise=noise)
    obs, state = noisy.reset(key, params)
    def body(carry, k):
        obs, state = carry
        k0, k1, k_step = jax.random.split(k, 3)
        a = jnp.stack([m1.act(k0, s, m1.last_outcome(obs[0], 1)), m1.act(k1, s, m1.last_outcome(obs[1], 1))])
        obs, state, reward, _, _ = noisy.step(k_step, state, a, params)
        return (obs, state), reward[0]
    return jax.lax.scan(body, (obs, state), jax.random.split(key, 200))[1].mean()

sweep = jax.jit(jax.vmap(jax.vmap(self_play, in_axes=(None, 0, None)), in_axes=(0, None, None)))
for name in ["TFT", "WSLS", "GTFT"]:
    curve = np.asarray(sweep(noise_levels, keys, m1.STRATEGIES[name.lower()]).mean(1))
    plt.plot(noise_levels, curve, marker="o", label=f"{name} vs itself")
plt.xlabel("execution noise"); plt.ylabel("mean payoff per round"); plt.legend(); plt.grid(alpha=0.3); plt.show()"""),
md("""## The donor game

Twelve agents, halves A and B, a reputation trace of depth 3. Below, six generous
reciprocators (give what the recipient gave last time, half to strangers) and six
free-riders play one generation (two games); final resources show who gains."""),
code("""from socialjax.agents import donor_strategies as ds

donor = sj.make("donor_game")
thetas = jnp.stack([ds.reciprocator(3, unknown=0.5)] * 6 + [ds.fixed_fraction(0.0, 3)] * 6)

def generation(key):
    obs, state = donor.reset(key)
    def body(carry, k):
        obs, state = carry
        obs, state, reward, done, info = donor.step(k, state, ds.act(thetas, obs, 3))
        return (obs, state), info["generation_final_resources"]
    return jax.lax.scan(body, (obs, state), jax.random.split(key, donor.episode_length))[1][-1]

finals = jax.jit(jax.vmap(generation))(jax.random.split(jax.random.key(3), 1000))  # (1000, 2 games, 12)
per_agent = np.asarray(finals.mean((0, 1)))
plt.bar(range(12), per_agent, color=["tab:green"] * 6 + ["tab:red"] * 6)
plt.axhline(10, color="k", lw=0.8, ls="--")
plt.xlabel("agent (green: reciprocators, red: free-riders)"); plt.ylabel("mean final resources")
plt.title("donor game: mean over 1000 independent generations (random halves)"); plt.show()
print("reciprocators:", per_agent[:6].mean().round(2), " free-riders:", per_agent[6:].mean().round(2))"""),
md("""Cultural evolution of such strategies over generations, for hundreds of seeds at once,
is the README's main job: `socialjax train donor-evolution`."""),
]
nb["cells"] = cells
nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/01_quickstart.ipynb")
