"""DACL's tabular rows: DACL, DACL+, Gaussian noise, No-Pretraining, full supervised (Table 1)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxcl import losses, mixers, models
from jaxcl.methods._base import Batch, Method


def _two_view_nt_xent(model, x1, x2, temperature):
    """Both views through the model in one batch (batch norm sees all 2N), then NT-Xent."""
    z = model(jnp.concatenate([x1, x2], axis=0))
    z1, z2 = jnp.split(z, 2, axis=0)
    loss = losses.nt_xent(z1, z2, temperature=temperature)
    return loss, {"loss": loss}


class DACL(Method):
    """DACL with linear Mixup-noise positives (Algorithm 1, Eq. 3): lam ~ U(alpha, 1)."""

    name = "dacl"
    defaults = {"alpha": 0.9, "temperature": 0.5}

    def loss(self, model, batch: Batch, key):
        k1, k2 = jax.random.split(key)
        x1 = mixers.linear_mixup(k1, batch.x, alpha=self.hp.alpha)
        x2 = mixers.linear_mixup(k2, batch.x, alpha=self.hp.alpha)
        return _two_view_nt_xent(model, x1, x2, self.hp.temperature)


class DACLPlus(Method):
    """DACL+: per sample one of linear, geometric or binary Mixup-noise, for both views (§3.1)."""

    name = "dacl_plus"
    defaults = {"alpha": 0.9, "rho": 0.9, "temperature": 0.5}

    def loss(self, model, batch: Batch, key):
        k1, k2, kind = jax.random.split(key, 3)
        kw = dict(alpha=self.hp.alpha, rho=self.hp.rho, kind_key=kind)
        x1 = mixers.dacl_plus_mixup(k1, batch.x, **kw)
        x2 = mixers.dacl_plus_mixup(k2, batch.x, **kw)
        return _two_view_nt_xent(model, x1, x2, self.hp.temperature)


class GaussianNoise(Method):
    """The Gaussian-noise baseline: ``x + scale * N(0, I)`` for each view."""

    name = "gaussian"
    defaults = {"scale": 0.1, "temperature": 0.5}

    def loss(self, model, batch: Batch, key):
        k1, k2 = jax.random.split(key)
        x1 = mixers.gaussian_noise(k1, batch.x, scale=self.hp.scale)
        x2 = mixers.gaussian_noise(k2, batch.x, scale=self.hp.scale)
        return _two_view_nt_xent(model, x1, x2, self.hp.temperature)


class NoPretraining(Method):
    """The randomly initialised encoder, evaluated with the same linear probe."""

    name = "none"
    pretrains = False

    def loss(self, model, batch: Batch, key):
        raise RuntimeError("NoPretraining has no training loss")


class Supervised(Method):
    """The whole network trained on labels with cross entropy; evaluated as it is."""

    name = "supervised"
    supervised = True

    def build(self, num_features, num_classes, rngs: nnx.Rngs):
        m = self.config.model
        encoder = models.mlp_encoder(
            num_features, depth=m.encoder_depth, width=m.encoder_width, rngs=rngs
        )
        return models.Classifier(encoder, m.encoder_width, num_classes, rngs=rngs)

    def loss(self, model, batch: Batch, key):
        logits = model(batch.x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch.y).mean()
        accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == batch.y)
        return loss, {"loss": loss, "train_accuracy": accuracy}
