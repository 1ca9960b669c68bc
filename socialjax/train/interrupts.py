"""Ctrl-C while training: stop at the end of the segment under way, not in its middle.

    with interrupts(enabled=True, stoppable=True) as stop:
        for segment in segments:
            ...                      # run it, save a snapshot
            if stop.requested:
                raise ...            # the caller's own "interrupted" exception

Used by the one engine of every long job (:func:`socialjax.train.engine.run_job`: a
population's :func:`socialjax.train.run`, the donor-evolution job).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading


class StopRequest:
    """Set by a first Ctrl-C: ``requested`` asks to stop at the end of the segment under way."""

    requested = False


@contextlib.contextmanager
def interrupts(enabled: bool, stoppable: bool):
    """While training: a first Ctrl-C asks to stop at the end of the segment under way
    (when there is a later one), a second (or the first, with no later segment) raises
    ``KeyboardInterrupt`` at once. Only in the main thread of a single process."""
    stop = StopRequest()
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum, frame):
        if stop.requested or not stoppable:
            raise KeyboardInterrupt
        stop.requested = True
        print("\ninterrupt: stopping at the end of the segment under way (Ctrl-C again to stop at once, losing it)",
              file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)
