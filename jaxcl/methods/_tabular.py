"""DACL's domain-agnostic rows: DACL, DACL+, Gaussian noise, No-Pretraining, full supervised
(Table 1 on feature rows; Table 2 on whole images, in input space, without image augmentation)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxcl import losses, mixers, models
from jaxcl.methods._base import Batch, Method, build_encoder, check_range, register
from jaxcl.methods._images import whole_images


class TwoViews(Method):
    """Two random views of every example, both through the model in one batch (batch norm
    sees all 2N rows), then NT-Xent between them (DACL Algorithm 1).

    Subclasses give :meth:`view`, one view drawn with its own key; :meth:`views` draws two
    independently. On images the views are of the whole images in ``[0, 1]``.
    """

    data_kinds = ("tabular", "image")
    # Each hyperparameter a subclass may have, with its interval, checked when built.
    RANGES = {"temperature": (0.0, float("inf"), True), "alpha": (0.0, 1.0, False),
              "rho": (0.0, 1.0, False), "scale": (0.0, float("inf"), False)}  # fmt: skip

    def __init__(self, config):
        super().__init__(config)
        for key, (low, high, low_open) in self.RANGES.items():
            if key in self.defaults:
                check_range(self.name, self.hp, key, low, high, low_open=low_open)

    def view(self, key: jax.Array, x: jax.Array) -> jax.Array:
        raise NotImplementedError

    def views(self, key: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        k1, k2 = jax.random.split(key)
        return self.view(k1, x), self.view(k2, x)

    def loss(self, model, batch: Batch, key, extra):
        x = batch.x if batch.x.ndim == 2 else whole_images(batch.x)
        x1, x2 = self.views(key, x)
        z1, z2 = jnp.split(model(jnp.concatenate([x1, x2], axis=0)), 2, axis=0)
        loss = losses.nt_xent(z1, z2, temperature=self.hp.temperature)
        return loss, {"loss": loss}


@register
class DACL(TwoViews):
    """DACL with linear Mixup-noise positives (Algorithm 1, Eq. 3): lam ~ U(alpha, 1)."""

    name = "dacl"
    defaults = {"alpha": 0.9, "temperature": 0.5}

    def view(self, key, x):
        return mixers.linear_mixup(key, x, alpha=self.hp.alpha)


@register
class DACLPlus(TwoViews):
    """DACL+: per sample one of linear, geometric or binary Mixup-noise, for both views (§3.1)."""

    name = "dacl_plus"
    defaults = {"alpha": 0.9, "rho": 0.9, "temperature": 0.5}

    def views(self, key, x):
        # One draw of the mixing kind per sample, shared by the two views.
        k1, k2, kind = jax.random.split(key, 3)
        kw = dict(alpha=self.hp.alpha, rho=self.hp.rho, kind_key=kind)
        return mixers.dacl_plus_mixup(k1, x, **kw), mixers.dacl_plus_mixup(k2, x, **kw)


@register
class GaussianNoise(TwoViews):
    """The Gaussian-noise baseline: ``x + scale * N(0, I)`` for each view."""

    name = "gaussian"
    defaults = {"scale": 0.1, "temperature": 0.5}

    def view(self, key, x):
        return mixers.gaussian_noise(key, x, scale=self.hp.scale)


class EncoderOnly(nnx.Module):
    """The encoder alone: what the No-Pretraining row evaluates."""

    def __init__(self, encoder: nnx.Module):
        self.encoder = encoder

    def __call__(self, x):
        return self.encoder(x)


@register
class NoPretraining(Method):
    """The randomly initialised encoder, evaluated with the same protocol as the others."""

    name = "none"
    pretrains = False
    model_defaults = {}
    data_kinds = ("tabular", "graph", "node", "image", "paired")

    def build(self, spec, rngs):
        return EncoderOnly(build_encoder(self.config.model, spec, rngs)[0])

    def loss(self, model, batch, key, extra):
        raise RuntimeError("NoPretraining has no training loss")


@register
class Supervised(Method):
    """The whole network trained on labels with cross entropy; evaluated as it is."""

    name = "supervised"
    supervised = True
    model_defaults = {}
    data_kinds = ("tabular", "image")

    def build(self, spec, rngs: nnx.Rngs):
        encoder, width = build_encoder(self.config.model, spec, rngs)
        return models.Classifier(encoder, width, spec.num_classes, rngs=rngs)

    def loss(self, model, batch: Batch, key, extra):
        logits = model(batch.x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch.y).mean()
        accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == batch.y)
        return loss, {"loss": loss, "train_accuracy": accuracy}
