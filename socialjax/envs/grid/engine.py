"""The rules every gridworld shares, one pure function per rule.

Coordinates are ``(row, col)`` with rows growing downwards; headings are
``0 = N, 1 = E, 2 = S, 3 = W``. In an agent's own frame a cell is ``(f, l)``: ``f``
cells ahead and ``l`` cells to the right. Static geometry (observation windows, beam
rays) is precomputed with numpy for the four headings; per step it is a gather.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from socialjax.envs.grid import constants as C


# ---------------------------------------------------------------------------- geometry
def rotate(frame_offsets: np.ndarray) -> np.ndarray:
    """``(..., 2)`` offsets ``(f, r)`` (ahead, to the right) in the agent frame ->
    ``(4, ..., 2)`` map offsets ``(drow, dcol)`` for each heading."""
    f, r = frame_offsets[..., 0], frame_offsets[..., 1]
    out = []
    for h in range(4):
        ahead, right = C.DIRECTIONS[h], C.DIRECTIONS[(h + 1) % 4]
        out.append(f[..., None] * ahead + r[..., None] * right)
    return np.stack(out).astype(np.int32)


def window_offsets(ahead: int, behind: int, side: int) -> np.ndarray:
    """``(4, ahead + behind + 1, 2 * side + 1, 2)``: the map offset shown at each pixel
    of an egocentric window, rotated so the agent faces up (row 0 is farthest ahead, the
    agent sits on row ``ahead``, column ``side``)."""
    rows = np.arange(ahead + behind + 1)
    cols = np.arange(2 * side + 1)
    f = ahead - rows[:, None] + 0 * cols[None, :]
    r = cols[None, :] - side + 0 * rows[:, None]
    return rotate(np.stack([f, r], axis=-1))


class Rays:
    """Static beam geometry: ``R`` rays of up to ``L`` cells each, in the agent frame.

    ``offsets (4, R, L, 2)`` (rotated), ``valid (R, L)`` (cells that exist on the ray), and
    ``gate (R,)``: the index of a ray whose *first* cell must not be a wall for this ray
    to exist (-1: no gate). This encodes Melting Pot's rule that rays further out on a
    side are skipped when the first cell on that side is a wall.
    """

    def __init__(self, rays: list[list[tuple[int, int]]], gate: list[int]):
        self.num_rays = len(rays)
        self.length = max(len(r) for r in rays)
        frame = np.zeros((self.num_rays, self.length, 2), np.int32)
        valid = np.zeros((self.num_rays, self.length), bool)
        for i, ray in enumerate(rays):
            frame[i, : len(ray)] = ray
            valid[i, : len(ray)] = True
        self.frame = frame
        self.offsets = rotate(frame)
        self.valid = valid
        self.gate = np.asarray(gate, np.int32)


def meltingpot_beam(length: int, radius: int) -> Rays:
    """Melting Pot zap/clean footprint: the centre ray covers cells ``1..L`` ahead; the
    side ray at lateral offset ``r`` (``1..R``, both sides) covers cells ``0..L-r`` ahead.
    A side ray beyond the first is skipped when the first cell on its side is a wall."""
    rays = [[(f, 0) for f in range(1, length + 1)]]
    gate = [-1]
    for sign in (-1, 1):
        first = len(rays)
        for r in range(1, radius + 1):
            rays.append([(f, sign * r) for f in range(0, length - r + 1)])
            gate.append(-1 if r == 1 else first)
    return Rays(rays, gate)


def ssd_beam(length: int, width: int) -> Rays:
    """The original SSD fire/clean beam: a centre ray covering cells ``1..L`` ahead and
    ``width // 2`` rays on each side, starting beside the agent, covering ``0..L-1``
    ahead (the centre ray reaches one cell further, as the original code's notes say)."""
    half = width // 2
    rays, gate = [[(f, 0) for f in range(1, length + 1)]], [-1]
    for side in [s * r for r in range(1, half + 1) for s in (-1, 1)]:
        rays.append([(f, side) for f in range(0, length)])
        gate.append(-1)
    return Rays(rays, gate)


def straight_beam(length: int) -> Rays:
    """Gathering's beam: one ray straight ahead, cells ``1..L``."""
    return Rays([[(f, 0) for f in range(1, length + 1)]], [-1])


# ------------------------------------------------------------------------------ helpers
def random_order(key: jax.Array, n: int, k: int | None = None) -> jax.Array:
    """The first ``k`` (default all ``n``) entries of a uniformly random permutation of
    ``range(n)``: the indices of the ``k`` largest of ``n`` uniform draws. Same
    distribution as ``jax.random.permutation(key, n)[:k]`` (ties have probability ~0),
    cheaper because ``top_k`` avoids a full sort (BENCHMARKS.md, gridworlds)."""
    return jax.lax.top_k(jax.random.uniform(key, (n,)), n if k is None else k)[1]


def wrap(cells: jax.Array, shape: tuple[int, int]) -> jax.Array:
    """``cells (..., 2)`` taken modulo the map ``shape``: on a torus (Melting Pot's
    ``topology = "TORUS"``) every offset lands on the map."""
    return cells % jnp.asarray(shape, cells.dtype)


def gather(grid: jax.Array, cells: jax.Array, fill) -> jax.Array:
    """``grid[cells]`` for ``cells (..., 2)``; cells off the map read ``fill``."""
    h, w = grid.shape
    r, c = cells[..., 0], cells[..., 1]
    inside = (r >= 0) & (r < h) & (c >= 0) & (c < w)
    return jnp.where(inside, grid[jnp.clip(r, 0, h - 1), jnp.clip(c, 0, w - 1)], fill)


def agent_grid(shape: tuple[int, int], pos: jax.Array, present: jax.Array) -> jax.Array:
    """``(H, W) int32``: the index of the agent on each cell, -1 where none. Removed
    agents are not on the map."""
    n = pos.shape[0]
    rows = jnp.where(present, pos[:, 0], shape[0])  # out of range -> dropped
    return jnp.full(shape, -1, jnp.int32).at[rows, pos[:, 1]].set(jnp.arange(n, dtype=jnp.int32), mode="drop")


def exclusive_cumprod(x: jax.Array) -> jax.Array:
    """``out[..., k] = prod(x[..., :k])`` (1 for k = 0) along the last axis."""
    ones = jnp.ones(x.shape[:-1] + (1,), x.dtype)
    return jnp.concatenate([ones, jnp.cumprod(x, axis=-1)[..., :-1]], axis=-1)


# ------------------------------------------------------------------------------ movement
def apply_turns(heading: jax.Array, turn: jax.Array, present: jax.Array) -> jax.Array:
    """Turn by ``turn`` (-1 left, +1 right) quarter turns; removed agents do not turn."""
    return jnp.where(present, (heading + turn) % 4, heading)


def move_targets(pos: jax.Array, heading: jax.Array, rel_move: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Target cell of each agent's egocentric move (``constants.FORWARD`` ... ``LEFT``,
    ``NO_MOVE``). Returns ``(target (N, 2), wants_to_move (N,))``."""
    wants = rel_move != C.NO_MOVE
    direction = jnp.asarray(C.DIRECTIONS)[(heading + jnp.maximum(rel_move, 0)) % 4]
    return pos + jnp.where(wants[:, None], direction, 0), wants


def resolve_moves(
    key: jax.Array, pos: jax.Array, target: jax.Array, wants: jax.Array, walkable: jax.Array, present: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Agents try their moves one at a time in a uniformly random order; a move succeeds
    if the target is walkable and empty at that moment. So a chain resolves when the
    front agent goes first, contested cells go to a random contender, and two agents
    never share a cell or swap through each other.

    ``walkable (H, W) bool``. Returns ``(new_pos (N, 2), moved (N,) bool)``.
    """
    n = pos.shape[0]
    order = random_order(key, n)
    target_ok = gather(walkable, target, False) & wants & present
    moved = jnp.zeros(n, bool)
    agent_ids = jnp.arange(n)
    for k in range(n):  # n is static and small: unrolled
        i = order[k]
        mine = agent_ids == i
        t = target[i]
        # the target is free if no present agent currently stands on it
        taken = jnp.any(present & jnp.all(pos == t, axis=1))
        ok = target_ok[i] & ~taken
        pos = jnp.where(mine[:, None] & ok, t, pos)
        moved = moved | (mine & ok)
    return pos, moved


# --------------------------------------------------------------------------------- beams
def trace_beams(
    rays: Rays,
    pos: jax.Array,
    heading: jax.Array,
    firing: jax.Array,
    blocks_beam: jax.Array,
    agents: jax.Array | None,
    torus: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """Cells each firing agent's beam reaches.

    A ray stops at the first cell that ``blocks_beam`` (that cell is not reached) and,
    when ``agents`` (the :func:`agent_grid`, or any ``(H, W)`` grid that is ``>= 0``
    where something stops a beam and is hit by it) is given, at the first agent it
    meets (that cell is reached: the agent is hit). With ``torus`` the rays wrap around
    the map edges. Returns ``cells (N, R, L, 2)`` (on the map when ``torus``) and
    ``reached (N, R, L) bool`` (all False for agents not firing).
    """
    cells = pos[:, None, None, :] + jnp.asarray(rays.offsets)[heading]
    if torus:
        cells = wrap(cells, blocks_beam.shape)
    wall = gather(blocks_beam, cells, True) | ~jnp.asarray(rays.valid)
    reached = jnp.cumprod(~wall, axis=-1).astype(bool)
    if agents is not None:
        occupied = gather(agents, cells, -1) >= 0
        reached = reached & exclusive_cumprod(~occupied).astype(bool)
    gate = jnp.asarray(rays.gate)
    gate_open = jnp.where(gate >= 0, ~wall[:, jnp.maximum(gate, 0), 0], True)  # (N, R)
    reached = reached & gate_open[:, :, None] & firing[:, None, None]
    return cells, reached


def beam_hits(cells: jax.Array, reached: jax.Array, agents: jax.Array) -> jax.Array:
    """``(N_shooters, N_targets) int32``: how many rays of each shooter hit each agent."""
    n = cells.shape[0]
    target = jnp.where(reached, gather(agents, cells, -1), -1).reshape(n, -1)
    return jnp.sum(target[:, :, None] == jnp.arange(n)[None, None, :], axis=1).astype(jnp.int32)


def first_matching(cells: jax.Array, reached: jax.Array, grid: jax.Array, code: int) -> jax.Array:
    """``(N, R, L) bool``: on each ray, the first reached cell whose code is ``code``."""
    match = reached & (gather(grid, cells, C.WALL) == code)
    return match & exclusive_cumprod(~match).astype(bool)


# ------------------------------------------------------------------------------- respawn
def random_free_points(
    key: jax.Array, points: jax.Array, agents: jax.Array, due: jax.Array
) -> jax.Array:
    """For each agent with ``due``, a distinct spawn point not occupied by an agent,
    uniformly at random (occupied points only if no free one is left). ``points (S, 2)``;
    returns ``(N, 2)`` (rows of agents not due are arbitrary)."""
    n = due.shape[0]
    free = agents[points[:, 0], points[:, 1]] < 0
    # free points score in (1, 2), occupied ones in (0, 1): the top n are free when possible
    score = jax.random.uniform(key, (points.shape[0],)) + jnp.where(free, 1.0, 0.0)
    best = jax.lax.top_k(score, min(n, points.shape[0]))[1]
    rank = jnp.clip(jnp.cumsum(due) - 1, 0, best.shape[0] - 1)
    return points[best[rank]]


# ---------------------------------------------------------------------------- observation
def world_codes(cells: jax.Array, pos: jax.Array, heading: jax.Array, present: jax.Array) -> jax.Array:
    """``(H, W) uint8``: cell codes with each present agent ``j`` drawn as
    ``AGENT_BASE + 4 j + heading_j``."""
    n = pos.shape[0]
    rows = jnp.where(present, pos[:, 0], cells.shape[0])
    codes = (C.AGENT_BASE + 4 * jnp.arange(n) + heading).astype(cells.dtype)
    return cells.at[rows, pos[:, 1]].set(codes, mode="drop")


def top_code(num_agents: int) -> int:
    """The largest code :func:`world_codes` (and so an egocentric view) can hold with
    ``num_agents`` agents: agent ``N - 1`` facing west, ``AGENT_BASE + 4 N - 1`` (every
    terrain and object code lies below ``AGENT_BASE``)."""
    return C.AGENT_BASE + 4 * num_agents - 1


def egocentric_views(
    world: jax.Array, pos: jax.Array, heading: jax.Array, present: jax.Array, offsets: np.ndarray,
    torus: bool = False,
) -> jax.Array:
    """``(N, Vh, Vw) uint8`` windows cut from ``world`` (see :func:`world_codes`),
    rotated to each agent's heading. Other agents' headings become relative to the
    viewer's. Off-map cells read ``OUTSIDE`` (with ``torus`` there are none: the window
    wraps around the edges); a removed agent sees ``OUTSIDE`` everywhere."""
    cells = pos[:, None, None, :] + jnp.asarray(offsets)[heading]
    if torus:
        cells = wrap(cells, world.shape)
    view = gather(world, cells, C.OUTSIDE).astype(jnp.int32)
    is_agent = view >= C.AGENT_BASE
    rel = (view - C.AGENT_BASE - heading[:, None, None]) % 4
    view = jnp.where(is_agent, view - (view - C.AGENT_BASE) % 4 + rel, view)
    view = jnp.where(present[:, None, None], view, C.OUTSIDE)
    return view.astype(jnp.uint8)


# ------------------------------------------------------------------------------- growth
def neighbour_offsets(radius_sq: int, square: bool = False) -> np.ndarray:
    """Offsets of the cells around a cell (itself excluded): within Euclidean distance
    ``sqrt(radius_sq)``, or the ``(2r+1)^2`` square with ``square=True`` (r = radius_sq)."""
    r = int(np.ceil(np.sqrt(radius_sq))) if not square else radius_sq
    out = [
        (dr, dc)
        for dr in range(-r, r + 1)
        for dc in range(-r, r + 1)
        if (dr, dc) != (0, 0) and (square or dr * dr + dc * dc <= radius_sq)
    ]
    return np.asarray(out, np.int32)


def count_neighbours(mask: jax.Array, offsets: np.ndarray) -> jax.Array:
    """``(H, W) int32``: how many cells at the given offsets are True (off-map: False)."""
    r = int(np.abs(offsets).max())
    padded = jnp.pad(mask.astype(jnp.int32), r)
    h, w = mask.shape
    total = jnp.zeros((h, w), jnp.int32)
    for dr, dc in offsets:
        total = total + padded[r + dr : r + dr + h, r + dc : r + dc + w]
    return total


def count_neighbours_at(mask: jax.Array, offsets: np.ndarray, points: np.ndarray) -> jax.Array:
    """``(K,) int32``: for each of the static ``points (K, 2)``, how many cells at the
    given offsets are True (off-map: False). One gather of ``K x len(offsets)`` cells."""
    cells = jnp.asarray(points[:, None, :] + offsets[None, :, :])
    return jnp.sum(gather(mask, cells, False), axis=1, dtype=jnp.int32)


# ------------------------------------------------------------------- graduated sanctions
def sanction(hit_count: jax.Array, level: jax.Array, on_map: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One step of Melting Pot's ``GraduatedSanctionsMarking`` with the two-level
    ``hitLogic`` (level 1: freeze; level 2: remove), as Externality Mushrooms and
    Territory configure it (``meltingpot/lua/modules/avatar_library.lua``).

    ``hit_count (N,)`` zap hits taken this step, ``level (N,)`` 1 or 2 before it,
    ``on_map (N,) bool`` players on the map at the start of the step (only they can be
    hit). The hits of one step are handled one after another, each at the level the
    previous one left: a first hit at level 1 freezes the player and marks it (level
    2); a hit at level 2 removes it and takes it back to level 1. So a player is removed
    when hit at level 2, or twice in one step at level 1. Returns ``(freeze (N,) bool,
    remove (N,) bool, level (N,))``."""
    hit = (hit_count > 0) & on_map
    remove = hit & ((level == 2) | (hit_count >= 2))
    freeze = hit & ~remove
    level = jnp.where(remove, 1, jnp.where(freeze, 2, level))
    return freeze, remove, level


def recover(level: jax.Array, since_hit: jax.Array, on_map: jax.Array, recovery) -> tuple[jax.Array, jax.Array]:
    """End of a step: a marked player (level 2) on the map counts the step (the hit step
    included: ``since_hit`` is 0 after a hit and this makes it 1), and once it has
    counted ``recovery`` steps it is back at level 1 (``resetToInitialLevel``,
    ``recoveryTime``). A player hit at step ``t`` is at level 2 for the zaps of steps
    ``t + 1 .. t + recovery - 1`` and at level 1 from step ``t + recovery`` on.
    Returns ``(level, since_hit)``."""
    since = jnp.where((level == 2) & on_map, since_hit + 1, since_hit)
    recovered = (level == 2) & (since >= recovery)
    return jnp.where(recovered, 1, level), jnp.where(recovered, 0, since)
