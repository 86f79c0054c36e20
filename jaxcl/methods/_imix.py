"""i-Mix on tabular data: the N-pair baseline and N-pair + i-Mix (5-layer MLP with batch norm).

The views follow the official code's tabular rows (kibok90/imix ``run.sh``, covtype): each
view is the input with its own input dropout of 0.2, so the two views differ and the
N-pair baseline has something to align (with identical views it would learn from instance
discrimination alone and overstate i-Mix's gain). Temperature 0.1; i-Mix's alpha 2.0.

Every i-Mix method (here and on images) takes ``config.method.lam_per_sample``: ``False``
(default, the paper's Algorithm 1) draws one mixing coefficient per batch; ``True`` draws
one per sample, folded to ``max(lam, 1 - lam)``, as the official code's ``mixup`` does.
Their ``lam`` metric is the batch's coefficient, or the mean of the per-sample ones: with
``alpha = 1`` about 0.5 per batch against about 0.75 per sample (folded), so the two
settings' curves do not compare.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import losses, mixers
from jaxcl.methods._base import Batch, Method, check_range, register


def _views(key, x, dropout, noise):
    """Two views of ``x``: each with its own input dropout (entries zeroed with probability
    ``dropout``, not rescaled: kibok90/imix's ``--inputdrop``, 0.2 for its tabular rows) and,
    if ``noise > 0``, its own Gaussian noise."""
    views = []
    for k in jax.random.split(key, 2):
        k_drop, k_noise = jax.random.split(k)
        v = x
        if dropout > 0:
            keep = jax.random.uniform(k_drop, x.shape) >= dropout
            v = jnp.where(keep, v, jnp.zeros((), v.dtype))
        if noise > 0:
            v = mixers.gaussian_noise(k_noise, v, scale=noise)
        views.append(v)
    return views


def _check_views(name, hp):
    if not 0.0 <= hp.input_dropout < 1.0:
        raise ValueError(
            f"config.method.input_dropout = {hp.input_dropout!r}: expected a number in [0, 1)"
        )
    check_range(name, hp, "view_noise", 0.0)
    check_range(name, hp, "temperature", 0.0, low_open=True)


MIXES = ("mixup", "cutmix")


def check_imix(hp, mixes=MIXES, *, method: str = "i-Mix"):
    """Refuses a bad ``mix``, ``alpha`` or ``lam_per_sample`` (``hp.mix`` where the method
    has a choice of mixes; ``method``: the name the messages give)."""
    mix = getattr(hp, "mix", "mixup")
    if mix not in mixes:
        raise ValueError(f"config.method.mix = {mix!r}: expected one of {sorted(mixes)}")
    check_range(method, hp, "alpha", 0.0, low_open=True)  # Beta(alpha, alpha)
    if not isinstance(hp.lam_per_sample, bool):
        raise ValueError(
            f"config.method.lam_per_sample = {hp.lam_per_sample!r}: expected True or False"
        )
    if hp.lam_per_sample and mix != "mixup":
        raise ValueError(
            f"config.method.lam_per_sample = True with mix = {mix!r}: only 'mixup' draws a "
            "coefficient per sample (CutMix pastes one box per batch, as the official code); "
            "set method.lam_per_sample=False or method.mix='mixup'"
        )


def imix_mix(key, x, hp):
    """``(x_mix, lam, perm)``: ``x`` mixed by ``hp.mix`` (Mixup unless the method offers a
    choice) with ``lam ~ Beta(hp.alpha, hp.alpha)``, per batch or, with
    ``hp.lam_per_sample``, per sample (the method's constructor has run
    :func:`check_imix` on ``hp``)."""
    if getattr(hp, "mix", "mixup") == "mixup":
        return mixers.imix_mixup(key, x, alpha=hp.alpha, per_sample=hp.lam_per_sample)
    return mixers.cutmix(key, x, alpha=hp.alpha)


def _embed(model, a, b):
    z = model(jnp.concatenate([a, b], axis=0))
    return jnp.split(z, 2, axis=0)


@register
class NPair(Method):
    """N-pair contrastive learning (one-directional InfoNCE over the batch)."""

    name = "npair"
    defaults = {"temperature": 0.1, "input_dropout": 0.2, "view_noise": 0.0}

    def __init__(self, config):
        super().__init__(config)
        _check_views(self.name, self.hp)

    def loss(self, model, batch: Batch, key, extra):
        a, b = _views(key, batch.x, self.hp.input_dropout, self.hp.view_noise)
        z_a, z_b = _embed(model, a, b)
        loss = losses.infonce(z_a, z_b, temperature=self.hp.temperature)
        return loss, {"loss": loss}


@register
class IMix(Method):
    """N-pair + i-Mix: the first view mixed with lam ~ Beta(alpha, alpha), virtual soft labels."""

    name = "imix"
    defaults = {
        "temperature": 0.1,
        "alpha": 2.0,
        "lam_per_sample": False,
        "input_dropout": 0.2,
        "view_noise": 0.0,
    }

    def __init__(self, config):
        super().__init__(config)
        _check_views(self.name, self.hp)
        check_imix(self.hp, mixes=("mixup",), method=self.name)

    def loss(self, model, batch: Batch, key, extra):
        k_views, k_mix = jax.random.split(key)
        a, b = _views(k_views, batch.x, self.hp.input_dropout, self.hp.view_noise)
        a_mix, lam, perm = imix_mix(k_mix, a, self.hp)
        z_a, z_b = _embed(model, a_mix, b)
        loss = losses.imix_npair_loss(z_a, z_b, lam=lam, perm=perm, temperature=self.hp.temperature)
        return loss, {"loss": loss, "lam": jnp.mean(lam)}
