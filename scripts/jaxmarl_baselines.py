"""Run JaxMARL's own baseline scripts, unchanged, on socialjax games through ``sj.JaxMARLAdapter``.

JaxMARL's baselines (``baselines/IPPO/ippo_ff_mpe.py``, ``baselines/IPPO/ippo_rnn.py`` ...)
live in its GitHub repository, not in the ``jaxmarl`` wheel. Give this script the path of
one of those files from a checkout: it imports the file as it is, makes ``jaxmarl.make``
return the adapter over a socialjax game, and calls the file's own ``main`` with a config
dict, as ``python ippo_rnn.py`` with Hydra would: ``BASE_CONFIG`` (``ippo_ff_mpe.yaml``'s
settings plus the keys ``ippo_rnn.py`` reads) with the game and sizes given here::

    pip install "socialjax[jaxmarl]"
    python scripts/jaxmarl_baselines.py JaxMARL/baselines/IPPO/ippo_ff_mpe.py --env coins
    python scripts/jaxmarl_baselines.py JaxMARL/baselines/IPPO/ippo_rnn.py --env ipd --seeds 2 --qr-free-init

Hydra and OmegaConf only read the YAML and the command line there; two stand-ins
(``hydra.main`` returns the function, ``OmegaConf.to_container`` the dict) take their
place, whether they are installed or not. ``wandb`` and ``plt`` in the file are replaced by a recorder
(nothing is sent or drawn); ``WANDB_MODE`` is ``disabled`` as in the files' YAML unless
``--wandb-mode`` says otherwise (then the baseline's logging callback runs and is
recorded). The script prints the wall time and the first and last returns the baseline
plotted or logged.

With two seeds or more, Flax's orthogonal initialiser (LAPACK's QR, batched over seeds)
can deadlock jaxlib 0.10's CPU runtime on a small machine (``ippo_rnn.py`` with two seeds
did, every time, on 2 cores): ``--qr-free-init`` gives the baselines socialjax's
Gram-Schmidt initialiser instead (scripts/jaxmarl_lapack_deadlock.py, docs/environments.md).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import os
import sys
import tempfile
import time
import types
from pathlib import Path

import jax
import numpy as np

import socialjax as sj
from socialjax.agents.networks import orthogonal

# config/ippo_ff_mpe.yaml's settings and the keys ippo_rnn.py reads (config/ippo_rnn_*.yaml); game, sizes below
BASE_CONFIG = {
    "LR": 2.5e-4, "NUM_ENVS": 16, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": 1e5, "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "SCALE_CLIP_EPS": False,
    "ENT_COEF": 0.01, "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5, "ACTIVATION": "tanh", "ANNEAL_LR": True,
    "HIDDEN_SIZE": 128, "SEED": 30, "NUM_SEEDS": 1, "ENV_KWARGS": {},
    "TEST_DURING_TRAINING": True, "TEST_INTERVAL": 0.05, "TEST_NUM_STEPS": 128, "NUM_TEST_ENVS": 64,
    "WANDB_MODE": "disabled", "ENTITY": "", "PROJECT": "",
}


def stand_in_hydra() -> None:
    """Put minimal ``hydra`` and ``omegaconf`` modules on ``sys.modules`` (installed or
    not: the config here is a plain dict, which the real ``OmegaConf.to_container``
    refuses). The baselines use only ``hydra.main`` as a decorator and
    ``OmegaConf.to_container`` / ``OmegaConf.save`` on the config."""
    hydra = types.ModuleType("hydra")
    hydra.main = lambda **kwargs: (lambda function: function)
    omegaconf = types.ModuleType("omegaconf")
    omegaconf.OmegaConf = types.SimpleNamespace(to_container=lambda config: config,
                                                save=lambda config, path: Path(path).write_text(repr(config)))
    sys.modules.update(hydra=hydra, omegaconf=omegaconf)


def route_make(obs_format: str) -> None:
    """``jaxmarl.make(name, **kwargs)`` -> the JaxMARL adapter over ``sj.make(name, **kwargs)``."""
    import jaxmarl  # optional: the `jaxmarl` extra

    jaxmarl.make = lambda name, **kwargs: sj.JaxMARLAdapter(sj.make(name, **kwargs), obs_format=obs_format)


def qr_free_init() -> None:
    """Give the baselines socialjax's Gram-Schmidt ``orthogonal`` initialiser instead of
    Flax's, which calls LAPACK's QR: batched over seeds (``NUM_SEEDS >= 2``) that call
    deadlocks jaxlib 0.10's CPU runtime on small machines (``scripts/jaxmarl_lapack_deadlock.py``).
    Replaces ``flax.linen.initializers.orthogonal`` (which the baselines import by name,
    so call this before :func:`load_baseline`) and ``flax.linen.GRUCell`` by a subclass
    whose recurrent kernels start from it (same class name, so the same parameter names)."""
    import flax.linen as nn

    nn.initializers.orthogonal = orthogonal
    if nn.GRUCell.__module__.startswith("flax"):
        nn.GRUCell = type("GRUCell", (nn.GRUCell,), {"__annotations__": {"recurrent_kernel_init": object},
                                                     "recurrent_kernel_init": orthogonal()})


def load_baseline(path: Path) -> types.ModuleType:
    """Import a baseline file by path, as it is."""
    spec = importlib.util.spec_from_file_location(f"jaxmarl_baseline_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Recorder:
    """Stands in for the baseline's ``wandb`` (``init``, ``log``, ``finish``) and ``plt``
    (``plot`` ...): keeps what the baseline logs and plots instead of sending or drawing it."""

    def __init__(self):
        self.logged: list[dict] = []
        self.plotted: list[np.ndarray] = []

    def log(self, metrics: dict, *args, **kwargs) -> None:
        self.logged.append({k: np.asarray(v) for k, v in metrics.items()})

    def plot(self, values, *args, **kwargs) -> None:
        self.plotted.append(np.asarray(values))

    def __getattr__(self, name: str):  # wandb.init / finish, plt.savefig / xlabel / title ...
        return lambda *args, **kwargs: None

    def summary(self) -> str:
        """The returns the baseline plotted (ippo_ff_mpe) or logged (ippo_rnn with W&B on)."""
        if self.plotted:
            returns = self.plotted[-1].reshape(len(self.plotted[-1]), -1).mean(axis=-1)
            return f"mean returned_episode_returns: first update {returns[0]:.3f}, last {returns[-1]:.3f}"
        returns = [float(np.mean(m["returns"])) for m in self.logged if "returns" in m]
        if returns:
            return f"logged returns ({len(returns)} calls): first {returns[0]:.3f}, last {returns[-1]:.3f}"
        return "nothing logged or plotted (WANDB_MODE=disabled)"


def run(path: Path, config: dict) -> Recorder:
    """Call the baseline's ``main(config)`` in a scratch folder (it writes plots and saves
    there), with :class:`Recorder` as its ``wandb`` and ``plt``."""
    stand_in_hydra()
    module = load_baseline(path)
    recorder = Recorder()
    module.wandb = recorder
    if hasattr(module, "plt"):
        module.plt = recorder
    with tempfile.TemporaryDirectory() as scratch:
        cwd = os.getcwd()
        os.chdir(scratch)
        start = time.perf_counter()
        try:
            module.main(copy.deepcopy(dict(config, SAVE_PATH=scratch)))
        finally:
            os.chdir(cwd)
        print(f"{path.name} on {config['ENV_NAME']}: {config['NUM_SEEDS']} seed(s), "
              f"{time.perf_counter() - start:.1f} s; {recorder.summary()}", flush=True)
    return recorder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline", type=Path, help="a JaxMARL baseline file, e.g. baselines/IPPO/ippo_rnn.py")
    parser.add_argument("--env", default="ipd", help="a registered socialjax game")
    parser.add_argument("--obs-format", default="flat", choices=sj.core.wrappers.OBS_FORMATS)
    parser.add_argument("--seeds", type=int, default=1, help="NUM_SEEDS (vmapped)")
    parser.add_argument("--timesteps", type=float, default=BASE_CONFIG["TOTAL_TIMESTEPS"])
    parser.add_argument("--num-envs", type=int, default=BASE_CONFIG["NUM_ENVS"])
    parser.add_argument("--num-steps", type=int, default=BASE_CONFIG["NUM_STEPS"])
    parser.add_argument("--wandb-mode", default="disabled",
                        help="WANDB_MODE: 'disabled' as in the YAML; any other value turns on the baseline's "
                             "logging callback, recorded here (nothing is sent)")
    parser.add_argument("--qr-free-init", action="store_true",
                        help="Flax's orthogonal initialiser replaced by socialjax's (no LAPACK QR): avoids jaxlib "
                             "0.10's CPU deadlock with --seeds 2 or more")
    args = parser.parse_args(argv)
    route_make(args.obs_format)
    if args.qr_free_init:
        qr_free_init()
    config = dict(BASE_CONFIG, ENV_NAME=args.env, NUM_SEEDS=args.seeds, TOTAL_TIMESTEPS=args.timesteps,
                  NUM_ENVS=args.num_envs, NUM_STEPS=args.num_steps, TEST_NUM_STEPS=args.num_steps,
                  WANDB_MODE=args.wandb_mode)
    print(f"jax {jax.__version__} on {jax.default_backend()}", flush=True)
    run(args.baseline, config)


if __name__ == "__main__":
    main()
