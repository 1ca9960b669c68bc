"""Ctrl-C and SIGTERM while training: stop after the update under way, not in its middle::

    with interrupts(enabled=True) as stop:
        ...                          # compile: a signal stops at once (nothing is lost)
        stop.stoppable = True
        for update in updates:
            ...                      # run it (one compiled call per update)
            if stop.requested:
                raise ...            # the caller's own "interrupted" exception, with what is done

Used by the one runner (:func:`socialjax.train.runner.execute`, around the whole job:
building it, compiling, training) and by the engine of every long job
(:func:`socialjax.train.engine.run_job`: a population's :func:`socialjax.train.run`, the
donor-evolution job), which makes the job stoppable once it is compiled. A nested
``interrupts`` shares the outer one's request (one handler per process). The engine
waits for the devices in a way a signal breaks at once
(:func:`socialjax.train.devices.wait`), so a first signal is seen within the update
under way and a second one at once. A signal before the job is stoppable is also
noted (``stop.at_once``): if the ``KeyboardInterrupt`` it raised was lost on the way
(native code that checks for signals may clear it), the engine stops at once when the
compilation returns instead of training::

    with deferred("writing the result") as stop:
        ...                          # a few seconds that a stop would waste: finished first
    if stop.requested: ...           # then stop, with the work kept

:func:`deferred` guards a short step whose loss would waste the run (the final result
written after training): a first signal is noted and the step finishes; a second stops
at once.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """What the signals asked: ``enabled`` (whether they are being caught), ``requested``
    (a first signal while ``stoppable``: stop after the update under way), ``at_once``
    (a signal came while not ``stoppable``, or a second one: stop at once) and
    ``signal_name`` (``SIGINT`` or ``SIGTERM``).
    ``stoppable`` is set by the loop once there is work that a stop would keep; before
    (while compiling) a signal raises ``KeyboardInterrupt`` at once."""

    def __init__(self):
        self.enabled = False  # whether the handlers are installed (the main thread, when asked)
        self.requested = False
        self.at_once = False
        self.stoppable = False
        self.signal_name = ""


_active: list[StopRequest] = []  # the request whose handler is installed (at most one)


@contextlib.contextmanager
def interrupts(enabled: bool):
    """While a job runs: a first SIGINT (Ctrl-C) or SIGTERM asks to stop after the
    update under way (``stop.requested``) once ``stop.stoppable``; a second one, or any
    before that, raises ``KeyboardInterrupt`` at once. Only in the main thread (signal
    handlers live there), and only when ``enabled``; otherwise the signals keep their
    handlers and ``stop.requested`` stays False."""
    if _active and enabled and threading.current_thread() is threading.main_thread():
        stop = _active[-1]  # an outer job's: shared, its stoppable state put back at the end
        stoppable = stop.stoppable
        try:
            yield stop
        finally:
            stop.stoppable = stoppable
        return
    stop = StopRequest()
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield stop
        return

    stop.enabled = True
    _active.append(stop)
    try:
        with _handling(stop, "stopping after the update under way"):
            yield stop
    finally:
        _active.remove(stop)


@contextlib.contextmanager
def deferred(doing: str):
    """While ``doing`` something short that must not be lost: a first SIGINT or SIGTERM
    is noted (``stop.requested``, with a line saying it finishes first) and the block
    goes on; a second raises ``KeyboardInterrupt`` at once. Only in the main thread;
    elsewhere the signals keep their handlers."""
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    stop.enabled = stop.stoppable = True
    with _handling(stop, f"finishing {doing} first"):
        yield stop


@contextlib.contextmanager
def _handling(stop: StopRequest, what: str):
    """SIGINT and SIGTERM noted in ``stop`` for the duration: the first one while
    ``stop.stoppable`` sets ``stop.requested`` and says ``what`` happens now; a second,
    or one before ``stoppable``, raises ``KeyboardInterrupt``. The handlers before are
    put back at the end."""

    def handler(signum, frame):
        stop.signal_name = signal.Signals(signum).name
        if stop.requested or not stop.stoppable:
            stop.at_once = True
            raise KeyboardInterrupt
        stop.requested = True
        print(f"\n{stop.signal_name}: {what} (again to stop at once, losing it)", file=sys.stderr, flush=True)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
