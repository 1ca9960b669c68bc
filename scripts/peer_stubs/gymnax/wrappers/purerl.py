"""Stand-in (see scripts/peer_stubs/README.md): SocialJax imports this name, then its own."""


class LogWrapper:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("gymnax stand-in (scripts/peer_stubs): gymnax's LogWrapper is not available")
