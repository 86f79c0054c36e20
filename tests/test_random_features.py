"""Tests for jaxcl.random_features: RFF, SORF and positive random features."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.special
from jax.test_util import check_grads

from jaxcl import random_features as rf
from jaxcl.random_features import _sorf

TAU = 0.5


def randn(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def gaussian_kernel(x, y, temperature):
    sq = np.sum((np.asarray(x, np.float64) - np.asarray(y, np.float64)) ** 2, axis=-1)
    return np.exp(-sq / (2 * temperature))


# ----------------------------------------------------------------------------- references


def np_rff(z, omega, temperature):
    proj = np.asarray(z, np.float64) @ np.asarray(omega, np.float64) / np.sqrt(temperature)
    return np.concatenate([np.cos(proj), np.sin(proj)], axis=-1) / np.sqrt(omega.shape[1])


def np_sorf_matrix(signs, dim, num_features, temperature):
    """Dense ``[dim, num_features]`` SORF projection built from explicit matrices (ESCo Eq. 12)."""
    signs = np.asarray(signs, np.float64)
    p = signs.shape[-1]
    h = scipy.linalg.hadamard(p).astype(np.float64) / np.sqrt(p)
    blocks = [
        np.sqrt(p / temperature) * h @ np.diag(s[0]) @ h @ np.diag(s[1]) @ h @ np.diag(s[2])
        for s in signs
    ]
    w = np.concatenate(blocks, axis=0)  # [num_blocks * p, p], rows are projections of z_pad
    return w[:num_features, :dim].T


def np_sorf_projection(z, params, temperature):
    w = np_sorf_matrix(params.signs, params.dim, params.num_features, temperature)
    return np.asarray(z, np.float64) @ w


def np_positive_log(z, omega, temperature):
    z = np.asarray(z, np.float64)
    proj = z @ np.asarray(omega, np.float64) / np.sqrt(temperature)
    return proj - np.sum(z * z, -1, keepdims=True) / temperature - 0.5 * np.log(omega.shape[1])


# ----------------------------------------------------------------------------- draws


def test_draw_rff_shapes_dtype_and_moments():
    params = rf.draw_rff(jax.random.key(0), 16, 4096)
    assert params.omega.shape == (16, 4096) and params.omega.dtype == jnp.float32
    omega = np.asarray(params.omega)
    assert abs(omega.mean()) < 0.02 and abs(omega.var() - 1) < 0.03
    assert rf.draw_rff(jax.random.key(0), 4, 8, dtype=jnp.bfloat16).omega.dtype == jnp.bfloat16


@pytest.mark.parametrize("dim, num_features, blocks, padded", [(100, 300, 3, 128), (1, 5, 5, 1)])
def test_draw_sorf_shapes(dim, num_features, blocks, padded):
    params = rf.draw_sorf(jax.random.key(0), dim, num_features)
    assert params.signs.shape == (blocks, 3, padded) and params.signs.dtype == jnp.float32
    assert set(np.unique(params.signs)) <= {-1.0, 1.0}
    assert (params.dim, params.num_features) == (dim, num_features)
    leaves, treedef = jax.tree_util.tree_flatten(params)
    assert len(leaves) == 1 and leaves[0] is params.signs  # dim, num_features are static
    assert jax.tree_util.tree_unflatten(treedef, leaves) == params


def test_draw_sorf_signs_are_balanced():
    signs = np.asarray(rf.draw_sorf(jax.random.key(1), 128, 128 * 64).signs)
    assert abs(signs.mean()) < 0.02


def test_draw_positive_orthogonal_blocks():
    dim, num_features = 8, 20  # blocks of 8, 8 and a truncated 4
    omega = np.asarray(
        rf.draw_positive(jax.random.key(0), dim, num_features, orthogonal=True).omega
    )
    assert omega.shape == (dim, num_features)
    for start in range(0, num_features, dim):
        block = omega[:, start : start + dim]
        gram = block.T @ block
        np.testing.assert_allclose(gram - np.diag(np.diag(gram)), 0, atol=1e-4)


def test_draw_positive_orthogonal_columns_are_standard_normal():
    omega = np.asarray(rf.draw_positive(jax.random.key(2), 16, 16 * 512, orthogonal=True).omega)
    # Each column is Haar direction x chi_16 norm, i.e. N(0, I_16): unit variance entries and
    # squared column norms with mean 16 and variance 2 * 16.
    assert abs(omega.mean()) < 0.02 and abs(omega.var() - 1) < 0.03
    sq_norms = np.sum(omega**2, axis=0)
    assert abs(sq_norms.mean() - 16) < 0.5 and abs(sq_norms.var() - 32) < 4


# ----------------------------------------------------------------------------- references


def test_rff_features_matches_reference_under_jit():
    params = rf.draw_rff(jax.random.key(0), 12, 96)
    z = randn((2, 3, 12))
    got = jax.jit(lambda z, p: rf.rff_features(z, p, temperature=TAU))(z, params)
    assert got.shape == (2, 3, 192)
    np.testing.assert_allclose(got, np_rff(z, params.omega, TAU), rtol=1e-5, atol=1e-5)


# (300, 1100): padded_dim 512 takes the FWHT path, the others the dense one.
@pytest.mark.parametrize("dim, num_features", [(100, 300), (64, 64), (1, 3), (5, 2), (300, 1100)])
def test_sorf_projection_matches_dense_reference(dim, num_features):
    params = rf.draw_sorf(jax.random.key(dim), dim, num_features)
    z = randn((4, dim), seed=dim)
    got = jax.jit(lambda z, p: rf.sorf_projection(z, p, temperature=TAU))(z, params)
    assert got.shape == (4, num_features)
    np.testing.assert_allclose(got, np_sorf_projection(z, params, TAU), rtol=1e-4, atol=1e-4)


def test_sorf_features_matches_reference_with_batch_shape():
    params = rf.draw_sorf(jax.random.key(3), 20, 40)
    z = randn((2, 5, 20))
    proj = np_sorf_projection(z, params, TAU)
    want = np.concatenate([np.cos(proj), np.sin(proj)], -1) / np.sqrt(40)
    got = jax.jit(lambda z: rf.sorf_features(z, params, temperature=TAU))(z)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("orthogonal", [False, True])
def test_positive_features_match_reference(orthogonal):
    params = rf.draw_positive(jax.random.key(0), 10, 50, orthogonal=orthogonal)
    z = randn((2, 3, 10)) / 3
    log_want = np_positive_log(z, params.omega, TAU)
    log_got = jax.jit(lambda z: rf.positive_log_features(z, params, temperature=TAU))(z)
    got = jax.jit(lambda z: rf.positive_features(z, params, temperature=TAU))(z)
    np.testing.assert_allclose(log_got, log_want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got, np.exp(log_want), rtol=1e-4)


def test_positive_features_are_strictly_positive():
    params = rf.draw_positive(jax.random.key(1), 32, 4096)
    z = randn((64, 32), seed=1)
    z /= np.linalg.norm(z, axis=-1, keepdims=True)
    for temperature in (0.1, 1.0):
        assert np.all(np.asarray(rf.positive_features(z, params, temperature=temperature)) > 0)


def test_positive_log_features_stay_finite_where_exp_overflows():
    dim, temperature = 1024, 0.5
    params = rf.draw_positive(jax.random.key(0), dim, 8)
    # z = w_0 sqrt(tau) / 2 maximises the first log-feature at ||w_0||^2 / 4 ~ 256 > log(f32 max).
    z = params.omega[:, 0] * np.sqrt(temperature) / 2
    log_phi = rf.positive_log_features(z, params, temperature=temperature)
    want = np_positive_log(z, params.omega, temperature)
    assert want[0] > 89  # exp would overflow float32
    assert np.all(np.isfinite(log_phi))
    np.testing.assert_allclose(log_phi, want, rtol=1e-5)
    assert np.isinf(rf.positive_features(z, params, temperature=temperature)[0])


# ----------------------------------------------------------------------------- dtypes, jit, vmap


@pytest.mark.parametrize(
    "features, draw",
    [
        (rf.rff_features, lambda k: rf.draw_rff(k, 16, 64)),
        (rf.sorf_features, lambda k: rf.draw_sorf(k, 16, 64)),
        (rf.sorf_projection, lambda k: rf.draw_sorf(k, 16, 64)),
        (rf.positive_features, lambda k: rf.draw_positive(k, 16, 64)),
        (rf.positive_log_features, lambda k: rf.draw_positive(k, 16, 64)),
    ],
)
def test_bfloat16_inputs_give_bfloat16_outputs_close_to_float32(features, draw):
    params = draw(jax.random.key(0))
    z = jnp.asarray(randn((8, 16)) / 4, jnp.bfloat16)
    got = features(z, params, temperature=TAU)
    assert got.dtype == jnp.bfloat16
    want = features(z.astype(jnp.float32), params, temperature=TAU)
    np.testing.assert_allclose(got.astype(jnp.float32), want, rtol=2**-7, atol=2**-7)


def test_vmap_over_parameter_draws():
    keys = jax.random.split(jax.random.key(0), 3)
    z = randn((5, 8))

    def features(key):
        return rf.sorf_features(z, rf.draw_sorf(key, 8, 24), temperature=TAU)

    got = jax.jit(jax.vmap(features))(keys)
    want = np.stack([jax.jit(features)(k) for k in keys])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_vmap_over_inputs_and_traced_temperature():
    params = rf.draw_rff(jax.random.key(0), 6, 32)
    z = randn((4, 5, 6))
    temperatures = jnp.array([0.25, 0.5, 1.0, 2.0])
    got = jax.jit(jax.vmap(lambda z, t: rf.rff_features(z, params, temperature=t)))(z, temperatures)
    want = np.stack([np_rff(z[i], params.omega, float(t)) for i, t in enumerate(temperatures)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize(
    "features, params",
    [
        (rf.rff_features, rf.draw_rff(jax.random.key(0), 6, 8)),
        (rf.sorf_features, rf.draw_sorf(jax.random.key(0), 6, 8)),
        (rf.positive_features, rf.draw_positive(jax.random.key(0), 6, 8, orthogonal=True)),
        (rf.positive_log_features, rf.draw_positive(jax.random.key(0), 6, 8)),
    ],
)
def test_check_grads(features, params):
    z = jnp.asarray(randn((3, 6)) / 3)
    check_grads(
        jax.jit(lambda z: features(z, params, temperature=TAU)), (z,), order=1, modes=("fwd", "rev")
    )


def test_sorf_gradient_matches_dense_reference():
    params = rf.draw_sorf(jax.random.key(4), 100, 200)
    z = randn((3, 100), seed=4)
    g = randn((3, 200), seed=5)
    w = np_sorf_matrix(params.signs, 100, 200, TAU)
    grad = jax.grad(lambda z: jnp.sum(rf.sorf_projection(z, params, temperature=TAU) * g))(z)
    np.testing.assert_allclose(grad, g @ w.T, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- kernel accuracy


def unit_pairs(dim, num_pairs=64, seed=0):
    """Unit vectors x, y whose cosines cover [-1, 1] (for dim = 1, all sign combinations)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((num_pairs, dim))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    if dim == 1:
        return x, np.sign(rng.standard_normal((num_pairs, 1)))
    u = rng.standard_normal((num_pairs, dim))
    u -= np.sum(u * x, -1, keepdims=True) * x
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    cos = rng.uniform(-1, 1, (num_pairs, 1))
    return x, cos * x + np.sqrt(1 - cos**2) * u


NUM_FEATURES = (64, 1024, 16384)
NUM_DRAWS = 4


def kernel_estimates(features, draw, x, y, temperature, num_draws=NUM_DRAWS, sizes=NUM_FEATURES):
    """Phi(x).Phi(y) for each D in `sizes`, as [num_draws, num_pairs] arrays."""
    estimates = []
    for num_features in sizes:
        keys = jax.random.split(jax.random.key(num_features), num_draws)

        @jax.jit
        @jax.vmap
        def estimate(key, num_features=num_features):
            params = draw(key, num_features)
            phi_x = features(x.astype(np.float32), params, temperature=temperature)
            phi_y = features(y.astype(np.float32), params, temperature=temperature)
            return jnp.sum(phi_x * phi_y, axis=-1)

        estimates.append(np.asarray(estimate(keys), np.float64))
    return estimates


def kernel_errors(features, draw, x, y, temperature, num_draws=NUM_DRAWS):
    """Mean |Phi(x).Phi(y) - k(x, y)| over pairs and `num_draws` draws, for each D."""
    want = gaussian_kernel(x, y, temperature)
    estimates = kernel_estimates(features, draw, x, y, temperature, num_draws)
    return [float(np.mean(np.abs(e - want))) for e in estimates]


def rff_error_bound(x, y, temperature, num_features):
    """Upper bound on the expected mean absolute error of the cosine-feature estimate.

    One term cos(w . (x - y)) has variance (1 + k(x, y)^4) / 2 - k(x, y)^2 (k^4 = k(2x, 2y)),
    the mean of D i.i.d. terms has variance / D, and E|e| <= sqrt(E e^2) (Jensen).
    """
    k = gaussian_kernel(x, y, temperature)
    return float(np.mean(np.sqrt(((1 + k**4) / 2 - k**2) / num_features)))


def positive_error_bound(x, y, temperature, num_features):
    """As `rff_error_bound` for positive features: variance exp(4 x.y / tau) - k(x, y)^2."""
    k = gaussian_kernel(x, y, temperature)
    var = np.exp(4 * np.sum(x * y, -1) / temperature) - k**2
    return float(np.mean(np.sqrt(var / num_features)))


# The measured error is an average over pairs and draws of a quantity whose expectation is below
# the bound (Jensen; about 0.8 x the bound for near-Gaussian errors); 25% slack covers the
# sampling noise of that average, which is why dim = 1 (only two distinct distances) averages
# over more draws.
SLACK = 1.25


def assert_converges(errors, bound):
    print(f"errors {errors}, bound {bound:.5f}")
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < SLACK * bound, (errors, bound)


@pytest.mark.parametrize("dim", [1, 16])
def test_rff_kernel_error_shrinks_like_one_over_sqrt_d(dim):
    x, y = unit_pairs(dim, num_pairs=8 if dim == 1 else 64)
    draws = 32 if dim == 1 else NUM_DRAWS
    errors = kernel_errors(rf.rff_features, lambda k, n: rf.draw_rff(k, dim, n), x, y, 1.0, draws)
    assert_converges(errors, rff_error_bound(x, y, 1.0, NUM_FEATURES[-1]))


@pytest.mark.parametrize("dim", [100])
def test_sorf_kernel_error_shrinks(dim):
    # SORF's variance is below RFF's (Yu et al., 2016, Thm. 3 for ORF, observed for SORF) and
    # its bias is negligible at these dimensions, so the RFF bound applies.
    x, y = unit_pairs(dim)
    errors = kernel_errors(rf.sorf_features, lambda k, n: rf.draw_sorf(k, dim, n), x, y, 1.0)
    assert_converges(errors, rff_error_bound(x, y, 1.0, NUM_FEATURES[-1]))


def test_sorf_with_dim_one_is_the_cosine_kernel():
    # With dim = 1 the transform is trivial: every projection is +-z / sqrt(tau), so the
    # estimate is cos((x - y) / sqrt(tau)) for every D, a bias that no number of features
    # removes (SORF is biased for small dim; Yu et al., 2016).
    x, y = unit_pairs(1)
    params = rf.draw_sorf(jax.random.key(0), 1, 1024)
    k = jnp.sum(
        rf.sorf_features(x, params, temperature=TAU) * rf.sorf_features(y, params, temperature=TAU),
        -1,
    )
    np.testing.assert_allclose(k, np.cos((x - y)[:, 0] / np.sqrt(TAU)), atol=1e-5)


def sphere_kernel(x, y, temperature, dim):
    """E cos(w . (x - y) / sqrt(tau)) for w uniform on the sphere of radius sqrt(dim) in R^dim."""
    nu = dim / 2 - 1
    t = np.sqrt(dim / temperature) * np.linalg.norm(x - y, axis=-1)
    t = np.maximum(t, 1e-9)
    return scipy.special.gamma(dim / 2) * (2 / t) ** nu * scipy.special.jv(nu, t)


def test_sorf_bias_at_small_dim_is_the_fixed_row_norm():
    # Every row of sqrt(p) H D1 H D2 H D3 has norm exactly sqrt(p), where a Gaussian row's norm
    # is chi_p distributed; so for small p SORF estimates the kernel of directions uniform on
    # that sphere (a Bessel function), not the Gaussian kernel. The gap shrinks like 1 / p.
    dim = 8
    x, y = unit_pairs(dim)
    [estimate] = kernel_estimates(
        rf.sorf_features, lambda k, n: rf.draw_sorf(k, dim, n), x, y, 1.0, sizes=(16384,)
    )
    sphere = sphere_kernel(x, y, 1.0, dim)
    to_sphere = np.mean(np.abs(estimate - sphere))
    to_gaussian = np.mean(np.abs(estimate - gaussian_kernel(x, y, 1.0)))
    bias = np.mean(np.abs(sphere - gaussian_kernel(x, y, 1.0)))
    assert bias > 0.03
    assert to_sphere < SLACK * rff_error_bound(x, y, 1.0, 16384) < to_gaussian


@pytest.mark.parametrize("orthogonal", [False, True])
def test_positive_kernel_error_shrinks(orthogonal):
    dim = 16

    def draw(key, num_features):
        return rf.draw_positive(key, dim, num_features, orthogonal=orthogonal)

    x, y = unit_pairs(dim)
    errors = kernel_errors(rf.positive_features, draw, x, y, 1.0)
    assert_converges(errors, positive_error_bound(x, y, 1.0, NUM_FEATURES[-1]))


# ----------------------------------------------------------------------------- structure


def _dot_contraction_sizes(jaxpr):
    """Sizes of all contracted dimensions of dot_generals in a (closed) jaxpr, recursively."""
    sizes = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            shape = eqn.invars[0].aval.shape
            sizes.extend(shape[a] for a in lhs_contract)
        for value in eqn.params.values():
            for inner in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(inner, "jaxpr", inner)
                if hasattr(inner, "eqns"):
                    sizes.extend(_dot_contraction_sizes(inner))
    return sizes


@pytest.mark.parametrize("dim, batch", [(300, 8), (512, 4096)])
def test_sorf_fwht_path_never_multiplies_by_a_dense_padded_dim_matrix(dim, batch):
    params = rf.draw_sorf(jax.random.key(0), dim, 2 * dim)
    padded = params.signs.shape[-1]
    assert padded > _sorf._DENSE_MAX_DIM
    closed = jax.make_jaxpr(lambda z: rf.sorf_projection(z, params, temperature=TAU))(
        jnp.zeros((batch, dim))
    )
    sizes = _dot_contraction_sizes(closed.jaxpr)
    assert sizes, "expected the Hadamard stages as small dot_generals"
    assert max(sizes) < padded, sizes
    for const in closed.consts:
        assert np.shape(const)[-2:] != (padded, padded)


def test_sorf_small_padded_dim_is_one_dense_matmul_over_dim():
    params = rf.draw_sorf(jax.random.key(0), 100, 300)  # padded_dim 128: the dense path
    closed = jax.make_jaxpr(lambda z: rf.sorf_projection(z, params, temperature=TAU))(
        jnp.zeros((64, 100))
    )
    # the Hadamard stages (contracting <= 16) build W_SORF from the identity, then z @ W_SORF
    assert sorted(set(_dot_contraction_sizes(closed.jaxpr)))[-1] == 100


@pytest.mark.parametrize(
    "dim, num_features, rows, norms",
    [
        (5, 2, 3, "fixed"),
        (100, 300, 7, "chi"),
        (256, 256, 1031, "fixed"),  # 1031 rows of 1 KiB: tiles plus a tail on CPU
        (300, 1100, 1031, "chi"),  # [1031, 2048] intermediates: tiled with a tail
        (512, 512, 4096, "fixed"),  # tiles that divide the rows
    ],
)
def test_sorf_dense_and_fwht_paths_agree(dim, num_features, rows, norms):
    params = rf.draw_sorf(jax.random.key(dim), dim, num_features, norms=norms)
    z = jnp.asarray(randn((rows, dim), seed=dim))
    g = jnp.asarray(randn((rows, num_features), seed=dim + 1))

    def value_and_grad(path):
        def f(z):
            return jnp.sum(_sorf._projection(z, params, TAU, path=path) * g)

        proj = jax.jit(lambda z: _sorf._projection(z, params, TAU, path=path))(z)
        return proj, jax.jit(jax.grad(f))(z)

    (p_dense, g_dense), (p_fwht, g_fwht) = value_and_grad("dense"), value_and_grad("fwht")
    np.testing.assert_allclose(p_dense, p_fwht, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(g_dense, g_fwht, rtol=1e-4, atol=1e-4)
    want = np_sorf_projection(np.asarray(z), params, TAU)
    if params.scales is not None:  # column j is row j % p of block j // p
        want = want * np.asarray(params.scales).reshape(-1)[:num_features]
    np.testing.assert_allclose(p_fwht, want, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: rf.draw_rff(0, 4, 8), r"draw_rff: `key` must be a PRNG key"),
        (lambda: rf.draw_rff(jax.random.key(0), 0, 8), r"draw_rff: `dim` must be a positive"),
        (lambda: rf.draw_rff(jax.random.key(0), 4, 0), r"draw_rff: `num_features` must be"),
        (lambda: rf.draw_rff(jax.random.key(0), 4, 2.5), r"draw_rff: `num_features` must be"),
        (
            lambda: rf.draw_rff(jax.random.key(0), 4, 8, dtype=jnp.int32),
            r"draw_rff: `dtype` must be a floating dtype, got int32",
        ),
        (lambda: rf.draw_sorf(None, 4, 8), r"draw_sorf: `key` is required"),
        (lambda: rf.draw_sorf(jax.random.key(0), -3, 8), r"draw_sorf: `dim` must be .* got -3"),
        (lambda: rf.draw_sorf(jax.random.key(0), 4, True), r"draw_sorf: `num_features`"),
        (lambda: rf.draw_positive(jax.random.key(0), 4.0, 8), r"draw_positive: `dim`"),
        (lambda: rf.draw_positive(jax.random.key(0), 4, -1), r"draw_positive: `num_features`"),
    ],
)
def test_bad_draw_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


PARAMS = {
    "rff_features": rf.draw_rff(jax.random.key(0), 4, 8),
    "sorf_features": rf.draw_sorf(jax.random.key(0), 4, 8),
    "sorf_projection": rf.draw_sorf(jax.random.key(0), 4, 8),
    "positive_features": rf.draw_positive(jax.random.key(0), 4, 8),
    "positive_log_features": rf.draw_positive(jax.random.key(0), 4, 8),
}


@pytest.mark.parametrize("name", sorted(PARAMS))
@pytest.mark.parametrize(
    "z, temperature, match",
    [
        (np.ones((2, 4), np.int32), 1.0, r"`z` must have a floating dtype, got int32"),
        (np.ones((2, 5), np.float32), 1.0, r"`z` must have last dimension dim=4 .* \(2, 5\)"),
        (np.float32(1.0), 1.0, r"`z` must have shape \[\.\.\., dim\]"),
        (np.ones((2, 4), np.float32), 0.0, r"`temperature` must be a finite number > 0, got 0.0"),
        (np.ones((2, 4), np.float32), -1.0, r"`temperature` must be a finite number > 0"),
        (np.ones((2, 4), np.float32), float("nan"), r"`temperature` must be a finite number"),
    ],
)
def test_bad_feature_arguments(name, z, temperature, match):
    features = getattr(rf, name)
    with pytest.raises(ValueError, match=rf"{name}: {match}"):
        features(z, PARAMS[name], temperature=temperature)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_wrong_params_type(name):
    wrong = (
        PARAMS["sorf_features"] if name.startswith(("rff", "positive")) else PARAMS["rff_features"]
    )
    with pytest.raises(ValueError, match=rf"{name}: `params` must"):
        getattr(rf, name)(np.ones((2, 4), np.float32), wrong, temperature=1.0)


def test_draw_sorf_chi_norms_rescale_the_fixed_rows():
    """norms='chi' keeps the signs of the same key and multiplies each projection by its row's
    factor r / sqrt(p), with r^2 / p ~ chi^2_p / p (mean 1, variance 2 / p)."""
    key = jax.random.key(3)
    fixed, chi = rf.draw_sorf(key, 16, 64 * 256), rf.draw_sorf(key, 16, 64 * 256, norms="chi")
    assert fixed.scales is None and chi.scales.shape == (1024, 16)
    np.testing.assert_array_equal(chi.signs, fixed.signs)
    sq = np.asarray(chi.scales, np.float64) ** 2
    assert abs(sq.mean() - 1.0) < 4 * np.sqrt(2 / 16 / sq.size)
    assert abs(sq.var() / (2 / 16) - 1.0) < 0.1
    z = randn((5, 16))
    want = rf.sorf_projection(z, fixed, temperature=0.5) * chi.scales.reshape(-1)
    np.testing.assert_allclose(
        rf.sorf_projection(z, chi, temperature=0.5), want, rtol=1e-5, atol=1e-5
    )


def _orthogonal_pair_estimates(norms, dim=16, temperature=0.5, draws=2000):
    def one(key):
        k1, k2, k3 = jax.random.split(key, 3)
        x = jax.random.normal(k1, (dim,))
        x = x / jnp.linalg.norm(x)
        u = jax.random.normal(k2, (dim,))
        u = u - (u @ x) * x
        y = u / jnp.linalg.norm(u)
        params = rf.draw_sorf(k3, dim, 1024, norms=norms)
        phi = lambda v: rf.sorf_features(v, params, temperature=temperature)  # noqa: E731
        return phi(x) @ phi(y)

    keys = jax.random.split(jax.random.key(0), draws)
    return np.asarray(jax.jit(jax.vmap(one))(keys), np.float64)


def test_sorf_chi_norms_remove_most_of_the_fixed_norm_bias():
    """d = 16, tau = 0.5, orthogonal unit vectors (k = e^-2): ESCo's SORF comes out about 29%
    low, chi norms within a few percent (standard error of the mean ~0.3%)."""
    exact = np.exp(-2.0)
    fixed = _orthogonal_pair_estimates("fixed").mean() / exact - 1.0
    chi = _orthogonal_pair_estimates("chi").mean() / exact - 1.0
    assert fixed < -0.2, fixed
    assert abs(chi) < 0.04, chi


def test_draw_sorf_names_a_bad_norms_value():
    with pytest.raises(ValueError, match=r"draw_sorf.*norms.*\['fixed', 'chi'\].*'gaussian'"):
        rf.draw_sorf(jax.random.key(0), 8, 8, norms="gaussian")


def test_esco_loss_takes_chi_norm_sorf_features():
    from jaxcl import losses

    za, zb = randn((32, 16), 1), randn((32, 16), 2)
    params = rf.draw_sorf(jax.random.key(0), 16, 256, norms="chi")
    value = losses.esco_loss(za, zb, features=params, method="sorf", temperature=0.5, lam=1.0)
    fixed = rf.draw_sorf(jax.random.key(0), 16, 256)
    other = losses.esco_loss(za, zb, features=fixed, method="sorf", temperature=0.5, lam=1.0)
    assert np.isfinite(float(value)) and float(value) != float(other)


def test_sorf_dense_path_keeps_float64():
    with jax.enable_x64(True):
        params = rf.draw_sorf(jax.random.key(0), 100, 300)  # padded_dim 128: the dense path
        z = np.random.default_rng(0).standard_normal((4, 100))
        got = rf.sorf_projection(jnp.asarray(z, jnp.float64), params, temperature=TAU)
        assert got.dtype == jnp.float64
        np.testing.assert_allclose(got, np_sorf_projection(z, params, TAU), rtol=1e-12)


@pytest.mark.parametrize("method", ["rff", "sorf", "positive", "exact"])
@pytest.mark.parametrize("chunk_size", [None, 5])
def test_esco_loss_keeps_float32_embeddings_in_float32_under_x64(method, chunk_size):
    """Switching float64 on must not change what a float32 loss computes: the feature sums
    and the loss accumulate in the embeddings' dtype, not the default one, on the one-block
    and the chunked path alike; float64 embeddings are computed in float64 and the loss
    returned in float32, as every loss (chunked, the scans' carries once mixed float32 and
    float64 and failed)."""
    from jaxcl import losses

    za, zb = (jnp.asarray(randn((32, 16), s), jnp.float32) for s in (1, 2))
    draw = {"rff": rf.draw_rff, "sorf": rf.draw_sorf, "positive": rf.draw_positive}
    params = draw[method](jax.random.key(0), 16, 256) if method in draw else None

    def loss(a, b, negatives="cross"):
        return losses.esco_loss(
            a, b, features=params, method=method, temperature=0.5, lam=1.0,
            negatives=negatives, chunk_size=chunk_size,
        )  # fmt: skip

    # (Jitted: the dtypes are fixed when tracing, under the x64 setting of the call.)
    value_and_grad = jax.jit(jax.value_and_grad(loss), static_argnums=2)
    for negatives in ("cross", "both"):
        want, want_grad = value_and_grad(za, zb, negatives)
        with jax.enable_x64(True):
            got, grad = value_and_grad(za, zb, negatives)
            assert got.dtype == grad.dtype == jnp.float32
            assert float(got) == pytest.approx(float(want), rel=1e-6)  # float32 arithmetic
            np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-7)
            a64, b64 = (jnp.asarray(x, jnp.float64) for x in (za, zb))
            got64, grad64 = value_and_grad(a64, b64, negatives)
            assert (got64.dtype, grad64.dtype) == (jnp.float32, jnp.float64)  # every loss f32
            assert float(got64) == pytest.approx(float(want), rel=1e-5)


def _sorf_params(blocks, padded_dim, dim, num_features, scales_shape=None):
    signs = jnp.ones((blocks, 3, padded_dim), jnp.float32)
    scales = None if scales_shape is None else jnp.ones(scales_shape, jnp.float32)
    return rf.SORFParams(signs=signs, dim=dim, num_features=num_features, scales=scales)


@pytest.mark.parametrize(
    "params, match",
    [
        (
            _sorf_params(2, 6, 5, 8),
            r"`params.signs` must be \[num_blocks, 3, padded_dim\] with padded_dim a power of "
            r"two >= dim=5, got shape \(2, 3, 6\)",
        ),
        (
            _sorf_params(1, 4, 5, 4),
            r"`params.signs` .* power of two >= dim=5, got shape \(1, 3, 4\)",
        ),
        (
            _sorf_params(1, 8, 5, 9),
            r"`params.num_features`=9 exceeds the 1 x 8 projections .* need num_features <= 8",
        ),
        (
            _sorf_params(2, 8, 5, 16, scales_shape=(1, 8)),
            r"`params.scales` must be None or of shape .* \(2, 8\) like signs\[:, 0\], got "
            r"shape \(1, 8\)",
        ),
        (_sorf_params(1, 8, 0, 8), r"`params.dim` must be a positive integer, got 0"),
    ],
)
def test_sorf_params_whose_fields_disagree_are_refused(params, match):
    # Before, only signs' rank was checked: scales [1, 8] for 2 blocks silently broadcast
    # one block's norms over both, and the other cases failed deep inside (or not at all).
    z = np.ones((2, max(params.dim, 1)), np.float32)
    for name in ("sorf_projection", "sorf_features"):
        with pytest.raises(ValueError, match=rf"{name}: {match}"):
            getattr(rf, name)(z, params, temperature=1.0)


def test_draw_positive_orthogonal_float64_is_orthogonal_to_float64_rounding():
    # Before, the QR ran in float32 whatever `dtype`: columns orthogonal only to ~1e-6.
    with jax.enable_x64(True):
        omega = rf.draw_positive(jax.random.key(0), 8, 16, orthogonal=True, dtype=jnp.float64)
        assert omega.omega.dtype == jnp.float64
        omega = np.asarray(omega.omega)
    for start in (0, 8):
        gram = omega[:, start : start + 8].T @ omega[:, start : start + 8]
        off = np.abs(gram - np.diag(np.diag(gram))).max() / np.abs(np.diag(gram)).max()
        assert off < 1e-12, off


@pytest.mark.parametrize("flag", ["False", 0, 1, None, np.array(True)])
def test_draw_positive_orthogonal_must_be_a_bool(flag):
    # Before, "False" was truthy and drew orthogonal directions.
    with pytest.raises(ValueError, match=r"draw_positive: `orthogonal` must be a bool"):
        rf.draw_positive(jax.random.key(0), 4, 8, orthogonal=flag)
    a = rf.draw_positive(jax.random.key(0), 4, 8, orthogonal=np.bool_(False)).omega
    np.testing.assert_array_equal(a, rf.draw_positive(jax.random.key(0), 4, 8).omega)
