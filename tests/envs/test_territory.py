"""Territory (Melting Pot 2.0 ``territory__open`` / ``territory__rooms``): claiming by
brush and by beam (through walls, across the torus edge, contested claims), a claimed
wall's colour, payment only after the paint has been held 25 steps, repainting, zapping
walls (two hits destroy, the rubble is walkable) and players (freeze, then removal for
good, their walls released), self-repair measured over many draws, the torus, the
scripted bots, invariants of random play (payments against the rule, step by step) and
bad input; determinism is the contract test's. Hand-made states go through the public,
jitted ``env.step``; one compiled rollout serves the random-play and bot tests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import play

import socialjax as sj
from socialjax.agents.scripted import make_scripted, scripted_names
from socialjax.envs.grid import constants as C
from socialjax.envs.grid import render as R
from socialjax.envs.territory import (
    BRICK,
    PAINT,
    RESOURCE,
    Territory,
    TerritoryParams,
    repair_walls,
    wall_codes,
)

N, E_, S, W = C.NORTH, C.EAST, C.SOUTH, C.WEST
NOOP, FORWARD, ZAP, CLAIM = 0, 1, 7, 8
KEY = jax.random.key(0)
# rooms map: room (0, 0) has floor rows 1-5, columns 1-5; its east wall is column 6 and
# the west wall of room (0, 1) column 7 (floor 8-12); the top wall row 0 faces the
# bottom wall row 20 across the torus edge
WALL_A, WALL_B = (3, 6), (3, 7)


@pytest.fixture(scope="module")
def env():
    return sj.make("territory_rooms", num_agents=3, episode="fixed", episode_length=200)


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def params(env):
    return env.default_params


def place(env, pos, heading, destroyed=()):
    """A fresh state with the players at ``pos`` facing ``heading``; walls at
    ``destroyed`` are rubble (health 0, floor)."""
    _, state = jax.jit(env.reset)(KEY)
    state = state.replace(pos=jnp.asarray(pos, jnp.int32), heading=jnp.asarray(heading, jnp.int32))
    for r, c in destroyed:
        k = int(env.resource_index[r, c])
        state = state.replace(health=state.health.at[k].set(0), cells=state.cells.at[r, c].set(C.FLOOR))
    return state


def owner(env, state, cell):
    return int(state.owner[int(env.resource_index[cell])])


def far_away(env):
    """Seats for players 1 and 2 that touch no wall: room (2, 2)'s centre and the cell beside it."""
    return [(17, 17), (17, 16)], [N, N]


# ------------------------------------------------------------------------- the config
def test_maps_players_and_defaults():
    open_, rooms = sj.make("territory_open"), sj.make("territory_rooms")
    assert open_.map.shape == (23, 39) and rooms.map.shape == (21, 21)
    assert open_.num_agents == rooms.num_agents == 9 and open_.view == rooms.view == (9, 1, 5)
    assert len(open_.resource_pos) == 88 and len(open_.spawn_points) == 18
    assert len(rooms.resource_pos) == 180 and len(rooms.spawn_points) == 9
    assert not open_.torus and rooms.torus
    assert rooms.num_actions == 9 and rooms.action_names[ZAP] == "zap" and rooms.action_names[CLAIM] == "claim"
    p = rooms.default_params
    assert (int(p.zap_cooldown), int(p.resource_health), int(p.reward_delay), int(p.release_delay)) == (4, 2, 25, 5)
    assert (int(p.repair_delay), int(p.zap_freeze), int(p.recovery)) == (15, 25, 50)
    assert float(p.reward_rate) == pytest.approx(0.01) and float(p.repair_prob) == pytest.approx(0.1)
    assert float(p.resource_reward) == 1.0 and int(p.respawn_delay) >= 5000 and float(p.end_prob) == pytest.approx(0.2)
    # one spawn point per room, in its centre; every wall starts unclaimed with full health
    assert sorted(map(tuple, rooms.spawn_points.tolist())) == [(r, c) for r in (3, 10, 17) for c in (3, 10, 17)]
    _, state = rooms.reset(KEY)
    assert np.all(np.asarray(state.owner) == -1) and np.all(np.asarray(state.health) == 2)
    assert np.all(np.asarray(state.cells)[tuple(rooms.resource_pos.T)] == RESOURCE)


# --------------------------------------------------------------------------- claiming
def test_the_brush_claims_the_wall_ahead_every_step(env, step, params):
    far, heads = far_away(env)
    state = place(env, [(3, 5)] + far, [E_] + heads)
    states, _, infos = play(step, state, [(NOOP, NOOP, NOOP)] * 3, params)
    assert owner(env, states[0], WALL_A) == 0 and owner(env, states[0], WALL_B) == -1
    assert int(states[0].cells[WALL_A]) == PAINT + 0  # agent 0's wet paint
    assert infos[0]["walls_claimed"].tolist() == [1, 0, 0] and infos[1]["walls_claimed"].tolist() == [0, 0, 0]
    assert [int(s.held[int(env.resource_index[WALL_A])]) for s in states] == [1, 2, 3]  # re-claiming: no reset
    assert [i["walls_held"][0] for i in infos] == [1, 1, 1]


def test_the_claim_beam_paints_through_a_wall_and_beats_a_brush(env, step, params):
    # agent 0 in room (0, 0) fires at its east wall; agent 1 in room (0, 1) faces the
    # same double wall and brushes (3, 7): the beam reaches both walls and wins (3, 7)
    state = place(env, [(3, 5), (3, 8), (17, 17)], [E_, W, N])
    states, _, infos = play(step, state, [(CLAIM, NOOP, NOOP)], params)
    assert owner(env, states[0], WALL_A) == 0 and owner(env, states[0], WALL_B) == 0
    assert infos[0]["walls_claimed"].tolist() == [2, 0, 0] and infos[0]["claims_fired"].tolist() == [1, 0, 0]
    # the beam passes through a player: agent 1 standing right in front of agent 0
    state = place(env, [(3, 4), (3, 5), (17, 17)], [E_, N, N])
    states, _, _ = play(step, state, [(CLAIM, NOOP, NOOP)], params)
    assert owner(env, states[0], WALL_A) == 0


def test_contested_claims_go_to_a_random_claimant(env, params):
    # both players fire at the double wall from either side, in 400 independent steps
    state = place(env, [(3, 5), (3, 8), (17, 17)], [E_, W, N])
    keys = jax.random.split(jax.random.key(7), 400)
    batch = jax.jit(jax.vmap(lambda k: env.step(k, state, jnp.asarray([CLAIM, CLAIM, NOOP]), params)[1].owner))(keys)
    a, b = (np.asarray(batch[:, int(env.resource_index[c])]) for c in (WALL_A, WALL_B))
    # the players claim in a random order and the later one paints both walls (as in
    # Melting Pot, where each player's whole beam runs in its turn): a fair coin, 0.5
    # within 4 standard errors (0.025)
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) == {0, 1} and abs(a.mean() - 0.5) < 0.1


def test_a_claimed_wall_has_its_painters_colour_wet_then_dry(env, step, params):
    far, heads = far_away(env)
    state = place(env, [(3, 5)] + far, [E_] + heads)
    sure = params.replace(reward_rate=1.0)
    states, rewards, _ = play(step, state, [(NOOP, NOOP, NOOP)] * 27, sure)
    colour = np.asarray(R.AGENT_COLOURS[0], float)
    r, c = WALL_A
    for s, alpha, scale in ((states[0], 75 / 255, 1.0), (states[26], 200 / 255, 0.75)):  # wet, then dry
        image = np.asarray(jax.jit(env.render)(s))
        # the brick pixel (row 1, column 1 of the sprite): Melting Pot's paint over the brick (61, 61, 61)
        expected = np.round(alpha * scale * colour + (1 - alpha) * np.asarray(BRICK, float))
        np.testing.assert_array_equal(image[8 * r + 1, 8 * c + 1], expected)
    # unclaimed walls keep the brick colour; the painted wall pays for the first time in step 25
    np.testing.assert_array_equal(np.asarray(jax.jit(env.render)(states[0]))[8 * 3 + 1, 8 * 7 + 1], BRICK)
    assert [float(x[0]) for x in rewards] == [0.0] * 25 + [1.0, 1.0]
    assert int(states[24].cells[WALL_A]) == PAINT and int(states[25].cells[WALL_A]) == PAINT + 2  # dry


def test_repainting_restarts_the_wait_and_pays_the_new_owner(env, step, params):
    sure = params.replace(reward_rate=1.0)
    # agent 0 brushes wall A from step 0; agent 1, in the next room, brushes wall B. In
    # step 30 agent 0 turns away and agent 1's beam reaches through B to A and repaints it
    state = place(env, [(3, 5), (3, 8), (17, 17)], [E_, W, N])
    schedule = [(NOOP, NOOP, NOOP)] * 30 + [(5, CLAIM, NOOP)] + [(NOOP, NOOP, NOOP)] * 26
    states, rewards, _ = play(step, state, schedule, sure)
    rewards = np.asarray(rewards)
    assert owner(env, states[29], WALL_A) == 0 and int(states[29].cells[WALL_A]) == PAINT + 2  # agent 0's, dry
    assert owner(env, states[30], WALL_A) == 1 and int(states[30].cells[WALL_A]) == PAINT + 4  # agent 1's, wet
    assert int(states[30].held[int(env.resource_index[WALL_A])]) == 1
    assert rewards[:, 0].tolist() == [0.0] * 25 + [1.0] * 5 + [0.0] * 27
    # agent 1: wall B pays from step 25, wall A again 25 steps after the repaint
    assert rewards[:, 1].tolist() == [0.0] * 25 + [1.0] * 30 + [2.0] * 2


def test_rubble_is_walkable_and_passes_beams(env, step, params):
    far, heads = far_away(env)
    state = place(env, [(3, 5)] + far, [E_] + heads)
    # zap at steps 0 and 5 (cooldown 4: one zap every 5 steps)
    schedule = [(ZAP, NOOP, NOOP)] + [(NOOP, NOOP, NOOP)] * 4 + [(ZAP, NOOP, NOOP), (FORWARD, NOOP, NOOP)]
    states, _, infos = play(step, state, schedule, params)
    k_a, k_b = int(env.resource_index[WALL_A]), int(env.resource_index[WALL_B])
    assert [int(s.health[k_a]) for s in states[:6]] == [1, 1, 1, 1, 1, 0] and int(states[0].health[k_b]) == 2
    assert int(states[0].cells[WALL_A]) == PAINT + 1  # agent 0's paint, damaged (the brush claimed it)
    assert [int(i["zaps_fired"][0]) for i in infos[:6]] == [1, 0, 0, 0, 0, 1]
    # the side rays (one cell aside, 0..1 ahead) reach the walls beside A: three walls per zap
    assert infos[0]["walls_zapped"].tolist() == [3, 0, 0] and int(states[0].health[int(env.resource_index[2, 6])]) == 1
    assert infos[5]["walls_destroyed"].tolist() == [3, 0, 0] and int(states[5].cells[WALL_A]) == C.FLOOR
    assert owner(env, states[5], WALL_A) == -1 and tuple(states[6].pos[0].tolist()) == WALL_A  # walked onto it
    # a beam now passes the rubble: zapping from (3, 5) hits (3, 7) behind it
    state = place(env, [(3, 5)] + far, [E_] + heads, destroyed=[WALL_A])
    states, _, _ = play(step, state, [(ZAP, NOOP, NOOP)], params)
    assert int(states[0].health[k_b]) == 1


def test_self_repair_after_15_steps_with_probability_0_1():
    p = TerritoryParams()
    draws = 20_000
    health = jnp.full(draws, 1, jnp.int32)
    healed, since = jax.jit(repair_walls)(jax.random.key(3), health, jnp.full(draws, 15, jnp.int32), p)
    rate = float(jnp.mean(healed == 2))
    assert abs(rate - 0.1) < 4 * np.sqrt(0.1 * 0.9 / draws) and np.all(np.asarray(since) == 16)
    healed, _ = jax.jit(repair_walls)(jax.random.key(3), health, jnp.full(draws, 14, jnp.int32), p)
    assert np.all(np.asarray(healed) == 1)  # not before 15 steps unzapped
    full, since = repair_walls(jax.random.key(3), jnp.full(4, 2), jnp.full(4, 30), p)
    assert np.all(np.asarray(full) == 2) and np.all(np.asarray(since) == 30)  # undamaged: nothing counts


# ------------------------------------------------------------------------- sanctions
def test_first_hit_freezes_second_removes_for_good(env, step, params):
    # agent 0 at (3, 3) facing east hits agent 1 at (3, 5) (two cells ahead), which owns (3, 6)
    state = place(env, [(3, 3), (3, 5), (17, 17)], [E_, E_, N])
    schedule = [(ZAP, NOOP, NOOP)] + [(NOOP, 5, NOOP)] * 30  # agent 1 tries to turn every step
    states, _, infos = play(step, state, schedule, params)
    assert infos[0]["times_zapped"].tolist() == [0, 1, 0] and int(states[0].level[1]) == 2
    assert not infos[0]["removed"][1]
    heads = [int(s.heading[1]) for s in states]
    assert heads[:25] == [E_] * 25 and heads[25] == N  # turns again in step 25
    schedule = [(ZAP, NOOP, NOOP)] + [(NOOP, ZAP, NOOP)] * 32
    _, _, infos = play(step, state, schedule, params)
    assert [int(i["zaps_fired"][1]) for i in infos].index(1) == 30  # frozen 25 frames, then the 4-step cooldown
    # the second zap (step 5) removes agent 1 for good; its wall goes back to unclaimed
    schedule = [(ZAP, NOOP, NOOP)] + [(NOOP, NOOP, NOOP)] * 4 + [(ZAP, NOOP, NOOP)] + [(NOOP, NOOP, NOOP)] * 60
    states, rewards, infos = play(step, state, schedule, params)
    removed = [bool(i["removed"][1]) for i in infos]
    assert removed[:5] == [False] * 5 and all(removed[5:])
    assert owner(env, states[4], WALL_A) == 1 and owner(env, states[5], WALL_A) == -1  # held 6 >= 5 steps
    assert all(float(r[1]) == 0.0 for r in rewards[5:])
    obs = jax.jit(env.get_obs)(states[-1], params)
    assert np.all(np.asarray(obs["grid"][1]) == C.OUTSIDE) and int(obs["ready_to_zap"][1]) == 0


def test_the_mark_wears_off_50_steps_after_the_hit(env, step, params):
    state = place(env, [(3, 3), (3, 5), (17, 17)], [E_, E_, N])
    states, _, infos = play(step, state, [(ZAP, NOOP, NOOP)] + [(NOOP, NOOP, NOOP)] * 51, params)
    levels = [int(s.level[1]) for s in states]
    assert levels[:49] == [2] * 49 and levels[49:] == [1, 1, 1]


def test_two_hits_in_one_step_remove(env, step, params):
    state = place(env, [(3, 3), (3, 4), (3, 5)], [E_, N, W])  # 0 and 2 both hit 1 between them
    _, _, infos = play(step, state, [(ZAP, NOOP, ZAP)], params)
    assert infos[0]["times_zapped"].tolist() == [0, 2, 0] and infos[0]["removed"].tolist() == [False, True, False]


# ---------------------------------------------------------------------------- the torus
def test_moves_beams_and_views_wrap_on_the_torus(env, step, params):
    far, heads = far_away(env)
    top, bottom = (0, 1), (20, 1)
    # claim beam from (1, 1) facing north: the top wall and, across the edge, the bottom wall
    state = place(env, [(1, 1)] + far, [N] + heads)
    states, _, _ = play(step, state, [(CLAIM, NOOP, NOOP)], params)
    assert owner(env, states[0], top) == 0 and owner(env, states[0], bottom) == 0
    # with both walls rubble, walking north leaves the top row and arrives on the bottom row
    state = place(env, [(1, 1)] + far, [N] + heads, destroyed=[top, bottom])
    states, _, _ = play(step, state, [(FORWARD, NOOP, NOOP)] * 3, params)
    assert [tuple(s.pos[0].tolist()) for s in states] == [top, bottom, (19, 1)]
    # the view wraps: two cells ahead of (1, 1) facing north is (20, 1), a wall, not OUTSIDE
    ahead, _, side = env.view
    obs = jax.jit(env.get_obs)(place(env, [(1, 1)] + far, [N] + heads), params)
    assert int(obs["grid"][0, ahead - 2, side]) == RESOURCE
    bounded = sj.make("territory_open", num_agents=3)
    _, s = bounded.reset(KEY)
    s = s.replace(pos=jnp.asarray([(1, 1), (11, 5), (11, 7)], jnp.int32), heading=jnp.asarray([N, N, N]))
    assert int(bounded.get_obs(s, bounded.default_params)["grid"][0, ahead - 2, side]) == C.OUTSIDE


# ----------------------------------------------------------------- random play and bots
PLAYERS, STEPS, ENVS = 9, 300, 8
RANDOM, CONSIDERATE, INCONSIDERATE, DESTROYER, ZAPPER = range(5)
BOT_NAMES = ("considerate_claimer", "inconsiderate_claimer", "destroyer", "zapper")


@pytest.fixture(scope="module")
def env9():
    return sj.make("territory_rooms", episode="fixed", episode_length=STEPS)


@pytest.fixture(scope="module")
def rollout(env9):
    """One compiled ``(key, params, policy (N,)) -> per-step summaries (T, B, ...)``:
    ENVS episodes of STEPS steps, ``policy`` picking random or a bot per seat. The
    invariants are evaluated inside the scan."""
    env = env9
    bots = [make_scripted(name, env).act for name in BOT_NAMES]
    walls = jnp.asarray(env.walls)
    rpos = jnp.asarray(env.resource_pos)

    def one(key, params, policy):
        obs, state = env.reset(key, params)

        def body(carry, k):
            obs, state = carry
            keys = jax.random.split(k, 6)
            slot = jnp.zeros(env.num_agents)
            actions = jax.random.randint(keys[0], (env.num_agents,), 0, 9)
            for b, bot in enumerate(bots):
                actions = jnp.where(policy == b + 1, bot(keys[b + 1], slot, obs), actions)
            obs2, new, reward, done, info = env.step(keys[5], state, actions, params)
            on_map = new.removed == 0
            pos = jnp.where(on_map[:, None], new.pos, -1 - jnp.arange(env.num_agents)[:, None])
            distinct = jnp.all(jnp.sum(jnp.all(pos[:, None] == pos[None, :], -1), 1) == 1)
            live = new.health > 0
            live_grid = jnp.zeros(env.map.shape, bool).at[rpos[:, 0], rpos[:, 1]].set(live)
            standing = jnp.where(on_map, walls[new.pos[:, 0], new.pos[:, 1]] | live_grid[new.pos[:, 0], new.pos[:, 1]],
                                 False)
            held_by = (new.owner[None, :] == jnp.arange(env.num_agents)[:, None])
            # payments come from walls held long enough by players on the map: a wall held
            # after the step for held steps was held held - 1 steps when it could pay
            eligible = jnp.sum(held_by & (new.held - 1 >= params.reward_delay), axis=1) * on_map
            eligible = jnp.where(done, jnp.maximum(eligible, reward.astype(jnp.int32)), eligible)  # reset: unseen
            out = dict(
                reward=reward, eligible=eligible, distinct=distinct, standing=standing.any(),
                health_ok=jnp.all((new.health >= 0) & (new.health <= params.resource_health)),
                owners_ok=jnp.all((new.owner >= -1) & (new.owner < env.num_agents) & (live | (new.owner == -1))),
                codes_ok=jnp.all(new.cells[rpos[:, 0], rpos[:, 1]]
                                 == wall_codes(new.owner, new.dry, new.health, params.resource_health)),
                back=jnp.any((state.removed > 0) & on_map) & ~done,  # nobody comes back (but at a reset)
                held=info["walls_held"], claimed=info["walls_claimed"], zapped_walls=info["walls_zapped"],
                destroyed=info["walls_destroyed"], claims=info["claims_fired"], zaps=info["zaps_fired"],
                hit=info["times_zapped"], removed=info["removed"],
            )
            return (obs2, new), out

        return jax.lax.scan(body, (obs, state), jax.random.split(jax.random.fold_in(key, 1), STEPS))[1]

    return jax.jit(jax.vmap(one, in_axes=(0, None, None)))


@pytest.fixture(scope="module")
def random_play(env9, rollout):
    return jax.device_get(rollout(jax.random.split(KEY, ENVS), env9.default_params, jnp.zeros(PLAYERS, jnp.int32)))


@pytest.fixture(scope="module")
def bot_play(env9, rollout):
    policy = jnp.asarray([CONSIDERATE, CONSIDERATE, INCONSIDERATE, INCONSIDERATE, DESTROYER, DESTROYER, ZAPPER,
                          RANDOM, RANDOM])
    return jax.device_get(rollout(jax.random.split(jax.random.key(5), ENVS), env9.default_params, policy))


@pytest.mark.parametrize("which", ["random_play", "bot_play"])
def test_invariants_and_payments_against_the_rule(which, request):
    out = request.getfixturevalue(which)
    assert out["distinct"].all() and not out["standing"].any()  # one player per cell, never on a wall
    assert out["health_ok"].all() and out["owners_ok"].all() and out["codes_ok"].all()
    assert not out["back"].any()  # removed players never return
    reward = out["reward"]
    assert np.all(reward == np.round(reward)) and np.all(reward >= 0)  # whole payments
    assert np.all(reward <= out["eligible"])  # only from walls held 25 steps by a player on the map
    assert np.all(out["held"] >= 0)
    # each eligible wall pays 1 with probability 0.01 per step: the total against the rule
    n = out["eligible"].sum()
    assert n > 5000
    assert abs(reward.sum() - 0.01 * n) < 4 * np.sqrt(n * 0.01 * 0.99)


def test_random_play_statistics(random_play):
    out = random_play
    # random players (1/9 claim beams, 1/9 zaps) hold walls, zap walls and each other
    assert out["claims"].mean() == pytest.approx(1 / 9, abs=0.01)
    assert out["held"].sum() > 0 and out["zapped_walls"].sum() > 0 and out["hit"].sum() > 0
    assert out["destroyed"].sum() <= out["zapped_walls"].sum()


def test_scripted_bots_pursue_their_goals(bot_play):
    out = bot_play
    per_seat = {k: out[k].sum(axis=(0, 1)) for k in ("claims", "zaps", "held", "destroyed", "hit", "reward")}
    # the considerate claimers only brush: no claim beam, no zap, and they hold walls
    assert per_seat["claims"][:2].sum() == 0 and per_seat["zaps"][:2].sum() == 0 and per_seat["held"][:2].min() > 0
    assert per_seat["claims"][2:4].min() > 0 and per_seat["zaps"][2:4].sum() == 0  # inconsiderate: beams
    assert per_seat["destroyed"][4:6].min() > 0  # destroyers bring walls down
    assert per_seat["zaps"][6] > 0 and per_seat["claims"][6] == 0  # the zapper zaps, never claims
    # a claimer earns more than a random player
    assert per_seat["reward"][:4].mean() > per_seat["reward"][7:].mean()


def test_scripted_bots_are_listed():
    env = sj.make("territory_rooms")
    assert set(BOT_NAMES) <= set(scripted_names(env))
    assert "considerate_claimer" not in scripted_names(sj.make("territory_rooms", obs_mode="rgb"))


# -------------------------------------------------------------------------- bad input
def test_bad_options_and_params():
    with pytest.raises(ValueError, match="map must be one of"):
        sj.make("territory_open", map="closed")
    with pytest.raises(ValueError, match="num_agents <= 11"):
        sj.make("territory_open", num_agents=12)
    with pytest.raises(ValueError, match="spawn points"):
        sj.make("territory_rooms", num_agents=10)
    env = sj.make("territory_rooms")
    assert isinstance(env, Territory) and isinstance(env.default_params, TerritoryParams)
    with pytest.raises(ValueError, match="zap_cost"):
        env.reset(KEY, env.default_params.replace(zap_cost=-1.0))
    with pytest.raises(ValueError, match="reward_rate"):
        env.reset(KEY, env.default_params.replace(reward_rate=1.5))
    with pytest.raises(ValueError, match="whole number"):
        env.default_params.replace(reward_delay=2.5).validate()
