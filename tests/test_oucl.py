"""MetAug's OUCL losses (Eq. 7-10) and margin regulariser R_sigma (Eq. 4-5, App. A.2).

The references are float64 NumPy written from the paper, one anchor row at a time: the
``K^- x K^+`` array of pair exponents is formed explicitly and summed as printed,
``(1 / beta) log(1 + sum_n sum_p exp(beta * pair))``, then averaged over anchors. Masked
entries are dropped from the row before the reference sees it.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from jaxcl import losses

# ---------------------------------------------------------------------------------------
# References (float64, from the paper's equations)
# ---------------------------------------------------------------------------------------


def _unified_row(pair, beta):
    """(1/beta) log(1 + sum_{n,p} exp(beta * pair[n, p])), summed naively."""
    return np.log(1.0 + np.sum(np.exp(beta * pair))) / beta


def _eq8_row(s_p, s_n, beta, margin=0.0):
    pair = s_n[:, None] - s_p[None, :] + margin  # [K^-, K^+]
    return _unified_row(pair, beta)


def _eq9_row(
    s_p,
    s_n,
    beta,
    *,
    optimum_pos,
    optimum_neg,
    margin_pos,
    margin_neg,
    decay,
    gamma_pos=None,
    gamma_neg=None,
):
    """Eq. 9; ``gamma_pos``/``gamma_neg`` override Gamma (to freeze it for a gradient)."""
    g_n = np.maximum(s_n - optimum_neg, 0.0) / decay if gamma_neg is None else gamma_neg
    g_p = np.maximum(optimum_pos - s_p, 0.0) / decay if gamma_pos is None else gamma_pos
    pair = g_n[:, None] * (s_n[:, None] - margin_neg) - g_p[None, :] * (s_p[None, :] - margin_pos)
    return _unified_row(pair, beta)


def _eq10_row(s_p, s_n, beta, gamma):
    pair = (s_p[None, :] - 1.0) ** 2 + s_n[:, None] ** 2 - 2.0 * gamma**2
    return _unified_row(pair, beta)


def _eq7_row(s_p, s_n, margin=0.0):
    """Eq. 7 as printed: the hinge of the summed similarities."""
    return max(np.sum(s_n) - np.sum(s_p) + margin, 0.0)


def _per_row(row_fn, pos, neg, pos_where=None, neg_where=None, where=None, **kw):
    """Per-anchor values of ``row_fn`` over the valid anchors, each on its valid entries."""
    pos, neg = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
    out = []
    for i in range(pos.shape[0]):
        if where is not None and not where[i]:
            continue
        s_p = pos[i] if pos_where is None else pos[i][np.asarray(pos_where[i])]
        s_n = neg[i] if neg_where is None else neg[i][np.asarray(neg_where[i])]
        out.append(row_fn(s_p, s_n, **kw))
    return np.array(out)


def _mean_ref(row_fn, pos, neg, **kw):
    rows = _per_row(row_fn, pos, neg, **kw)
    return float(np.mean(rows)) if rows.size else 0.0


def _r_sigma_ref(pos, neg, aug_pos, aug_neg, margin, masks=(None, None, None, None)):
    """Eq. 5 with the margins of Eq. 4 ('large') or App. A.2 ('medium', 'small')."""

    def valid(x, m):
        x = np.asarray(x, np.float64).reshape(-1)
        return x if m is None else x[np.asarray(m).reshape(-1)]

    pos, neg, aug_pos, aug_neg = (
        valid(x, m) for x, m in zip((pos, neg, aug_pos, aug_neg), masks, strict=True)
    )
    min_pos, max_neg = np.min(pos), np.max(neg)
    if margin == "large":
        sigma_pos, sigma_neg = min(min_pos, max_neg), max(min_pos, max_neg)
    elif margin == "medium":
        sigma_pos = sigma_neg = np.mean([min_pos, max_neg])
    elif margin == "small":
        sigma_pos, sigma_neg = max(min_pos, max_neg), min(min_pos, max_neg)
    else:
        raise AssertionError(margin)
    r_pos = sum(max(d - sigma_pos, 0.0) for d in aug_pos) / len(aug_pos)
    r_neg = sum(max(sigma_neg - d, 0.0) for d in aug_neg) / len(aug_neg)
    return r_pos + r_neg


def _numerical_grad(f, x, eps=1e-6):
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (f(up) - f(down)) / (2 * eps)
    return g


def _sims(seed, *shape, low=0.0, high=1.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, shape).astype(np.float32)


# Eq. 9's parameters, spelled out for the reference (``eq9_defaults`` calls the loss with
# none: O^+ = 1 and O^- = 0 are the optima of d in [0, 1], gamma^+ = 1 and gamma^- = 0).
_EQ9_PARAMS = {
    "eq9": dict(optimum_pos=1.1, optimum_neg=-0.1, margin_pos=0.8, margin_neg=0.2, decay=6.0),
    "eq9_defaults": dict(
        optimum_pos=1.0, optimum_neg=0.0, margin_pos=1.0, margin_neg=0.0, decay=1.0
    ),
}

# name -> (jax loss, its keyword arguments, reference row function of (s_p, s_n, beta))
_CASES = {
    "eq8": (losses.oucl_loss, dict(margin=0.25), functools.partial(_eq8_row, margin=0.25)),
    "eq9": (
        losses.oucl_weighted_loss,
        _EQ9_PARAMS["eq9"],
        functools.partial(_eq9_row, **_EQ9_PARAMS["eq9"]),
    ),
    "eq9_defaults": (
        losses.oucl_weighted_loss,
        dict(),
        functools.partial(_eq9_row, **_EQ9_PARAMS["eq9_defaults"]),
    ),
    "eq10": (losses.oucl_quadratic_loss, dict(gamma=0.4), functools.partial(_eq10_row, gamma=0.4)),
}


# ---------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------


_BETAS_VALUE = (1.0, 16.0, 64.0)
_VALUE_CASES = ("eq8", "eq9", "eq9_defaults", "eq10")


def _over_betas(fn, betas, **kw):
    """One compiled function giving the loss at each beta (one compile, not one per beta)."""
    return jax.jit(lambda *xs: jnp.stack([fn(*xs, beta=b, **kw) for b in betas]))


@jax.jit
def _all_values(pos, neg):
    """Every case at every beta of ``_BETAS_VALUE``, compiled once per shape."""
    out = {}
    for case in _VALUE_CASES:
        fn, kw, _ = _CASES[case]
        out[case] = jnp.stack([fn(pos, neg, beta=b, **kw) for b in _BETAS_VALUE])
    return out


@pytest.mark.parametrize("n,p,k", [(1, 1, 1), (4, 1, 7), (5, 3, 6), (8, 4, 16)])
def test_loss_matches_numpy(n, p, k):
    pos, neg = _sims(n, n, p), _sims(100 + k, n, k)
    values = _all_values(pos, neg)
    for case in _VALUE_CASES:
        _, _, row = _CASES[case]
        got = values[case]
        assert got.dtype == jnp.float32 and got.shape == (len(_BETAS_VALUE),)
        want = [_mean_ref(row, pos, neg, beta=b) for b in _BETAS_VALUE]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=case)


def test_eq8_hand_value():
    # One anchor, d+ = [0.9], d- = [0.1, 0.2], beta = 2, lambda = 0.5:
    # (1/2) log(1 + e^{2(0.1-0.9+0.5)} + e^{2(0.2-0.9+0.5)}) = (1/2) log(1 + e^-0.6 + e^-0.4).
    loss = jax.jit(functools.partial(losses.oucl_loss, beta=2.0, margin=0.5))
    got = loss(jnp.array([[0.9]]), jnp.array([[0.1, 0.2]]))
    want = 0.5 * np.log(1 + np.exp(-0.6) + np.exp(-0.4))
    np.testing.assert_allclose(got, want, rtol=1e-6)


# Padding: random [5, 3] positives and [5, 6] negatives; some entries are padding, row 3 has
# only padding positives (it contributes 0), anchor 2 is padding altogether.
_PAD_POS_WHERE = np.random.default_rng(7).uniform(size=(5, 3)) < 0.6
_PAD_NEG_WHERE = np.random.default_rng(8).uniform(size=(5, 6)) < 0.6
_PAD_POS_WHERE[:, 0] = True
_PAD_NEG_WHERE[:, 0] = True
_PAD_POS_WHERE[3] = False
_PAD_WHERE = np.array([True, True, False, True, True])
_PAD_POS_REAL = _PAD_POS_WHERE & _PAD_WHERE[:, None]
_PAD_NEG_REAL = _PAD_NEG_WHERE & _PAD_WHERE[:, None]


def _padded(fill):
    """Clean sets and the same sets with every padding entry (and padding anchor) = fill."""
    pos, neg = _sims(1, 5, 3), _sims(2, 5, 6)
    pos_bad, neg_bad = pos.copy(), neg.copy()
    pos_bad[~_PAD_POS_REAL] = fill
    neg_bad[~_PAD_NEG_REAL] = fill
    return pos, neg, pos_bad, neg_bad


@functools.cache
def _masked_value_and_grad(case):
    fn, kw, _ = _CASES[case]

    def loss(a, b):
        return fn(
            a,
            b,
            beta=16.0,
            positives_where=_PAD_POS_WHERE,
            negatives_where=_PAD_NEG_WHERE,
            where=_PAD_WHERE,
            **kw,
        )

    return jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))


@pytest.mark.parametrize("case", ["eq8", "eq9", "eq10"])
def test_masks_value_matches_reference_on_valid_subset(case):
    _, _, row = _CASES[case]
    value_and_grad = _masked_value_and_grad(case)
    for fill in (np.nan, 1e30):
        pos, neg, pos_bad, neg_bad = _padded(fill)
        want = _mean_ref(
            row,
            pos,
            neg,
            pos_where=_PAD_POS_WHERE,
            neg_where=_PAD_NEG_WHERE,
            where=_PAD_WHERE,
            beta=16.0,
        )
        value, (g_pos, g_neg) = value_and_grad(pos_bad, neg_bad)
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-7, err_msg=f"fill={fill}")
        # The real entries' gradients do not depend on what the padding holds.
        _, (c_pos, c_neg) = value_and_grad(pos, neg)
        np.testing.assert_allclose(
            np.asarray(g_pos)[_PAD_POS_REAL], np.asarray(c_pos)[_PAD_POS_REAL], rtol=1e-6
        )
        np.testing.assert_allclose(
            np.asarray(g_neg)[_PAD_NEG_REAL], np.asarray(c_neg)[_PAD_NEG_REAL], rtol=1e-6
        )


@pytest.mark.parametrize("fill", [np.nan, 1e30])
@pytest.mark.parametrize("case", ["eq8", "eq9", "eq10"])
def test_padding_gets_a_zero_gradient(case, fill):
    """Padding must not poison the backward pass: its gradient is exactly 0, never NaN."""
    _, _, pos_bad, neg_bad = _padded(fill)
    _, grads = _masked_value_and_grad(case)(pos_bad, neg_bad)
    problems = []
    for name, g, real, entry_where in (
        ("positives", grads[0], _PAD_POS_REAL, _PAD_POS_WHERE),
        ("negatives", grads[1], _PAD_NEG_REAL, _PAD_NEG_WHERE),
    ):
        g = np.asarray(g)
        anchor_pad = np.broadcast_to(~_PAD_WHERE[:, None], g.shape)
        entry_pad = ~entry_where & ~anchor_pad
        if not np.all(np.isfinite(g[real])):
            problems.append(f"{name}: non-finite gradient on real entries")
        for where_name, region in (("entry", entry_pad), ("anchor", anchor_pad)):
            if not np.all(g[region] == 0.0):
                problems.append(f"{name}: {where_name} padding gradient {g[region].tolist()}")
    assert not problems, problems


def test_no_valid_anchor_gives_zero():
    pos, neg = _sims(3, 2, 2), _sims(4, 2, 3)
    got = jax.jit(lambda a, b: losses.oucl_loss(a, b, beta=4.0, where=np.zeros(2, bool)))(pos, neg)
    assert float(got) == 0.0


# ---------------------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["eq8", "eq10"])
def test_gradient_matches_numerical_gradient_of_reference(case):
    fn, kw, row = _CASES[case]
    n, p, k, beta = 3, 2, 4, 8.0
    pos, neg = _sims(11, n, p), _sims(12, n, k)
    g_pos, g_neg = jax.jit(jax.grad(functools.partial(fn, beta=beta, **kw), argnums=(0, 1)))(
        pos, neg
    )
    want_pos = _numerical_grad(lambda x: _mean_ref(row, x, neg, beta=beta), pos)
    want_neg = _numerical_grad(lambda x: _mean_ref(row, pos, x, beta=beta), neg)
    np.testing.assert_allclose(g_pos, want_pos, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g_neg, want_neg, rtol=1e-4, atol=1e-6)
    check_grads(
        jax.jit(functools.partial(fn, beta=beta, **kw)),
        (pos, neg),
        order=1,
        modes=("rev",),
        atol=1e-2,
        rtol=1e-2,
    )


@pytest.mark.parametrize("case", ["eq9", "eq9_defaults"])
def test_weighted_gradient_treats_gamma_as_constant(case):
    fn, kw, _ = _CASES[case]
    params = _EQ9_PARAMS[case]
    n, p, k, beta = 3, 2, 4, 8.0
    pos, neg = _sims(13, n, p), _sims(14, n, k)
    o_pos, o_neg, decay = params["optimum_pos"], params["optimum_neg"], params["decay"]
    pos64, neg64 = pos.astype(np.float64), neg.astype(np.float64)
    frozen_pos = np.maximum(o_pos - pos64, 0.0) / decay  # Gamma^+ at the input point
    frozen_neg = np.maximum(neg64 - o_neg, 0.0) / decay  # Gamma^- at the input point

    def frozen(a, b):
        rows = [
            _eq9_row(a[i], b[i], beta, **params, gamma_pos=frozen_pos[i], gamma_neg=frozen_neg[i])
            for i in range(n)
        ]
        return np.mean(rows)

    def live(a, b):
        return _mean_ref(_eq9_row, a, b, beta=beta, **params)

    g_pos, g_neg = jax.jit(jax.grad(functools.partial(fn, beta=beta, **kw), argnums=(0, 1)))(
        pos, neg
    )
    np.testing.assert_allclose(
        g_pos, _numerical_grad(lambda x: frozen(x, neg64), pos64), rtol=1e-4, atol=1e-6
    )
    np.testing.assert_allclose(
        g_neg, _numerical_grad(lambda x: frozen(pos64, x), neg64), rtol=1e-4, atol=1e-6
    )
    # Differentiating through Gamma would give something else: the check above can fail.
    live_neg = _numerical_grad(lambda x: live(pos64, x), neg64)
    assert not np.allclose(g_neg, live_neg, rtol=1e-2, atol=1e-4)


# ---------------------------------------------------------------------------------------
# Large beta: no overflow
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case,pos_range,neg_range",
    [
        # pair exponents s_n - s_p + 0.25 in [0.05, 0.65]
        ("eq8", (0.2, 0.4), (0.5, 0.6)),
        # s_n^2 + (1 - s_p)^2 in [0.25, 0.61]
        ("eq9_defaults", (0.4, 0.6), (0.3, 0.5)),
        # (s_p - 1)^2 + s_n^2 - 0.32 in [0.18, 0.53]
        ("eq10", (0.3, 0.5), (0.5, 0.6)),
    ],
)
def test_large_beta_is_finite_and_exact(case, pos_range, neg_range):
    fn, kw, row = _CASES[case]
    pos = _sims(21, 4, 3, low=pos_range[0], high=pos_range[1])
    neg = _sims(22, 4, 5, low=neg_range[0], high=neg_range[1])
    betas = (2.0**8, 2.0**10)
    top = np.max(_per_row(lambda sp, sn: _pair_max(case, sp, sn, kw), pos, neg))
    for beta in betas:
        # The naive sum overflows in float32 (exp(> 88.7)) but not in float64 (exp(< 709)).
        assert 88.8 < beta * top < 709.0
        with np.errstate(over="ignore"):
            assert np.isinf(np.exp(np.float32(beta * top)))
    results = jax.jit(
        lambda a, b: [
            jax.value_and_grad(functools.partial(fn, beta=beta, **kw), argnums=(0, 1))(a, b)
            for beta in betas
        ]
    )(pos, neg)
    for beta, (got, grads) in zip(betas, results, strict=True):
        want = _mean_ref(row, pos, neg, beta=beta)
        assert np.isfinite(want) and np.isfinite(got)
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"beta={beta}")
        assert all(np.all(np.isfinite(g)) for g in grads)


def _pair_max(case, s_p, s_n, kw):
    if case == "eq8":
        return np.max(s_n[:, None] - s_p[None, :] + kw["margin"])
    if case == "eq9_defaults":
        return np.max(s_n[:, None] ** 2 + (1.0 - s_p[None, :]) ** 2)
    return np.max((s_p[None, :] - 1.0) ** 2 + s_n[:, None] ** 2 - 2 * kw["gamma"] ** 2)


# ---------------------------------------------------------------------------------------
# Relations between the equations
# ---------------------------------------------------------------------------------------

_BETAS = [2.0, 8.0, 32.0, 128.0, 512.0]


def test_eq8_tends_to_eq7_hinge_with_one_pair():
    n, margin = 8, 0.2
    pos, neg = _sims(31, n, 1), _sims(32, n, 1)
    # Rows 0-2 sit on the hinge's kink (s_n - s_p + lambda = 0), where the gap is log(2)/beta.
    pos[:3, 0] = np.float32(0.5)
    neg[:3, 0] = np.float32(0.3)
    hinge = _mean_ref(lambda sp, sn: _eq7_row(sp, sn, margin), pos, neg)
    values = _over_betas(losses.oucl_loss, _BETAS, margin=margin)(pos, neg)
    gaps = [float(v) - hinge for v in values]
    assert all(g > 0 for g in gaps), gaps
    assert all(a > b for a, b in zip(gaps[:-1], gaps[1:], strict=True)), gaps
    assert gaps[-1] < 1e-2, gaps


def test_eq8_tends_to_hardest_pair_hinge_with_several():
    n, p, k, margin = 6, 3, 4, 0.1
    pos, neg = _sims(33, n, p), _sims(34, n, k)
    pos64, neg64 = pos.astype(np.float64), neg.astype(np.float64)
    limit = np.mean(np.maximum(neg64.max(1) - pos64.min(1) + margin, 0.0))
    values = _over_betas(losses.oucl_loss, _BETAS, margin=margin)(pos, neg)
    for beta, value in zip(_BETAS, values, strict=True):
        gap = float(value) - limit
        # log(1 + sum exp(beta x)) / beta lies in [max(0, max x), that + log(1 + K P) / beta].
        assert -1e-6 <= gap <= np.log(1 + k * p) / beta + 1e-6, (beta, gap)
    assert gap < 1e-2


def test_eq9_with_eq10_settings_equals_eq10():
    pos, neg = _sims(41, 5, 3), _sims(42, 5, 6)
    gs = (0.0, 0.25, 0.4)

    def both(a, b):
        eq9 = [
            losses.oucl_weighted_loss(
                a, b, beta=16.0, optimum_pos=1 + g, optimum_neg=-g, margin_pos=1 - g, margin_neg=g
            )
            for g in gs
        ]
        eq10 = [losses.oucl_quadratic_loss(a, b, beta=16.0, gamma=g) for g in gs]
        return jnp.stack(eq9), jnp.stack(eq10)

    eq9, eq10 = jax.jit(both)(pos, neg)
    np.testing.assert_allclose(eq9, eq10, rtol=1e-5, atol=1e-7)
    want = [_mean_ref(_eq10_row, pos, neg, beta=16.0, gamma=g) for g in gs]
    np.testing.assert_allclose(eq10, want, rtol=1e-5, atol=1e-7)


def test_vmap_oucl_over_rows_gives_per_anchor_losses():
    pos, neg = _sims(51, 6, 2), _sims(52, 6, 5)
    per_row = jax.jit(jax.vmap(lambda a, b: losses.oucl_loss(a[None], b[None], beta=8.0)))(pos, neg)
    want = _per_row(_eq8_row, pos, neg, beta=8.0)
    np.testing.assert_allclose(per_row, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.mean(per_row), losses.oucl_loss(pos, neg, beta=8.0), rtol=1e-6)


# ---------------------------------------------------------------------------------------
# R_sigma
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pos,neg,aug_pos,aug_neg,expected",
    [
        # min+ = 0.8, max- = 0.5.
        # large  (s+ 0.5, s- 0.8):   mean(0.2, 0) + mean(0.2, 0)            = 0.2
        # medium (s+ = s- = 0.65):   mean(0.05, 0) + mean(0.05, 0)          = 0.05
        # small  (s+ 0.8, s- 0.5):   mean(0, 0) + mean(0, 0)                = 0
        ([0.9, 0.8], [0.3, 0.5], [0.7, 0.4], [0.6, 0.9], dict(large=0.2, medium=0.05, small=0.0)),
        # min+ = 0.8, max- = 0.5.
        # large  (s+ 0.5, s- 0.8):   mean(0.35, 0) + mean(0.2, 0.6)         = 0.575
        # medium (0.65):             mean(0.2, 0) + mean(0.05, 0.45)        = 0.35
        # small  (s+ 0.8, s- 0.5):   mean(0.05, 0) + mean(0, 0.3)           = 0.175
        (
            [0.9, 0.8],
            [0.3, 0.5],
            [0.85, 0.4],
            [0.6, 0.2],
            dict(large=0.575, medium=0.35, small=0.175),
        ),
        # Overlapping sets: min+ = 0.4 < max- = 0.6.
        # large  (s+ 0.4, s- 0.6):   mean(0.3, 0.05) + mean(0.25, 0)        = 0.3
        # medium (0.5):              mean(0.2, 0) + mean(0.15, 0)           = 0.175
        # small  (s+ 0.6, s- 0.4):   mean(0.1, 0) + mean(0.05, 0)           = 0.075
        (
            [0.9, 0.4],
            [0.3, 0.6],
            [0.7, 0.45],
            [0.35, 0.9],
            dict(large=0.3, medium=0.175, small=0.075),
        ),
    ],
)
@pytest.mark.parametrize("margin", ["large", "medium", "small"])
def test_r_sigma_hand_values(pos, neg, aug_pos, aug_neg, expected, margin):
    args = [jnp.array(x, jnp.float32) for x in (pos, neg, aug_pos, aug_neg)]
    got = losses.metaug_margin_loss(*args, margin=margin)
    np.testing.assert_allclose(got, expected[margin], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        expected[margin], _r_sigma_ref(pos, neg, aug_pos, aug_neg, margin), atol=1e-12
    )


def test_metaug_margins_constant():
    assert tuple(losses.METAUG_MARGINS) == ("large", "medium", "small")


@pytest.mark.parametrize("margin", ["large", "medium", "small"])
def test_r_sigma_matches_numpy_and_its_gradient(margin):
    # Whole-minibatch sets of any shape; the extremes are over everything passed.
    pos, neg = _sims(61, 4, 3, low=0.3, high=1.0), _sims(62, 4, 7, low=0.0, high=0.7)
    aug_pos, aug_neg = _sims(63, 4, 5), _sims(64, 9)
    fn = jax.jit(functools.partial(losses.metaug_margin_loss, margin=margin))
    got = fn(pos, neg, aug_pos, aug_neg)
    want = _r_sigma_ref(pos, neg, aug_pos, aug_neg, margin)
    assert want > 0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    grads = jax.jit(jax.grad(fn, argnums=(0, 1, 2, 3)))(pos, neg, aug_pos, aug_neg)
    args = [x.astype(np.float64) for x in (pos, neg, aug_pos, aug_neg)]
    for i, g in enumerate(grads):

        def f(x, i=i):
            a = list(args)
            a[i] = x
            return _r_sigma_ref(*a, margin)

        np.testing.assert_allclose(g, _numerical_grad(f, args[i]), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("margin", ["large", "medium", "small"])
def test_r_sigma_masks(margin):
    rng = np.random.default_rng(71)
    sets = [_sims(72, 3, 4), _sims(73, 3, 6), _sims(74, 3, 5), _sims(75, 3, 5)]
    masks = [rng.uniform(size=s.shape) < 0.6 for s in sets]
    for m in masks:
        m[0, 0] = True

    def loss(*xs):
        return losses.metaug_margin_loss(
            *xs,
            margin=margin,
            positives_where=masks[0],
            negatives_where=masks[1],
            aug_positives_where=masks[2],
            aug_negatives_where=masks[3],
        )

    value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3)))
    want = _r_sigma_ref(*sets, margin, masks=masks)
    for fill in (np.nan, 1e30):
        bad = [s.copy() for s in sets]
        for b, m in zip(bad, masks, strict=True):
            b[~m] = fill
        value, grads = value_and_grad(*bad)
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-7, err_msg=f"fill={fill}")
        for g, m in zip(grads, masks, strict=True):
            assert np.all(np.isfinite(g)), fill
            np.testing.assert_array_equal(np.asarray(g)[~m], 0.0)


def test_r_sigma_passes_nan_on_and_is_zero_without_originals():
    # Emptiness comes from the masks: an unmasked NaN similarity (a diverged model) must come
    # out as NaN, not be taken for an empty set (it came out 0.2 or 0.0 before).
    pos, neg = np.array([0.9, 0.8]), np.array([0.3, 0.5])
    aug_pos, aug_neg = np.array([0.7]), np.array([0.6])
    assert np.isnan(losses.metaug_margin_loss(np.array([np.nan, 0.8]), neg, aug_pos, aug_neg))
    assert np.isnan(losses.metaug_margin_loss(pos, neg, np.array([np.nan]), aug_neg))
    # neither original set has an entry: 0, with zero (finite) gradients
    none = np.zeros(2, bool)

    def loss(p, n, ap, an):
        return losses.metaug_margin_loss(p, n, ap, an, positives_where=none, negatives_where=none)

    value, grads = jax.value_and_grad(loss, argnums=(0, 1, 2, 3))(pos, neg, aug_pos, aug_neg)
    assert float(value) == 0.0
    assert all(np.all(np.asarray(g) == 0.0) for g in grads)
    # one empty original set takes the other's extreme (sigma+ = sigma- = 0.5 here)
    only_neg = losses.metaug_margin_loss(pos, neg, aug_pos, aug_neg, positives_where=none)
    assert float(only_neg) == pytest.approx(0.2 + 0.0)


@pytest.mark.parametrize("margin", ["large", "medium", "small"])
def test_r_sigma_vmap_over_rows_gives_per_anchor_margins(margin):
    n = 5
    pos, neg = _sims(81, n, 3), _sims(82, n, 6)
    aug_pos, aug_neg = _sims(83, n, 4), _sims(84, n, 8)
    neg_where = np.random.default_rng(85).uniform(size=(n, 6)) < 0.7
    neg_where[:, 0] = True
    per_row = jax.jit(
        jax.vmap(
            lambda a, b, c, d, w: losses.metaug_margin_loss(
                a, b, c, d, margin=margin, negatives_where=w
            )
        )
    )(pos, neg, aug_pos, aug_neg, neg_where)
    want = [
        _r_sigma_ref(
            pos[i], neg[i], aug_pos[i], aug_neg[i], margin, masks=(None, neg_where[i], None, None)
        )
        for i in range(n)
    ]
    np.testing.assert_allclose(per_row, want, rtol=1e-5, atol=1e-7)
    # Per-anchor margins are not the minibatch-wide ones.
    whole = _r_sigma_ref(pos, neg, aug_pos, aug_neg, margin, masks=(None, neg_where, None, None))
    assert not np.isclose(np.mean(want), whole)


# ---------------------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------------------

_OUCL_FNS = [
    functools.partial(losses.oucl_loss),
    functools.partial(losses.oucl_weighted_loss),
    functools.partial(losses.oucl_quadratic_loss, gamma=0.4),
]
_POS, _NEG = _sims(91, 3, 2), _sims(92, 3, 4)


@pytest.mark.parametrize("fn", _OUCL_FNS)
@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_bad_beta(fn, beta):
    with pytest.raises(ValueError, match="`beta`"):
        fn(_POS, _NEG, beta=beta)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(positives=_POS[:, 0]), "`positives`"),
        (dict(negatives=_NEG[:2]), "`negatives`"),
        (dict(positives_where=np.ones((3, 2), np.float32)), "`positives_where`"),
        (dict(negatives_where=np.ones((3, 5), bool)), "`negatives_where`"),
        (dict(where=np.ones(4, bool)), "`where`"),
        (dict(where=np.ones(3, np.float32)), "`where`"),
    ],
)
@pytest.mark.parametrize("fn", _OUCL_FNS)
def test_bad_sets_and_masks(fn, kwargs, name):
    args = dict(positives=_POS, negatives=_NEG, beta=4.0) | kwargs
    with pytest.raises(ValueError, match=name):
        fn(**args)


def test_bad_decay():
    with pytest.raises(ValueError, match="`decay`"):
        losses.oucl_weighted_loss(_POS, _NEG, beta=4.0, decay=0.0)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(margin="huge"), "`margin`"),
        (dict(positives_where=np.ones(2, np.float32)), "`positives_where`"),
        (dict(aug_negatives_where=np.ones(4, bool)), "`aug_negatives_where`"),
    ],
)
def test_r_sigma_bad_inputs(kwargs, name):
    sets = [jnp.array([0.9, 0.8]), jnp.array([0.3, 0.5]), jnp.array([0.7]), jnp.array([0.6])]
    with pytest.raises(ValueError, match=name):
        losses.metaug_margin_loss(*sets, **kwargs)
