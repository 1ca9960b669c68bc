"""Where the time of a gridworld step goes.

Times each phase of ``GridEnv.step`` on its own, vmapped over a batch of real
mid-episode states (taken from a random-play rollout), each inside a ``lax.scan`` of
``--iters`` iterations whose inputs change every iteration (so XLA cannot hoist the
work out of the loop). Reports microseconds per batched call and the share of the whole
step. The phases overlap with fusion in the real step, so they do not add up exactly.
The fresh state and the respawn draw are timed as if every game needed them: in the
step they run only on steps where some game does (on the CPU; ``socialjax.core.lazy``).

    python scripts/profile_grid.py --env cleanup --batch 64
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

import socialjax as sj
from socialjax.envs.grid import engine as E


def timed(fn, args, repeats: int) -> float:
    compiled = jax.jit(fn).lower(*args).compile()
    compiled(*args).block_until_ready()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        compiled(*args).block_until_ready()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="harvest_open")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--iters", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    env = sj.make(args.env)
    params = env.default_params
    b, n = args.batch, env.num_agents

    # a batch of mid-episode states
    def warm(key):
        _, state = env.reset(key, params)

        def body(state, k):
            ka, ks = jax.random.split(k)
            return env.step(ks, state, env.sample_actions(ka, params), params)[1], None

        return jax.lax.scan(body, state, jax.random.split(key, 100))[0]

    states = jax.jit(jax.vmap(warm))(jax.random.split(jax.random.key(0), b))

    def loop(phase):
        """``phase(key, state) -> pytree``: scanned ``iters`` times over the batch."""

        def run(states, key):
            def body(acc, i):
                k = jax.random.fold_in(key, i)
                # a state that differs per iteration (t moves), so nothing is loop-invariant
                st = states.replace(t=states.t + i, zap_cooldown=states.zap_cooldown * (i % 2))
                out = jax.vmap(phase)(jax.random.split(k, b), st)
                return acc + sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree_util.tree_leaves(out)), None

            return jax.lax.scan(body, jnp.float32(0), jnp.arange(args.iters))[0]

        return run

    def step(key, state):
        a = jax.random.randint(key, (n,), 0, env.num_actions)
        return env.step(key, state, a, params)[:3]

    def transition(key, state):
        a = jax.random.randint(key, (n,), 0, env.num_actions)
        return env.transition(key, state, a, params)[:2]

    def observe(key, state):
        return env.get_obs(state.replace(heading=(state.heading + (key_bits(key) & 3)) % 4), params)

    def reset_state(key, state):
        return env.initial_state(key, params)

    def movement(key, state):
        rel = jax.random.randint(key, (n,), -1, 4)
        target, wants = E.move_targets(state.pos, state.heading, rel)
        return E.resolve_moves(key, state.pos, target, wants, env.walkable(state.cells), state.removed == 0)

    def beams(key, state):
        firing = jax.random.bernoulli(key, 0.3, (n,))
        agents = E.agent_grid(env.map.shape, state.pos, state.removed == 0)
        cells, reached = E.trace_beams(env.zap_rays, state.pos, state.heading, firing, jnp.asarray(env.walls), agents)
        return E.beam_hits(cells, reached, agents)

    def world(key, state):
        return env.update_world(key, state, params)

    def respawn(key, state):
        k_spawn, k_head = jax.random.split(key)
        due = jax.random.bernoulli(key, 0.2, (n,))
        return env._respawn(k_spawn, k_head, due, state.removed, state.pos, state.heading)

    phases = [("whole step (transition + reset + one observation)", step), ("transition (no observation)", transition),
              ("observation", observe), ("a fresh state (only where an episode ended)", reset_state),
              ("respawn draw (only where a player is due back)", respawn),
              ("movement", movement), ("zap beam + hits", beams), ("world update (regrowth, dirt)", world)]
    print(f"{args.env}: {n} agents, batch {b}, {args.iters} iterations per call, median of {args.repeats}; "
          f"{jax.devices()[0].platform}")
    key = jax.random.key(2)
    results = []
    for name, phase in phases:
        seconds = timed(loop(phase), (states, key), args.repeats)
        results.append((name, seconds / args.iters * 1e6))
    whole = results[0][1]
    print(f"{'phase':52s} {'us/call':>9s} {'share':>7s}")
    for name, us in results:
        print(f"{name:52s} {us:9.1f} {us / whole:7.0%}")
    print(f"\nwhole step: {b / whole * 1e6:,.0f} env-steps/s")
    return 0


def key_bits(key):
    return jax.random.bits(key, (), jnp.uint32).astype(jnp.int32)


if __name__ == "__main__":
    raise SystemExit(main())
