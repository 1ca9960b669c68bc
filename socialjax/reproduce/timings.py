"""Where a reproduction's wall time goes: training the populations, running the models,
the entry's analysis of the trained populations and writing the folder, each with the
part of it spent compiling (:class:`~socialjax.train.compilation.CompileClock`), and the
rest (checking the conditions, measuring and judging) as host time. ``socialjax
reproduce`` prints the line, the summary and ``reproduction.json`` keep it, and
``scripts/time_reproductions.py`` tabulates it for every entry.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator

from socialjax.train.compilation import CompileClock


@dataclasses.dataclass
class Phase:
    """One phase's wall ``seconds``, of which ``compile_seconds`` compiling."""

    seconds: float = 0.0
    compile_seconds: float = 0.0

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        """Add the wall and compile seconds of the ``with`` block to this phase."""
        start = time.perf_counter()
        with CompileClock() as clock:
            try:
                yield
            finally:
                self.seconds += time.perf_counter() - start
                self.compile_seconds += clock.seconds

    def to_json(self) -> dict[str, float]:
        return {"seconds": round(self.seconds, 3), "compile_seconds": round(self.compile_seconds, 3)}


@dataclasses.dataclass
class Timings:
    """A reproduction's phases: ``training`` (the populations, read-back included),
    ``models`` (scripted, tabular and evolutionary programs), ``analysis`` and
    ``writing`` (the folder, up to its summary and record, which state these timings);
    ``total`` wall seconds from ``started`` (the first condition) to ``close()``;
    ``env_steps`` the populations trained (every condition and seed; none for runs read
    back from an earlier try)."""

    training: Phase = dataclasses.field(default_factory=Phase)
    models: Phase = dataclasses.field(default_factory=Phase)
    analysis: Phase = dataclasses.field(default_factory=Phase)
    writing: Phase = dataclasses.field(default_factory=Phase)
    total: float = 0.0
    env_steps: int = 0
    started: float = dataclasses.field(default_factory=time.perf_counter)

    def close(self, writing_from: float | None = None) -> None:
        """The total so far; ``writing_from``: when writing began (``time.perf_counter``)."""
        now = time.perf_counter()
        if writing_from is not None:
            self.writing.seconds = now - writing_from
        self.total = now - self.started

    def phases(self) -> tuple[tuple[str, Phase], ...]:
        return (("training", self.training), ("models", self.models), ("analysis", self.analysis),
                ("writing", self.writing))

    @property
    def compile_seconds(self) -> float:
        return sum(phase.compile_seconds for _, phase in self.phases())

    @property
    def host_seconds(self) -> float:
        """What no phase holds: checks, measuring the curves, the criterion."""
        return max(0.0, self.total - sum(phase.seconds for _, phase in self.phases()))

    @property
    def env_steps_per_second(self) -> float | None:
        """The populations' env steps per second of the whole reproduction's wall time,
        compiling included (``None`` without trained populations)."""
        return self.env_steps / self.total if self.env_steps and self.total > 0 else None

    def line(self) -> str:
        """``"time: 93 s wall, 31 s of it compiling: training 80 s (compile 25), ..."``."""
        parts = [f"{name} {phase.seconds:.0f} s (compile {phase.compile_seconds:.0f})"
                 for name, phase in self.phases() if phase.seconds >= 0.5]
        rate = self.env_steps_per_second
        return (f"time: {self.total:.0f} s wall, {self.compile_seconds:.0f} s of it compiling: "
                + ", ".join(parts + [f"other {self.host_seconds:.0f} s"])
                + ("" if rate is None else f"; {rate:,.0f} env steps per second of wall time, compiling included"))

    def to_json(self) -> dict:
        return {"total": round(self.total, 3), "env_steps": self.env_steps,
                **{name: phase.to_json() for name, phase in self.phases()}}

    @classmethod
    def from_json(cls, data: dict) -> Timings:
        """The timings :meth:`to_json` wrote (``reproduction.json``'s ``timings``)."""
        return cls(**{name: Phase(**data[name]) for name, _ in cls().phases()}, total=data["total"],
                   env_steps=data["env_steps"])
