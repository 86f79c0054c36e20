"""InfoNCE, NT-Xent and the i-Mix N-pair loss against independent NumPy references."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.test_util import check_grads
from scipy.special import logsumexp

from jaxcl import losses


def _unit(x):
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _infonce_ref(za, zb, t, normalize=True):
    a, b = (_unit(za), _unit(zb)) if normalize else (np.float64(za), np.float64(zb))
    logits = a @ b.T / t
    return np.mean(logsumexp(logits, axis=1) - np.diag(logits))


def _nt_xent_ref(za, zb, t):
    """DACL Algorithm 1, lines 17-21, written out with the interleaved 2N views."""
    n = za.shape[0]
    z = np.empty((2 * n, za.shape[1]))
    z[0::2], z[1::2] = za, zb  # z_{2k-1} = view A of k, z_{2k} = view B of k (0-based here)
    z = _unit(z)
    s = z @ z.T

    def ell(i, j):
        others = [k for k in range(2 * n) if k != i]
        return -(s[i, j] / t - logsumexp(s[i, others] / t))

    return sum(ell(2 * k, 2 * k + 1) + ell(2 * k + 1, 2 * k) for k in range(n)) / (2 * n)


def _views(seed, n=9, d=5, dtype=jnp.float32):
    ka, kb = jax.random.split(jax.random.key(seed))
    return (
        jax.random.normal(ka, (n, d), dtype),
        jax.random.normal(kb, (n, d), dtype),
    )


@pytest.mark.parametrize("temperature", [0.05, 0.5, 10.0])
@pytest.mark.parametrize("normalize", [True, False])
def test_infonce_matches_numpy(temperature, normalize):
    za, zb = _views(0)
    if not normalize:
        za, zb = za * 0.3, zb * 0.3
    fn = jax.jit(functools.partial(losses.infonce, temperature=temperature, normalize=normalize))
    np.testing.assert_allclose(
        fn(za, zb), _infonce_ref(za, zb, temperature, normalize), rtol=2e-5, atol=1e-5
    )


def test_infonce_symmetric_is_mean_of_directions():
    za, zb = _views(1)
    sym = losses.infonce(za, zb, temperature=0.3, symmetric=True)
    ref = 0.5 * (_infonce_ref(za, zb, 0.3) + _infonce_ref(zb, za, 0.3))
    np.testing.assert_allclose(sym, ref, rtol=1e-5)


def test_infonce_gradients():
    za, zb = _views(2, n=5, d=3)
    check_grads(
        jax.jit(lambda a, b: losses.infonce(a, b, temperature=0.4, symmetric=True)),
        (za, zb),
        order=2,
        modes=("fwd", "rev"),
        atol=1e-2,
        rtol=1e-2,
    )


def test_infonce_where_equals_subset():
    za, zb = _views(3, n=10)
    keep = np.array([1, 1, 0, 1, 0, 1, 1, 1, 0, 1], bool)
    masked = losses.infonce(za, zb, temperature=0.5, where=jnp.asarray(keep), symmetric=True)
    subset = losses.infonce(za[keep], zb[keep], temperature=0.5, symmetric=True)
    np.testing.assert_allclose(masked, subset, rtol=1e-6)
    # Masked rows get no gradient: they are neither anchors nor candidates.
    grad = jax.jit(
        jax.grad(lambda a: losses.infonce(a, zb, temperature=0.5, where=jnp.asarray(keep)))
    )(za)
    assert np.all(np.asarray(grad)[~keep] == 0)
    assert np.all(np.abs(np.asarray(grad)[keep]).sum(axis=1) > 0)


@pytest.mark.parametrize("name", ["infonce", "nt_xent", "imix_npair_loss"])
def test_a_batch_of_one_has_no_negatives_and_is_refused(name):
    # Its loss would be exactly 0 with a zero gradient: training would stand still.
    za, zb = _views(4, n=1)
    kw = dict(lam=jnp.ones(1), perm=jnp.zeros(1, jnp.int32)) if name.startswith("imix") else {}
    with pytest.raises(ValueError, match=f"{name}: a batch of one row has no negatives"):
        getattr(losses, name)(za, zb, temperature=0.1, **kw)
    # Two rows, or a queue of negatives, are enough.
    za2, zb2 = _views(4, n=2)
    kw2 = dict(lam=jnp.ones(2), perm=jnp.arange(2)) if kw else {}
    assert np.isfinite(float(getattr(losses, name)(za2, zb2, temperature=0.1, **kw2)))
    if kw:
        assert np.isfinite(
            float(losses.imix_npair_loss(za, zb, temperature=0.1, negatives=zb2, **kw))
        )


@pytest.mark.parametrize("temperature", [0.1, 1.0])
def test_nt_xent_matches_algorithm_1(temperature):
    za, zb = _views(5, n=6, d=4)
    np.testing.assert_allclose(
        jax.jit(functools.partial(losses.nt_xent, temperature=temperature))(za, zb),
        _nt_xent_ref(np.asarray(za, np.float64), np.asarray(zb, np.float64), temperature),
        rtol=2e-5,
    )


def test_nt_xent_matches_optax_ntxent():
    za, zb = _views(6, n=16, d=8)
    n = za.shape[0]
    labels = jnp.concatenate([jnp.arange(n), jnp.arange(n)])
    ours = losses.nt_xent(za, zb, temperature=0.2)
    theirs = optax.losses.ntxent(jnp.concatenate([za, zb]), labels, temperature=0.2)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_nt_xent_where_and_gradients():
    za, zb = _views(7, n=8, d=4)
    keep = np.array([1, 0, 1, 1, 1, 0, 1, 1], bool)
    np.testing.assert_allclose(
        losses.nt_xent(za, zb, temperature=0.5, where=jnp.asarray(keep)),
        losses.nt_xent(za[keep], zb[keep], temperature=0.5),
        rtol=1e-6,
    )
    check_grads(
        jax.jit(lambda a, b: losses.nt_xent(a, b, temperature=0.5)),
        (za[:4], zb[:4]),
        order=1,
        modes=("rev",),
        atol=1e-2,
        rtol=1e-2,
    )


@pytest.mark.parametrize("path", ["bounded", "bounded-3-blocks", "bounded-5-blocks", "generic"])
@pytest.mark.parametrize("dim", [6, 300])  # below / above _SYMMETRIC_GRAM_MIN_DIM
def test_nt_xent_shared_similarities_match_the_direct_computation(dim, path, monkeypatch):
    """Both one-device paths give the value and gradients of the two directions computed
    separately, masks included: the bounded path (unit rows, shift 1/t, softmax weights
    kept for the gradient; what ``nt_xent`` runs at t = 0.3), with the same-view matrices
    whole or as upper blocks of unequal sizes, and the generic one (shared cross
    similarities, symmetric Gram gradient for wide embeddings)."""
    from jaxcl.losses import _common, _infonce

    assert 6 < _infonce._SYMMETRIC_GRAM_MIN_DIM <= 300
    if path.endswith("blocks"):
        rows = {"3": 3, "5": 2}[path.split("-")[1]]
        monkeypatch.setattr(_infonce, "_GRAM_BLOCK_ROWS", rows)
        blocks = _infonce._row_blocks(10)
        assert len(blocks) == int(path.split("-")[1]), blocks
        assert blocks[0][0] == 0 and blocks[-1][1] == 10
    else:
        assert len(_infonce._row_blocks(10)) == 1
    za, zb = _views(13, n=10, d=dim)
    where = jnp.asarray(np.array([1, 1, 0, 1, 1, 1, 0, 1, 1, 1], bool))

    def direct(a, b):
        a, b = _common.l2_normalize(a), _common.l2_normalize(b)
        kw = dict(temperature=0.3, where=where, axis_name=None)
        total_a, count = _infonce._nt_xent_terms(a, b, a, b, where, **kw)
        total_b, _ = _infonce._nt_xent_terms(b, a, b, a, where, **kw)
        return (total_a + total_b) / (2.0 * count)

    def fast(a, b):
        if path.startswith("bounded"):
            return losses.nt_xent(a, b, temperature=0.3, where=where)
        a, b = _common.l2_normalize(a), _common.l2_normalize(b)
        total, count = _infonce._nt_xent_local(a, b, temperature=0.3, where=where)
        return total / (2.0 * count)

    value, grads = jax.jit(jax.value_and_grad(fast, argnums=(0, 1)))(za, zb)
    want, want_grads = jax.value_and_grad(direct, argnums=(0, 1))(za, zb)
    np.testing.assert_allclose(value, want, rtol=1e-6)
    for g, w in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert not np.asarray(grads[0])[2].any()  # a masked pair gets no gradient


@pytest.mark.parametrize("temperature", [0.01, 0.025, 2.0])
def test_nt_xent_paths_by_temperature_and_normalisation(temperature, monkeypatch):
    """The bounded path runs for normalised rows from t = 0.025 up; below, and without
    normalisation, the generic one. Both match Algorithm 1, at its smallest temperatures
    too (a max-shifted reference in float64)."""
    from jaxcl.losses import _infonce

    calls = []
    bounded = _infonce._nt_xent_bounded
    monkeypatch.setattr(_infonce, "_nt_xent_bounded", lambda *a: calls.append(1) or bounded(*a))
    za, zb = _views(15, n=9, d=5)
    got = losses.nt_xent(za, zb, temperature=temperature)
    want = _nt_xent_ref(np.asarray(za, np.float64), np.asarray(zb, np.float64), temperature)
    np.testing.assert_allclose(got, want, rtol=2e-5)
    assert bool(calls) == (temperature >= _infonce._BOUNDED_MIN_TEMPERATURE)
    calls.clear()
    losses.nt_xent(_unit(za), _unit(zb), temperature=temperature, normalize=False)
    assert not calls


def _imix_ref(zq, zk, lam, perm, t):
    q, k = _unit(zq), _unit(zk)
    logits = q @ k.T / t
    logp = logits - logsumexp(logits, axis=1, keepdims=True)
    idx = np.arange(len(perm))
    lam = np.broadcast_to(lam, (len(perm),))
    return np.mean(-(lam * logp[idx, idx] + (1 - lam) * logp[idx, perm]))


@pytest.mark.parametrize("per_sample", [False, True])
def test_imix_npair_matches_numpy(per_sample):
    zq, zk = _views(8, n=7)
    perm = np.asarray(jax.random.permutation(jax.random.key(0), 7))
    lam = np.linspace(0.2, 0.9, 7).astype(np.float32) if per_sample else np.float32(0.35)
    out = jax.jit(functools.partial(losses.imix_npair_loss, temperature=0.2))(
        zq, zk, lam=jnp.asarray(lam), perm=jnp.asarray(perm)
    )
    np.testing.assert_allclose(out, _imix_ref(zq, zk, lam, perm, 0.2), rtol=2e-5)


def _moco_ref(zq, zk, queue, filled, lam, perm, t):
    q, k, neg = _unit(zq), _unit(zk), _unit(queue)[filled]
    logits = np.concatenate([q @ k.T, q @ neg.T], axis=1) / t
    logp = logits - logsumexp(logits, axis=1, keepdims=True)
    idx = np.arange(len(perm))
    return np.mean(-(lam * logp[idx, idx] + (1 - lam) * logp[idx, perm]))


def test_imix_moco_with_a_queue_matches_numpy_and_ignores_unfilled_rows():
    zq, zk = _views(11, n=6)
    queue = np.asarray(jax.random.normal(jax.random.key(2), (10, 5)))
    filled = np.arange(10) < 7
    poisoned = queue.copy()
    poisoned[~filled] = np.nan  # rows not yet written may hold anything
    perm = np.asarray(jax.random.permutation(jax.random.key(1), 6))

    def loss(zq, zk):
        return losses.imix_npair_loss(
            zq, zk, lam=0.4, perm=perm, temperature=0.2, negatives=poisoned,
            negatives_where=jnp.asarray(filled),
        )  # fmt: skip

    out, grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(zq, zk)
    np.testing.assert_allclose(out, _moco_ref(zq, zk, queue, filled, 0.4, perm, 0.2), rtol=2e-5)
    assert all(np.isfinite(np.asarray(g)).all() for g in grads)
    check_grads(
        jax.jit(
            lambda a, b: losses.imix_npair_loss(
                a, b, lam=0.4, perm=perm, temperature=0.2, negatives=queue
            )
        ),
        (zq, zk), order=1, modes=["rev"], atol=1e-2, rtol=1e-2,
    )  # fmt: skip
    # The queue's rows are negatives: more of them, a larger loss than without the queue.
    without = losses.imix_npair_loss(zq, zk, lam=0.4, perm=perm, temperature=0.2)
    assert float(out) > float(without)


def _byol_ref(p, z, lam, perm):
    p, z = _unit(p), _unit(z)
    own = (p * z).sum(1)
    partner = (p * z[perm]).sum(1)
    return np.mean(2 - 2 * (lam * own + (1 - lam) * partner))


@pytest.mark.parametrize("per_sample", [False, True])
def test_imix_byol_matches_numpy(per_sample):
    p, z = _views(12, n=7)
    perm = np.asarray(jax.random.permutation(jax.random.key(4), 7))
    lam = np.linspace(0.1, 1.0, 7).astype(np.float32) if per_sample else np.float32(0.6)
    out = jax.jit(losses.imix_byol_loss)(p, z, lam=jnp.asarray(lam), perm=jnp.asarray(perm))
    np.testing.assert_allclose(out, _byol_ref(p, z, lam, perm), rtol=2e-5)
    check_grads(
        jax.jit(lambda a, b: losses.imix_byol_loss(a, b, lam=lam, perm=perm)),
        (p, z), order=1, modes=["rev"], atol=1e-2, rtol=1e-2,
    )  # fmt: skip
    # lam = 1: BYOL's 2 - 2 cos(p, z), 0 for identical rows.
    assert float(losses.imix_byol_loss(p, p, lam=1, perm=perm)) == pytest.approx(0, abs=1e-6)


def test_imix_queue_and_byol_argument_errors():
    zq, zk = _views(13, n=4)
    perm = jnp.arange(4)
    with pytest.raises(ValueError, match="`negatives` must have the embeddings' width 5"):
        losses.imix_npair_loss(
            zq, zk, lam=0.5, perm=perm, temperature=0.2, negatives=jnp.ones((3, 4))
        )
    with pytest.raises(ValueError, match="`negatives_where` was given without `negatives`"):
        losses.imix_npair_loss(
            zq, zk, lam=0.5, perm=perm, temperature=0.2, negatives_where=jnp.ones(3, bool)
        )
    with pytest.raises(ValueError, match=r"imix_byol_loss: `perm` must hold .* perm\[0\] = 4"):
        losses.imix_byol_loss(zq, zk, lam=0.5, perm=jnp.array([4, 1, 2, 3]))
    with pytest.raises(ValueError, match="imix_byol_loss: `lam` must lie in"):
        losses.imix_byol_loss(zq, zk, lam=1.5, perm=perm)
    # under jit, where perm cannot be checked, one past the end reads NaN (it was clamped)
    traced = jax.jit(lambda perm: losses.imix_byol_loss(zq, zk, lam=0.5, perm=perm))
    assert np.isnan(traced(jnp.array([4, 1, 2, 3])))
    assert np.isfinite(traced(perm))


def test_imix_with_lam_one_is_infonce():
    zq, zk = _views(9)
    perm = jnp.roll(jnp.arange(zq.shape[0]), 1)
    np.testing.assert_allclose(
        losses.imix_npair_loss(zq, zk, lam=1.0, perm=perm, temperature=0.3),
        losses.infonce(zq, zk, temperature=0.3),
        rtol=1e-6,
    )


def test_bfloat16_inputs_give_float32_close_to_float32():
    za, zb = _views(10, n=32, d=16)
    for fn in (
        functools.partial(losses.infonce, temperature=0.5),
        functools.partial(losses.nt_xent, temperature=0.5),
    ):
        low = fn(za.astype(jnp.bfloat16), zb.astype(jnp.bfloat16))
        assert low.dtype == jnp.float32
        np.testing.assert_allclose(low, fn(za, zb), rtol=2e-2)


def test_vmap_over_independent_batches():
    za, zb = _views(11, n=4 * 6, d=3)
    za, zb = za.reshape(4, 6, 3), zb.reshape(4, 6, 3)
    batched = jax.vmap(functools.partial(losses.nt_xent, temperature=0.5))(za, zb)
    one_by_one = [losses.nt_xent(za[i], zb[i], temperature=0.5) for i in range(4)]
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-6)


def test_zero_embedding_is_finite():
    za, zb = _views(12)
    za = za.at[0].set(0.0)
    val, grads = jax.value_and_grad(
        lambda a, b: losses.nt_xent(a, b, temperature=0.1), argnums=(0, 1)
    )(za, zb)
    assert np.isfinite(val)
    assert all(np.all(np.isfinite(g)) for g in grads)


BAD_INPUTS = [
    (dict(z_b=np.zeros((4, 3), np.float32)), "same shape"),
    (dict(z_a=np.zeros((5, 3), np.int32), z_b=np.zeros((5, 3), np.int32)), "floating dtype"),
    (dict(temperature=0.0), "`temperature` must be a finite number > 0, got 0.0"),
    (dict(temperature=-1.0), "`temperature`"),
    (dict(z_a=np.zeros((0, 3), np.float32), z_b=np.zeros((0, 3), np.float32)), "empty batch"),
    (dict(z_a=np.zeros((5,), np.float32), z_b=np.zeros((5,), np.float32)), "rank 2"),
    (dict(where=np.ones((4,), bool)), "`where` must be a boolean array of shape (5,)"),
]


@pytest.mark.parametrize("fn", [losses.infonce, losses.nt_xent])
@pytest.mark.parametrize("override,message", BAD_INPUTS)
def test_bad_inputs_name_the_argument(fn, override, message):
    args = dict(z_a=np.ones((5, 3), np.float32), z_b=np.ones((5, 3), np.float32), temperature=0.5)
    args.update(override)
    with pytest.raises(ValueError) as err:
        jax.jit(lambda: fn(**args))()
    assert message in str(err.value), str(err.value)
    assert fn.__name__ in str(err.value)


@pytest.mark.parametrize(
    "override,message",
    [
        (dict(lam=1.5), "`lam` must lie in [0.0, 1.0], got 1.5"),
        (dict(lam=np.zeros((3,), np.float32)), "`lam` must be a real scalar or a [5]"),
        (dict(perm=np.arange(4)), "`perm` must be an integer array of shape (5,)"),
        (dict(perm=np.arange(5.0)), "`perm` must be an integer array"),
        (dict(temperature=0.0), "`temperature`"),
    ],
)
def test_imix_bad_inputs(override, message):
    args = dict(
        z_mix=np.ones((5, 3), np.float32),
        z_b=np.ones((5, 3), np.float32),
        lam=0.5,
        perm=np.arange(5),
        temperature=0.5,
    )
    args.update(override)
    with pytest.raises(ValueError) as err:
        losses.imix_npair_loss(**args)
    assert message in str(err.value), str(err.value)


@pytest.mark.parametrize("block_rows", [None, 2])  # same-view matrices whole / 3 blocks
@pytest.mark.parametrize("temperature", [0.5, 0.01])  # bounded path / generic path
def test_nt_xent_wide_embeddings_support_forward_mode_and_second_order(
    temperature, block_rows, monkeypatch
):
    """Both paths' gradients are JVP rules (the bounded path's softmax weights, the generic
    path's one-product Gram gradient): forward mode works, and Hessian-vector products
    (forward over reverse and reverse over reverse) equal those of the plain computation
    (the generic path with ``x @ x.T``, differentiated by JAX alone)."""
    from jaxcl.losses import _common, _infonce

    if block_rows is not None:
        monkeypatch.setattr(_infonce, "_GRAM_BLOCK_ROWS", block_rows)
        assert len(_infonce._row_blocks(6)) == 3

    za, zb = _views(14, n=6, d=300)
    v = jax.random.normal(jax.random.key(1), za.shape)

    @functools.partial(jax.jit, static_argnums=0)  # (op by op, the test took ~20 s)
    def hvps(f):
        fwd_rev = jax.jvp(jax.grad(f), (za,), (v,))[1]
        rev_rev = jax.grad(lambda a: jnp.vdot(jax.grad(f)(a), v))(za)
        return fwd_rev, rev_rev

    fwd_rev, rev_rev = hvps(lambda a: losses.nt_xent(a, zb, temperature=temperature))
    monkeypatch.setattr(_infonce, "_gram", lambda x: x @ x.T)

    def plain(a):
        a, b = _common.l2_normalize(a), _common.l2_normalize(zb)
        total, count = _infonce._nt_xent_local(a, b, temperature=temperature, where=None)
        return total / (2.0 * count)

    want, _ = hvps(plain)
    scale = np.abs(want).max()
    assert scale > 0
    np.testing.assert_allclose(fwd_rev, want, atol=1e-4 * scale)
    np.testing.assert_allclose(rev_rev, want, atol=1e-4 * scale)


@pytest.mark.parametrize(
    "call",
    [
        lambda za, zb, **kw: losses.infonce(za, zb, temperature=0.5, **kw),
        lambda za, zb, **kw: losses.nt_xent(za, zb, temperature=0.5, **kw),
        lambda za, zb, **kw: losses.imix_npair_loss(
            za, zb, lam=0.7, perm=jnp.roll(jnp.arange(za.shape[0]), 1), temperature=0.5, **kw
        ),
    ],
    ids=["infonce", "nt_xent", "imix_npair_loss"],
)
def test_string_flags_are_refused_not_read_as_true(call):
    """normalize='False' used to normalise (a non-empty string is true) and symmetric='False'
    to average both directions: a different loss, without a word."""
    za, zb = _views(13)
    with pytest.raises(ValueError, match=r"`normalize` must be a bool .*got 'False'"):
        call(za, zb, normalize="False")
    assert call(za, zb, normalize=np.False_) == call(za, zb, normalize=False)
    with pytest.raises(ValueError, match=r"infonce: `symmetric` must be a bool"):
        losses.infonce(za, zb, temperature=0.5, symmetric="no")


def test_mmix_losses_name_their_own_arguments_and_refuse_one_graph():
    """mmix_node_loss's errors named nt_xent's z_a; mmix_graph_loss on one graph returned 0
    with a zero gradient."""
    z = jnp.ones((6, 4))
    with pytest.raises(ValueError, match=r"mmix_node_loss: `mixed_a` and `z_b` must have the"):
        losses.mmix_node_loss(z, z[:, :3])
    with pytest.raises(ValueError, match=r"mmix_node_loss: `temperature`"):
        losses.mmix_node_loss(z, z, temperature=-1.0)
    with pytest.raises(ValueError, match=r"mmix_graph_loss: a batch of one row has no negatives"):
        losses.mmix_graph_loss(z[:1], z[:1])
    assert np.isfinite(losses.mmix_graph_loss(z[:2], z[:2]))
