"""Stand-in for omegaconf (see scripts/peer_stubs/README.md): configs stay plain dicts."""


class OmegaConf:
    @staticmethod
    def to_container(config, **kwargs):
        return dict(config)

    @staticmethod
    def create(config=None, **kwargs):
        return dict(config or {})
