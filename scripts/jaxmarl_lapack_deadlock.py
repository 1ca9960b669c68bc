"""Minimal reproduction of the hang of JaxMARL's ``ippo_rnn.py`` with ``NUM_SEEDS >= 2`` on a small CPU machine.

The hang is jaxlib's, not JaxMARL's nor socialjax's. JaxMARL's networks start from Flax's
``orthogonal`` initialiser, which calls LAPACK's QR (``lapack_sgeqrf_ffi``); under
``jax.vmap`` over seeds each QR is batched, and jaxlib 0.10's CPU kernel splits a batch
over XLA's intra-op thread pool (``jax::ParallelBatchMap``) and waits for the parts
(``BlockingCounter::Wait``). When as many independent QRs run at once as the pool has
threads (the pool has one thread per core: 2 here), every thread waits for parts queued
behind it and none runs them. gdb on the hung ``ippo_rnn.py`` shows exactly that: both
``tf_XLAEigen`` threads in ``jax::QrFactorization`` -> ``ParallelBatchMap`` ->
``BlockingCounter::Wait``, the process idle.

This script needs neither JaxMARL nor Flax: eight independent QRs of ``(128, 128)``
matrices under ``jit(vmap)`` over a batch of 8, run up to 30 times, with a watchdog that
reports a deadlock when an execution makes no progress for 30 s while the process uses
under 1 s of CPU::

    python scripts/jaxmarl_lapack_deadlock.py            # jax 0.10.2, 2 cores: mostly DEADLOCK (exit 3)
    python scripts/jaxmarl_lapack_deadlock.py --qr-free  # the same with Gram-Schmidt: 30 executions

On the 2-core CPU here it deadlocked in 6 runs of 7, and in 3 of 3 with
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``; ``--qr-free`` finished 3 of 3. What
helps: one seed (the one-seed ``ippo_rnn.py`` runs finished) or an initialiser without
LAPACK (socialjax's Gram-Schmidt ``orthogonal``; ``scripts/jaxmarl_baselines.py
--qr-free-init`` swaps it into JaxMARL's baselines).
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import jax
import jax.numpy as jnp

from socialjax.agents.networks import orthogonal

SIZE, QRS, BATCH, RUNS, STALL_S = 128, 8, 8, 30, 30


def lapack_q(key: jax.Array) -> jax.Array:
    """The Q factor of a Gaussian matrix by LAPACK's QR (what Flax's ``orthogonal`` does)."""
    return jnp.linalg.qr(jax.random.normal(key, (SIZE, SIZE)))[0]


def gram_schmidt_q(key: jax.Array) -> jax.Array:
    """The same distribution of orthogonal matrices with matrix products only."""
    return orthogonal()(key, (SIZE, SIZE))


def make_run(qr_free: bool):
    """``jit(vmap(f))`` where ``f(key)`` sums ``QRS`` independent orthogonal matrices."""
    q = gram_schmidt_q if qr_free else lapack_q
    return jax.jit(jax.vmap(lambda key: sum(q(k).sum() for k in jax.random.split(key, QRS))))


class Watchdog:
    """Exits the process with status 3 when an execution has used under 1 s of CPU in ``STALL_S`` s."""

    def __init__(self, label: str):
        self.label, self.done = label, 0
        self.mark()
        threading.Thread(target=self.watch, daemon=True).start()

    def mark(self) -> None:
        self.since, self.cpu = time.time(), time.process_time()

    def watch(self) -> None:
        while True:
            time.sleep(5)
            idle, cpu = time.time() - self.since, time.process_time() - self.cpu
            if idle > STALL_S and cpu < 1.0:
                print(f"DEADLOCK after {self.done} executions: {cpu:.2f} s of CPU in {idle:.0f} s ({self.label})",
                      flush=True)
                os._exit(3)
            if idle > STALL_S:  # busy but slow (a shared machine): a new window
                self.mark()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qr-free", action="store_true", help="Gram-Schmidt instead of LAPACK's QR")
    args = parser.parse_args()
    label = (f"jax {jax.__version__}, {os.cpu_count()} CPUs, {'Gram-Schmidt' if args.qr_free else 'LAPACK QR'}, "
             f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    run = make_run(args.qr_free)
    run.lower(jax.random.split(jax.random.key(0), BATCH)).compile()
    watchdog = Watchdog(label)
    start = time.time()
    for i in range(RUNS):
        watchdog.mark()
        jax.block_until_ready(run(jax.random.split(jax.random.key(i), BATCH)))
        watchdog.done = i + 1
    print(f"{RUNS} executions in {time.time() - start:.1f} s ({label})")


if __name__ == "__main__":
    main()
