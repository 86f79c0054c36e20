"""ESCo: alignment plus a log Gaussian-kernel potential, exact or by random features."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.losses import _chunking, _common
from jaxcl.random_features import (
    PositiveParams,
    RFFParams,
    SORFParams,
    _sorf,
    draw_positive,
    draw_rff,
    draw_sorf,
    positive_log_features,
    rff_projection,
)

METHODS = ("exact", "rff", "sorf", "positive")
NEGATIVES = ("cross", "intra", "both")
_PARAMS = {"rff": RFFParams, "sorf": SORFParams, "positive": PositiveParams}
_DRAW = {"rff": draw_rff, "sorf": draw_sorf, "positive": draw_positive}
_DEFAULT_NUM_FEATURES = 1024
# Elements of the per-block intermediate ([rows, features] or [rows, negatives]) that one
# block may hold: 8M float32 = 32 MiB, small next to the caches' reuse and the inputs.
_BLOCK_ELEMENTS = 1 << 23
_TINY = float(np.finfo(np.float32).tiny)


def _resolve_features(fn, method, key, features, dim, num_features, axis_name):
    """The random-feature parameters: pre-drawn ``features`` or drawn from ``key``."""
    params_type = _PARAMS[method]
    if features is not None:
        if not isinstance(features, params_type):
            _checks.fail(
                fn,
                f"`features` must be a {params_type.__name__} for method={method!r}, got "
                f"{type(features).__name__}",
            )
        if method == "sorf":
            _sorf._check_params(fn, features, "features")
        have_dim = features.dim if method == "sorf" else features.omega.shape[0]
        have_num = features.num_features if method == "sorf" else features.omega.shape[1]
        if have_dim != dim:
            _checks.fail(fn, f"`features` were drawn for dim={have_dim}, but z has dim={dim}")
        if num_features is not None and num_features != have_num:
            _checks.fail(
                fn,
                f"`num_features`={num_features} disagrees with the pre-drawn `features` "
                f"({have_num}); pass one or the other",
            )
        params, source = features, "features"
    else:
        if key is None:
            _checks.fail(
                fn,
                f"method={method!r} needs `key` to draw random features, or pre-drawn "
                "`features`; got neither",
            )
        num = _DEFAULT_NUM_FEATURES if num_features is None else num_features
        _checks.positive_int(fn, "num_features", num)
        params, source = _DRAW[method](key, dim, num), "key"
    varying = {ax for leaf in jax.tree.leaves(params) for ax in _common.varying_axes(leaf)}
    if varying & set(axis_name if isinstance(axis_name, tuple) else (axis_name,)):
        _checks.fail(
            fn,
            f"`{source}` differs across devices of axis {axis_name!r}; every device must use "
            "the same random features (pass a replicated key), or the summed features of "
            "different devices estimate different kernels",
        )
    return params


def _clamped_log(estimate, log_floor):
    """``log(max(estimate, exp(log_floor)))`` with no NaN value or gradient.

    Trigonometric random features estimate a positive kernel sum by a signed sum, which can
    come out <= 0. Below the floor the estimate is replaced by the floor itself, the smallest
    value the exact sum can take, so clamping can only move it towards the truth; the
    gradient through a clamped entry is zero.
    """
    ok = estimate > jnp.exp(log_floor)
    return jnp.where(ok, jnp.log(jnp.where(ok, estimate, 1.0)), log_floor)


def _log_sum_exp_fold(acc, part):
    """Combines two (running max, sum of exp(x - max)) pairs; -inf maxima are empty sets."""
    (m1, s1), (m2, s2) = acc, part
    m = jnp.maximum(m1, m2)
    m_safe = jnp.where(jnp.isfinite(m), m, 0.0)
    return m, s1 * jnp.exp(m1 - m_safe) + s2 * jnp.exp(m2 - m_safe)


def esco_loss(
    z_a: ArrayLike,
    z_b: ArrayLike,
    *,
    lam: float,
    key: jax.Array | None = None,
    features: RFFParams | SORFParams | PositiveParams | None = None,
    temperature: float = 1.0,
    method: str = "sorf",
    num_features: int | None = None,
    negatives: str = "cross",
    symmetric: bool = False,
    normalize: bool = True,
    where: ArrayLike | None = None,
    chunk_size: int | None = None,
    axis_name: str | None = None,
) -> jax.Array:
    r"""ESCo loss: alignment plus the log Gaussian-kernel potential of the negatives.

    On l2-normalised embeddings, with :math:`\kappa(x, y) = \exp(-\|x-y\|^2 / 2\tau)`,

    .. math::
        L = \frac{1}{N} \sum_i \Big(\lambda \|a_i - b_i\|^2 + \log \sum_j \kappa(a_i, c_j)\Big)

    where the negatives ``c`` are view B (``negatives='cross'``, the InfoNCE pairing of ESCo
    Eq. 1) or view A itself (``negatives='intra'``, ESCo Eq. 9 as printed). With
    ``method='exact'``, cross negatives and ``lam = 1 / (2 * temperature)`` the constants
    cancel and the loss equals :func:`jaxcl.losses.infonce` (ESCo Eq. 10). The paper sums over
    ``i``; this returns the mean, like the other losses here.

    The kernel sum is computed

    * ``'exact'``: all pairs, O(N^2 d) time; memory O(N * block) by blocking over anchors.
    * ``'rff'``: random Fourier features ``[cos Wz, sin Wz] / sqrt(D)``, ``W = G / sqrt(tau)``
      (ESCo Eq. 11): ``sum_j k(a_i, c_j) ~ Phi(a_i) . sum_j Phi(c_j)``, O(N D d).
    * ``'sorf'``: structured orthogonal random features (ESCo Eq. 12), the projection applied
      with the fast Walsh–Hadamard transform, O(N D log d); for a padded dimension of at most
      256 (ESCo's d = 128 among them) as one dense matrix built once per call, O(N D d),
      which is faster there (``jaxcl.random_features.sorf_projection``).
    * ``'positive'``: positive random features ``exp(w.z - |z|^2/tau) / sqrt(D)``
      (Performer-style), evaluated entirely in the log domain, so every estimate is > 0.

    The trigonometric estimates (rff, sorf) can be <= 0 before the log. They are clamped from
    below at ``M * exp(-2 / tau)`` (``M`` negatives: ``N``, or ``2N - 1`` with
    ``negatives='both'``), the smallest value the exact sum can take for unit vectors, so
    there the clamp only moves an estimate towards the truth; with ``normalize=False`` the
    floor is ``tiny * M``, which keeps the log finite but is not a bound on the exact sum of
    vectors of any length. The clamp's gradient is zero. The loss is therefore finite for any
    temperature and dimension.

    Accuracy depends on the temperature, because the kernel narrows as tau falls. Measured
    mean |error| of ``mean_i log sum_j k(a_i, b_j)`` (d = 128, N = 64 correlated pairs,
    D = 4096; ``experiments/benchmarks/esco_benchmark.py --accuracy``):

    ====  =====  =====  ========
    tau   rff    sorf   positive
    ====  =====  =====  ========
    0.05  2.4    2.9    13.8
    0.1   0.024  0.081  3.7
    0.2   0.015  0.096  0.38
    0.5   0.007  0.030  0.013
    1.0   0.003  0.008  0.004
    ====  =====  =====  ========

    SORF has lower variance than RFF but a bias of order 1/d that grows as tau falls (its
    rows have a fixed norm; ``features=draw_sorf(key, d, D, norms='chi')`` removes most of
    it, see :func:`jaxcl.random_features.draw_sorf`); positive features are unbiased but
    a term's relative variance is ``exp((2 + 2c)/tau) - 1`` at cosine ``c``: ``exp(2/tau)``
    for orthogonal pairs, up to ``exp(4/tau)`` for aligned ones (the positive pair, and the
    self term of ``'intra'``). Below tau ~ 0.2 use ``'rff'`` with a large D,
    or ``'exact'``.

    Memory stays linear in N: random features are computed one block of ``chunk_size`` rows
    at a time and recomputed in the backward pass, so no ``[N, D]`` array is ever held.

    Args:
      z_a: ``[batch, dim]`` embeddings of view A (anchors).
      z_b: ``[batch, dim]`` embeddings of view B; ``z_b[i]`` is the positive of ``z_a[i]``.
      lam: weight ``lambda >= 0`` of the alignment term; ESCo needs ``lambda > 1 / (2 tau)``
        to reduce redundant information (Sec. 4.1).
      key: PRNG key to draw the random features for this call, as the paper does. Must be
        the same on every device under ``axis_name``.
      features: pre-drawn random features (``jaxcl.random_features.draw_rff`` /
        ``draw_sorf`` / ``draw_positive``) to keep them fixed; overrides ``key``. Refused
        with ``method='exact'``, which has no features (``key`` and ``num_features`` are
        ignored there, so that one config can switch estimators).
      temperature: kernel bandwidth ``tau > 0``.
      method: ``'exact'``, ``'rff'``, ``'sorf'`` or ``'positive'``.
      num_features: number of random frequencies ``D`` (default 1024 when drawing).
      negatives: ``'cross'`` (view B), ``'intra'`` (view A, Eq. 9), or ``'both'``: view B
        and the other rows of view A, the anchor itself left out (GRACE's and NT-Xent's set;
        with ``method='exact'``, ``lam = 1 / (2 * temperature)`` and ``symmetric=True`` the
        loss equals :func:`jaxcl.losses.nt_xent`, i.e. GRACE's).
      symmetric: average the A-anchored and B-anchored losses.
      normalize: l2-normalise rows first (the paper always does). Without it the exact
        kernel is computed from the rows' differences (blocks ``d`` times smaller), as the
        dot-product form would lose ``eps * |z|^2 / tau`` to cancellation on long rows.
      where: optional ``[batch]`` boolean mask; masked rows are neither anchors nor negatives.
        They may hold anything, NaN and inf included: they are zeroed before any
        arithmetic, get a zero gradient, and leave the value and the other rows' gradients
        as if they were not in the batch (on every method and chunking path). A batch of
        one row is refused (it has no negatives); a mask is not checked (it may be traced):
        one unmasked row has only its positive or itself as negatives, like a batch of one.
      chunk_size: rows per block for the linear-memory computation (default: as many as keep
        one block's intermediate near 8M elements). With ``method='exact'`` and
        ``normalize=False`` a block holds ``chunk_size x N x d`` differences, ``d`` times what
        it holds on unit rows: set it smaller by that factor.
      axis_name: inside ``shard_map``/``pmap``, the random-feature sums (D-vectors) are
        ``psum``-ed across devices instead of gathering embeddings ('exact' gathers), and
        every device returns the global mean.

    Returns:
      Scalar float32 loss (float64 embeddings with ``normalize=True`` are computed in
      float64 and their gradients are float64).

    Example:
      >>> import jax, jaxcl
      >>> z_a, z_b = jax.random.normal(jax.random.key(0), (2, 256, 32))
      >>> loss = jaxcl.losses.esco_loss(z_a, z_b, key=jax.random.key(1), temperature=0.5,
      ...                               lam=1.2, method="sorf", num_features=256)

    References:
      ESCo: "Towards Provably Effective and Scalable Contrastive Representation Learning"
      (ICLR 2022 submission), Eqs. 9–12 and Algorithm 1; Rahimi & Recht, NIPS 2007 (RFF);
      Yu et al., NIPS 2016 (SORF); Choromanski et al., ICLR 2021 (positive random features).
    """
    fn = "esco_loss"
    z_a, z_b = _common.check_pair(fn, z_a, z_b)
    _common.check_negatives(fn, z_a.shape[0], axis_name)
    _checks.positive(fn, "temperature", temperature)
    _checks.nonnegative(fn, "lam", lam)
    symmetric = _checks.boolean(fn, "symmetric", symmetric)
    normalize = _checks.boolean(fn, "normalize", normalize)
    _checks.one_of(fn, "method", method, METHODS)
    _checks.one_of(fn, "negatives", negatives, NEGATIVES)
    if key is not None:
        _checks.prng_key(fn, "key", key)
    if num_features is not None:
        _checks.positive_int(fn, "num_features", num_features)
    if method == "exact" and features is not None:
        _checks.fail(
            fn,
            f"`features` ({type(features).__name__}) were given with method='exact', which "
            "uses no random features; pass method='rff', 'sorf' or 'positive' to use them",
        )
    if chunk_size is not None:
        _checks.positive_int(fn, "chunk_size", chunk_size)
    where = _common.check_where(fn, where, z_a.shape[0])
    z_a, z_b = _common.zero_masked_rows(z_a, where), _common.zero_masked_rows(z_b, where)
    batch, dim = z_a.shape
    weight = jnp.ones((batch,), jnp.bool_) if where is None else where

    prep = _common.l2_normalize if normalize else (lambda z: z.astype(jnp.float32))
    # prep's output dtype, in which the sums and the loss are accumulated (float32 for float32
    # and narrower embeddings also when float64 is switched on)
    compute = jnp.promote_types(z_a.dtype, jnp.float32) if normalize else jnp.dtype(jnp.float32)
    # Which view supplies the negatives of the A-anchored and the B-anchored terms ('both':
    # the other view, and the anchor's own view without the anchor itself).
    other = {"a": "b", "b": "a"}
    neg_of = other if negatives == "cross" else {"a": "a", "b": "b"}
    anchors = ("a", "b") if symmetric else ("a",)
    needed = ["a", "b"] if negatives == "both" else sorted({neg_of[x] for x in anchors})

    num_negatives = jnp.sum(weight.astype(jnp.float32))
    if axis_name is not None:
        num_negatives = jax.lax.psum(num_negatives, axis_name)
    if negatives == "both":
        num_negatives = 2.0 * num_negatives - 1.0
    # each row's index in the global batch, to leave the anchor out of its own view
    index = _common.row_offset(batch, axis_name) + jnp.arange(batch)

    if method == "exact":
        views = {"a": z_a, "b": z_b}
        gathered = {name: _common.gather_rows(prep(views[name]), axis_name) for name in needed}
        valid_all = _common.gather_rows(weight, axis_name)
        # Unit rows: distances from one matmul. Other rows: from their differences (blocks d
        # times smaller), as |x|^2 + |c|^2 - 2 x.c cancels in float32 (``normalize``'s doc).
        pair_elements = valid_all.shape[0] * (1 if normalize else dim)
        rows = max(1, _BLOCK_ELEMENTS // max(1, pair_elements))

        def log_kernels(x, name):
            c = gathered[name]
            if normalize:
                sq_c = jnp.sum(c * c, axis=1)
                sq_x = jnp.sum(x * x, axis=1, keepdims=True)
                logits = (x @ c.T - 0.5 * (sq_x + sq_c[None, :])) / temperature
            else:
                sq_dist = jnp.sum(jnp.square(x[:, None, :] - c[None, :, :]), axis=2)
                logits = -0.5 * sq_dist / temperature
            return _common.masked_logits(logits, valid_all)

        def log_kernel_sum(x, name):
            return jax.nn.logsumexp(log_kernels(x, name), axis=1)

        def log_kernel_sum_both(x, anchor, idx):
            own = log_kernels(x, anchor)
            own = jnp.where(idx[:, None] == jnp.arange(own.shape[1])[None, :], -jnp.inf, own)
            return jax.nn.logsumexp(jnp.concatenate([log_kernels(x, other[anchor]), own], 1), 1)

    else:
        params = _resolve_features(fn, method, key, features, dim, num_features, axis_name)
        d_features = params.num_features if method == "sorf" else params.omega.shape[1]
        rows = max(1, _BLOCK_ELEMENTS // (2 * d_features))

        if method == "positive":

            def block_stats(za, zb, w):
                out = {}
                for name, z in (("a", za), ("b", zb)):
                    if name in needed:
                        v = positive_log_features(prep(z), params, temperature=temperature)
                        v = jnp.where(w[:, None], v, -jnp.inf)
                        m = jax.lax.stop_gradient(jnp.max(v, axis=0))
                        m_safe = jnp.where(jnp.isfinite(m), m, 0.0)
                        out[name] = (m, jnp.sum(jnp.exp(v - m_safe), axis=0))
                return out

            empty = (jnp.full((d_features,), -jnp.inf, compute), jnp.zeros((d_features,), compute))
            init = {name: empty for name in needed}

            def fold(acc, part):
                return {k: _log_sum_exp_fold(acc[k], part[k]) for k in acc}

            stats = _chunking.chunked_reduce(
                block_stats, fold, init, (z_a, z_b, weight), chunk_size or rows
            )
            log_sums = {}
            for name, (m, s) in stats.items():
                if axis_name is not None:
                    m_all = jax.lax.pmax(m, axis_name)
                    m_all_safe = jnp.where(jnp.isfinite(m_all), m_all, 0.0)
                    s = jax.lax.psum(s * jnp.exp(m - m_all_safe), axis_name)
                    m = m_all
                # log sum_j Phi+(c_j)_k; 0 where there are no negatives at all (every row
                # masked), which keeps the masked-out anchors' values and gradients finite.
                log_sums[name] = jnp.where(s > 0, m + jnp.log(jnp.where(s > 0, s, 1.0)), 0.0)

            def log_kernel_sum(x, name):
                u = positive_log_features(x, params, temperature=temperature)
                return jax.nn.logsumexp(u + log_sums[name][None, :], axis=1)

            def log_kernel_sum_both(x, anchor, idx):
                # both views' sums, minus the anchor's own term Phi+(x) . Phi+(x), in logs
                u = positive_log_features(x, params, temperature=temperature)
                both = jnp.logaddexp(log_sums["a"], log_sums["b"])
                total = jax.nn.logsumexp(u + both[None, :], axis=1)
                gap = jnp.minimum(jax.nn.logsumexp(2.0 * u, axis=1) - total, 0.0)
                return total + jnp.log(jnp.maximum(-jnp.expm1(gap), _TINY))

        else:
            # Phi(z) = [cos p, sin p] / sqrt(D) with p the projection, so a kernel sum is
            # (cos p_i . sum_j cos p_j + sin p_i . sum_j sin p_j) / D: the [N, 2D] feature
            # array is never built.
            if method == "rff":

                def project(z):
                    return rff_projection(z, params, temperature=temperature)

            else:  # built here, outside the loops over row blocks (W_SORF, when dense)
                project = _sorf.projector(params, temperature, compute)

            def block_sums(za, zb, w):
                out = {}
                for name, z in (("a", za), ("b", zb)):
                    if name in needed:
                        p = project(prep(z))
                        out[name] = (
                            jnp.sum(jnp.where(w[:, None], jnp.cos(p), 0.0), axis=0),
                            jnp.sum(jnp.where(w[:, None], jnp.sin(p), 0.0), axis=0),
                        )
                return out

            zeros = jnp.zeros((d_features,), compute)
            init = {name: (zeros, zeros) for name in needed}
            sums = _chunking.chunked_reduce(
                block_sums, _chunking.add, init, (z_a, z_b, weight), chunk_size or rows
            )
            if axis_name is not None:
                sums = jax.lax.psum(sums, axis_name)
            if normalize:
                log_floor = jnp.log(num_negatives) - 2.0 / temperature
            else:
                log_floor = jnp.log(num_negatives) + math.log(_TINY)

            def estimate(x, name):
                p = project(x)
                cos_sum, sin_sum = sums[name]
                return (jnp.cos(p) @ cos_sum + jnp.sin(p) @ sin_sum) / d_features

            def log_kernel_sum(x, name):
                return _clamped_log(estimate(x, name), log_floor)

            def log_kernel_sum_both(x, anchor, idx):
                # the anchor's own term is cos^2 + sin^2 summed over D, divided by D: exactly 1
                return _clamped_log(estimate(x, "a") + estimate(x, "b") - 1.0, log_floor)

    def block_loss(za, zb, w, idx):
        a, b = prep(za), prep(zb)
        align = lam * jnp.sum(jnp.square(a - b), axis=1)
        view = {"a": a, "b": b}
        total = jnp.zeros((), compute)
        for anchor in anchors:
            if negatives == "both":
                potential = log_kernel_sum_both(view[anchor], anchor, idx)
            else:
                potential = log_kernel_sum(view[anchor], neg_of[anchor])
            total = total + jnp.sum(jnp.where(w, align + potential, 0.0))
        return total

    total = _chunking.chunked_reduce(
        block_loss,
        _chunking.add,
        jnp.zeros((), compute),
        (z_a, z_b, weight, index),
        chunk_size or rows,
    )
    if symmetric:
        total = 0.5 * total
    count = jnp.sum(weight.astype(jnp.float32))
    return _common.global_mean(total, count, axis_name)
