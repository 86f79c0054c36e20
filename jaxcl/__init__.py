"""jaxcl: domain-agnostic contrastive self-supervised learning in JAX."""

__version__ = "0.1.0.dev0"
