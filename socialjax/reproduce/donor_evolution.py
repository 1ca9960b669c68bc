"""Cultural evolution of cooperation in the donor game (Vallinder & Hughes 2024,
arXiv:2412.10270), with parametric strategies in place of the paper's language models.

Published setup. 12 agents play the donor game with reputation traces (``donor_game``):
10 resources each at the start of a game, a donor gives a fraction of its resources and
the recipient gets ``g`` times the gift (g = 2; ablations 1.5 and 3), two games per
generation with the roles swapped, 10 generations; after each generation the top half by
final resources survives and the bottom half is replaced by new agents that learn from
the survivors' strategies. In a second variant a donor may instead punish, paying x for
a fine of 2x on the recipient. The paper's agents are language models (Claude 3.5
Sonnet, Gemini 1.5 Flash, GPT-4o) that write their own strategy in words each
generation; its headline metric is the average final resources per generation.

Ours. The agents are the parametric trace strategies of
:mod:`socialjax.agents.donor_strategies` (a bias and weights on the recipient's trace),
evolved by :func:`socialjax.train.cultural_evolution.make_donor_evolution` (truncation
selection of the top 50%, Gaussian mutation of the survivors' copies): no language, no
reasoning, no transmission of text. This is not the paper's experiment; the question
the entry asks is whether the published *direction* (resources of the paper's
cooperative model rising over generations; costly punishment helping it) also appears
in the evolutionary dynamics of simple strategies under the same game and selection.

Strategy spaces (``Population``: a space and a start). Why resources fall in the linear
space (measured, 32 runs, g = 2): its initial population gives half its resources
(``bias`` uniform in [0, 1]), and since a trace is a fraction given (>= 0), the bias,
``w_1`` and ``w_unknown`` are all knobs of how much an agent gives to everyone, free
riders included; truncation selection keeps the top half by own resources, so it keeps
whoever gives least: the mean bias falls from 0.51 to -0.14 and ``w_1`` from -0.02 to
-0.20 over the 10 generations (giving 0.50 -> 0.016), and from a stingy start (bias in
[0, 0.1]) giving falls as well (0.087 -> 0.005). The ``"reciprocal"`` space (an opening
gift to a recipient with no history, otherwise ``reciprocity`` times the recipient's
last gift) gives nothing to a free rider: among trace reciprocators that all give ``u``,
a non-giver ends with 0.89 (u = 0.05) to 0.06 (u = 0.8) of their resources; a mutant
that gives twice as much ends with more when u <= 0.1 (1.06 times theirs at u = 0.05),
one that gives 10% less with more when u >= 0.3 (1.01 at u = 0.3, 1.04 at u = 0.5), and
at u = 0.2 both are even (1.00): conditional giving has a stable level near a fifth of
one's resources (g = 2, the released schedule, means over 64 played generations each).
The last gift of a game is never returned and gifts are fractions of resources that grow
over the game, which is why that level is interior. Evolved from a stingy start (opening
gifts in [0, 0.1], ``STINGY_START``, ours), its giving rises to that level and resources
with it; from the generous start it falls to the same level. The entry evolves four
populations at the cpu and paper scales: the linear space from the generous start (the
original rows, unprefixed) and from the stingy start, and the reciprocal space from
each; the small scale, a pipeline check, evolves the first alone.

Conditions: every multiplier (1.5, 2, 3), without and with costly punishment, under
the pairing schedule of the authors' released code (``released``) and, at paper scale,
also that of the paper's text (``alternating``). Each population, schedule and
punishment setting is one jitted call vmapped over multipliers and runs (one
compilation each); a run
(a "seed" of the table) is one evolution of 12 agents over 10 generations, and all
conditions share the runs' keys, so run ``s`` starts from the same strategies in every
condition.

Measured per condition and run: the average final resources and the mean (signed)
fraction given by donors in each generation (the paper's metric and its generosity),
the growth of resources from the first to the last generation (``log10`` of the ratio:
a run's resources span orders of magnitude and a mean over runs is dominated by a few),
and the population left after the last selection played one more generation: its
average final resources, and per member and game what it donated and what punishment
destroyed (paid by punishers plus fines applied). These balance: resources = 10 +
(g - 1) * donated - loss.

Criterion (for each schedule run), judged on the reciprocal space from the stingy start
(``JUDGED``: the space whose strategies can make generosity conditional, from a start
below its stable level; the linear space at the small scale, where it alone runs): in the
paper's default setting (g = 2, no punishment) resources grow over the generations (the
95% interval of the per-run log10 growth above 0), and with costly punishment the last
generation ends with more resources than without (95% intervals separated). In the
reciprocal space punishing is retaliation only (a recipient that punished is punished
back, a stranger if the opening gift is negative): a free rider is given nothing, not
punished. Reproduced when every comparison is,
not reproduced when none is even in the expected direction, partly otherwise. The
multipliers 1.5 and 3 are measured, not judged: the direction of their published effect
was not read.

Where we differ: the agents (parametric strategies, not language models that write and
pass on strategies in words), mutation in place of an LLM's reading of the survivors'
strategies, the number of runs, and the start of the judged population (chosen by us;
the paper's first-generation giving was not read). All scales play the same game,
population and number of generations (the paper's); small plays the released schedule
and the linear space only, with 32 runs; cpu the released schedule and the four
populations with 128 runs (about 70 s on the 2-core CPU, compiled programs cached;
about 6 minutes with compilation under a load of 15); paper both schedules, the four
populations and 256 runs.

Measured at the cpu scale (128 runs; seeds 0 / 1000), g = 2, released schedule, log10
growth of resources from generation 1 to 10: linear, generous start -1.15 [-1.2, -1.1] /
-1.07 [-1.12, -1.02]; linear, stingy start -0.21 [-0.223, -0.197] / -0.203 [-0.215,
-0.191]; reciprocal, generous start -0.19 [-0.334, -0.033] / -0.069 [-0.188, 0.058];
reciprocal, stingy start +0.496 [0.372, 0.63] / +0.521 [0.405, 0.644] (resources 15.1 ->
239 / 15.7 -> 240, giving 0.050 -> 0.182 / 0.042 -> 0.181). With costly punishment the
judged population's giving stays at 0.05 and its last generation ends lower than without
(log10 1.08 vs 1.64 / 1.08 vs 1.65): the published punishment effect is not reproduced.
At the paper scale (256 runs) the judged population grows by log10 0.506 [0.415, 0.599]
(released) and 0.639 [0.522, 0.754] (alternating) and ends lower with punishment (1.05 vs
1.65, 1.44 vs 1.79). In this space reciprocity is also retaliation: an agent whose opening gift drifts below 0
punishes strangers, its trace turns negative, reciprocators punish it back and their own
traces turn negative in turn; with punishment the mean reciprocity falls from 1.0 to
0.68 over the 10 generations (64 runs) and a third of the evolved agents
punish strangers, where without punishment reciprocity rises (to about 1.3).

The sanctioning space (measured, not judged) gives punishment the target the paper's
agents gave it, free riders: a recipient whose last gift fell short of the donor's
standard is fined. From the stingy start it ends the retaliation collapse (giving rises
to 0.216 / 0.185 in generation 10 with punishment, against 0.049 / 0.047 in the
reciprocal space) but still not above the level reached without punishment: last
generation log10 resources 1.61 [1.48, 1.74] with vs 1.65 [1.53, 1.78] without (seeds 0),
1.51 [1.39, 1.64] vs 1.71 [1.58, 1.85] (seeds 1000). Fines cost resources, and the level
of giving that selection keeps (about a fifth of one's resources, where the last,
unreturned gift balances) does not move: a fine can make a free rider give, not make a
giver give more than what pays.
"""

from __future__ import annotations

import textwrap

import numpy as np

from socialjax.reproduce.core import (
    Entry,
    Reference,
    combined_verdict,
    finish_figure,
    interval,
    model_condition,
    ordered_verdict,
    sign_verdict,
)
from socialjax.reproduce.donor_populations import (  # noqa: F401 (evolve_runs, Population re-exported)
    GENERATIONS,
    LINEAR,
    LINEAR_STINGY,
    MULTIPLIERS,
    NAMED,
    RECIPROCAL,
    RECIPROCAL_STINGY,
    SANCTIONING_STINGY,
    STINGY_START,
    Population,
    evolve_runs,
)
from socialjax.train.models import Model, register_model
from socialjax.viz.plots import pyplot

# Vallinder & Hughes 2024: multiplier 2 with ablations 1.5 and 3 (MULTIPLIERS), costly
# punishment as a variant (the paper, and its released notebook, aronvallinder/llm-donor-game)
DEFAULT_MULTIPLIER = 2.0
PUNISHMENT = (False, True)
INITIAL_RESOURCES = 10.0  # each agent's resources at the start of a game (the env's default, the paper's)
# ours: the small and cpu scales play the released code's pairing schedule only (each
# schedule is two more compilations per population); the paper scale plays the paper
# text's schedule as well
SCHEDULES = {"small": ("released",), "cpu": ("released",), "paper": ("released", "alternating")}
ALL_SCHEDULES = SCHEDULES["paper"]


# ours: the small scale (a pipeline check) evolves the linear space alone; the criterion
# judges the published direction on the reciprocal space from a stingy start where it is run
POPULATIONS = {"small": (LINEAR,), "cpu": (LINEAR, LINEAR_STINGY, RECIPROCAL, RECIPROCAL_STINGY, SANCTIONING_STINGY)}
POPULATIONS["paper"] = POPULATIONS["cpu"]
JUDGED = RECIPROCAL_STINGY
FLOOR = 1e-3  # ours: log10 of a population left with (almost) nothing is taken at this floor

RESOURCES = "resources, gen {}"
GIVEN = "given, gen {}"
RESOURCES_SERIES, GIVEN_SERIES = "resources per generation", "given per generation"  # (S, generations), the figure's
LOG_LAST = "log10 resources, last gen"
GROWTH = "log10 growth"
EVOLVED = ("evolved resources", "evolved donated", "evolved punishment loss")

CITATION = "Vallinder & Hughes 2024, Cultural evolution of cooperation among LLM agents (arXiv:2412.10270)"


def row(schedule: str, multiplier: float, punishment: bool, population: Population = LINEAR) -> str:
    """The table row of one condition, e.g. ``"released, g=2, punishment"`` or
    ``"reciprocal, stingy start, released, g=2"``."""
    return (f"{population.label}, " if population.label else "") + f"{schedule}, g={multiplier:g}" \
        + (", punishment" if punishment else "")


def quantities() -> tuple[str, ...]:
    """The table's quantities per condition: the first and last generation's resources
    and fraction given (the sequences in between go to the figure), the log10 values the
    criterion compares, and the evolved population's accounts."""
    ends = (1, GENERATIONS)
    return tuple(RESOURCES.format(k) for k in ends) + tuple(GIVEN.format(k) for k in ends) + (LOG_LAST, GROWTH) \
        + EVOLVED


def evolution_keys(settings) -> tuple[tuple[str, str], ...]:
    """The keys of :func:`evolution_values` with ``settings``: each multiplier's row and
    :func:`quantities`."""
    pop = NAMED[settings["population"]]
    return tuple((row(settings["schedule"], g, settings["punishment"], pop), q) for g in MULTIPLIERS
                 for q in quantities())


def evolution_series(settings) -> tuple[tuple[str, str], ...]:
    """Its sequences over the generations: each row's resources and fraction given."""
    pop = NAMED[settings["population"]]
    return tuple((row(settings["schedule"], g, settings["punishment"], pop), q) for g in MULTIPLIERS
                 for q in (RESOURCES_SERIES, GIVEN_SERIES))


def evolution_values(population: str, schedule: str, punishment: bool, seeds: int, base_seed: int = 0
                     ) -> dict[tuple[str, str], np.ndarray]:
    """The rows of one population (a name of :data:`NAMED`), schedule and punishment
    setting, one per multiplier, from one call of :func:`evolve_runs`: the first and last
    generation's resources and fraction given, the log10 values the criterion compares,
    the evolved population's accounts ``(seeds,)``, and the sequences over the
    generations ``(seeds, generations)``. The model ``donor-evolution/strategies``."""
    pop, out = NAMED[population], {}
    r = evolve_runs(schedule, punishment, seeds, base_seed=base_seed, population=pop)
    for i, g in enumerate(MULTIPLIERS):
        name = row(schedule, g, punishment, pop)
        resources, given = r["mean_final_resources"][i], r["mean_fraction_given"][i]  # (S, G)
        out[(name, RESOURCES_SERIES)], out[(name, GIVEN_SERIES)] = resources, given
        for k in (1, GENERATIONS):
            out[(name, RESOURCES.format(k))] = resources[:, k - 1]
            out[(name, GIVEN.format(k))] = given[:, k - 1]
        log = np.log10(np.maximum(resources, FLOOR))
        out[(name, LOG_LAST)] = log[:, -1]
        out[(name, GROWTH)] = log[:, -1] - log[:, 0]
        for q in EVOLVED:
            out[(name, q)] = r[q][i]
    return out


STRATEGIES = register_model(Model("donor-evolution/strategies", "donor_game", evolution_values, evolution_keys,
                                  evolution_series))


def _conditions():
    """A condition per population, schedule and punishment setting (its rows: the
    multipliers), at the scales that run it."""
    conditions = []
    for name, pop in NAMED.items():
        for schedule in ALL_SCHEDULES:
            for punishment in PUNISHMENT:
                scales = [s for s in SCHEDULES if pop in POPULATIONS[s] and schedule in SCHEDULES[s]]
                label = (f"{pop.label}, " if pop.label else "") + schedule + (", punishment" if punishment else "")
                conditions.append(model_condition(label, STRATEGIES.name, {
                    s: {"population": name, "schedule": schedule, "punishment": punishment} for s in scales}))
    return tuple(conditions)


def judged_population(finals) -> Population:
    """The population the criterion judges: :data:`JUDGED` (the reciprocal space from a
    stingy start, the one whose strategies can make generosity conditional) where it was
    run, else the linear space (the small scale)."""
    return JUDGED if (row("released", DEFAULT_MULTIPLIER, False, JUDGED), GROWTH) in finals else LINEAR


def _criterion(finals):
    parts = []
    pop = judged_population(finals)
    schedules = [s for s in ALL_SCHEDULES if (row(s, DEFAULT_MULTIPLIER, False, pop), GROWTH) in finals]
    for s in schedules:
        base, punished = row(s, DEFAULT_MULTIPLIER, False, pop), row(s, DEFAULT_MULTIPLIER, True, pop)
        parts.append(sign_verdict(finals[(base, GROWTH)],
                                  f"{base}: log10 growth of resources, generation 1 to {GENERATIONS}"))
        parts.append(ordered_verdict(finals, (punished, LOG_LAST), (base, LOG_LAST),
                                     f"{base}: last-generation log10 resources with vs without punishment"))
    return combined_verdict(parts)


def plot(rep, path) -> None:
    """Per generation, one line per condition: the average final resources (geometric
    mean over runs, log scale, as the criterion compares them) and the mean fraction
    given by donors (mean over runs); 95% intervals over runs as bands. A column per
    population and schedule, colour by multiplier, dashed with costly punishment."""
    plt = pyplot()

    columns = [(pop, s) for pop in POPULATIONS[rep.scale] for s in SCHEDULES[rep.scale]]
    fig, axes = plt.subplots(2, len(columns), figsize=(4.6 * len(columns), 7.4), squeeze=False)
    colours = dict(zip(MULTIPLIERS, ("tab:blue", "tab:orange", "tab:green")))
    for col, (population, schedule) in enumerate(columns):
        top, bottom = axes[:, col]
        for punishment in PUNISHMENT:
            for g in MULTIPLIERS:
                style = dict(ls="--" if punishment else "-", color=colours[g], marker="o", ms=3,
                             label=f"g={g:g}" + (", punishment" if punishment else ""))
                _plot_condition(top, bottom, rep, row(schedule, g, punishment, population), style)
        top.axhline(INITIAL_RESOURCES, color="grey", ls=":", lw=1)
        top.set_yscale("log")
        top.set_ylabel("average final resources\n(geometric mean over runs)")
        space = population.label or f"{population.space}, generous start"
        top.set_title(f"{space}: {schedule} schedule", fontsize=9)
        bottom.set_ylabel("mean fraction given by donors")
        bottom.set_xlabel("generation")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    axes[1, -1].legend(fontsize=7, ncol=2)
    note = ("Published (Claude 3.5 Sonnet, qualitative): average final resources rise over the generations, "
            "higher still with costly punishment. Ours: parametric strategies, not language models; bands are 95% "
            "intervals over runs; dotted: nobody ever gives (10).")
    axes[1, 0].text(0.0, -0.2, textwrap.fill(note, 75), transform=axes[1, 0].transAxes,
                    fontsize=7, va="top")
    finish_figure(fig, rep, path)


def _plot_condition(top, bottom, rep, name: str, style: dict) -> None:
    """One condition's curves: resources (geometric mean, band) on ``top``, the fraction
    given (mean, band) on ``bottom``."""
    resources, given_runs = rep.curves[(name, RESOURCES_SERIES)], rep.curves[(name, GIVEN_SERIES)]
    gens = np.arange(1, resources.shape[1] + 1)
    logs = np.array([interval(np.log10(np.maximum(resources[:, k], FLOOR))) for k in range(len(gens))])
    top.plot(gens, 10 ** logs[:, 0], **style)
    top.fill_between(gens, 10 ** logs[:, 1], 10 ** logs[:, 2], color=style["color"], alpha=0.12, lw=0)
    given = np.array([interval(given_runs[:, k]) for k in range(len(gens))])
    bottom.plot(gens, given[:, 0], **style)
    bottom.fill_between(gens, given[:, 1], given[:, 2], color=style["color"], alpha=0.12, lw=0)


DONOR_EVOLUTION = Entry(
    name="donor-evolution",
    title="Donor game: cultural evolution of parametric strategies, with and without costly punishment",
    citation="Vallinder & Hughes, arXiv:2412.10270, 2024",
    conditions=_conditions(),
    measures=(),
    references=(
        Reference(row("released", DEFAULT_MULTIPLIER, False), GROWTH, None,
                  f"{CITATION}, abstract; the trend over generations from a reading note of its figures",
                  "text (the ranking); the rise over generations secondary, not checked against the figures",
                  "Claude 3.5 Sonnet societies evolve cooperation, their average final resources rising over the "
                  "generations, well above Gemini 1.5 Flash (weak rise) and GPT-4o (declines towards defection)"),
        Reference(row("released", DEFAULT_MULTIPLIER, True), LOG_LAST, None, f"{CITATION}, abstract", "text",
                  "with costly punishment Claude 3.5 Sonnet achieves yet higher scores; Gemini 1.5 Flash and GPT-4o "
                  "do not"),
        Reference(row("released", DEFAULT_MULTIPLIER, False, JUDGED), GROWTH, None,
                  f"{CITATION}, abstract; the trend over generations from a reading note of its figures",
                  "text (the ranking); the rise over generations secondary, not checked against the figures",
                  "Claude 3.5 Sonnet: average final resources rise over the generations (the row the criterion "
                  "judges at the cpu and paper scales)"),
        Reference(row("released", DEFAULT_MULTIPLIER, True, JUDGED), LOG_LAST, None, f"{CITATION}, abstract", "text",
                  "Claude 3.5 Sonnet: with costly punishment, higher still (the row the criterion judges at the cpu "
                  "and paper scales)"),
        Reference(row("released", 3.0, False), LOG_LAST, None, f"{CITATION}, multiplier ablation (via a reading note)",
                  "secondary, not checked",
                  "multipliers 1.5 and 3 are reported not to change the ranking of the models; the direction of their "
                  "effect on resources was not read, so the multipliers are measured but not judged"),
    ),
    criterion=_criterion,
    criterion_text=(
        "on the reciprocal space from a stingy start (the linear space at the small scale), at g = 2, for each "
        "schedule run: without punishment the per-run log10 growth of average final resources "
        "from the first to the last generation is above 0 (95% interval over runs), and the last generation "
        "ends with more resources (log10) with costly punishment than without (95% intervals); reproduced when "
        "all are separated, not reproduced when none is even in the expected direction, partly otherwise"),
    seeds={"small": 32, "cpu": 128, "paper": 256},
    notes=("The agents are parametric trace strategies, evolved by truncation selection and Gaussian mutation, "
           "not language models; the paper's trends for Claude 3.5 Sonnet are the reference, not its numbers. Two "
           "strategy spaces: linear (a bias and weights on the recipient's trace: its bias gives to free riders "
           "too, and selection drives every generosity knob down, from either start) and reciprocal (an opening "
           "gift, then a multiple of the recipient's last gift; giving settles near a fifth of one's resources "
           "at g = 2, so it rises from a stingy start and falls from a generous one). The criterion judges the "
           "reciprocal space from a stingy start (initial gifts of at most 10%, ours) at the cpu and paper "
           "scales, the linear space at small. All scales play the same game, population and generations; "
           "small uses the released code's pairing schedule, the linear space and 32 runs, cpu the released "
           "schedule, four populations (linear and reciprocal, each from a generous and a stingy start) with 128 "
           "runs, and the sanctioning space from the stingy start (reciprocal, with a standard below which a "
           "recipient is fined: the published agents' punishment of free riders; measured, not judged), "
           "paper adds the paper text's (alternating) schedule and uses 256 runs (the paper ran 5 per "
           "model, per a reading note). "
           "The multipliers 1.5 and 3 are measured but not judged (the published direction was not read). The "
           "comparisons use log10 of each run's average final resources (multiplicative dynamics: a few runs "
           "dominate an arithmetic mean over runs); the generation rows are the paper's arithmetic metric."),
    plot=plot,
)
