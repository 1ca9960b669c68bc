"""Stand-in for wandb (see scripts/peer_stubs/README.md): logging does nothing."""

config = {}


def init(*args, **kwargs):
    return None


def log(*args, **kwargs):
    return None


def finish(*args, **kwargs):
    return None
