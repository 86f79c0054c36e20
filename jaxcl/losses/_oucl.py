r"""MetAug's losses: the optimization-driven unified contrastive loss (OUCL, Eq. 8-10) and the
margin-injected regulariser R_sigma (Eq. 4-5, App. A.2).

All of them work on *similarity sets*, not embeddings: per anchor (a row), the similarities
``d(z^+)`` of its positives and ``d(z^-)`` of its negatives, as many of each as there are
(MetAug contrasts every view pair and a memory queue in one row), with boolean masks for
padding. MetAug's ``d`` is the cosine mapped to ``[0, 1]``, ``(cos + 1) / 2`` (the paper's
"we limit d in the range [0, 1]"; the official code's ``add(1).div(2)``); Eq. 9 and 10 assume
that range (the optimum of a positive is 1, of a negative 0).

Every OUCL form is ``(1 / beta) log(1 + sum_{n, p} exp(beta (t_n + t_p)))`` for per-entry terms
``t_n`` (negatives) and ``t_p`` (positives). The double sum factorises, so the loss is computed
as ``softplus(LSE_n(beta t_n) + LSE_p(beta t_p)) / beta`` in float32 (float64 inputs stay
float64) with the maxima shifted out: no ``K^- x K^+`` array, no overflow at any ``beta``
(2^8 and beyond).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.losses import _common

MARGINS = ("large", "medium", "small")


def _similarities(fn: str, name: str, s, rows: int | None = None):
    s = _checks.floating_array(fn, name, s, ndim=2)
    if rows is not None and s.shape[0] != rows:
        _checks.fail(
            fn,
            f"`{name}` must have one row per anchor ({rows}, as `positives`), got shape "
            f"{tuple(s.shape)}",
        )
    return _common.at_least_float32(s)


def _entry_mask(fn: str, name: str, where, shape):
    if where is None:
        return None
    where = jnp.asarray(where)
    if where.dtype != jnp.bool_ or tuple(where.shape) != tuple(shape):
        _checks.fail(
            fn,
            f"`{name}` must be a boolean array of shape {tuple(shape)}, got {where.dtype} "
            f"with shape {tuple(where.shape)}",
        )
    return where


def _row_logsumexp(x: jax.Array, where) -> jax.Array:
    """Per-row log-sum-exp over the valid entries; ``-inf`` for a row with none, with a zero
    (never NaN) gradient there."""
    if where is not None:
        x = jnp.where(where, x, -jnp.inf)
    m = jnp.max(x, axis=1, keepdims=True) if x.shape[1] else jnp.full((x.shape[0], 1), -jnp.inf)
    m = jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0.0))
    total = jnp.sum(jnp.exp(x - m), axis=1)
    some = total > 0
    return jnp.where(some, m[:, 0] + jnp.log(jnp.where(some, total, 1.0)), -jnp.inf)


def _unified(fn, t_pos, t_neg, pos_where, neg_where, where, beta, offset=0.0):
    """Mean over the valid anchors of ``softplus(LSE(beta t_n) + LSE(beta t_p) + offset) /
    beta``."""
    row = _row_logsumexp(beta * t_neg, neg_where) + _row_logsumexp(beta * t_pos, pos_where)
    per_row = jax.nn.softplus(row + offset) / beta
    total, count = _common.anchor_sum(per_row, where)
    return jnp.where(count > 0, total / jnp.maximum(count, 1.0), 0.0)


def _check_sets(fn, positives, negatives, positives_where, negatives_where, where):
    positives = _similarities(fn, "positives", positives)
    negatives = _similarities(fn, "negatives", negatives, rows=positives.shape[0])
    positives_where = _entry_mask(fn, "positives_where", positives_where, positives.shape)
    negatives_where = _entry_mask(fn, "negatives_where", negatives_where, negatives.shape)
    where = _common.check_where(fn, where, positives.shape[0])
    # Padding to zero before any arithmetic: masking only the results would keep the value
    # but not the gradient (0 x NaN in the backward pass; see _common.zero_masked_rows).
    positives = _common.zero_masked_rows(positives, where)
    negatives = _common.zero_masked_rows(negatives, where)
    if positives_where is not None:
        positives = jnp.where(positives_where, positives, 0.0)
    if negatives_where is not None:
        negatives = jnp.where(negatives_where, negatives, 0.0)
    return positives, negatives, positives_where, negatives_where, where


def oucl_loss(
    positives: ArrayLike,
    negatives: ArrayLike,
    *,
    beta: float,
    margin: float = 0.0,
    positives_where: ArrayLike | None = None,
    negatives_where: ArrayLike | None = None,
    where: ArrayLike | None = None,
) -> jax.Array:
    r"""OUCL with a margin and a temperature (MetAug Eq. 8), averaged over anchors.

    .. math::
        \mathcal{L}_i = \frac{1}{\beta} \log\Big(1 + \sum_{n} \sum_{p}
        \exp\big(\beta (d_{i,n}^- - d_{i,p}^+ + \lambda)\big)\Big)

    As ``beta`` grows this tends to ``[max_n d^- - min_p d^+ + lambda]_+``, which is the hinge
    of Eq. 7 when an anchor has one positive and one negative (with more, Eq. 7 as printed
    sums the similarities; the limit of Eq. 8 takes the hardest pair, as Circle loss does).

    Args:
      positives: ``[N, P]`` similarities of each anchor's positives.
      negatives: ``[N, K]`` similarities of each anchor's negatives.
      beta: the temperature coefficient ``beta > 0`` (the paper searches 2 .. 2^8).
      margin: ``lambda``.
      positives_where: optional ``[N, P]`` boolean mask of the positives that count.
      negatives_where: optional ``[N, K]`` boolean mask of the negatives that count.
      where: optional ``[N]`` boolean mask of the anchors that count.

    Returns:
      Scalar float32: the mean over the valid anchors (0 when there are none). An anchor
      without valid positives or negatives contributes 0.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcl.losses import oucl_loss
      >>> float(oucl_loss(jnp.array([[0.9]]), jnp.array([[0.1, 0.2]]), beta=16.0)) < 1e-4
      True

    References:
      Li et al., "MetAug: Contrastive Learning via Meta Feature Augmentation", ICML 2022,
      Eq. 7-8; Sun et al., "Circle Loss", CVPR 2020.
    """
    fn = "oucl_loss"
    _checks.positive(fn, "beta", beta)
    _checks.number(fn, "margin", margin)
    s_p, s_n, p_where, n_where, where = _check_sets(
        fn, positives, negatives, positives_where, negatives_where, where
    )
    return _unified(fn, -s_p, s_n, p_where, n_where, where, beta, offset=beta * margin)


def oucl_weighted_loss(
    positives: ArrayLike,
    negatives: ArrayLike,
    *,
    beta: float,
    optimum_pos: float = 1.0,
    optimum_neg: float = 0.0,
    margin_pos: float = 1.0,
    margin_neg: float = 0.0,
    decay: float = 1.0,
    positives_where: ArrayLike | None = None,
    negatives_where: ArrayLike | None = None,
    where: ArrayLike | None = None,
) -> jax.Array:
    r"""OUCL with the weighting factors Gamma (MetAug Eq. 9; ``decay``: the variant of §4.4).

    .. math::
        \mathcal{L}_i = \frac{1}{\beta} \log\Big(1 + \sum_{n} \sum_{p} \exp\big(\beta
        (\bar\Gamma^-_n (d_n^- - \gamma^-) - \bar\Gamma^+_p (d_p^+ - \gamma^+))\big)\Big),
        \quad \Gamma^- = [d^- - O^-]_+,\ \Gamma^+ = [O^+ - d^+]_+,\ \bar\Gamma =
        \Gamma / \phi_{dec}

    The weights Gamma are constants of the gradient (``stop_gradient``), as in Circle loss
    and the official code: they scale each pair's push by how far it is from its optimum, they
    are not themselves optimised.

    Args:
      positives, negatives: ``[N, P]`` and ``[N, K]`` similarities (in ``[0, 1]``).
      beta: the temperature coefficient, > 0.
      optimum_pos, optimum_neg: ``O^+`` and ``O^-``, the expected optima.
      margin_pos, margin_neg: ``gamma^+`` and ``gamma^-``.
      decay: ``phi_dec > 0``, which Gamma is divided by (§4.4's linear attenuation; the
        paper's best is 6). 1 gives Eq. 9 itself.
      positives_where, negatives_where, where: masks as in :func:`oucl_loss`.

    Returns:
      Scalar float32, the mean over the valid anchors.

    References:
      Li et al., ICML 2022, Eq. 9 and §4.4; Sun et al., "Circle Loss", CVPR 2020.
    """
    fn = "oucl_weighted_loss"
    _checks.positive(fn, "beta", beta)
    _checks.positive(fn, "decay", decay)
    for name, value in (
        ("optimum_pos", optimum_pos),
        ("optimum_neg", optimum_neg),
        ("margin_pos", margin_pos),
        ("margin_neg", margin_neg),
    ):
        _checks.number(fn, name, value)
    s_p, s_n, p_where, n_where, where = _check_sets(
        fn, positives, negatives, positives_where, negatives_where, where
    )
    gamma_n = jax.lax.stop_gradient(jnp.maximum(s_n - optimum_neg, 0.0)) / decay
    gamma_p = jax.lax.stop_gradient(jnp.maximum(optimum_pos - s_p, 0.0)) / decay
    t_n = gamma_n * (s_n - margin_neg)
    t_p = -gamma_p * (s_p - margin_pos)
    return _unified(fn, t_p, t_n, p_where, n_where, where, beta)


def oucl_quadratic_loss(
    positives: ArrayLike,
    negatives: ArrayLike,
    *,
    beta: float,
    gamma: float,
    positives_where: ArrayLike | None = None,
    negatives_where: ArrayLike | None = None,
    where: ArrayLike | None = None,
) -> jax.Array:
    r"""OUCL with one margin hyperparameter (MetAug Eq. 10).

    .. math::
        \mathcal{L}_i = \frac{1}{\beta} \log\Big(1 + \sum_{n} \sum_{p} \exp\big(\beta
        ((d_p^+ - 1)^2 + (d_n^-)^2 - 2\gamma^2)\big)\Big)

    Eq. 9's value with ``O^+ = 1 + gamma``, ``O^- = -gamma``, ``gamma^+ = 1 - gamma``,
    ``gamma^- = gamma`` (while ``d`` lies in ``[0, 1]``); differentiated as written (the
    quadratic terms carry their full gradient).

    Args:
      positives, negatives: ``[N, P]`` and ``[N, K]`` similarities in ``[0, 1]``.
      beta: the temperature coefficient, > 0.
      gamma: the margin (the paper's study fixes 0.40).
      positives_where, negatives_where, where: masks as in :func:`oucl_loss`.

    Returns:
      Scalar float32, the mean over the valid anchors.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcl.losses import oucl_quadratic_loss
      >>> good = oucl_quadratic_loss(jnp.array([[0.95]]), jnp.array([[0.1]]), beta=16.0, gamma=0.4)
      >>> bad = oucl_quadratic_loss(jnp.array([[0.1]]), jnp.array([[0.95]]), beta=16.0, gamma=0.4)
      >>> bool(good < bad)
      True

    References:
      Li et al., ICML 2022, Eq. 10.
    """
    fn = "oucl_quadratic_loss"
    _checks.positive(fn, "beta", beta)
    _checks.number(fn, "gamma", gamma)
    s_p, s_n, p_where, n_where, where = _check_sets(
        fn, positives, negatives, positives_where, negatives_where, where
    )
    t_n = jnp.square(s_n) - gamma**2
    t_p = jnp.square(s_p - 1.0) - gamma**2
    return _unified(fn, t_p, t_n, p_where, n_where, where, beta)


def _masked_extreme(x, where, reduce, empty):
    x = x.reshape(-1)
    if where is not None:
        x = jnp.where(where.reshape(-1), x, empty)
    return reduce(x) if x.size else jnp.asarray(empty, jnp.float32)


def _has_entries(x, where):
    if x.size == 0:
        return jnp.asarray(False)
    return jnp.asarray(True) if where is None else jnp.any(where)


def _masked_mean(x, where):
    x = x.reshape(-1)
    if where is None:
        return jnp.mean(x) if x.size else jnp.float32(0.0)
    where = where.reshape(-1)
    count = jnp.sum(where.astype(jnp.float32))
    return jnp.sum(jnp.where(where, x, 0.0)) / jnp.maximum(count, 1.0)


def metaug_margin_loss(
    positives: ArrayLike,
    negatives: ArrayLike,
    aug_positives: ArrayLike,
    aug_negatives: ArrayLike,
    *,
    margin: str = "large",
    positives_where: ArrayLike | None = None,
    negatives_where: ArrayLike | None = None,
    aug_positives_where: ArrayLike | None = None,
    aug_negatives_where: ArrayLike | None = None,
) -> jax.Array:
    r"""MetAug's margin-injected regulariser R_sigma (Eq. 5) with its margins (Eq. 4, App. A.2).

    The margins come from the *original* features' similarities: with ``min+`` the smallest
    positive and ``max-`` the largest negative,

    * ``'large'`` (Eq. 4): ``sigma+ = min(min+, max-)``, ``sigma- = max(min+, max-)``;
    * ``'medium'``: ``sigma+ = sigma- = (min+ + max-) / 2``;
    * ``'small'``: ``sigma+ = max(min+, max-)``, ``sigma- = min(min+, max-)``.

    .. math::
        \mathcal{R}_\sigma = \operatorname{mean}_{\hat k^+} [d(\hat z^+) - \sigma^+]_+
        + \operatorname{mean}_{\hat k^-} [\sigma^- - d(\hat z^-)]_+

    over the pairs that hold one original and one augmented feature: augmented positives are
    pushed below sigma+ and augmented negatives above sigma-, so that the generators make hard
    features. The extremes are taken over the whole sets passed (the paper's minibatch-wide
    Eq. 4); for per-anchor margins (the official code) ``jax.vmap`` this function over rows.
    The margins are not stopped: the gradient also flows through ``min+`` and ``max-`` (the
    paper is silent; the official code does the same).

    Args:
      positives, negatives: similarities of the original features' positives and negatives,
        any shapes.
      aug_positives, aug_negatives: similarities of the pairs with one augmented feature.
      margin: ``'large'``, ``'medium'`` or ``'small'``.
      positives_where, negatives_where, aug_positives_where, aug_negatives_where: optional
        boolean masks of the same shapes.

    Returns:
      Scalar float32: 0 when neither original set has an entry; NaN when an unmasked
      similarity is NaN.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcl.losses import metaug_margin_loss
      >>> pos, neg = jnp.array([0.9, 0.8]), jnp.array([0.3, 0.5])
      >>> r = metaug_margin_loss(pos, neg, jnp.array([0.7]), jnp.array([0.6]))
      >>> round(float(r), 4)  # sigma+ = 0.5, sigma- = 0.8: 0.2 + 0.2
      0.4

    References:
      Li et al., ICML 2022, Eq. 4-5 and App. A.2.
    """
    fn = "metaug_margin_loss"
    _checks.one_of(fn, "margin", margin, MARGINS)
    sets = {}
    for name, s, w in (
        ("positives", positives, positives_where),
        ("negatives", negatives, negatives_where),
        ("aug_positives", aug_positives, aug_positives_where),
        ("aug_negatives", aug_negatives, aug_negatives_where),
    ):
        s = _common.at_least_float32(_checks.floating_array(fn, name, s))
        sets[name] = (s, _entry_mask(fn, f"{name}_where", w, s.shape))
    min_pos = _masked_extreme(*sets["positives"], jnp.min, jnp.inf)
    max_neg = _masked_extreme(*sets["negatives"], jnp.max, -jnp.inf)
    # An empty set of originals takes the other one's extreme; with neither, the margins are
    # set to 0 and the loss is 0. Emptiness is read from the masks, so that a NaN similarity
    # (a diverged model) comes out as NaN instead of being taken for an empty set.
    any_pos, any_neg = _has_entries(*sets["positives"]), _has_entries(*sets["negatives"])
    some = any_pos | any_neg
    min_pos, max_neg = jnp.where(any_pos, min_pos, max_neg), jnp.where(any_neg, max_neg, min_pos)
    min_pos, max_neg = jnp.where(some, min_pos, 0.0), jnp.where(some, max_neg, 0.0)
    if margin == "large":
        sigma_pos, sigma_neg = jnp.minimum(min_pos, max_neg), jnp.maximum(min_pos, max_neg)
    elif margin == "small":
        sigma_pos, sigma_neg = jnp.maximum(min_pos, max_neg), jnp.minimum(min_pos, max_neg)
    else:
        sigma_pos = sigma_neg = (min_pos + max_neg) / 2
    aug_p, aug_p_where = sets["aug_positives"]
    aug_n, aug_n_where = sets["aug_negatives"]
    r_pos = _masked_mean(jnp.maximum(aug_p - sigma_pos, 0.0), aug_p_where)
    r_neg = _masked_mean(jnp.maximum(sigma_neg - aug_n, 0.0), aug_n_where)
    return jnp.where(some, r_pos + r_neg, 0.0)
