"""Stand-in (see scripts/peer_stubs/README.md): names SocialJax's wrappers import."""


class Box:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("gymnax stand-in (scripts/peer_stubs): gymnax spaces are not available")


class Discrete(Box):
    pass
