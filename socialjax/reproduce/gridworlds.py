"""Reproductions of gridworld results: common vs individual reward in Clean Up and
Commons Harvest (Guo et al., SocialJax).

Scales: ``paper`` is the published configuration (for a GPU); ``small`` is sized for a
2-core CPU in about a minute per condition and is what the test suite runs. At small
scale the Clean Up entry uses the original Cleanup map of Hughes et al. (2018), 3
players: on Melting Pot's map random play grows no apple in the first 1000 steps
(docs/gridworlds.md), so a minute of training has no reward to learn from.
"""

from __future__ import annotations

from socialjax.reproduce.core import Condition, Entry, Measure, Reference, ordered_verdict
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
SMALL = dict(num_envs=4, rollout_len=125, num_updates=16, evaluate=False, **SMALL_IPPO)

SOCIAL = (
    Measure("collective_return", "collective_return", "collective return (per episode)"),
    Measure("equality", "equality", "equality"),
    Measure("sustainability", "sustainability", "sustainability (mean step of reward)"),
    Measure("peace", "peace", "peace (players not tagged out)"),
)


def _condition(form: str, paper_env: str, paper_options: dict, small_env: str, small_options: dict) -> Condition:
    return Condition(
        name=form,
        env={"paper": paper_env, "small": small_env},
        env_options={"paper": paper_options, "small": small_options},
        config={"paper": dict(PAPER_IPPO, reward=form), "small": dict(SMALL, reward=form)},
    )


SOCIALJAX = "Guo et al., SocialJax (arXiv:2503.14576), IPPO learning curves, individual vs common reward"
SOCIALJAX_HOW = ("the direction the comparison tests; SocialJax's curves and numbers were not read here "
                 "(see REPRODUCTIONS.md)")


def _finding(note: str) -> tuple:
    """The published finding on collective return (both conditions), without a number."""
    return (Reference("common", "collective_return", None, SOCIALJAX, SOCIALJAX_HOW, note),
            Reference("individual", "collective_return", None, SOCIALJAX, SOCIALJAX_HOW, note))


def _common_beats_individual(finals):
    return ordered_verdict(finals, ("common", "collective_return"), ("individual", "collective_return"),
                           "collective return")


COMMON_VS_INDIVIDUAL = ("collective return of the common-reward population above the individual-reward "
                        "one: reproduced when the 95% intervals over seeds are separated, partly when only "
                        "the means are ordered, not reproduced otherwise")


SMALL_EPISODE = 250  # two 125-step rollouts: every other update ends an episode in every game



def _reward_entry(name: str, game: str, paper: tuple[str, dict], small: tuple[str, dict], finding: str,
                  notes: str) -> Entry:
    """SocialJax's comparison in one game: a common-reward population against an
    individual-reward one, each at ``paper`` and ``small`` scale (env name, options)."""
    return Entry(
        name=name,
        title=f"{game}, IPPO with common vs individual reward",
        citation="Guo et al., SocialJax (ICLR 2026; arXiv:2503.14576)",
        conditions=tuple(_condition(form, *paper, *small) for form in ("common", "individual")),
        measures=SOCIAL,
        references=_finding(finding),
        criterion=_common_beats_individual,
        criterion_text=COMMON_VS_INDIVIDUAL,
        notes=notes,
    )


CLEANUP_REWARD = _reward_entry(
    "cleanup-reward", "Clean Up",
    ("cleanup", dict(num_agents=7, episode="fixed", episode_length=PAPER_EPISODE)),
    ("cleanup_ssd", dict(num_agents=3, episode_length=SMALL_EPISODE)),
    "a common-reward population cleans the river and collects apples; an individual-reward one collects far "
    "fewer",
    "SocialJax's individual-reward mode pays an apple N (= 7) to its collector and its common mode pays every "
    "player the sum, so both of its curves count the group's apples per episode, as our collective return "
    "does. Paper scale follows SocialJax's IPPO config (one shared network, 256 x 1000-step rollouts, 1e8 env "
    "steps as in its v1.1.0 release; its May 2025 configs say 3e8).",
)

HARVEST_REWARD = _reward_entry(
    "harvest-reward", "Commons Harvest (open)",
    ("harvest_open", dict(num_agents=7, episode="fixed", episode_length=PAPER_EPISODE)),
    ("harvest_open", dict(num_agents=3, episode="fixed", episode_length=SMALL_EPISODE)),
    "individual reward overharvests (the tragedy of the commons): collective return below the common-reward "
    "population's",
    "As cleanup-reward: SocialJax's two reward modes both count the group's apples. Only the open map is run; "
    "closed and partnership are not entries yet.",
)
