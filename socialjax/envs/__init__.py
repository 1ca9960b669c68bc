"""Environment families. Each is registered by name here and imported lazily by ``make``."""

from socialjax.core.registry import is_registered, register

_ENVS = {
    # name: (target, description, preset options)
    "ipd": (
        "socialjax.envs.matrix.env:MatrixGame",
        "iterated prisoner's dilemma, (T,R,P,S)=(5,3,1,0)",
        {"game": "prisoners_dilemma"},
    ),
    "stag_hunt": (
        "socialjax.envs.matrix.env:MatrixGame",
        "iterated stag hunt, R=4 T=3 P=1 S=0",
        {"game": "stag_hunt"},
    ),
    "chicken": (
        "socialjax.envs.matrix.env:MatrixGame",
        "iterated chicken, (T,R,S,P)=(4,3,1,0)",
        {"game": "chicken"},
    ),
    "matrix_game": (
        "socialjax.envs.matrix.env:MatrixGame",
        "any iterated 2x2 game (payoffs are params)",
        {},
    ),
    "nplayer_matrix": (
        "socialjax.envs.matrix.env:NPlayerMatrixGame",
        "N-player game: payoff from own action and number of other cooperators",
        {},
    ),
    "donor_game": (
        "socialjax.envs.donor.env:DonorGame",
        "donor game with reputation traces (Vallinder & Hughes 2024)",
        {},
    ),
    "harvest_open": (
        "socialjax.envs.harvest:Harvest",
        "Melting Pot Commons Harvest, open map, 7 players",
        {"preset": "open"},
    ),
    "harvest_closed": (
        "socialjax.envs.harvest:Harvest",
        "Melting Pot Commons Harvest, closed map, 7 players",
        {"preset": "closed"},
    ),
    "harvest_partnership": (
        "socialjax.envs.harvest:Harvest",
        "Melting Pot Commons Harvest, partnership map, 7 players",
        {"preset": "partnership"},
    ),
    "harvest_ssd": (
        "socialjax.envs.harvest:HarvestSSD",
        "original SSD Harvest (Hughes et al. 2018), 5 players, fines",
        {},
    ),
    "cleanup": (
        "socialjax.envs.cleanup:CleanUp",
        "Melting Pot Clean Up, 7 players: clean the river so apples grow",
        {},
    ),
    "cleanup_ssd": (
        "socialjax.envs.cleanup:CleanUpSSD",
        "original SSD Cleanup (Hughes et al. 2018), 5 players, fines",
        {},
    ),
    "gathering": (
        "socialjax.envs.gathering:Gathering",
        "Gathering (Leibo et al. 2017), 2 players, apples back after n_apple steps, 2 hits tag out",
        {},
    ),
    "coop_mining": (
        "socialjax.envs.coop_mining:CoopMining",
        "Melting Pot Cooperative Mining, 6 players: iron pays one miner 1, gold pays two miners 8 each",
        {},
    ),
    "gift_refinements": (
        "socialjax.envs.gift_refinements:GiftRefinements",
        "Melting Pot Gift Refinements, 6 players: a gifted token arrives as 5 of the next refinement level",
        {},
    ),
    "mushrooms": (
        "socialjax.envs.mushrooms:Mushrooms",
        "Melting Pot Externality Mushrooms (dense), 5 players: red pays the eater, green all, blue the others",
        {},
    ),
    "coins": (
        "socialjax.envs.coins:Coins",
        "Melting Pot Coins, 2 players: any coin pays 1, the other's colour costs its owner 2; variant='lola'",
        {},
    ),
    "territory_open": (
        "socialjax.envs.territory:Territory",
        "Melting Pot Territory (open), 9 players: paint resource walls to claim them, held walls pay; "
        "zaps destroy walls and remove players for good",
        {"map": "open"},
    ),
    "territory_rooms": (
        "socialjax.envs.territory:Territory",
        "Melting Pot Territory (rooms), 9 players, one room each on a torus; claiming through a shared "
        "wall invades a neighbour",
        {"map": "rooms"},
    ),
    "prisoners_dilemma_in_the_matrix": (
        "socialjax.envs.in_the_matrix:InTheMatrix",
        "Melting Pot Prisoner's Dilemma in the Matrix: collect C/D resources, interact by beam; "
        "variant arena (8 players) or repeated (2)",
        {"game": "prisoners_dilemma"},
    ),
    "stag_hunt_in_the_matrix": (
        "socialjax.envs.in_the_matrix:InTheMatrix",
        "Melting Pot Stag Hunt in the Matrix; variant arena (8 players) or repeated (2)",
        {"game": "stag_hunt"},
    ),
    "chicken_in_the_matrix": (
        "socialjax.envs.in_the_matrix:InTheMatrix",
        "Melting Pot Chicken in the Matrix; variant arena (8 players) or repeated (2)",
        {"game": "chicken"},
    ),
    "partner_punishment": (
        "socialjax.envs.institutions.partner_punishment:PartnerPunishment",
        "repeated PD with partner selection, reputation, direct/third-party punishment (Dasgupta & Musolesi)",
        {},
    ),
    "partner_punishment_one_action": (
        "socialjax.envs.institutions.partner_punishment:PartnerPunishment",
        "partner_punishment with one discrete action per step (its heads read from it), for learners",
        {"one_action": True},
    ),
    "commons": (
        "socialjax.envs.institutions.commons:Commons",
        "common-pool fishery, logistic regrowth, 5 harvesters; optional monitoring, sanctions, quota vote",
        {"preset": "logistic"},
    ),
    "commons_govsim": (
        "socialjax.envs.institutions.commons:Commons",
        "GovSim fishery: stock doubles up to 100, collapses below 5; 5 agents, 12 rounds",
        {"preset": "govsim"},
    ),
    "commons_ostrom": (
        "socialjax.envs.institutions.commons:Commons",
        "Ostrom-Gardner-Walker lab CPR: 8 players, 25 tokens, pool pays 23X - 0.25X^2",
        {"preset": "ostrom"},
    ),
    "indirect_reciprocity": (
        "socialjax.envs.institutions.indirect_reciprocity:IndirectReciprocity",
        "donor game with reputations under image scoring / simple standing / stern judging / shunning (Nowak "
        "& Sigmund 1998, Ohtsuki & Iwasa 2004)",
        {},
    ),
    "lattice_pd": (
        "socialjax.envs.institutions.lattice_pd:LatticePD",
        "prisoner's dilemma on a periodic 30x30 lattice against 4 neighbours (Weng & Lee 2026)",
        {},
    ),
    "public_goods": (
        "socialjax.envs.institutions.public_goods:PublicGoods",
        "public goods game, groups of 4, endowment 20, MPCR 0.4 (Fehr & Gaechter)",
        {},
    ),
    "public_goods_punishment": (
        "socialjax.envs.institutions.public_goods:PublicGoods",
        "public goods game with peer punishment, 1:3 cost:fine (Fehr & Gaechter 2002)",
        {"punishment": True},
    ),
    "public_goods_punishment_2000": (
        "socialjax.envs.institutions.public_goods:PublicGoods",
        "public goods game with punishment, convex costs, 10% cut per point (Fehr & Gaechter 2000)",
        {"punishment": True, "design": "2000"},
    ),
    "public_goods_standard_punishment": (
        "socialjax.envs.institutions.public_goods:PublicGoods",
        "public goods game with peer punishment by a standard: one discrete action per step, for learners",
        {"punishment": True, "punish_by": "standard"},
    ),
    "public_goods_sequential": (
        "socialjax.envs.institutions.public_goods:PublicGoods",
        "sequential public goods game MAC-SPGG (Liang et al. 2025)",
        {"sequential": True},
    ),
}


def register_all() -> None:
    for name, (target, description, preset) in _ENVS.items():
        if not is_registered(name):
            register(name, target, description, **preset)
