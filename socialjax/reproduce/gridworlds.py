"""Reproductions of gridworld results: common vs individual reward in Clean Up and
Commons Harvest (Guo et al., SocialJax).

Scales: ``paper`` is the published configuration (for a GPU); ``small`` is sized for a
2-core CPU in about a minute per condition and is what the test suite runs. At small
scale the Clean Up entry uses the original Cleanup map of Hughes et al. (2018), 3
players: on Melting Pot's map random play grows no apple in the first 1000 steps
(docs/gridworlds.md), so a minute of training has no reward to learn from. The Clean Up
entry's ``cpu`` and ``gpu`` scales are in :mod:`socialjax.reproduce.cleanup_scales`.
"""

from __future__ import annotations

from socialjax.reproduce.cleanup_scales import (
    CPU_ENV_OPTIONS,
    CPU_IPPO,
    CPU_SEEDS,
    GPU_SEEDS,
    gpu_updates,
)
from socialjax.reproduce.core import SCALES, Condition, Entry, Measure, Reference, combined_verdict, ordered_verdict
from socialjax.train.presets import (
    PAPER_ENV_STEPS,
    PAPER_EPISODE,
    PAPER_MINIBATCHES,
    PAPER_NUM_ENVS,
    PAPER_ROLLOUT,
    SMALL_IPPO,
)

# SocialJax's IPPO baseline (cooperativex/SocialJax, algorithms/IPPO/config/ippo_base.yaml):
# one network shared by all players, 256 envs x 1000-step rollouts, 1e8 env steps.
PAPER_IPPO = dict(
    seating="shared", num_envs=PAPER_NUM_ENVS, rollout_len=PAPER_ROLLOUT,
    num_updates=PAPER_ENV_STEPS // (PAPER_NUM_ENVS * PAPER_ROLLOUT), lr=5e-4, update_epochs=2,
    num_minibatches=PAPER_MINIBATCHES, clip_eps=0.2, ent_coef=0.01, gamma=0.99, gae_lambda=0.95, vf_coef=0.5,
    max_grad_norm=0.5, anneal_lr=True, evaluate=False,
)
SMALL_EPISODE = 250  # two 125-step rollouts: every other update ends an episode in every game
SMALL = dict(num_envs=2, rollout_len=125, num_updates=16, evaluate=False, **SMALL_IPPO)

SOCIAL = (
    Measure("collective_return", "collective_return", "collective return (per episode)"),
    Measure("equality", "equality", "equality"),
    Measure("sustainability", "sustainability", "sustainability (mean step of reward)"),
    Measure("peace", "peace", "peace (players not tagged out)"),
)


def _condition(name: str, form: str, paper: tuple[str, dict], small: tuple[str, dict] | None,
               more: dict[str, tuple[str, dict, dict]] | None = None) -> Condition:
    """``paper`` and ``small``: env name and options at each scale (``small=None``: run at
    paper scale only); ``more``: further scales, ``{scale: (env, options, config)}``."""
    envs = {"paper": paper} if small is None else {"paper": paper, "small": small}
    configs = {"paper": dict(PAPER_IPPO, reward=form), "small": dict(SMALL, reward=form)}
    for scale, (env, options, config) in (more or {}).items():
        envs[scale] = (env, options)
        configs[scale] = dict(config, reward=form)
    return Condition(
        name=name,
        env={scale: env for scale, (env, _) in envs.items()},
        env_options={scale: options for scale, (_, options) in envs.items()},
        config=configs,
        scales=tuple(scale for scale in SCALES if scale in envs),
    )


SOCIALJAX = "Guo et al., SocialJax (arXiv:2503.14576), IPPO learning curves, individual vs common reward"
SOCIALJAX_HOW = ("the direction the comparison tests; SocialJax's curves and numbers were not read here "
                 "(see REPRODUCTIONS.md)")
FORMS = ("common", "individual")


def _prefix(game: str | None) -> str:
    return "" if game is None else f"{game}/"


def _common_beats_individual(games: tuple[str | None, ...]):
    """The criterion over the entry's maps run at this scale: common above individual in
    each."""
    def criterion(finals):
        return combined_verdict([
            ordered_verdict(finals, (f"{_prefix(g)}common", "collective_return"),
                            (f"{_prefix(g)}individual", "collective_return"),
                            f"collective return{'' if g is None else ' (' + g + ')'}")
            for g in games if (f"{_prefix(g)}common", "collective_return") in finals])
    return criterion


COMMON_VS_INDIVIDUAL = ("collective return of the common-reward population above the individual-reward "
                        "one{maps}: reproduced when the 95% intervals over seeds are separated{all}, partly when "
                        "only the means are ordered{some}, not reproduced otherwise")


def _reward_entry(name: str, game: str, maps: dict[str | None, tuple[tuple[str, dict], tuple[str, dict] | None]],
                  finding: str, notes: str, more: dict[str | None, dict] | None = None,
                  seeds: dict[str, int] | None = None) -> Entry:
    """SocialJax's comparison in one game: a common-reward population against an
    individual-reward one on each of ``maps`` (``{label: (paper, small)}``, each an env
    name and its options, ``small=None`` for a map run at paper scale only; a single map
    labelled ``None`` names the conditions ``common`` and ``individual``, several
    ``<label>/common`` ...); ``more[label]``: that map's further scales (see
    :func:`_condition`), ``seeds``: seeds per scale (default small and paper only)."""
    games = tuple(maps)
    several = len(games) > 1
    references = tuple(Reference(f"{_prefix(g)}{form}", "collective_return", None, SOCIALJAX, SOCIALJAX_HOW, finding)
                       for g in games for form in FORMS)
    return Entry(
        name=name,
        title=f"{game}, IPPO with common vs individual reward",
        citation="Guo et al., SocialJax (ICLR 2026; arXiv:2503.14576)",
        conditions=tuple(_condition(f"{_prefix(g)}{form}", form, *maps[g], (more or {}).get(g))
                         for g in games for form in FORMS),
        measures=SOCIAL,
        references=references,
        criterion=_common_beats_individual(games),
        criterion_text=COMMON_VS_INDIVIDUAL.format(
            maps=" on each map run" if several else "", all=" on every map" if several else "",
            some=" on some" if several else ""),
        notes=notes,
        **({} if seeds is None else {"seeds": seeds}),
    )


CLEANUP_PAPER = ("cleanup", dict(num_agents=7, episode="fixed", episode_length=PAPER_EPISODE))
CLEANUP_REWARD = _reward_entry(
    "cleanup-reward", "Clean Up",
    {None: (CLEANUP_PAPER, ("cleanup_ssd", dict(num_agents=3, episode_length=SMALL_EPISODE)))},
    "a common-reward population cleans the river and collects apples; an individual-reward one collects far "
    "fewer",
    "SocialJax's individual-reward mode pays an apple N (= 7) to its collector and its common mode pays every "
    "player the sum, so both of its curves count the group's apples per episode, as our collective return "
    "does. Paper scale follows SocialJax's IPPO config (one shared network, 256 x 1000-step rollouts, 1e8 env "
    "steps as in its v1.1.0 release; its May 2025 configs say 3e8). cpu scale: the original Cleanup rules on a "
    "small map of ours (socialjax.reproduce.cleanup_scales.CPU_MAP: 20 river and 27 orchard cells), 3 players, "
    "250-step episodes, one shared network, 20 updates of 16 games x 125 steps (40,000 env steps per seed); "
    "there the fire beam's fines (1 for the shooter, 50 for each player hit) dominate the collective return, "
    "and common reward separates from individual mostly because it makes the shooter pay for its hits. gpu "
    "scale: SocialJax's configuration with the updates cut to about 5 minutes of H100 training "
    "(socialjax.reproduce.cleanup_scales.gpu_updates).",
    more={None: {"cpu": ("cleanup_ssd", CPU_ENV_OPTIONS, CPU_IPPO),
                 "gpu": (*CLEANUP_PAPER, dict(PAPER_IPPO, num_updates=gpu_updates(2)))}},
    seeds={"small": 2, "cpu": CPU_SEEDS, "gpu": GPU_SEEDS, "paper": 3},
)

# cpu scale: Commons Harvest's rules (Melting Pot's open preset: regrowth by the apples within
# distance 2, none for a cell with no live apple near it) on HARVEST_CPU_MAP, a small map of ours
# with two 13-apple patches, 3 players, 250-step episodes, one network shared by the players
# (SocialJax's seating), 300 updates of 4 games x 125 steps (150,000 env steps per seed), 3 seeds.
# Random play eats 31.9 apples per episode there and leaves 17 of the 26 standing; players who
# strip a patch end its regrowth for the rest of the episode, so the tragedy can happen within
# a CPU run. gpu scale: SocialJax's batch (256 games x 1000 steps, one shared network, 7 players)
# on Melting Pot's open map for 28 updates, 2 conditions x 3 seeds = 4.3e7 env steps (about 5.5
# minutes at the 1.3e5 env steps/s measured for Clean Up at this config on one H100)
HARVEST_CPU_MAP = """
WWWWWWWWWWWWWWWWW
W  A        A   W
W AAA      AAA  W
WAAAAA    AAAAA W
W AAA      AAA  W
W  A        A   W
W               W
W  PPPPPPPPPPP  W
WWWWWWWWWWWWWWWWW
"""
HARVEST_CPU = dict(SMALL, seating="shared", num_envs=4, num_updates=300)
HARVEST_GPU = dict(PAPER_IPPO, num_updates=28)
HARVEST_SEEDS = {"small": 2, "cpu": 3, "gpu": 3, "paper": 3}
HARVEST_PAPER = {kind: (f"harvest_{kind}", dict(num_agents=7, episode="fixed", episode_length=PAPER_EPISODE))
                 for kind in ("open", "closed", "partnership")}
HARVEST_SMALL = ("harvest_open", dict(num_agents=3, episode="fixed", episode_length=SMALL_EPISODE))
HARVEST_CPU_ENV = ("harvest_open", dict(HARVEST_SMALL[1], ascii_map=HARVEST_CPU_MAP))

HARVEST_REWARD = _reward_entry(
    "harvest-reward", "Commons Harvest (open, closed, partnership)",
    {kind: (paper, HARVEST_SMALL if kind == "open" else None) for kind, paper in HARVEST_PAPER.items()},
    "individual reward overharvests (the tragedy of the commons): collective return below the common-reward "
    "population's",
    "As cleanup-reward: SocialJax's two reward modes both count the group's apples. SocialJax trained open and "
    "closed (its closed map is its open env with a walled map); partnership is Melting Pot's third Commons "
    "Harvest map, run here the same way. Closed and partnership run at paper scale only: at small scale each "
    "map is two more compilations, and the open map is the comparison SocialJax's text leads with. "
    "Small scale: the open map with 3 players and 250-step episodes, independent learners (our small CNN). "
    "cpu scale: the open preset's rules on a small map of ours with two 13-apple patches "
    "(socialjax.reproduce.gridworlds.HARVEST_CPU_MAP), 3 players, one shared network, 150,000 env steps per "
    "seed: the individual-reward population first eats faster (collective return up to about 46 apples per "
    "episode), then strips the patches ever earlier in the episode (sustainability 126 -> about 30) and its "
    "return falls (to about 33), while the common-reward one keeps most of each patch standing (about 45). "
    "On the full open map 30,000 env steps per seed showed only the naive phase (individual above common: the "
    "stock was never depleted). gpu scale: the open map at SocialJax's batch and configuration, 28 updates "
    "(7.2e6 env steps per run, 7% of the paper's 1e8).",
    more={"open": {"cpu": (*HARVEST_CPU_ENV, HARVEST_CPU), "gpu": (*HARVEST_PAPER["open"], HARVEST_GPU)}},
    seeds=HARVEST_SEEDS,
)
