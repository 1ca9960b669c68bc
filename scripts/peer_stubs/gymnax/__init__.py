"""Stand-in for gymnax (see scripts/peer_stubs/README.md)."""


def make(*args, **kwargs):
    raise NotImplementedError("gymnax stand-in (scripts/peer_stubs): gymnax.make is not available")
