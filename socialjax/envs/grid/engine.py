"""The rules every gridworld shares, one pure function per rule.

Coordinates are ``(row, col)`` with rows growing downwards; headings are
``0 = N, 1 = E, 2 = S, 3 = W``. In an agent's own frame a cell is ``(f, l)``: ``f``
cells ahead and ``l`` cells to the right. Static geometry (observation windows, beam
rays) is precomputed with numpy for the four headings; per step a beam is a gather and
a view a slice of the map turned by quarter turns.
"""

from __future__ import annotations

import functools

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
#: up to this many items, a random order is ranked by comparing every pair of draws
#: (cheaper on the CPU than XLA's ``top_k`` for a handful of players); above, ``top_k``
PAIRWISE_MAX = 16


def random_order(key: jax.Array, n: int, k: int | None = None) -> jax.Array:
    """The first ``k`` (default all ``n``) entries of a uniformly random permutation of
    ``range(n)``: the indices of the ``k`` largest of ``n`` uniform draws, largest first.
    Same distribution as ``jax.random.permutation(key, n)[:k]`` (ties have probability
    ~0), cheaper because ``top_k`` avoids a full sort (BENCHMARKS.md, gridworlds), or for
    ``n <= PAIRWISE_MAX`` the inverse of :func:`random_ranks` (the same indices)."""
    if n <= PAIRWISE_MAX:
        order = jnp.zeros(n, jnp.int32).at[random_ranks(key, n)].set(jnp.arange(n, dtype=jnp.int32))
        return order if k is None else order[:k]
    return jax.lax.top_k(jax.random.uniform(key, (n,)), n if k is None else k)[1]


def random_ranks(key: jax.Array, n: int) -> jax.Array:
    """Each item's place (0 first) in the order :func:`random_order` draws from ``key``:
    ``random_ranks(key, n)[random_order(key, n)] == arange(n)``."""
    return descending_ranks(jax.random.uniform(key, (n,)))


def descending_ranks(values: jax.Array) -> jax.Array:
    """``(n,) int32``: how many of ``values`` come before each in descending order, equal
    values by index (``top_k``'s order: ``top_k(values, n)[1][rank[i]] == i``)."""
    index = jnp.arange(values.shape[0])
    before = (values[None, :] > values[:, None]) | ((values[None, :] == values[:, None])
                                                     & (index[None, :] < index[:, None]))
    return jnp.sum(before, axis=1, dtype=jnp.int32)


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
    key: jax.Array, pos: jax.Array, target: jax.Array, wants: jax.Array, walkable: jax.Array, present: jax.Array,
    stop_when_settled: bool | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Agents try their moves one at a time in a uniformly random order; a move succeeds
    if the target is walkable and empty at that moment. So a chain resolves when the
    front agent goes first, contested cells go to a random contender, and two agents
    never share a cell or swap through each other.

    Computed for all agents at once, with the outcome of that sequence: agent ``i`` (its
    turn ``rank[i]`` in the order) moves if its target is walkable, the agent standing
    there (if any) left on an earlier turn, and no rival for the same cell able to move
    came earlier. Who left when depends on the agents ahead in a chain, so this is
    repeated until nothing changes (one pass more than the longest chain; a cycle of
    agents each waiting for the next never moves, as in the sequence).

    With ``stop_when_settled`` the passes stop as soon as nothing changes (a
    ``while_loop``: what the CPU does by default); without, all ``N`` passes run (enough
    for the longest chain; the default elsewhere, where a loop's test would wait on the
    host every pass). Both give the same moves.

    ``walkable (H, W) bool``. Returns ``(new_pos (N, 2), moved (N,) bool)``.
    """
    n = pos.shape[0]
    rank = random_ranks(key, n)
    target_ok = gather(walkable, target, False) & wants & present
    # stands_on[i, k]: present agent k stands on agent i's target at the start
    stands_on = jnp.all(target[:, None, :] == pos[None, :, :], axis=-1) & present[None, :]
    earlier_rival = (jnp.all(target[:, None, :] == target[None, :, :], axis=-1) & target_ok[None, :]
                     & (rank[None, :] < rank[:, None]))

    def moves(moved):
        left_on = jnp.where(moved, rank, n)  # the turn each agent left its cell (n: never)
        free_after = jnp.max(jnp.where(stands_on, left_on[None, :], -1), axis=1)  # -1: free from the start
        able = target_ok & (rank > free_after)
        return able & ~jnp.any(earlier_rival & able[None, :], axis=1)

    def again(carry):
        return carry[1]

    def next_pass(carry):
        moved = moves(carry[0])
        return moved, jnp.any(moved != carry[0])

    def until_settled(first, waiting):
        return jax.lax.while_loop(again, next_pass, (first, waiting))[0]

    def all_passes(first, waiting):
        for _ in range(n - 1):
            first = moves(first)
        return first

    first = moves(jnp.zeros(n, bool))
    waiting = jnp.any(target_ok & jnp.any(stands_on, axis=1))  # someone's target is occupied: a chain
    if stop_when_settled is None:
        moved = jax.lax.platform_dependent(first, waiting, cpu=until_settled, default=all_passes)
    else:
        moved = (until_settled if stop_when_settled else all_passes)(first, waiting)
    return jnp.where(moved[:, None], target, pos), moved


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
    cells: jax.Array, pos: jax.Array, heading: jax.Array, present: jax.Array, view: tuple[int, int, int],
    torus: bool = False, draw_agents: bool = True,
) -> jax.Array:
    """``(N, Vh, Vw) uint8`` windows of the map ``cells`` (no agents in it), ``view =
    (ahead, behind, side)``, rotated to each agent's heading (the agent faces up, on row
    ``ahead``, column ``side``: the geometry of :func:`window_offsets`). With
    ``draw_agents`` each present agent ``j`` appears as ``AGENT_BASE + 4 j + h``, ``h``
    its heading relative to the viewer's (the viewer's own cell shows itself facing 0);
    without, the windows show the bare map. Off-map cells read ``OUTSIDE`` (with ``torus``
    there are none: the window wraps around the edges); a removed agent sees ``OUTSIDE``
    everywhere.

    Cut as blocks, not cell by cell: the map (agents drawn with absolute headings by
    :func:`world_codes`) is padded as far as any window reaches, each agent's window is sliced as one square
    block (:func:`window_slices` says where, for each heading), turned so that the agent
    faces up, and cropped; then the agent codes in it are turned to the viewer's heading."""
    size, turns, starts, pad_low, pad_high = window_slices(view)
    ahead, behind, side = view
    h, w = cells.shape
    world = world_codes(cells, pos, heading, present) if draw_agents else cells
    if torus:
        world = world[np.arange(-pad_low[0], h + pad_high[0]) % h][:, np.arange(-pad_low[1], w + pad_high[1]) % w]
    else:
        world = jnp.pad(world, tuple(zip(pad_low, pad_high)), constant_values=C.OUTSIDE)
    corner = pos + jnp.asarray(starts + pad_low)[heading]
    blocks = jax.vmap(lambda r, c: jax.lax.dynamic_slice(world, (r, c), (size, size)))(corner[:, 0], corner[:, 1])
    turned = jnp.stack([jnp.rot90(blocks, k, axes=(1, 2))[:, : ahead + behind + 1, : 2 * side + 1]
                        for k in range(4)], axis=1)
    views = jnp.take_along_axis(turned, jnp.asarray(turns)[heading][:, None, None, None], axis=1)[:, 0]
    if draw_agents:  # agent j's heading, relative to the viewer's (uint8 wraps by 256, a multiple of 4)
        agent = views >= C.AGENT_BASE
        relative = (views - C.AGENT_BASE - heading[:, None, None].astype(views.dtype)) % 4
        views = jnp.where(agent, views - (views - C.AGENT_BASE) % 4 + relative, views)
    return jnp.where(present[:, None, None], views, jnp.asarray(C.OUTSIDE, cells.dtype))


@functools.cache
def window_slices(view: tuple[int, int, int]) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where :func:`egocentric_views` slices each heading's window: the block's side
    ``L = max(Vh, Vw)``; for each heading the quarter turns ``k`` (``np.rot90``) that
    make the agent face up and the block's corner relative to the agent (``(4, 2)``),
    found from :func:`window_offsets` (the window's cell at ``(r, c)`` is the block's
    cell that ``np.rot90(block, k)[r, c]`` reads); and the padding below and above the
    map (rows, columns) that every block needs."""
    offsets = window_offsets(*view)  # (4, Vh, Vw, 2) map offsets
    vh, vw = offsets.shape[1:3]
    size = max(vh, vw)
    r, c = np.meshgrid(np.arange(vh), np.arange(vw), indexing="ij")
    last = size - 1
    read = [(r, c), (c, last - r), (last - r, last - c), (last - c, r)]  # np.rot90(block, k)[r, c] = block[read[k]]
    turns, starts = [], []
    for heading in range(4):
        for k, (rows, cols) in enumerate(read):
            corner = offsets[heading] - np.stack([rows, cols], axis=-1)
            if (corner == corner[0, 0]).all():
                turns.append(k)
                starts.append(corner[0, 0])
                break
        else:  # window_offsets' windows are quarter turns of one another: never reached
            raise AssertionError(f"view {view}: heading {heading}'s window is no quarter turn of a block")
    starts = np.asarray(starts, np.int32)
    plan = (np.asarray(turns, np.int32), starts, np.maximum(-starts.min(0), 0), np.maximum(starts.max(0) + last, 0))
    for array in plan:  # cached: shared by every caller
        array.setflags(write=False)
    return (size, *plan)


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
