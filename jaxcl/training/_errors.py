"""The trainer's error for a configuration that cannot run."""


class ConfigError(ValueError):
    """A configuration key that does not exist or holds a value that cannot work."""
