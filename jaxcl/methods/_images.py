"""Image methods: SimCLR, SimCLR + DACL (DACL §5.2), SimCLR with ESCo's loss (ESCo §5.2.1); the
image views i-Mix's N-pair rows use.

Images arrive as ``uint8`` batches: ``[B, H, W, C]`` whole images (fixed-size data sets, cropped
here on the device) or ``[B, V, S, S, C]`` crops the host took (ImageNet). Every view is drawn
with its own key per example (:func:`jaxcl.augment.batch_views`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxcl import augment, losses, mixers
from jaxcl.methods import _imix, _paired
from jaxcl.methods._base import Batch, Method, check_range, register

# SimCLR's view: colour strength s (jitter 0.8 s, hue 0.2 s), blur probability, the crop's
# smallest area fraction (SimCLR 0.08; i-Mix's CIFAR code 0.2).
IMAGE_VIEW_DEFAULTS = {"color_strength": 0.5, "blur_p": 0.0, "crop_min_scale": 0.08}


def whole_images(x: jax.Array) -> jax.Array:
    """The images the domain-agnostic rows mix: whole images in ``[0, 1]``; where the host
    cropped (ImageNet), its first crop: the centre crop for methods with ``image_views = 0``,
    the first random resized crop for those with views (SimCLR+DACL, whose SimCLR view a
    starts from the same crop; see ``Method.image_views``)."""
    x = augment.to_unit_range(x)
    return x[:, 0] if x.ndim == 5 else x


def simclr_views(key, x, hp, count: int = 2) -> tuple[jax.Array, ...]:
    """``count`` SimCLR views of a batch (crop on the device unless the host cropped)."""
    x = augment.to_unit_range(x)
    host_cropped = x.ndim == 5
    size = tuple(x.shape[2:4]) if host_cropped else x.shape[1]  # host crops: as they are
    view = functools.partial(
        augment.simclr_view,
        size=size,
        strength=hp.color_strength,
        blur_p=hp.blur_p,
        crop_scale=(hp.crop_min_scale, 1.0),
        crop=not host_cropped,
    )
    if not host_cropped:
        return augment.batch_views(key, x, view, settings=({},) * count)
    keys = jax.random.split(key, (count, x.shape[0]))
    return tuple(jax.vmap(view)(keys[v], x[:, v % x.shape[1]]) for v in range(count))


def _check_image_views(name, hp):
    if not 0 <= hp.color_strength <= 2.5:  # hue jitter 0.2 s: at most half a turn
        raise ValueError(
            f"config.method.color_strength = {hp.color_strength!r}: expected a number in [0, 2.5]"
        )
    if not 0.0 < hp.crop_min_scale <= 1.0:
        raise ValueError(
            f"config.method.crop_min_scale = {hp.crop_min_scale!r}: expected a number in (0, 1]"
        )
    if not 0.0 <= hp.blur_p <= 1.0:
        raise ValueError(f"config.method.blur_p = {hp.blur_p!r}: expected a number in [0, 1]")
    check_range(name, hp, "temperature", 0.0, low_open=True)


class ImageViewsMethod(Method):
    """A method on images whose views are SimCLR's (:func:`simclr_views`, hyperparameters
    :data:`IMAGE_VIEW_DEFAULTS`), two per image; checks them when built."""

    data_kinds = ("image",)
    image_views = 2

    def __init__(self, config):
        super().__init__(config)
        _check_image_views(self.name, self.hp)


def _pair_loss(model, a, b, temperature):
    z1, z2 = jnp.split(model(jnp.concatenate([a, b], axis=0)), 2, axis=0)
    return losses.nt_xent(z1, z2, temperature=temperature)


@register
class SimCLR(ImageViewsMethod):
    """SimCLR: two augmented views per image, NT-Xent over the global batch (2N - 2
    negatives per anchor). CIFAR's setting by default: colour strength 0.5, no blur
    (ImageNet: strength 1.0, blur p 0.5), temperature 0.5."""

    name = "simclr"
    defaults = {"temperature": 0.5, **IMAGE_VIEW_DEFAULTS}

    def loss(self, model, batch: Batch, key, extra):
        a, b = simclr_views(key, batch.x, self.hp)
        loss = _pair_loss(model, a, b, self.hp.temperature)
        return loss, {"loss": loss}


@register
class SimCLRDACL(SimCLR):
    """SimCLR + DACL (DACL §5.2): per batch, the SimCLR loss of two augmented views plus
    ``dacl_weight`` times the DACL loss of two linear Mixup-noise views (``lam ~ U(alpha,
    1)``) of the whole images, each pair through the model on its own (batch norm sees each
    pair's 2N rows, as a SimCLR or DACL step alone would). Batch norm's running averages,
    which the evaluation's features use, therefore take two updates a step, the augmented
    pair's and then the mixed pair's, as two calls of one Keras model in a TF step would."""

    name = "simclr_dacl"
    defaults = {"temperature": 0.5, "alpha": 0.9, "dacl_weight": 1.0, **IMAGE_VIEW_DEFAULTS}

    def __init__(self, config):
        super().__init__(config)
        check_range(self.name, self.hp, "alpha", 0.0, 1.0)
        check_range(self.name, self.hp, "dacl_weight", 0.0)  # < 0 would maximise DACL's loss

    def loss(self, model, batch: Batch, key, extra):
        k_aug, k1, k2 = jax.random.split(key, 3)
        a, b = simclr_views(k_aug, batch.x, self.hp)
        simclr = _pair_loss(model, a, b, self.hp.temperature)
        x = whole_images(batch.x)
        m1 = mixers.linear_mixup(k1, x, alpha=self.hp.alpha)
        m2 = mixers.linear_mixup(k2, x, alpha=self.hp.alpha)
        dacl = _pair_loss(model, m1, m2, self.hp.temperature)
        loss = simclr + self.hp.dacl_weight * dacl
        return loss, {"loss": loss, "simclr_loss": simclr, "dacl_loss": dacl}


@register
class ESCoSimCLR(SimCLR):
    """SimCLR with ESCo's loss (ESCo §5.2.1, Fig. 6): SimCLR's views, encoder and head, and
    :func:`jaxcl.losses.esco_loss` in place of NT-Xent, with trade-off ``lam``, bandwidth
    ``temperature``, ``rf_method`` random features (``num_features`` frequencies drawn afresh
    every step; ``redraw_features=False``: once per run), both directions averaged,
    negatives ``esco_negatives`` (default ``'both'``, SimCLR's 2N - 2). The views are drawn
    from the step's key exactly as :class:`SimCLR` draws them (the frequencies from a key
    folded from it, or from ``config.seed`` with ``redraw_features=False``), so with
    ``rf_method='exact'`` and ``lam = 1 / (2 * temperature)`` a step's loss is SimCLR's
    (tested).

    References:
      ESCo (ICLR 2022 submission), §5.2.1, Fig. 6, Appendix B.2 and C.
    """

    name = "esco_simclr"
    defaults = {
        **SimCLR.defaults,
        "lam": 1.04,
        "rf_method": "rff",
        "num_features": 1024,
        "esco_negatives": "both",
        "redraw_features": True,
    }

    def __init__(self, config):
        super().__init__(config)
        _paired.check_esco(self.name, self.hp)

    def loss(self, model, batch: Batch, key, extra):
        a, b = simclr_views(key, batch.x, self.hp)
        z1, z2 = jnp.split(model(jnp.concatenate([a, b], axis=0)), 2, axis=0)
        loss = _paired.esco_objective(self.hp, z1, z2, jax.random.fold_in(key, 1), self.config.seed)
        return loss, {"loss": loss}


@register
class ImageNPair(ImageViewsMethod):
    """i-Mix's N-pair baseline on images: two SimCLR views, one-directional InfoNCE of the
    first view's embeddings against the second's over the global batch."""

    name = "npair_image"
    defaults = {"temperature": 0.2, **IMAGE_VIEW_DEFAULTS}

    def loss(self, model, batch: Batch, key, extra):
        a, b = simclr_views(key, batch.x, self.hp)
        z_a, z_b = jnp.split(model(jnp.concatenate([a, b], axis=0)), 2, axis=0)
        loss = losses.infonce(z_a, z_b, temperature=self.hp.temperature)
        return loss, {"loss": loss}


@register
class ImageIMix(ImageNPair):
    """N-pair + i-Mix on images: the first view mixed (``mix='mixup'``: ``lam a + (1 - lam)
    a[perm]``; ``'cutmix'``: a box of ``a[perm]`` pasted in, ``lam`` the kept area) with
    ``lam ~ Beta(alpha, alpha)`` (one per batch; per sample with ``lam_per_sample``), trained
    towards the virtual soft labels ``lam * I + (1 - lam) * P`` (i-Mix §3)."""

    name = "imix_image"
    defaults = {
        "temperature": 0.2,
        "alpha": 1.0,
        "mix": "mixup",
        "lam_per_sample": False,
        **IMAGE_VIEW_DEFAULTS,
    }

    def __init__(self, config):
        super().__init__(config)
        _imix.check_imix(self.hp, method=self.name)

    def loss(self, model, batch: Batch, key, extra):
        k_views, k_mix = jax.random.split(key)
        a, b = simclr_views(k_views, batch.x, self.hp)
        a_mix, lam, perm = _imix.imix_mix(k_mix, a, self.hp)
        z_a, z_b = jnp.split(model(jnp.concatenate([a_mix, b], axis=0)), 2, axis=0)
        loss = losses.imix_npair_loss(z_a, z_b, lam=lam, perm=perm, temperature=self.hp.temperature)
        return loss, {"loss": loss, "lam": jnp.mean(lam)}
