"""Mixing samples: DACL's Mixup-noise and i-Mix's input mixing (positive views), and m-Mix's
hard negatives (embeddings mixed with many others).

The view mixers are pure functions of an explicit PRNG key, take ``x: [batch, ...]`` of any
sample shape, compile under ``jax.jit`` and can be ``jax.vmap``-ed over keys. The m-Mix
mixers (``mo_mix``, ``mp_mix``, ``random_mix``, ``binary_mix``) take ``[N, F]`` embeddings
and, for m-mix-wp, the graph's edges.
"""

from jaxcl.mixers._dacl import binary_mixup, dacl_plus_mixup, geometric_mixup, linear_mixup
from jaxcl.mixers._imix import cutmix, imix_mixup
from jaxcl.mixers._mmix import binary_mix, mo_mix, mp_mix, random_mix
from jaxcl.mixers._noise import gaussian_noise

__all__ = [
    "binary_mix",
    "binary_mixup",
    "cutmix",
    "dacl_plus_mixup",
    "gaussian_noise",
    "geometric_mixup",
    "imix_mixup",
    "linear_mixup",
    "mo_mix",
    "mp_mix",
    "random_mix",
]
