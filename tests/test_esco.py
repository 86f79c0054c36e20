"""esco_loss: exactness against InfoNCE and NumPy, finiteness, convergence, chunking, errors."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

from jaxcl import losses, random_features

METHODS = ("exact", "rff", "sorf", "positive")


def _unit(x):
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _esco_ref(za, zb, *, lam, t, negatives="cross", symmetric=False, normalize=True):
    """ESCo with the exact Gaussian kernel, pair by pair (Eq. 9 / Eq. 1 pairing), as a mean."""
    if normalize:
        a, b = _unit(za), _unit(zb)
    else:
        a, b = np.asarray(za, np.float64), np.asarray(zb, np.float64)

    def direction(x, y):
        if negatives == "both":  # y, and x without the anchor itself
            neg = [np.concatenate([y, np.delete(x, i, axis=0)]) for i in range(len(x))]
        else:
            neg = [y if negatives == "cross" else x] * len(x)
        kernel_term = [
            logsumexp(-((xi - n) ** 2).sum(-1) / (2 * t)) for xi, n in zip(x, neg, strict=True)
        ]
        return np.mean(lam * ((x - y) ** 2).sum(1) + np.asarray(kernel_term))

    out = direction(a, b)
    return 0.5 * (out + direction(b, a)) if symmetric else out


def _views(seed, n=12, d=6):
    ka, kb = jax.random.split(jax.random.key(seed))
    za = jax.random.normal(ka, (n, d))
    # Correlated views, as a trained encoder would give.
    zb = za + 0.5 * jax.random.normal(kb, (n, d))
    return za, zb


@pytest.mark.parametrize("method", ["rff", "sorf", "positive"])
@pytest.mark.parametrize("negatives", ["cross", "intra", "both"])
@pytest.mark.parametrize("symmetric", [False, True])
def test_random_feature_loss_and_gradients_equal_explicit_features(method, negatives, symmetric):
    """An independent reference for the estimators' values and gradients: with the same fixed
    features, the ``[N, 2D]`` (``[N, D]``) feature arrays built by the ``*_features``
    functions, the kernel sums as plain dot products, differentiated by autodiff through
    everything (a misplaced stop_gradient on the negatives' sums would leave the value alone
    and change the gradients)."""
    rf = random_features
    tau, lam = 0.5, 1.3
    za, zb = _views(5, n=24, d=8)
    key = jax.random.key(7)
    params, phi = {
        "rff": (rf.draw_rff(key, 8, 512), rf.rff_features),
        "sorf": (rf.draw_sorf(key, 8, 512, norms="chi"), rf.sorf_features),
        "positive": (rf.draw_positive(key, 8, 512), rf.positive_features),
    }[method]

    def reference(za, zb, check=False):
        a, b = (z / jnp.linalg.norm(z, axis=1, keepdims=True) for z in (za, zb))
        f = {"a": phi(a, params, temperature=tau), "b": phi(b, params, temperature=tau)}

        def direction(x, y):
            if negatives == "both":  # y's rows and x's, the anchor's own term taken out
                sums = f[x] @ (f[x].sum(0) + f[y].sum(0)) - jnp.sum(f[x] * f[x], axis=1)
            else:
                sums = f[x] @ f[y if negatives == "cross" else x].sum(0)
            if check:  # every estimate above the clamp's floor: the reference has no clamp
                assert float(sums.min()) > 48 * np.exp(-2 / tau)
            return jnp.mean(lam * jnp.sum((a - b) ** 2, axis=1) + jnp.log(sums))

        both = 0.5 * (direction("a", "b") + direction("b", "a"))
        return both if symmetric else direction("a", "b")

    def esco(za, zb):
        return losses.esco_loss(
            za, zb, features=params, method=method, temperature=tau, lam=lam,
            negatives=negatives, symmetric=symmetric,
        )  # fmt: skip

    reference(za, zb, check=True)
    (want, want_grads), (got, grads) = (
        jax.value_and_grad(f, argnums=(0, 1))(za, zb) for f in (reference, esco)
    )
    assert float(got) == pytest.approx(float(want), rel=1e-5, abs=1e-5)
    for g, w in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("temperature", [0.05, 0.2, 1.0, 10.0])
@pytest.mark.parametrize("symmetric", [False, True])
def test_exact_with_lam_half_inverse_temperature_equals_infonce(temperature, symmetric):
    za, zb = _views(0, n=16, d=8)
    esco = losses.esco_loss(
        za,
        zb,
        method="exact",
        temperature=temperature,
        lam=1 / (2 * temperature),
        symmetric=symmetric,
    )
    info = losses.infonce(za, zb, temperature=temperature, symmetric=symmetric)
    np.testing.assert_allclose(esco, info, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("where", [False, True])
@pytest.mark.parametrize("chunk_size", [None, 5])
def test_both_negatives_exact_at_lam_half_inverse_temperature_equals_grace(where, chunk_size):
    """GRACE's loss is NT-Xent: inter- and intra-view negatives, the anchor left out; ESCo
    with negatives='both', exact kernels and lam = 1 / (2 tau) equals it, value and gradient."""
    za, zb = _views(2, n=16, d=8)
    mask = jnp.arange(16) % 5 != 2 if where else None
    t = 0.4
    esco = jax.value_and_grad(
        lambda a, b: losses.esco_loss(
            a, b, method="exact", negatives="both", temperature=t, lam=1 / (2 * t),
            symmetric=True, where=mask, chunk_size=chunk_size,
        ),
        argnums=(0, 1),
    )(za, zb)  # fmt: skip
    grace = jax.value_and_grad(
        lambda a, b: losses.nt_xent(a, b, temperature=t, where=mask), argnums=(0, 1)
    )(za, zb)
    np.testing.assert_allclose(esco[0], grace[0], rtol=1e-5)
    for g_e, g_g in zip(esco[1], grace[1], strict=True):
        np.testing.assert_allclose(g_e, g_g, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("method", ["rff", "sorf_chi", "positive"])
def test_both_negatives_random_features_approach_the_exact_loss(method):
    """With many features the estimators' 'both' potential (both views' sums minus the
    anchor's own term) is close to the exact one; SORF with chi norms (ESCo's fixed-norm
    SORF is biased at d = 8: see draw_sorf)."""
    za, zb = _views(3, n=24, d=8)
    kw = dict(negatives="both", temperature=0.5, lam=1.0, symmetric=True)
    exact = losses.esco_loss(za, zb, method="exact", **kw)
    if method == "sorf_chi":
        feats = random_features.draw_sorf(jax.random.key(4), 8, 16384, norms="chi")
        approx = losses.esco_loss(za, zb, method="sorf", features=feats, **kw)
    else:
        approx = losses.esco_loss(
            za, zb, method=method, key=jax.random.key(4), num_features=16384, **kw
        )
    assert abs(float(approx) - float(exact)) < 0.03, (float(approx), float(exact))


@pytest.mark.parametrize("negatives", ["cross", "intra", "both"])
@pytest.mark.parametrize("symmetric", [False, True])
def test_exact_matches_numpy(negatives, symmetric):
    za, zb = _views(1)
    out = jax.jit(
        functools.partial(
            losses.esco_loss,
            method="exact",
            temperature=0.5,
            lam=1.3,
            negatives=negatives,
            symmetric=symmetric,
        )
    )(za, zb)
    ref = _esco_ref(za, zb, lam=1.3, t=0.5, negatives=negatives, symmetric=symmetric)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


@pytest.mark.parametrize("negatives", ["cross", "intra", "both"])
def test_exact_without_normalising_keeps_long_rows_accurate(negatives):
    """Rows of norm ~2,700 at tau = 0.1: the kernel from |x|^2 + |c|^2 - 2 x.c lost about
    eps * |x|^2 / tau to cancellation in float32 (-2.97 instead of 0 with ``'intra'``)."""
    rng = np.random.default_rng(0)
    za = (300.0 * rng.normal(size=(64, 96))).astype(np.float32)
    zb = (za + rng.normal(size=za.shape)).astype(np.float32)
    kw = dict(method="exact", temperature=0.1, lam=0.5, negatives=negatives, normalize=False)
    out = jax.jit(functools.partial(losses.esco_loss, **kw))(za, zb)
    ref = _esco_ref(za, zb, lam=0.5, t=0.1, negatives=negatives, normalize=False)
    np.testing.assert_allclose(float(out), ref, rtol=1e-5)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dim", [1, 7, 128, 1024])
def test_finite_values_and_gradients_everywhere(method, dim):
    """Never NaN or inf: tau from 0.05 to 10, batches from 2 rows (one is refused: no
    negatives), hostile rows included."""

    @jax.jit
    def value_and_grads(za, zb, key, temperature):
        return jax.value_and_grad(
            lambda a, b: losses.esco_loss(
                a,
                b,
                key=key,
                method=method,
                temperature=temperature,
                lam=2.0,
                num_features=64,
                symmetric=True,
            ),
            argnums=(0, 1),
        )(za, zb)

    for n, temperature in itertools.product([2, 5, 33], [0.05, 0.3, 1.0, 10.0]):
        za, zb = _views(n + dim, n=n, d=dim)
        if n >= 5:
            za = za.at[0].set(0.0)  # zero row
            za = za.at[1].set(1e4 * za[2])  # huge row, parallel to another
            zb = zb.at[2].set(-za[2])  # antipodal positive pair
            zb = zb.at[3].set(1e-30)  # (almost) zero row
        val, grads = value_and_grads(za, zb, jax.random.key(n), jnp.float32(temperature))
        assert np.isfinite(val), (n, temperature, val)
        for g in grads:
            assert np.all(np.isfinite(g)), (n, temperature)


def _kernel_error(method, num_features, seeds, *, temperature=1.0, n=64, d=128):
    """Mean |estimated - exact| of the loss with lam = 0, i.e. of mean_i log sum_j k(a_i, b_j)."""
    errors = []
    for seed in seeds:
        za, zb = _views(100 + seed, n=n, d=d)
        exact = losses.esco_loss(za, zb, method="exact", temperature=temperature, lam=0.0)
        est = losses.esco_loss(
            za,
            zb,
            key=jax.random.key(seed),
            method=method,
            temperature=temperature,
            lam=0.0,
            num_features=num_features,
        )
        errors.append(abs(float(est) - float(exact)))
    return float(np.mean(errors))


@pytest.mark.parametrize("method", ["rff", "sorf", "positive"])
def test_random_feature_estimate_converges_to_exact(method):
    sizes = [16, 256, 4096]
    errors = [_kernel_error(method, size, seeds=range(6)) for size in sizes]
    # Monte Carlo error falls like 1/sqrt(D): a 16x larger D should cut it by ~4x; ask for 2x.
    assert errors[1] < errors[0] / 2, errors
    if method != "sorf":
        assert errors[2] < errors[1] / 2, errors
    # SORF's rows have a fixed norm instead of a chi-distributed one, which leaves a bias of
    # order 1/d in each kernel value (Yu et al., 2016): at d = 128 its error reaches that floor
    # (~0.01 in the log kernel sum) by D = 256. Everything is within 2% of log sum_j k at D = 4096.
    assert errors[2] < 0.02, errors


@pytest.mark.parametrize("method", ["rff", "sorf", "positive", "exact"])
@pytest.mark.parametrize("symmetric", [False, True])
def test_chunking_changes_nothing(method, symmetric):
    key = jax.random.key(3)

    def loss(a, b, where, chunk_size):
        return losses.esco_loss(
            a,
            b,
            key=key,
            method=method,
            temperature=0.5,
            lam=1.1,
            num_features=32,
            symmetric=symmetric,
            where=where,
            chunk_size=chunk_size,
        )

    grad_fn = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)), static_argnums=3)
    # 53 rows in blocks of 7: no divisor fits, so 7 full blocks and a ragged tail of 4;
    # 50 rows: blocks of 5 (the divisor chosen for 7), of 25, and a single block.
    for n, chunk_sizes in ((53, (7,)), (50, (7, 25, 50))):
        za, zb = _views(2, n=n, d=9)
        where = jnp.arange(n) % 7 != 3
        whole, whole_grads = grad_fn(za, zb, where, None)
        for chunk_size in chunk_sizes:
            part, part_grads = grad_fn(za, zb, where, chunk_size)
            np.testing.assert_allclose(part, whole, rtol=1e-5)
            for g_part, g_whole in zip(part_grads, whole_grads, strict=True):
                np.testing.assert_allclose(g_part, g_whole, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "method,draw",
    [
        ("rff", random_features.draw_rff),
        ("sorf", random_features.draw_sorf),
        ("positive", random_features.draw_positive),
    ],
)
def test_pre_drawn_features_equal_drawing_from_the_key(method, draw):
    za, zb = _views(4, n=20, d=10)
    key = jax.random.key(5)
    kw = dict(method=method, temperature=0.7, lam=1.0)
    from_key = losses.esco_loss(za, zb, key=key, num_features=48, **kw)
    pre_drawn = losses.esco_loss(za, zb, features=draw(key, 10, 48), **kw)
    np.testing.assert_allclose(from_key, pre_drawn, rtol=1e-6)
    other_key = losses.esco_loss(za, zb, key=jax.random.key(6), num_features=48, **kw)
    assert float(other_key) != float(from_key)


def test_where_equals_subset():
    za, zb = _views(7, n=20)
    keep = np.arange(20) % 3 != 0
    for method in METHODS:
        kw = dict(
            key=jax.random.key(0),
            method=method,
            temperature=0.5,
            lam=1.0,
            num_features=64,
            symmetric=True,
        )
        loss = jax.jit(lambda a, b, where=None, kw=kw: losses.esco_loss(a, b, where=where, **kw))
        np.testing.assert_allclose(
            loss(za, zb, jnp.asarray(keep)), loss(za[keep], zb[keep]), rtol=1e-5, err_msg=method
        )


def test_bfloat16_inputs():
    za, zb = _views(9, n=32, d=16)
    for method in METHODS:
        kw = dict(key=jax.random.key(0), method=method, temperature=0.5, lam=1.0)
        low = losses.esco_loss(za.astype(jnp.bfloat16), zb.astype(jnp.bfloat16), **kw)
        assert low.dtype == jnp.float32
        np.testing.assert_allclose(low, losses.esco_loss(za, zb, **kw), rtol=2e-2)


GOOD = dict(temperature=0.5, lam=1.0, method="rff", num_features=16)


@pytest.mark.parametrize(
    "override,message",
    [
        (dict(z_b=np.ones((4, 3), np.float32)), "same shape"),
        (dict(z_a=np.ones((5, 3), np.int32)), "`z_a` must have a floating dtype"),
        (dict(temperature=0.0), "`temperature` must be a finite number > 0, got 0.0"),
        (dict(lam=-1.0), "`lam` must be a finite number >= 0, got -1.0"),
        (dict(num_features=0), "`num_features` must be a positive integer, got 0"),
        (dict(num_features=8.5), "`num_features` must be a positive integer, got 8.5"),
        (dict(method="fourier"), "`method` must be one of"),
        (dict(negatives="all"), "`negatives` must be one of ['cross', 'intra', 'both'], got 'all'"),
        (dict(chunk_size=0), "`chunk_size` must be a positive integer, got 0"),
        (dict(key=None), "needs `key` to draw random features"),
        (
            dict(z_a=np.ones((0, 3), np.float32), z_b=np.ones((0, 3), np.float32)),
            "empty batch",
        ),
        (dict(key=jax.random.key(0), features="W"), "`features` must be a RFFParams"),
        (dict(method="exact", features="W"), "`features` (str) were given with method='exact'"),
        (dict(normalize="False"), "`normalize` must be a bool (True or False, static under jit)"),
        (dict(symmetric=1), "`symmetric` must be a bool (True or False, static under jit), got 1"),
        (dict(symmetric=None), "`symmetric` must be a bool"),
    ],
)
def test_bad_inputs(override, message):
    args = dict(
        z_a=np.ones((5, 3), np.float32),
        z_b=np.ones((5, 3), np.float32),
        key=jax.random.key(0),
        **GOOD,
    )
    args.update(override)
    with pytest.raises(ValueError) as err:
        losses.esco_loss(**args)
    assert message in str(err.value), str(err.value)
    assert "esco_loss" in str(err.value)


def test_pre_drawn_features_of_the_wrong_size():
    za = np.ones((5, 3), np.float32)
    wrong_dim = random_features.draw_sorf(jax.random.key(0), 4, 16)
    with pytest.raises(ValueError, match="drawn for dim=4, but z has dim=3"):
        losses.esco_loss(za, za, features=wrong_dim, method="sorf", lam=1.0)
    right = random_features.draw_rff(jax.random.key(0), 3, 16)
    with pytest.raises(ValueError, match="`num_features`=32 disagrees"):
        losses.esco_loss(za, za, features=right, num_features=32, method="rff", lam=1.0)


@pytest.mark.parametrize("method", METHODS)
def test_a_batch_of_one_has_no_negatives_and_is_refused(method):
    # Its only negative is its own positive: with cross negatives and lam = 1 / (2 tau) the
    # loss was exactly 0 with a zero gradient, and training silently stood still.
    kw = dict(key=jax.random.key(0), method=method, temperature=0.5, lam=1.0, num_features=16)
    loss = jax.jit(lambda a, b: losses.esco_loss(a, b, **kw))
    with pytest.raises(ValueError, match="esco_loss: a batch of one row has no negatives"):
        loss(*_views(10, n=1))
    assert np.isfinite(float(loss(*_views(10, n=2))))


def test_one_row_per_device_is_allowed_under_axis_name():
    # Sharded, each device's row has the other devices' rows as negatives.
    za, zb = _views(11, n=2)
    kw = dict(method="exact", temperature=0.5, lam=1.0)
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("data",))
    spec = jax.sharding.PartitionSpec("data")
    sharded = jax.jit(
        jax.shard_map(
            lambda a, b: losses.esco_loss(a, b, axis_name="data", **kw),
            mesh=mesh,
            in_specs=(spec, spec),
            out_specs=jax.sharding.PartitionSpec(),
        )
    )
    want = jax.jit(lambda a, b: losses.esco_loss(a, b, **kw))(za, zb)
    np.testing.assert_allclose(sharded(za, zb), want, rtol=1e-5)


@pytest.mark.parametrize("flag", ["symmetric", "normalize"])
def test_traced_flags_are_refused_by_name(flag):
    za, zb = _views(12)

    def loss(f):
        return lambda a, b: losses.esco_loss(a, b, lam=1.0, method="exact", **{flag: f})

    with pytest.raises(ValueError, match=f"esco_loss: `{flag}` must be a bool .* got an array"):
        jax.jit(lambda a, b, f: loss(f)(a, b))(za, zb, True)
    jax.eval_shape(loss(np.bool_(False)), za, zb)  # NumPy's bool is a bool


def test_pre_drawn_sorf_features_whose_fields_disagree_are_refused():
    # scales for one block of two: they broadcast silently over both before
    signs = jnp.ones((2, 3, 8))  # two blocks of padded_dim 8

    def features(scales):
        return random_features.SORFParams(signs, dim=6, num_features=16, scales=scales)

    bad, good = features(jnp.ones((1, 8))), features(jnp.ones((2, 8)))
    za, zb = _views(13)

    def loss(features):
        return lambda a, b: losses.esco_loss(a, b, features=features, method="sorf", lam=1.0)

    with pytest.raises(ValueError, match=r"esco_loss: `features.scales` must be None or of shape"):
        jax.eval_shape(loss(bad), za, zb)
    jax.eval_shape(loss(good), za, zb)
