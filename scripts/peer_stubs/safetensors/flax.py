"""Stand-in for safetensors.flax (see scripts/peer_stubs/README.md): nothing is saved while timing."""


def save_file(*args, **kwargs):
    raise NotImplementedError("safetensors stand-in (scripts/peer_stubs): saving is not available")


def load_file(*args, **kwargs):
    raise NotImplementedError("safetensors stand-in (scripts/peer_stubs): loading is not available")
