"""Ways to make positive views by mixing samples: DACL's Mixup-noise and i-Mix's input mixing.

All functions are pure functions of an explicit PRNG key, take ``x: [batch, ...]`` of any
sample shape, compile under ``jax.jit`` and can be ``jax.vmap``-ed over keys.
"""

from jaxcl.mixers._dacl import binary_mixup, dacl_plus_mixup, geometric_mixup, linear_mixup
from jaxcl.mixers._imix import cutmix, imix_mixup
from jaxcl.mixers._noise import gaussian_noise

__all__ = [
    "binary_mixup",
    "cutmix",
    "dacl_plus_mixup",
    "gaussian_noise",
    "geometric_mixup",
    "imix_mixup",
    "linear_mixup",
]
