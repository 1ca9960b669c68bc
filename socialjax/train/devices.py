"""Runs spread over devices: equal blocks of runs, each the same compiled single-device
program, one or more per device (see :mod:`socialjax.train.run`).

- :class:`Layout` / :func:`lay_out`: how ``R`` runs are cut into ``(per_device,)`` runs
  per device, and those into blocks of ``block`` runs (a chunk), each one call.
- :func:`device_program`: ``jit(vmap(one run))`` over a block (a lone run unbatched),
  :func:`compile_blocks`: one compile per device, shared by the device's blocks.
- :func:`place_blocks`, :func:`dispatch`, :func:`gather`, :func:`take_state`,
  :func:`put_state`: blocks onto their devices and back onto the host (every process
  gathers every process's slots when the devices span several).

A device's chunks are separate calls of one program, queued on the device one after
another, rather than a loop inside one program: what is compiled is the program of one
chunk, the same for ten runs or ten thousand, so compile time does not grow with the
number of runs (a loop over chunks around the program compiled 23-36% slower on the CPU,
BENCHMARKS.md, "Many seeds on one device").
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

from socialjax.train.compilation import compiler_options


@dataclasses.dataclass(frozen=True)
class Layout:
    """How ``num_runs`` runs are cut into equal blocks.

    ``per_device`` runs per used device, ``devices`` the devices used, in order;
    ``chunk``: runs per block (one call of the compiled program; ``None``: a device's
    runs in one block). Blocks run device by device, a device's blocks in run order;
    ``index`` ``(padded,)``: the run each slot computes (padding repeats the last run)."""

    num_runs: int
    per_device: int
    devices: tuple
    chunk: int | None = None

    @property
    def block(self) -> int:
        """Runs per block (per call)."""
        return self.chunk or self.per_device

    @property
    def blocks_per_device(self) -> int:
        return self.per_device // self.block

    @property
    def padded(self) -> int:
        return self.per_device * len(self.devices)

    @property
    def local_slots(self) -> int:
        """Slots computed by this process (all of them in a single process)."""
        return self.per_device * sum(d.process_index == jax.process_index() for d in self.devices)

    @property
    def index(self) -> np.ndarray:
        return np.minimum(np.arange(self.padded), self.num_runs - 1)

    def local_blocks(self) -> list[tuple[jax.Device, slice]]:
        """This process's blocks: each one's device and its slots, in run order."""
        here = jax.process_index()
        out = []
        for i, device in enumerate(self.devices):
            if device.process_index != here:
                continue
            for c in range(self.blocks_per_device):
                start = i * self.per_device + c * self.block
                out.append((device, slice(start, start + self.block)))
        return out


def lay_out(num_runs: int, devices: Sequence[jax.Device], chunk: int | None = None) -> Layout:
    """Equal blocks of runs (whole chunks with ``chunk``), spread over as many of
    ``devices`` as hold a real run. Over several hosts every device gets its runs (each
    host must hold the same number of blocks to gather)."""
    D = len(devices)
    # with chunks, every chunk is the same program whatever its size: pad to whole chunks
    per_device = -(-num_runs // D) if chunk is None else -(-num_runs // (D * chunk)) * chunk
    if multihost(devices):
        used = tuple(sorted(devices, key=lambda d: (d.process_index, d.id)))
    else:
        used = tuple(devices[: -(-num_runs // per_device)])
    return Layout(num_runs, per_device, used, chunk)


def device_program(fn: Callable, block: int, shared: int = 0) -> Callable:
    """What one call computes on a block of ``block`` runs: ``fn`` is one run's program,
    every argument but the last ``shared`` has a leading run axis. ``jit(vmap(fn))``; a
    block of one run is computed as ``fn`` itself, unbatched (so a chunk of one gives
    the bits of a lone run)."""

    def call(*args):
        batched, common = args[: len(args) - shared], args[len(args) - shared:]
        one = lambda b: fn(*b, *common)  # noqa: E731
        if block == 1:
            out = one(jax.tree_util.tree_map(lambda x: x[0], batched))
            return jax.tree_util.tree_map(lambda x: x[None], out)
        return jax.vmap(lambda *b: one(b))(*batched)

    return jax.jit(call)


def place_blocks(layout: Layout, keys: jax.Array, hparams: dict[str, np.ndarray]) -> list[tuple]:
    """``(keys, hparams)`` of each of this host's blocks, on its device (``keys`` and
    ``hparams`` over the layout's slots)."""
    return [(jax.device_put(keys[part], device), {k: jax.device_put(v[part], device) for k, v in hparams.items()})
            for device, part in layout.local_blocks()]


def compile_blocks(program: Callable, args: list[tuple], fits: Callable[[Any], bool] | None = None):
    """Compile ``program`` for each block's arguments, once per device (the same HLO
    everywhere, so the same bits; a device's blocks share its program), with the training
    programs' compiler options for the backend
    (:func:`~socialjax.train.compilation.compiler_options`). Returns one program per
    block. The first is compiled alone and shown to ``fits`` (which may refuse it: then
    ``None`` is returned before the others compile); the rest compile in parallel threads."""
    firsts = {}  # each device's first block
    for i, a in enumerate(args):
        firsts.setdefault(_device_of(a), i)
    lowered = {d: program.lower(*args[i]) for d, i in firsts.items()}  # tracing is shared; lowering is cheap
    devices = list(lowered)
    options = compiler_options(devices[0])
    pool = ThreadPoolExecutor(max(len(devices) - 1, 1), thread_name_prefix="socialjax-compile")
    try:  # compiled in threads, so that the main thread waits where a Ctrl-C reaches it at once
        first = pool.submit(lowered[devices[0]].compile, options).result()
        if fits is not None and not fits(first):
            return None
        rest = {d: pool.submit(lowered[d].compile, options) for d in devices[1:]}
        compiled = {devices[0]: first, **{d: f.result() for d, f in rest.items()}}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return [compiled[_device_of(a)] for a in args]


def _device_of(args) -> jax.Device:
    """The device the first placed argument (an array or a placed shape) is on."""
    for leaf in jax.tree_util.tree_leaves(args):
        sharding = getattr(leaf, "sharding", None)
        if sharding is not None:
            return next(iter(sharding.device_set))
    return jax.devices()[0]


def dispatch(compiled: list, args: list[tuple]) -> list:
    """Start every block (asynchronously, so the devices run together)."""
    return [fn(*a) for fn, a in zip(compiled, args)]


_WAITER = ThreadPoolExecutor(1, thread_name_prefix="socialjax-wait")


def wait(tree) -> None:
    """Block until every array of ``tree`` is computed. The waiting is done by a worker
    thread, the main thread waits on it: a signal's handler runs at once (a blocking wait
    in the main thread would run it only when the computation ends), and no time is lost
    polling."""
    pending = [x for x in jax.tree_util.tree_leaves(tree) if isinstance(x, jax.Array) and not x.is_ready()]
    if pending:
        _WAITER.submit(jax.block_until_ready, pending).result()


def gather(outs: list, layout: Layout):
    """The blocks' outputs as numpy arrays over all ``layout.padded`` slots, waited for
    with :func:`wait`, so that Ctrl-C is seen at once. When the layout spans several
    processes, every process gathers every process's slots (``process_allgather``, a
    collective that all of them must enter: over gloo on CPU)."""
    outs = jax.tree_util.tree_map(as_key_data, outs)
    wait(outs)
    local = jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *outs)
    if not multihost(layout.devices):
        return local
    # (processes, local slots, ...) in process order, which is the block order
    gathered = multihost_utils.process_allgather(local, tiled=False)
    return jax.tree_util.tree_map(lambda x: np.asarray(x).reshape(-1, *x.shape[2:]), gathered)


def execute_blocks(compiled: list, inputs: list, layout: Layout):
    """Dispatch every block and gather the outputs (see :func:`gather`)."""
    return gather(dispatch(compiled, inputs), layout)


def take_state(states: list, layout: Layout, num_runs: int):
    """The devices' run states on the host, the ``num_runs`` real runs (keys as key data)."""
    return jax.tree_util.tree_map(lambda x: x[:num_runs], gather(states, layout))


def put_state(state, layout: Layout) -> list:
    """A :class:`~socialjax.train.run.Snapshot`'s state back onto this host's devices, in ``layout``'s blocks
    (padding repeats the last run); key data becomes keys again."""
    index = layout.index
    blocks = [jax.tree_util.tree_map(lambda x: jax.device_put(np.asarray(x)[index[part]], device), state)
              for device, part in layout.local_blocks()]
    return [jax.tree_util.tree_map(from_key_data, b, is_leaf=_is_key_data) for b in blocks]


KEY_DATA = "__key_data__"


def as_key_data(x):
    """A key array as ``{KEY_DATA: key_data}`` (numpy-ready); anything else as it is."""
    if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        return {KEY_DATA: jax.random.key_data(x)}
    return x


def _is_key_data(x) -> bool:
    return isinstance(x, dict) and set(x) == {KEY_DATA}


def from_key_data(x):
    """Inverse of :func:`as_key_data`."""
    return jax.random.wrap_key_data(x[KEY_DATA]) if _is_key_data(x) else x


def on_device(shapes, device):
    """Shapes with ``device`` as their placement (to compile for it without data)."""
    sharding = jax.sharding.SingleDeviceSharding(device)
    return jax.tree_util.tree_map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding), shapes)


def hp_device(hparams: dict) -> jax.Device:
    """The device a block's hyperparameters are on."""
    return next(iter(hparams.values())).devices().pop()


def multihost(devices: Sequence[jax.Device]) -> bool:
    """Whether ``devices`` span several processes. Raises ``ValueError`` for a list that
    this process cannot run: none of its own devices, or (across processes) not every
    process, or not as many devices of each (the results are gathered by a collective
    over all the processes, each contributing the same number of blocks)."""
    counts = collections.Counter(d.process_index for d in devices)
    if len(counts) == 1:
        if jax.process_index() not in counts:
            raise ValueError(f"devices holds none of this process's devices (process {jax.process_index()}); "
                             "pass devices of this process, or of every process (jax.devices())")
        return False
    missing = sorted(set(range(jax.process_count())) - set(counts)) if jax.process_count() > 1 else []
    if missing or len(set(counts.values())) > 1:
        per_process = ", ".join(f"process {p}: {n}" for p, n in sorted(counts.items()))
        raise ValueError(f"devices spread over several processes must include every process, as many devices "
                         f"of each (got {per_process}{f'; none of {missing}' if missing else ''}); "
                         "pass jax.devices()")
    return True

