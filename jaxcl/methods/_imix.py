"""i-Mix on tabular data: the N-pair baseline and N-pair + i-Mix (5-layer MLP with batch norm)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import losses, mixers
from jaxcl.methods._base import Batch, Method, register


def _views(key, x, noise):
    """Two views of ``x``. i-Mix uses no domain augmentation on tabular data by default (our
    reading: mixing is the augmentation); ``noise > 0`` adds Gaussian noise to each view."""
    if noise == 0:
        return x, x
    k1, k2 = jax.random.split(key)
    return mixers.gaussian_noise(k1, x, scale=noise), mixers.gaussian_noise(k2, x, scale=noise)


def _embed(model, a, b):
    z = model(jnp.concatenate([a, b], axis=0))
    return jnp.split(z, 2, axis=0)


@register
class NPair(Method):
    """N-pair contrastive learning (one-directional InfoNCE over the batch)."""

    name = "npair"
    defaults = {"temperature": 0.2, "view_noise": 0.0}

    def loss(self, model, batch: Batch, key, extra):
        a, b = _views(key, batch.x, self.hp.view_noise)
        z_a, z_b = _embed(model, a, b)
        loss = losses.infonce(z_a, z_b, temperature=self.hp.temperature)
        return loss, {"loss": loss}


@register
class IMix(Method):
    """N-pair + i-Mix: the first view mixed with lam ~ Beta(alpha, alpha), virtual soft labels."""

    name = "imix"
    defaults = {"temperature": 0.2, "alpha": 1.0, "view_noise": 0.0}

    def loss(self, model, batch: Batch, key, extra):
        k_views, k_mix = jax.random.split(key)
        a, b = _views(k_views, batch.x, self.hp.view_noise)
        a_mix, lam, perm = mixers.imix_mixup(k_mix, a, alpha=self.hp.alpha)
        z_a, z_b = _embed(model, a_mix, b)
        loss = losses.imix_npair_loss(z_a, z_b, lam=lam, perm=perm, temperature=self.hp.temperature)
        return loss, {"loss": loss, "lam": lam}
