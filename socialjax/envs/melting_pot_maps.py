"""ASCII maps of the Melting Pot substrates whose maps are long, as their configs give them
(meltingpot/configs/substrates/<name>.py, ``ASCII_MAP``). Each game module parses its own
with its legend (:func:`socialjax.envs.grid.maps.parse_map`)."""

# ---------------------------------------------------------------- *_in_the_matrix
# ASCII_MAP of each *_in_the_matrix config; ``a`` is a random class, ``n`` / ``P`` spawn points
REPEATED_MAP = """
WWWWWWWWWWWWWWWWWWWWWWW
Wn         n         nW
W   WWW W  W  W WW    W
W    W 11a W a22 W    W
Wn  WW 11a W a22 WW  nW
W      11a   a22      W
W                     W
Wn WW  WW  n WW  WWW nW
W                     W
W      22a W a11      W
Wn   W 22a W a11 W   nW
W    W 22a W a11 WW   W
W  WWWW W  W  W WWW   W
Wn         n         nW
WWWWWWWWWWWWWWWWWWWWWWW
"""
STAG_HUNT_REPEATED_MAP = """
WWWWWWWWWWWWWWWWWWWWWWW
Wn         n         nW
W  2WWW W  W  W WW2   W
W    W 11a W 222 W    W
Wn  WW 11a W a22 WW  nW
W      1aa 2 a22      W
W  2               2  W
Wn WW  WW2 n WW  WWW nW
W   2            2    W
W      22a 2 aa1      W
Wn   W 22a W a11 W   nW
W   2W 222 W a11 WW   W
W  WWWW W  W  W WWW2  W
Wn         n         nW
WWWWWWWWWWWWWWWWWWWWWWW
"""
ARENA_MAP = """
WWWWWWWWWWWWWWWWWWWWWWWWW
WPPPP      W W      PPPPW
WPPPP               PPPPW
WPPPP               PPPPW
WPPPP               PPPPW
W                       W
W        11             W
W        11             W
W        aa             W
W    WW     W  222      W
WW    1a    W  222      W
WWW   1a  WWWWWWWWW     W
W     1a    111       WWW
W           111         W
W       aa W            W
W       22 W   WW       W
W       22     Waaa     W
W               222     W
W                       W
WPPPP               PPPPW
WPPPP               PPPPW
WPPPP               PPPPW
WPPPP         W     PPPPW
WWWWWWWWWWWWWWWWWWWWWWWWW
"""
STAG_HUNT_ARENA_MAP = """
WWWWWWWWWWWWWWWWWWWWWWWWW
WPPPPPPP   W W   PPPPPPPW
WPPPP               PPPPW
WPPPP               PPPPW
WPPPP       2222    PPPPW
WP                     PW
WP     222222   222    PW
WP 2     11    11      PW
W  2     11  a     222  W
W    WW     W1 11a      W
WW    21 11 W  11a  2   W
WWW   21  WWWWWWWWW 2   W
W   2 aa    111  1a   WWW
W   2       111  1a     W
W       aa W        22  W
W  22   2a Waa WW       W
WP      22     W222    PW
WP              222    PW
WP         222         PW
WPPPP               PPPPW
WPPPP               PPPPW
WPPPP               PPPPW
WPPPPPPP      W  PPPPPPPW
WWWWWWWWWWWWWWWWWWWWWWWWW
"""

# ---------------------------------------------------------------- territory
# territory__open.py ASCII_MAP (CHAR_PREFAB_MAP: P spawn point on floor, "," floor, R a
# resource wall, F | = T J L walls with highlight sprites)
OPEN_MAP = """
F=====================================T
|,,RRRRR,,RR,,RR,,,,,,RR,,,,,,RR,,,,,,|
|,,,,,RR,,,,,,RR,,,,,,RR,,,,,,,,,,,,,,|
|,,,,,RR,,,,,,RR,,,,,,,,,,,,,,,,,,,,,,|
|,RR,,RR,,,,,,RR,,,,,,,,,,R,,,RR,,,RR,|
|,,,,,RR,,,,,,RR,,,,,,,,,,R,,,RR,,,,,,|
|,,,,,RR,,,,,,,,,,RRRR,,,,R,,,,,,,,,,,|
|,,RR,RR,,,,,,,,,,,,,,,,,,R,,,,,,,,,,,|
|,,,,,RR,,,,,,,RR,,,,,,,,,R,,,,,,,,,,,|
|,,,,,RRRR,,,,,,,,,,,,,,,,,,,,,RR,,,,,|
|,,,,,,,,,,,,,,,,,,,,RR,,,,,,,,,,,,,,,|
|,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,|
|,,RRRR,,,RRRRRR,,,,,,,,,,,RR,,,,R,,,,|
|,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,R,,,,|
|,,,,,,,,,,,,,,,,RR,,,,,,,,,,,,,,,,P,,|
|,,,,RR,,,,,,,,,,,,,,,,RR,,,,,,,P,,,,,|
|,,,,,,,,,RR,,,,,,,,,,,,,,,,,,,,,P,,P,|
|,,,,,,,,,,,,,,,,,,,,,,,,,,,P,,P,,,,,,|
|,,,,,,,,,,,,,,,,,,,,,,,,,,,,,P,,,P,,,|
|,,P,,,,P,,,P,,P,,,P,,,,P,P,,P,,P,,P,,|
|,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,|
|,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,|
L=====================================J
"""
# territory__rooms.py ASCII_MAP (the same legend; topology TORUS)
ROOMS_MAP = """
JRRRRRLJRRRRRLJRRRRRL
R,,,,,RR,,,,,RR,,,,,R
R,,,,,RR,,,,,RR,,,,,R
R,,P,,RR,,P,,RR,,P,,R
R,,,,,RR,,,,,RR,,,,,R
R,,,,,RR,,,,,RR,,,,,R
TRRRRRFTRRRRRFTRRRRRF
JRRRRRLJRRRRRLJRRRRRL
R,,,,,RR,,,,,RR,,,,,R
R,,,,,RR,,,,,RR,,,,,R
R,,P,,RR,,P,,RR,,P,,R
R,,,,,RR,,,,,RR,,,,,R
R,,,,,RR,,,,,RR,,,,,R
TRRRRRFTRRRRRFTRRRRRF
JRRRRRLJRRRRRLJRRRRRL
R,,,,,RR,,,,,RR,,,,,R
R,,,,,RR,,,,,RR,,,,,R
R,,P,,RR,,P,,RR,,P,,R
R,,,,,RR,,,,,RR,,,,,R
R,,,,,RR,,,,,RR,,,,,R
TRRRRRFTRRRRRFTRRRRRF
"""
