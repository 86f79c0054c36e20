"""Contrastive learning on given pairs of views (ESCo's synthetic study, §5.1): no
augmentation, the task's batches carry both views of every example."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import losses
from jaxcl.methods._base import (
    Batch,
    Method,
    build_encoder,
    check_choice,
    check_range,
    register,
)
from jaxcl.methods._tabular import EncoderOnly

RF_METHODS = ("exact", "rff", "sorf", "positive")


_FIXED_FEATURES = 0x45534346  # "ESCF", folded into key(seed): above any step number the
# trainer folds into the same root for its step keys, so never one of them


def check_esco(method: str, hp) -> None:
    """ValueError unless ``config.method``'s ESCo keys (``rf_method``, ``esco_negatives``)
    name an estimator and a negative set :func:`jaxcl.losses.esco_loss` has, ``lam`` is a
    finite number >= 0, ``temperature`` one > 0 and ``num_features`` an int >= 1 (read by
    the random-feature estimators only, but refused at any estimator when it is not a
    count; ``redraw_features`` is a bool field: the config refuses any other type)."""
    check_choice(method, "rf_method", hp.rf_method, RF_METHODS)
    check_choice(method, "esco_negatives", hp.esco_negatives, losses.ESCO_NEGATIVES)
    check_range(method, hp, "lam", 0.0)
    check_range(method, hp, "temperature", 0.0, low_open=True)
    d = hp.num_features
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(
            f"config.method.num_features = {d!r}: expected an int >= 1 (the random "
            f"frequencies of rf_method={hp.rf_method!r}) ({method})"
        )


def esco_objective(hp, z_a, z_b, key, seed: int):
    """ESCo's loss as the ESCo methods use it: ``config.method``'s ``lam``, ``temperature``,
    ``rf_method`` with ``num_features`` frequencies, ``esco_negatives``, both directions
    averaged. The frequencies are drawn from the step's ``key`` (``redraw_features=True``)
    or, with ``redraw_features=False``, once from the run's ``seed`` and the same at every
    step (the random-feature map is then one fixed kernel approximation, not a fresh
    unbiased estimate each step; the paper's Algorithm 1 draws them inside the loss, i.e.
    afresh at every step, as the default does)."""
    if not hp.redraw_features:
        key = jax.random.fold_in(jax.random.key(seed), _FIXED_FEATURES)
    return losses.esco_loss(
        z_a,
        z_b,
        lam=hp.lam,
        key=key,
        temperature=hp.temperature,
        method=hp.rf_method,
        num_features=hp.num_features,
        negatives=hp.esco_negatives,
        symmetric=True,
    )


@register
class ESCoPairs(Method):
    """ESCo's objective on the views a ``'paired'`` task gives (``batch.x`` is
    ``[batch, 2, features]``: view A, view B), with no projection head (ESCo App. B.1: the
    encoder's output, l2-normalised, is what the loss sees).

    :func:`jaxcl.losses.esco_loss` with trade-off ``lam``, Gaussian-kernel bandwidth
    ``temperature``, the kernel sum by ``rf_method`` (``'exact'``, ``'rff'``, ``'sorf'`` or
    ``'positive'``) with ``num_features`` random frequencies drawn afresh every step
    (``redraw_features=False``: drawn once from ``config.seed``), both directions averaged,
    and negatives ``esco_negatives`` (default ``'both'``: the other view and the anchor's own
    view without the anchor, SimCLR's set). With ``'exact'``,
    ``'both'`` and ``lam = 1 / (2 * temperature)`` the loss is SimCLR's NT-Xent, so the
    SimCLR row of ESCo Table 1 is this method at those settings, and Fig. 3's "SimCLR with
    the trade-off term" is ``'exact'`` at other ``lam``.

    References:
      ESCo (ICLR 2022 submission), §5.1, Fig. 2-3, Table 1, App. B.1 and C.
    """

    name = "esco_pairs"
    data_kinds = ("paired",)
    model_defaults = {}
    defaults = {
        "lam": 0.5,
        "temperature": 1.0,
        "rf_method": "exact",
        "num_features": 2048,
        "esco_negatives": "both",
        "redraw_features": True,
    }

    def __init__(self, config):
        super().__init__(config)
        check_esco(self.name, self.hp)

    def build(self, spec, rngs):
        return EncoderOnly(build_encoder(self.config.model, spec, rngs)[0])

    def loss(self, model, batch: Batch, key, extra):
        views = batch.x.shape[1] if batch.x.ndim == 3 else None
        if views != 2:
            raise ValueError(
                f"{self.name}: batch.x has shape {batch.x.shape}; expected [batch, 2, features]"
                " (view A and view B of each example, as a 'paired' task gives)"
            )
        n = batch.x.shape[0]
        z = model(jnp.concatenate([batch.x[:, 0], batch.x[:, 1]], axis=0))
        loss = esco_objective(self.hp, z[:n], z[n:], key, self.config.seed)
        return loss, {"loss": loss}
