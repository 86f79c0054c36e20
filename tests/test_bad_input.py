"""Bad input (issue #12): masked rows holding NaN/inf, index arguments, keys, temperatures.

Masked rows must not leak into gradients: the value and gradient of a loss with NaN, +inf
and -inf in the rows excluded by its mask must equal those of the same loss on the batch
with those rows deleted, and the masked rows' gradient must be exactly 0. Index-like
arguments are checked when concrete; keys and temperatures of the wrong kind fail with a
``ValueError`` naming the function and the argument.
"""

import functools

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import pytest

from jaxcl import graphs, losses, mixers
from jaxcl import random_features as rf
from jaxcl.losses import _infonce

N, D = 10, 6
KEEP = np.array([1, 1, 0, 1, 0, 1, 1, 1, 0, 1], bool)


def _poison(z, seed):
    """``z`` with NaN, +inf and -inf in its masked rows (which one where depends on ``seed``)."""
    z = np.array(z)
    masked = np.flatnonzero(~KEEP)
    for i, row in enumerate(masked):
        z[row] = (np.nan, np.inf, -np.inf)[(i + seed) % 3]
    z[masked[0], 0] = 1.0  # a row mixing finite and NaN entries too
    return jnp.asarray(z)


def _views(seed=0, d=D):
    za, zb = jax.random.normal(jax.random.key(seed), (2, N, d))
    return za, zb


def _assert_masked_equals_subset(loss, za, zb, *, jit):
    """Value and gradients with poisoned masked rows equal those of the kept rows alone."""
    where = jnp.asarray(KEEP)
    masked = jax.value_and_grad(lambda a, b: loss(a, b, where=where), argnums=(0, 1))
    if jit:
        masked = jax.jit(masked)
    value, grads = masked(_poison(za, 0), _poison(zb, 1))
    want_value, want_grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(za[KEEP], zb[KEEP])
    assert np.isfinite(value)
    np.testing.assert_allclose(value, want_value, rtol=1e-5, atol=1e-6)
    for grad, want in zip(grads, want_grads, strict=True):
        grad = np.asarray(grad)
        assert np.all(grad[~KEEP] == 0.0), grad[~KEEP]
        np.testing.assert_allclose(grad[KEEP], want, rtol=1e-4, atol=1e-6)


ESCO = functools.partial(
    losses.esco_loss, key=jax.random.key(3), lam=1.2, temperature=0.5, num_features=64
)
LOSSES = {
    "infonce": functools.partial(losses.infonce, temperature=0.5),
    "infonce_sym_unnormalized": functools.partial(
        losses.infonce, temperature=2.0, symmetric=True, normalize=False
    ),
    "nt_xent_bounded": functools.partial(losses.nt_xent, temperature=0.5),
    "nt_xent_generic": functools.partial(losses.nt_xent, temperature=0.01),
    "nt_xent_unnormalized": functools.partial(losses.nt_xent, temperature=2.0, normalize=False),
    **{
        f"esco_{method}": functools.partial(ESCO, method=method, symmetric=True)
        for method in ("exact", "rff", "sorf", "positive")
    },
    **{
        f"esco_{method}_intra_chunked": functools.partial(
            ESCO, method=method, negatives="intra", chunk_size=3
        )
        for method in ("exact", "rff", "sorf", "positive")
    },
    "esco_rff_unnormalized": functools.partial(
        ESCO, method="rff", normalize=False, temperature=4.0
    ),
}


EAGER = ("infonce", "nt_xent_bounded", "esco_exact", "esco_sorf")  # the rest jitted only


@pytest.mark.parametrize(
    "name, jit", [(name, True) for name in sorted(LOSSES)] + [(name, False) for name in EAGER]
)
def test_masked_nan_and_inf_rows_do_not_leak(name, jit):
    za, zb = _views(0)
    _assert_masked_equals_subset(LOSSES[name], za, zb, jit=jit)


@pytest.mark.parametrize("dim", [D, 300])  # the wide case takes the one-product Gram gradient
def test_nt_xent_blocked_and_gram_paths_mask_nan_rows(dim, monkeypatch):
    monkeypatch.setattr(_infonce, "_GRAM_BLOCK_ROWS", 3)  # same-view matrices in blocks
    za, zb = _views(1, d=dim)
    for temperature in (0.5, 0.01):  # bounded custom-JVP path, generic path
        loss = functools.partial(losses.nt_xent, temperature=temperature)
        _assert_masked_equals_subset(loss, za, zb, jit=True)


def _local_global_case(seed=0):
    n_graph = 4
    node_graph = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 3])
    graph_keep = np.array([1, 1, 0, 1], bool)
    node_keep = KEEP & graph_keep[node_graph]
    nodes, graphs_ = jax.random.normal(jax.random.key(seed), (2, N, D))
    return nodes, graphs_[:n_graph], node_graph, node_keep, graph_keep


@pytest.mark.parametrize("jit", [False, True])
def test_local_global_jsd_masked_nan_rows_do_not_leak(jit):
    nodes, graph_emb, node_graph, node_keep, graph_keep = _local_global_case()
    bad_nodes = jnp.where(node_keep[:, None], nodes, jnp.nan).at[2].set(jnp.inf)
    bad_graphs = jnp.where(graph_keep[:, None], graph_emb, -jnp.inf)

    def masked(n, g):
        return losses.local_global_jsd(
            n, g, node_graph, node_mask=jnp.asarray(node_keep), graph_mask=jnp.asarray(graph_keep)
        )

    fn = jax.value_and_grad(masked, argnums=(0, 1))
    value, (g_nodes, g_graphs) = (jax.jit(fn) if jit else fn)(bad_nodes, bad_graphs)
    new_id = np.cumsum(graph_keep) - 1
    want, (w_nodes, w_graphs) = jax.value_and_grad(
        lambda n, g: losses.local_global_jsd(n, g, new_id[node_graph[node_keep]]), argnums=(0, 1)
    )(nodes[node_keep], graph_emb[graph_keep])
    np.testing.assert_allclose(value, want, rtol=1e-5)
    assert np.all(np.asarray(g_nodes)[~node_keep] == 0)
    assert np.all(np.asarray(g_graphs)[~graph_keep] == 0)
    np.testing.assert_allclose(g_nodes[node_keep], w_nodes, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(g_graphs[graph_keep], w_graphs, rtol=1e-4, atol=1e-7)


MASKED_MIXERS = {
    "linear_mixup": functools.partial(mixers.linear_mixup, alpha=0.5),
    "geometric_mixup": functools.partial(mixers.geometric_mixup, alpha=0.5),
    "binary_mixup": functools.partial(mixers.binary_mixup, rho=0.5),
    "dacl_plus_mixup": functools.partial(mixers.dacl_plus_mixup, alpha=0.5, rho=0.5),
}


@pytest.mark.parametrize("name", sorted(MASKED_MIXERS))
def test_mixers_masked_nan_and_inf_rows_pass_gradients_through(name):
    """Masked rows come back unchanged, so their gradient is the cotangent itself; the real
    rows' values and gradients are those with the masked rows zeroed."""
    mix = functools.partial(MASKED_MIXERS[name], jax.random.key(0), where=jnp.asarray(KEEP))
    x = jnp.abs(jax.random.normal(jax.random.key(1), (N, D))) + 0.1
    cotangent = jax.random.normal(jax.random.key(2), (N, D))
    poisoned, zeroed = _poison(x, 0), jnp.where(KEEP[:, None], x, 0.0)

    def objective(v):
        return jnp.sum(jnp.where(KEEP[:, None], mix(v), 0.0) * cotangent) + jnp.sum(
            jnp.where(KEEP[:, None], 0.0, mix(v))
        )

    out = mix(poisoned)
    np.testing.assert_array_equal(np.asarray(out)[~KEEP], np.asarray(poisoned)[~KEEP])
    np.testing.assert_allclose(np.asarray(out)[KEEP], np.asarray(mix(zeroed))[KEEP], rtol=1e-6)
    grad = np.asarray(jax.grad(objective)(poisoned))
    want = np.asarray(jax.grad(objective)(zeroed))
    assert np.all(np.isfinite(grad)), grad
    np.testing.assert_array_equal(grad[~KEEP], 1.0)
    np.testing.assert_allclose(grad[KEEP], want[KEEP], rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------- NaN in real rows


def test_nan_in_a_real_row_propagates_to_the_output():
    """Ordinary JAX behaviour, stated in the README: not filtered, not hidden."""
    za, zb = _views(2)
    za = za.at[3, 1].set(jnp.nan)
    for name, loss in LOSSES.items():
        assert np.isnan(loss(za, zb)), name
    assert np.isnan(losses.imix_npair_loss(za, zb, lam=0.5, perm=np.arange(N), temperature=0.5))
    assert np.isnan(losses.local_global_jsd(za, zb[:2], np.arange(N) % 2))
    for name, mix in MASKED_MIXERS.items():
        assert np.isnan(mix(jax.random.key(0), za)[3]).any(), name
    assert np.isnan(rf.fwht(za[:, :4])[3]).all()


# --------------------------------------------------------------------- index arguments


def _imix(**override):
    za, zb = _views(3)
    args = dict(lam=0.5, perm=np.roll(np.arange(N), 1), temperature=0.5)
    args.update(override)
    return losses.imix_npair_loss(za, zb, **args)


@pytest.mark.parametrize(
    "override, message",
    [
        (dict(perm=np.arange(1, N + 1)), "`perm` must hold row indices of this batch"),
        (dict(perm=np.arange(1, N + 1)), "in [0, 10), got perm[9] = 10 (1 out of range)"),
        (dict(perm=np.array([9, 0, 1, 2, 3, 4, 5, 6, -1, 8])), "got perm[8] = -1"),
        (dict(perm=jnp.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 99])), "perm[9] = 99"),  # on device
        (dict(lam=np.r_[np.full(N - 1, 0.5), 1.5].astype(np.float32)), "got lam[9] = 1.5"),
        (dict(lam=np.full(N, np.nan, np.float32)), "lam[0] = nan (10 out of range)"),
        (dict(lam=-0.5), "`lam` must lie in [0.0, 1.0], got -0.5"),
        (dict(lam=True), "`lam` must be a real scalar"),
        (dict(lam="0.5"), "`lam` must be a real scalar"),
    ],
)
def test_imix_perm_and_lam_out_of_range_are_refused(override, message):
    with pytest.raises(ValueError) as err:
        _imix(**override)
    assert "imix_npair_loss" in str(err.value)
    assert message in str(err.value), str(err.value)


def test_imix_perm_under_jit_follows_gather():
    """Traced ``perm`` cannot be checked: negative indices count from the end, indices past
    the end read NaN (as the docstring says)."""
    za, zb = _views(3)
    loss = jax.jit(
        lambda p: losses.imix_npair_loss(za, zb, lam=0.5, perm=p, temperature=0.5),
    )
    wrapped = np.roll(np.arange(N), 1)  # [N - 1, 0, 1, ...]
    negative = np.where(wrapped == N - 1, -1, wrapped)  # N - 1 written as -1
    past_end = np.where(wrapped == N - 1, N, wrapped)
    np.testing.assert_allclose(loss(negative), loss(wrapped), rtol=1e-6)
    assert np.isnan(loss(past_end))


def test_imix_lam_one_as_a_python_int_is_accepted():
    """The docstring's own "with lam = 1" case: plain one-directional InfoNCE."""
    za, zb = _views(3)
    want = losses.infonce(za, zb, temperature=0.5)
    np.testing.assert_allclose(_imix(lam=1), want, rtol=1e-6)
    np.testing.assert_allclose(_imix(lam=np.ones(N, np.int32)), want, rtol=1e-6)
    np.testing.assert_allclose(_imix(lam=0), _imix(lam=0.0), rtol=1e-6)


def _jsd(node_graph, **kw):
    nodes, graph_emb, *_ = _local_global_case()
    return losses.local_global_jsd(nodes, graph_emb, node_graph, **kw)


@pytest.mark.parametrize(
    "node_graph, message",
    [
        (np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 4]), "got node_graph[9] = 4"),
        (np.array([0, 0, 1, -1, 1, 2, 2, 3, 3, 3]), "got node_graph[3] = -1"),
        (jnp.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 7]), "got node_graph[9] = 7"),
    ],
)
def test_local_global_graph_ids_out_of_range_are_refused(node_graph, message):
    with pytest.raises(ValueError) as err:
        _jsd(node_graph)
    assert "local_global_jsd: `node_graph` must hold graph ids" in str(err.value)
    assert "in [0, 4)" in str(err.value)
    assert message in str(err.value), str(err.value)


def test_local_global_masked_nodes_may_carry_any_graph_id():
    ids = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 3])
    padded = np.where(KEEP, ids, 99)  # padding nodes pointing nowhere
    np.testing.assert_allclose(
        _jsd(padded, node_mask=jnp.asarray(KEEP)), _jsd(ids, node_mask=jnp.asarray(KEEP))
    )
    # Under jit the ids cannot be checked (documented); nothing is raised.
    nodes, graph_emb, *_ = _local_global_case()
    jax.jit(losses.local_global_jsd)(nodes, graph_emb, padded)


@pytest.mark.parametrize(
    "senders, receivers, message",
    [
        ([0, 1, 5], [1, 0, 0], "`senders` must hold node ids in [0, 3) (`num_nodes`), got "),
        ([0, 1, 5], [1, 0, 0], "senders[2] = 5"),
        ([0, 1, 2], [1, -2, 0], "`receivers` must hold node ids in [0, 3)"),
        ([0, 1, 2], [1, -2, 0], "receivers[1] = -2"),
    ],
)
@pytest.mark.parametrize("fn", [graphs.ppr_matrix, graphs.ppr_diffusion])
def test_ppr_edge_ids_out_of_range_name_the_argument_and_the_id(fn, senders, receivers, message):
    with pytest.raises(ValueError) as err:
        fn(np.array(senders), np.array(receivers), 3)
    assert f"{fn.__name__}: " in str(err.value)
    assert message in str(err.value), str(err.value)


# --------------------------------------------------------------------- PRNG keys

X = np.abs(np.random.default_rng(0).standard_normal((4, 5))).astype(np.float32)
_GRAPH = jraph.GraphsTuple(
    nodes=X,
    edges=None,
    senders=np.array([0, 1, 2]),
    receivers=np.array([1, 2, 0]),
    n_node=np.array([4]),
    n_edge=np.array([3]),
    globals=None,
)
KEY_TAKERS = {
    ("linear_mixup", "key"): lambda k: mixers.linear_mixup(k, X, alpha=0.5),
    ("geometric_mixup", "key"): lambda k: mixers.geometric_mixup(k, X, alpha=0.5),
    ("binary_mixup", "key"): lambda k: mixers.binary_mixup(k, X, rho=0.5),
    ("dacl_plus_mixup", "key"): lambda k: mixers.dacl_plus_mixup(k, X, alpha=0.5, rho=0.5),
    ("dacl_plus_mixup", "kind_key"): lambda k: mixers.dacl_plus_mixup(
        jax.random.key(0), X, alpha=0.5, rho=0.5, kind_key=k
    ),
    ("gaussian_noise", "key"): lambda k: mixers.gaussian_noise(k, X, scale=0.1),
    ("imix_mixup", "key"): lambda k: mixers.imix_mixup(k, X, alpha=1.0),
    ("cutmix", "key"): lambda k: mixers.cutmix(k, X, alpha=1.0, axes=(1,)),
    ("draw_rff", "key"): lambda k: rf.draw_rff(k, 4, 8),
    ("draw_sorf", "key"): lambda k: rf.draw_sorf(k, 4, 8),
    ("draw_positive", "key"): lambda k: rf.draw_positive(k, 4, 8, orthogonal=True),
    ("esco_loss", "key"): lambda k: losses.esco_loss(X, X, key=k, method="sorf", lam=1.0),
    ("drop_edges", "key"): lambda k: graphs.drop_edges(k, _GRAPH, 0.5),
    ("mask_features", "key"): lambda k: graphs.mask_features(k, X, 0.5),
}
WRONG_KEYS = {
    "batch_of_keys": jax.random.split(jax.random.key(0), 2),
    "raw_batch_of_keys": jax.random.split(jax.random.PRNGKey(0), 2),
    "raw_wrong_length": np.zeros((3,), np.uint32),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_KEYS))
@pytest.mark.parametrize("fn_arg", sorted(KEY_TAKERS), ids="-".join)
def test_a_key_of_the_wrong_kind_names_the_function_and_argument(fn_arg, wrong):
    fn, arg = fn_arg
    with pytest.raises(ValueError) as err:
        KEY_TAKERS[fn_arg](WRONG_KEYS[wrong])
    assert f"{fn}: `{arg}` must be one PRNG key" in str(err.value), str(err.value)
    assert str(tuple(WRONG_KEYS[wrong].shape)) in str(err.value), str(err.value)


@pytest.mark.parametrize("fn_arg", sorted(KEY_TAKERS), ids="-".join)
def test_one_key_of_either_kind_is_accepted(fn_arg):
    # A typed key and the legacy uint32 key of the same seed are the same key: equal outputs.
    call = KEY_TAKERS[fn_arg]
    typed, raw = call(jax.random.key(1)), call(jax.random.PRNGKey(1))
    typed_leaves, raw_leaves = jax.tree.leaves(typed), jax.tree.leaves(raw)
    assert jax.tree.structure(typed) == jax.tree.structure(raw) and typed_leaves
    for t, r in zip(typed_leaves, raw_leaves, strict=True):
        np.testing.assert_array_equal(np.asarray(t), np.asarray(r))


@pytest.mark.parametrize("fn_arg", [("linear_mixup", "key"), ("draw_sorf", "key")], ids="-".join)
def test_vmap_over_a_batch_of_keys_hands_each_call_one_key(fn_arg):
    keys = jax.random.split(jax.random.key(1), 2)
    batched = jax.vmap(KEY_TAKERS[fn_arg])(keys)
    one = KEY_TAKERS[fn_arg](keys[1])
    for b, o in zip(jax.tree.leaves(batched), jax.tree.leaves(one), strict=True):
        np.testing.assert_allclose(b[1], o, rtol=1e-6)


# --------------------------------------------------------------------- temperature

_PARAMS = {
    "rff": rf.draw_rff(jax.random.key(0), D, 8),
    "sorf": rf.draw_sorf(jax.random.key(0), D, 8),
    "positive": rf.draw_positive(jax.random.key(0), D, 8),
}
TEMPERATURE_TAKERS = {
    "infonce": lambda t, za, zb: losses.infonce(za, zb, temperature=t),
    "nt_xent": lambda t, za, zb: losses.nt_xent(za, zb, temperature=t),
    "esco_loss": lambda t, za, zb: ESCO(za, zb, temperature=t, method="rff"),
    "imix_npair_loss": lambda t, za, zb: losses.imix_npair_loss(
        za, zb, lam=0.5, perm=np.arange(N), temperature=t
    ),
    **{
        f"{family}_{kind}": functools.partial(
            lambda t, za, zb, name, params: getattr(rf, name)(za, params, temperature=t),
            name=f"{family}_{kind}",
            params=_PARAMS[family],
        )
        for family, kind in [
            ("rff", "features"),
            ("rff", "projection"),
            ("sorf", "features"),
            ("sorf", "projection"),
            ("positive", "features"),
            ("positive", "log_features"),
        ]
    },
}


@pytest.mark.parametrize(
    "temperature, shown",
    [
        (None, "None (NoneType)"),
        ("0.5", "'0.5' (str)"),
        (np.array([0.5, 1.0]), "shape (2,)"),
        (True, "True"),
    ],
    ids=["none", "string", "array", "bool"],
)
@pytest.mark.parametrize("name", sorted(TEMPERATURE_TAKERS))
def test_temperature_of_the_wrong_type_names_the_argument(name, temperature, shown):
    za, zb = _views(4)
    with pytest.raises(ValueError) as err:
        TEMPERATURE_TAKERS[name](temperature, za, zb)
    assert f"{name}: `temperature` must be a real number" in str(err.value), str(err.value)
    assert shown in str(err.value), str(err.value)


@pytest.mark.parametrize("name", sorted(TEMPERATURE_TAKERS))
def test_temperature_as_an_int_or_a_traced_scalar_is_accepted(name):
    za, zb = _views(4)
    call = TEMPERATURE_TAKERS[name]
    np.testing.assert_allclose(call(2, za, zb), call(2.0, za, zb), rtol=1e-6)
    np.testing.assert_allclose(
        jax.jit(call)(jnp.float32(2.0), za, zb), call(2.0, za, zb), rtol=1e-5, atol=1e-6
    )


def test_a_python_int_past_64_bits_is_a_named_value_error_not_a_type_error():
    from jaxcl import _checks

    huge = 10**400
    _checks.positive("f", "x", huge)  # a finite number > 0
    assert _checks.is_real(huge) and _checks.is_integer(huge)
    with pytest.raises(ValueError, match=r"f: `x` must lie in \[0, 1\]"):
        _checks.in_range("f", "x", huge, 0, 1)
    with pytest.raises(ValueError, match=r"f: `x` must be a finite number >= 0"):
        _checks.nonnegative("f", "x", -huge)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda z: losses.oucl_loss(z[:, :2], z, beta=1.0, margin=float("nan")),
            "oucl_loss: `margin` must be a finite number, got nan",
        ),
        (
            lambda z: mixers.mo_mix(z, threshold=float("nan")),
            "mo_mix: `threshold` must be a finite number, got nan",
        ),
        (
            lambda z: mixers.mo_mix(z, threshold=np.float32(np.inf)),
            r"mo_mix: `threshold` must be a finite number, got .*inf",
        ),
    ],
)
def test_non_finite_hyperparameters_are_refused(call, message):
    # (A NaN threshold compares false everywhere: every partner would be left out unseen.)
    z = jax.random.normal(jax.random.key(0), (6, 4))
    with pytest.raises(ValueError, match=message):
        call(z)


def test_image_helpers_refuse_what_they_would_misread():
    from jaxcl import augment
    from jaxcl.data import HostCrop

    with pytest.raises(
        ValueError, match="to_unit_range: `images` must be uint8 .* got dtype int32"
    ):
        augment.to_unit_range(np.full((2, 4, 4, 3), 200, np.int32))  # would pass as 200.0
    crop = HostCrop(8, views=1)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"HostCrop: `image` must be uint8.*float32"):
        crop(np.full((16, 16, 3), 0.5, np.float32), rng)  # would crop a black image
    with pytest.raises(ValueError, match=r"got dtype int32, values 0\.\.300"):
        crop(np.linspace(0, 300, 16 * 16 * 3).astype(np.int32).reshape(16, 16, 3), rng)
    ok = crop(np.full((16, 16, 3), 7, np.int64), rng)  # integers in range are taken
    assert ok.dtype == np.uint8 and np.all(ok == 7)
    params = jax.vmap(lambda k: augment.color_jitter_params(k, brightness=0.4))(
        jax.random.split(jax.random.key(0), 4)
    )
    with pytest.raises(ValueError, match="one image's: .* vmap apply_color_jitter"):
        augment.apply_color_jitter(jnp.zeros((4, 8, 8, 3)), params)
    with pytest.raises(ValueError, match="`params` must be the dict color_jitter_params"):
        augment.apply_color_jitter(jnp.zeros((8, 8, 3)), {"brightness": 1.0})
    with pytest.raises(ValueError, match="gaussian_kernel: `sigma` must be a finite number > 0"):
        augment.gaussian_kernel(0.0, 3)
    with pytest.raises(ValueError, match="gaussian_kernel: `kernel_size` must be odd, got 4"):
        augment.gaussian_kernel(1.0, 4)
    with pytest.raises(ValueError, match="resized_crop: `box` must hold integer .* float32"):
        augment.resized_crop(jnp.zeros((8, 8, 3)), jnp.array([0.5, 0.5, 3.7, 3.7]), 4)
    with pytest.raises(
        ValueError, match="crop_box: `height` and `width` must be positive ints, got 0, 32"
    ):
        augment.crop_box(jax.random.key(0), 0, 32)
    assert augment.crop_box(jax.random.key(0), np.int64(32), 32).shape == (4,)
    with pytest.raises(ValueError, match="rgb_to_grayscale: `channels` must be the int 1 or 3"):
        augment.rgb_to_grayscale(jnp.zeros((4, 4, 3)), channels=3.0)


def test_model_sizes_are_checked_by_name():
    from flax import nnx

    from jaxcl import models

    rngs = nnx.Rngs(0)
    cases = [
        (lambda: models.MLP(4, 8, rngs=rngs), "MLP: `widths` must be a non-empty sequence"),
        (lambda: models.MLP(0, (4,), rngs=rngs), "MLP: `in_features` must be a positive integer"),
        (lambda: models.mlp_encoder(4, depth=2, width=0, rngs=rngs), "mlp_encoder: `width`"),
        (
            lambda: models.projection_head(4, depth=2, width=8, out_dim=0, rngs=rngs),
            "projection_head: `out_dim` must be a positive integer, got 0",
        ),
        (lambda: models.FeedForward(4, width=-1, depth=2, rngs=rngs), "FeedForward: `width`"),
        (lambda: models.GCN(4, (8, 0), rngs=rngs), r"GCN: `widths\[1\]` must be a positive"),
        (lambda: models.GIN(4, width=64.0, depth=2, rngs=rngs), "GIN: `width` must be a positive"),
        (lambda: models.grace_encoder(4, out_dim=0, rngs=rngs), "grace_encoder: `out_dim`"),
    ]
    for build, message in cases:
        with pytest.raises(ValueError, match=message):
            build()


def test_folds_need_two_classes_and_enough_of_each():
    from jaxcl import data, evaluation

    x = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match="svm_kfold_accuracy: `y` must hold at least two classes"):
        evaluation.svm_kfold_accuracy(x, np.zeros(40, np.int32), num_folds=5)
    labels = np.array([0] * 20 + [1] * 2)
    with pytest.raises(ValueError, match="stratified_kfold: `num_folds` = 5 is more than .* 2"):
        data.stratified_kfold(labels, num_folds=5, seed=0)
    assert len(data.stratified_kfold(labels, num_folds=2, seed=0)) == 2


def test_image_batches_checks_its_arguments_at_the_call():
    from jaxcl import data

    with pytest.raises(ValueError, match="image_batches: `batch_size`"):
        data.image_batches(None, batch_size=-1)  # not only at the first next()
