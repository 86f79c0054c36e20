"""m-Mix's mixers (jaxcl.mixers.{mo,mp,random,binary}_mix) and objectives (jaxcl.losses.mmix_*).

References are NumPy loops over the paper's definitions (Eq. 2-9), one row at a time: the
weights lambda_ij built from the partners each row is allowed, then ``lambda @ z``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from jaxcl import losses, mixers

N, F, P = 9, 5, 4
# Directed edges j -> i (senders, receivers): a ring both ways, a chord, a self-loop on 3, a
# repeated edge 0 -> 1, and node 8 isolated.
SENDERS = np.array([0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 0, 3, 0], np.int32)
RECEIVERS = np.array([1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6, 4, 3, 1], np.int32)
WHERE = np.array([1, 1, 1, 1, 1, 0, 1, 1, 1], bool)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(N, F)).astype(np.float32)
    p_m, p_n = rng.normal(size=(2, F, P)).astype(np.float32)
    return z, p_m, p_n


def _cos(a, b):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return a @ b.T


def _partners(i, wp, where):
    """Row i's candidate partners, as a list that keeps repeated edges."""
    if wp:
        js = [int(s) for s, r in zip(SENDERS, RECEIVERS, strict=True) if r == i]
    else:
        js = list(range(N))
    return [j for j in js if j != i and (where is None or (where[i] and where[j]))]


def _reference(z, sim, rule, *, wp, threshold=None, temperature=1.0, where=None, c=0.2):
    """``lambda @ z`` with lambda from the paper's rules; rows outside ``where`` unchanged."""
    lam = np.zeros((N, N))
    for i in range(N):
        js = [j for j in _partners(i, wp, where) if threshold is None or sim[i, j] >= threshold]
        if where is not None and not where[i]:
            lam[i, i] = 1.0
        elif rule == "fixed":
            if not js:
                lam[i, i] = 1.0
                continue
            e = np.exp(np.array([sim[i, j] for j in js]) / temperature)
            lam[i, i] = c
            for j, w in zip(js, (1 - c) * e / e.sum(), strict=True):
                lam[i, j] += w
        elif rule == "free":
            e = np.exp(np.array([sim[i, j] for j in js] + [sim[i, i]]) / temperature)
            w = e / e.sum()
            lam[i, i] += w[-1]
            for j, wj in zip(js, w[:-1], strict=True):
                lam[i, j] += wj
        else:  # binary at 0.5: the first most similar partner
            if not js:
                lam[i, i] = 1.0
                continue
            best = max(js, key=lambda j: (sim[i, j], -js.index(j)))
            lam[i, i], lam[i, best] = 0.5, 0.5
    return lam @ z.astype(np.float64)


def _edges(wp, slabs=False):
    return dict(senders=SENDERS, receivers=RECEIVERS, slabs=slabs) if wp else {}


# The -wp edges as per-edge gathers, and as a slab pattern (``slabs=True``).
LAYOUTS = [(True, False), (True, True), (False, False)]


@pytest.mark.parametrize("wp,slabs", LAYOUTS)
@pytest.mark.parametrize("threshold", [None, 0.1])
def test_mo_mix_matches_reference(wp, slabs, threshold):
    z, _, _ = _data()
    got = mixers.mo_mix(z, self_weight=0.3, threshold=threshold, **_edges(wp, slabs))
    want = _reference(z, _cos(z, z), "fixed", wp=wp, threshold=threshold, c=0.3)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("wp,slabs", LAYOUTS)
def test_mp_mix_matches_reference(wp, slabs):
    z, p_m, p_n = _data(1)
    sim = _cos(z @ p_m, z @ p_n)
    got = mixers.mp_mix(z, p_m, p_n, threshold=-0.2, temperature=0.5, **_edges(wp, slabs))
    want = _reference(z, sim, "free", wp=wp, threshold=-0.2, temperature=0.5)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("wp,slabs", LAYOUTS)
def test_binary_mix_takes_the_most_similar_partner(wp, slabs):
    z, _, _ = _data(2)
    got = mixers.binary_mix(z, **_edges(wp, slabs))
    want = _reference(z, _cos(z, z), "binary", wp=wp)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("wp,slabs", LAYOUTS)
def test_binary_mix_breaks_ties_by_the_lowest_partner_on_every_path(wp, slabs):
    # Rows 1 and 2 point the same way as row 0 (cosine 1 with it); node 0 receives the edges
    # 2 -> 0 and then 1 -> 0, so the first tied edge is not the lowest partner's, and 1 -> 0
    # is given twice (picked once).
    z = np.array([[1, 0], [0, 1], [0, 2], [1, 1]], np.float32)
    z[1:3] = [[3, 0], [2, 0]]
    edges = dict(senders=np.array([2, 1, 1, 0], np.int32), receivers=np.array([0, 0, 0, 3]))
    got = mixers.binary_mix(z, weight=0.5, **(dict(edges, slabs=slabs) if wp else {}))
    np.testing.assert_allclose(got[0], 0.5 * z[0] + 0.5 * z[1])


@pytest.mark.parametrize("wp", [True, False])
def test_padding_rows_are_left_out_and_unchanged(wp):
    z, p_m, p_n = _data(3)
    dirty = z.copy()
    dirty[~WHERE] = np.nan
    got = mixers.mo_mix(dirty, where=WHERE, **_edges(wp))
    want = _reference(z, _cos(z, z), "fixed", wp=wp, where=WHERE)
    np.testing.assert_allclose(got[WHERE], want[WHERE], rtol=2e-5, atol=2e-6)
    assert np.isnan(np.asarray(got[~WHERE])).all()  # handed back as they came
    # and no NaN reaches the gradients of the real rows or the projections
    loss = lambda z, p, q: jnp.sum(  # noqa: E731
        jnp.where(WHERE[:, None], mixers.mp_mix(z, p, q, where=WHERE, **_edges(wp)), 0.0) ** 2
    )
    grads = jax.grad(loss, argnums=(0, 1, 2))(dirty, p_m, p_n)
    assert all(np.isfinite(np.asarray(g)[WHERE] if g.shape[0] == N else g).all() for g in grads)


@pytest.mark.parametrize("temperature", [1.0, 0.01, 0.001])
def test_a_row_without_partners_keeps_itself_at_any_temperature(temperature):
    """The row's own score alone in the softmax, far below zero (cos(q_i, k_i) = -1 over a
    small temperature, where the diversity loss drives it): the row keeps itself with weight
    1 and the gradients stay finite. (A shift by 0 instead of the row's own score gave
    0 / 0 below temperature ~0.011.)"""
    z, p_m, _ = _data(4)
    alone = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0], bool)  # -wp: node 8 has no edges
    for kw, rows in ((_edges(True), ~alone), ({"threshold": 0.95}, None)):
        # -op: rows whose every partner lies below the threshold
        sim = _cos(z @ p_m, z @ -p_m)
        if "threshold" in kw:
            rows = (np.where(np.eye(N, dtype=bool), -np.inf, sim) < 0.95).all(axis=1)
            assert rows.any()
        got = mixers.mp_mix(z, p_m, -p_m, temperature=temperature, **kw)
        np.testing.assert_allclose(np.asarray(got)[rows], z[rows], rtol=1e-6)
        grad = jax.grad(
            lambda p, kw=kw: jnp.sum(mixers.mp_mix(z, p, -p, temperature=temperature, **kw))
        )
        assert np.isfinite(np.asarray(grad(p_m))).all()


def test_random_mix_weights_are_a_softmax_over_the_allowed_partners():
    """With ``z = I`` the output is the weight matrix itself."""
    eye = np.eye(N, dtype=np.float32)
    for kw in (_edges(True), {}):
        lam = np.asarray(mixers.random_mix(jax.random.key(0), eye, **kw))
        np.testing.assert_allclose(lam.sum(1), 1.0, rtol=1e-5)
        assert (lam >= 0).all() and (np.diag(lam) > 0).all()
        allowed = np.eye(N, dtype=bool)
        if kw:
            allowed[RECEIVERS, SENDERS] = True
        else:
            allowed[:] = True
        assert (lam[~allowed] == 0).all()
        assert (lam[allowed] > 0).all()
        again = np.asarray(mixers.random_mix(jax.random.key(1), eye, **kw))
        assert not np.allclose(lam, again)  # a fresh draw per key
    # the isolated node keeps itself
    assert np.asarray(mixers.random_mix(jax.random.key(0), eye, **_edges(True)))[8, 8] == 1.0


def test_dropout_zeroes_weights_and_scales_the_kept_ones():
    """The official node script's ``F.dropout(attention, 0.1)``: with ``z = I`` every weight
    (the row's own too) is either dropped or the undropped weight over 0.9, about 10% are
    dropped, and the same key gives the same masks."""
    eye = np.eye(N, dtype=np.float32)
    for kw in (_edges(True), {}, {"block_size": 4}):
        lam = np.asarray(mixers.random_mix(jax.random.key(0), eye, **kw))
        single = lam > 0
        single[1, 0] = False  # edge 0 -> 1 comes twice: two weights, two masks

        def draw(k, kw=kw):
            return mixers.random_mix(jax.random.key(0), eye, dropout=0.1, dropout_key=k, **kw)

        keys = jax.random.split(jax.random.key(1), 40)
        got = np.asarray(jax.vmap(draw)(keys))
        np.testing.assert_array_equal(got[3], draw(keys[3]))  # the same key, the same masks
        assert not np.array_equal(got[3], got[4])
        kept = np.isclose(got, lam / 0.9, rtol=1e-5)
        assert (kept | (got == 0))[:, single].all() and (got[:, lam == 0] == 0).all()
        dropped = 1 - kept[:, single].mean()
        assert 0.07 < dropped < 0.13, dropped


@pytest.mark.parametrize("wp", [True, False])
def test_dropout_leaves_the_mix_unbiased(wp):
    z, p_m, p_n = _data(6)
    want = np.asarray(mixers.mp_mix(z, p_m, p_n, **_edges(wp)))
    keys = jax.random.split(jax.random.key(3), 4000)
    draws = jax.vmap(
        lambda k: mixers.mp_mix(z, p_m, p_n, dropout=0.3, dropout_key=k, **_edges(wp))
    )(keys)
    draws = np.asarray(draws, np.float64)
    se = draws.std(0) / np.sqrt(len(keys))
    assert draws.std(0).max() > 0.05  # the masks do move the mix
    assert (np.abs(draws.mean(0) - want) <= 5 * se + 1e-6).all()


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(dropout=1.0, dropout_key=jax.random.key(0)), r"dropout.*\[0.0, 1.0\)"),
        (dict(dropout=-0.1, dropout_key=jax.random.key(0)), r"dropout"),
        (dict(dropout=0.1), r"dropout.*dropout_key"),
    ],
)
def test_dropout_arguments_are_named(kw, message):
    z, p_m, p_n = _data()
    with pytest.raises(ValueError, match=message):
        mixers.mp_mix(z, p_m, p_n, **kw)


@pytest.mark.parametrize("mixer", ["mo", "mp", "random", "binary"])
def test_blocks_give_the_dense_values_and_gradients(mixer):
    z, p_m, p_n = _data(4)
    key = jax.random.key(5)
    fns = {
        "mo": lambda z, p, q, b: mixers.mo_mix(z, threshold=0.0, where=WHERE, block_size=b),
        "mp": lambda z, p, q, b: mixers.mp_mix(z, p, q, where=WHERE, block_size=b),
        "random": lambda z, p, q, b: mixers.random_mix(key, z, block_size=b),
        "binary": lambda z, p, q, b: mixers.binary_mix(z, block_size=b),
    }
    fn = fns[mixer]
    weights = jnp.asarray(np.random.default_rng(6).normal(size=(N, F)), jnp.float32)

    def value_and_grads(b):
        loss = lambda z, p, q: jnp.sum(weights * fn(z, p, q, b))  # noqa: E731
        return jax.value_and_grad(loss, argnums=(0, 1, 2))(z, p_m, p_n)

    dense, blocked = value_and_grads(None), value_and_grads(4)  # 9 rows: 3 blocks, 3 padded
    np.testing.assert_allclose(dense[0], blocked[0], rtol=1e-5)
    for a, b in zip(dense[1], blocked[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mixer", ["mo", "mp", "random", "binary"])
def test_slab_layout_gives_the_edge_layouts_values_and_gradients(mixer):
    """``slabs=True`` (the -wp edges as a jitted slab pattern) is the same function as the
    per-edge gathers, with padding rows, an edge mask and a threshold in play."""
    z, p_m, p_n = _data(8)
    key = jax.random.key(9)
    mask = np.arange(SENDERS.size) % 5 != 2
    part = dict(senders=SENDERS, receivers=RECEIVERS, edge_mask=mask, where=WHERE)
    fns = {
        "mo": lambda z, p, q, s: mixers.mo_mix(z, threshold=0.0, slabs=s, **part),
        "mp": lambda z, p, q, s: mixers.mp_mix(z, p, q, threshold=-0.3, slabs=s, **part),
        "random": lambda z, p, q, s: mixers.random_mix(key, z, slabs=s, **part),
        "binary": lambda z, p, q, s: mixers.binary_mix(z, slabs=s, **part),
    }
    weights = jnp.asarray(np.random.default_rng(10).normal(size=(N, F)), jnp.float32)

    def value_and_grads(slabs):
        def loss(z, p, q):
            return jnp.sum(weights * jnp.sin(fns[mixer](z, p, q, slabs)))

        return jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))(z, p_m, p_n)

    edges, slabs = value_and_grads(False), value_and_grads(True)
    np.testing.assert_allclose(slabs[0], edges[0], rtol=1e-5)
    for a, b in zip(slabs[1], edges[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_gradients_match_finite_differences():
    """The weights depend on z and on p_m, p_n: both reach the gradient. (The similarities
    are float32 whatever the input, hence the loose tolerance.)"""
    with jax.enable_x64(True):
        z, p_m, p_n = (jnp.asarray(a, jnp.float64) for a in _data(7))
        for edges in (_edges(True), {}):

            def f(z, p, q, edges=edges):
                return jnp.sum(jnp.sin(mixers.mp_mix(z, p, q, **edges)))

            check_grads(
                jax.jit(f), (z, p_m, p_n), order=1, modes=["rev"], eps=1e-3, rtol=2e-3, atol=2e-3
            )


def test_sparse_path_never_builds_an_n_by_n_array():
    n = 3001
    senders = np.arange(n, dtype=np.int32)
    receivers = np.roll(senders, 1)
    z = jnp.zeros((n, 8))
    p = jnp.zeros((8, 8))

    def loss(z, p):
        return jnp.sum(mixers.mp_mix(z, p, p, senders=senders, receivers=receivers))

    text = str(jax.make_jaxpr(jax.grad(loss, argnums=(0, 1)))(z, p))
    assert f"{n},{n}" not in text.replace(" ", "")
    dense = str(jax.make_jaxpr(lambda z: mixers.mo_mix(z))(z))
    assert f"{n},{n}" in dense.replace(" ", "")  # the check can see an N x N array


def test_blocked_memory_is_linear_in_n():
    """XLA's temporaries for value + gradient of mp-mix: quadrupling N multiplies the dense
    path's by about 16 and the blocked path's by about 4."""

    def temp(n, block):
        z = jnp.zeros((n, 16))
        p = jnp.zeros((16, 16))
        g = jax.jit(jax.grad(lambda z, p: jnp.sum(mixers.mp_mix(z, p, p, block_size=block))))
        return g.lower(z, p).compile().memory_analysis().temp_size_in_bytes

    assert temp(4096, None) / temp(1024, None) > 10
    assert temp(4096, 256) / temp(1024, 256) < 6
    assert temp(4096, 256) < temp(4096, None) / 10


def test_jit_and_bf16():
    z, p_m, p_n = _data(8)
    got = jax.jit(lambda z: mixers.mo_mix(z, senders=SENDERS, receivers=RECEIVERS))(
        jnp.asarray(z, jnp.bfloat16)
    )
    assert got.dtype == jnp.bfloat16
    want = mixers.mo_mix(z, senders=SENDERS, receivers=RECEIVERS)
    np.testing.assert_allclose(np.asarray(got, np.float32), want, atol=0.05)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda z, p: mixers.mo_mix(z, self_weight=1.5), r"self_weight.*\[0.0, 1.0\].*1.5"),
        (lambda z, p: mixers.mo_mix(z, senders=SENDERS), r"senders.*receivers.*both"),
        (
            lambda z, p: mixers.mo_mix(z, senders=SENDERS, receivers=RECEIVERS, block_size=4),
            r"block_size.*dense",
        ),
        (
            lambda z, p: mixers.mo_mix(z, senders=SENDERS + 5, receivers=RECEIVERS),
            r"senders.*\[0, 9\).*= 9",
        ),
        (lambda z, p: mixers.mp_mix(z, p, p[:3]), r"p_n.*shape \[5, P\]"),
        (lambda z, p: mixers.mo_mix(z[0]), r"`z`.*2"),
        (lambda z, p: mixers.mo_mix(z, temperature=0.0), r"temperature.*> 0"),
        (lambda z, p: mixers.binary_mix(z, weight=-0.1), r"weight.*\[0.0, 1.0\]"),
        (lambda z, p: mixers.mo_mix(z, where=WHERE[:4]), r"where.*\(9,\)"),
        (lambda z, p: mixers.mo_mix(z, block_size=0), r"block_size.*positive integer"),
        (lambda z, p: mixers.mo_mix(z, slabs=True), r"slabs=True.*give `senders`"),
        (lambda z, p: mixers.mp_mix(z, p, p, **_edges(True, "on")), r"slabs.*True or False.*'on'"),
        (lambda z, p: mixers.random_mix(jax.random.key(0), z, slabs=True), r"slabs=True.*give"),
        (lambda z, p: mixers.random_mix(jax.random.key(0), z, slabs="on"), r"slabs.*'on'"),
        (lambda z, p: losses.mmix_diversity_loss(z, p, p[:, :2].T), r"p_m.*p_n.*\[5, P\]"),
    ],
)
def test_bad_input_is_named(call, message):
    z, p_m, _ = _data()
    with pytest.raises(ValueError, match=message):
        call(z, p_m)


# -- objectives ---------------------------------------------------------------------------


def _xent_rows(anchor, positive, same, temperature):
    """-log softmax of (anchor, positive) among same-view j != i and all cross-view j."""
    s_same = _cos(anchor, same) / temperature
    s_cross = _cos(anchor, positive) / temperature
    out = []
    for i in range(anchor.shape[0]):
        den = sum(np.exp(s_same[i, j]) for j in range(anchor.shape[0]) if j != i)
        den += np.exp(s_cross[i]).sum()
        out.append(-(s_cross[i, i] - np.log(den)))
    return np.array(out)


def test_node_loss_is_eq_7_and_8():
    rng = np.random.default_rng(9)
    u, v = rng.normal(size=(2, 7, 6))
    want = 0.5 * (_xent_rows(u, v, u, 0.7).mean() + _xent_rows(v, u, v, 0.7).mean())
    got = losses.mmix_node_loss(u, v, temperature=0.7)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_graph_loss_is_eq_9_anchored_on_the_first_view():
    rng = np.random.default_rng(10)
    h_a, h_b = rng.normal(size=(2, 6, 4)).astype(np.float32)
    np.testing.assert_allclose(
        losses.mmix_graph_loss(h_a, h_b), _xent_rows(h_a, h_b, h_a, 1.0).mean(), rtol=1e-5
    )
    # padding graphs are neither anchors nor negatives
    where = np.array([1, 1, 0, 1, 1, 0], bool)
    dirty = h_a.copy()
    dirty[~where] = np.inf
    got = losses.mmix_graph_loss(dirty, h_b, temperature=0.5, where=where)
    want = _xent_rows(h_a[where], h_b[where], h_a[where], 0.5).mean()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_diversity_loss_is_eq_6():
    z, p_m, p_n = _data(11)
    q = z @ p_m / np.linalg.norm(z @ p_m, axis=1, keepdims=True)
    k = z @ p_n / np.linalg.norm(z @ p_n, axis=1, keepdims=True)
    want = -np.mean(np.sum((q - k) ** 2, axis=1))
    np.testing.assert_allclose(losses.mmix_diversity_loss(z, p_m, p_n), want, rtol=1e-5)
    # = 2 cos - 2, and masked rows do not count
    np.testing.assert_allclose(want, np.mean(2 * np.sum(q * k, 1) - 2), rtol=1e-5)
    got = losses.mmix_diversity_loss(z, p_m, p_n, where=WHERE)
    np.testing.assert_allclose(got, -np.mean(np.sum((q - k) ** 2, axis=1)[WHERE]), rtol=1e-5)
    # Eq. 9's per-graph weighting: rows weighted by one over their graph's size give the mean
    # over graphs of each graph's mean (graph ids: 0 0 0 1 [masked] 2 2 2 2; a NaN row that
    # does not count stays out)
    ids = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    sizes = np.bincount(ids[WHERE], minlength=3)
    d = -np.sum((q - k) ** 2, axis=1)
    want_graphs = np.mean([d[WHERE & (ids == g)].mean() for g in range(3)])
    dirty = z.copy()
    dirty[~WHERE] = np.nan
    got = losses.mmix_diversity_loss(dirty, p_m, p_n, where=WHERE, weights=1.0 / sizes[ids])
    np.testing.assert_allclose(got, want_graphs, rtol=1e-5)
    assert abs(want_graphs - d[WHERE].mean()) > 1e-3  # not the mean over rows
    # weight 0 without `where` leaves the NaN row out of the value and the gradients too
    w = np.where(WHERE, 1.0 / sizes[ids], 0.0)
    value, grads = jax.value_and_grad(
        lambda p, q: losses.mmix_diversity_loss(dirty, p, q, weights=w), argnums=(0, 1)
    )(p_m, p_n)
    np.testing.assert_allclose(value, want_graphs, rtol=1e-5)
    assert all(np.isfinite(np.asarray(g)).all() for g in grads)
    # a NaN weight counts as 0: left out of the value and of the total weight
    w_nan = np.where(WHERE, w, np.nan).astype(np.float32)
    np.testing.assert_allclose(
        losses.mmix_diversity_loss(dirty, p_m, p_n, weights=w_nan), want_graphs, rtol=1e-5
    )
    with pytest.raises(ValueError, match=r"`weights` must have shape \[9\]"):
        losses.mmix_diversity_loss(z, p_m, p_n, weights=np.ones(8, np.float32))
    # minimising it lowers mp-mix's self-weight: the gradient step raises the distance
    grad = jax.grad(losses.mmix_diversity_loss, argnums=(1, 2))(z, p_m, p_n)
    after = losses.mmix_diversity_loss(z, p_m - 0.1 * grad[0], p_n - 0.1 * grad[1])
    assert after < want


def test_edge_mask_drops_edges_as_if_absent():
    z, p_m, p_n = _data(12)
    keep = np.arange(SENDERS.size) % 3 != 0
    for mixer in (
        lambda **e: mixers.mo_mix(z, **e),
        lambda **e: mixers.mp_mix(z, p_m, p_n, **e),
        lambda **e: mixers.binary_mix(z, **e),
    ):
        got = mixer(senders=SENDERS, receivers=RECEIVERS, edge_mask=keep)
        want = mixer(senders=SENDERS[keep], receivers=RECEIVERS[keep])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="edge_mask.*senders"):
        mixers.mo_mix(z, edge_mask=keep)


def test_per_graph_node_loss_is_the_mean_of_each_graphs_eq_8():
    rng = np.random.default_rng(13)
    sizes = [3, 1, 4]  # a one-node graph has only its positive: its term is 0
    ids = np.repeat(np.arange(3), sizes).astype(np.int32)
    u, v = rng.normal(size=(2, ids.size, 5)).astype(np.float32)
    terms = []
    for g, size in enumerate(sizes):
        a, b = u[ids == g], v[ids == g]
        if size == 1:
            terms.append(0.0)
            continue
        terms.append(0.5 * (_xent_rows(a, b, a, 0.5).mean() + _xent_rows(b, a, b, 0.5).mean()))
    got = losses.mmix_node_loss_per_graph(u, v, ids, num_graphs=3, temperature=0.5)
    np.testing.assert_allclose(got, np.mean(terms), rtol=1e-5, atol=1e-6)
    # padding nodes (and an empty padding graph) do not count, whatever they hold
    pad_u = np.concatenate([u, np.full((2, 5), np.nan, np.float32)])
    pad_v = np.concatenate([v, np.full((2, 5), np.inf, np.float32)])
    pad_ids = np.concatenate([ids, [3, 3]]).astype(np.int32)
    mask = np.arange(pad_ids.size) < ids.size
    for max_nodes in (None, 4, 6):  # one masked block, or per-graph blocks
        kw = dict(num_graphs=4, temperature=0.5, node_mask=mask, max_nodes=max_nodes)
        fn = jax.jit(
            jax.value_and_grad(
                lambda x, kw=kw: losses.mmix_node_loss_per_graph(x, pad_v, pad_ids, **kw)
            )
        )
        got, grad = fn(pad_u)
        np.testing.assert_allclose(got, np.mean(terms), rtol=1e-5, atol=1e-6)
        assert np.isfinite(np.asarray(grad)).all() and (np.asarray(grad)[~mask] == 0).all()
        if max_nodes is None:
            dense_grad = grad
        np.testing.assert_allclose(grad, dense_grad, rtol=1e-5, atol=1e-6)


def test_per_graph_blocks_pack_many_small_graphs_and_match_one_masked_block():
    # 40 graphs of 1-12 nodes (a few large, most small, as IMDB's), then padding: the
    # packed blocks (several graphs to a block of max_nodes) give the dense path's value and
    # gradient, for max_nodes at the largest graph and above it.
    rng = np.random.default_rng(5)
    sizes = np.where(rng.random(40) < 0.1, 12, rng.integers(1, 6, 40))
    ids = np.concatenate([np.repeat(np.arange(40), sizes), [40] * 7]).astype(np.int32)
    mask = np.arange(ids.size) < sizes.sum()
    u, v = rng.normal(size=(2, ids.size, 4)).astype(np.float32)
    values = {}
    for max_nodes in (None, int(sizes.max()), 17):
        kw = dict(num_graphs=41, temperature=0.7, node_mask=mask, max_nodes=max_nodes)
        fn = jax.jit(
            jax.value_and_grad(
                lambda x, y, kw=kw: losses.mmix_node_loss_per_graph(x, y, ids, **kw), (0, 1)
            )
        )
        values[max_nodes] = fn(u, v)
    for max_nodes in (int(sizes.max()), 17):
        np.testing.assert_allclose(values[max_nodes][0], values[None][0], rtol=1e-5)
        for got, want in zip(values[max_nodes][1], values[None][1], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_per_graph_node_loss_checks_its_arguments_by_name():
    ids = np.array([0, 0, 0, 1], np.int32)
    u = np.ones((4, 3), np.float32)
    kw = dict(num_graphs=2)
    with pytest.raises(ValueError, match=r"max_nodes` = 2 is smaller.*3 real nodes"):
        losses.mmix_node_loss_per_graph(u, u, ids, max_nodes=2, **kw)
    with pytest.raises(ValueError, match=r"node_mask.*boolean.*\(4,\)"):
        losses.mmix_node_loss_per_graph(u, u, ids, node_mask=np.ones(3, bool), **kw)
    with pytest.raises(ValueError, match=r"mixed_a"):
        losses.mmix_node_loss_per_graph(u[:, 0], u, ids, **kw)
    with pytest.raises(ValueError, match=r"h_b"):
        losses.mmix_graph_loss(u, u[:2])


def test_per_graph_blocks_take_graphs_in_any_order_and_padding_among_their_nodes():
    # Interleaved graph ids, and padding inside a graph's run of nodes: the blocks rank each
    # real node within its graph, so they give the dense path's value and gradient.
    rng = np.random.default_rng(7)
    ids = np.array([2, 0, 1, 0, 2, 1, 0, 0, 1, 2], np.int32)
    mask = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 1], bool)
    u, v = rng.normal(size=(2, ids.size, 4)).astype(np.float32)
    got = {}
    for max_nodes in (None, 3, 5):
        kw = dict(num_graphs=3, temperature=0.5, node_mask=mask, max_nodes=max_nodes)
        got[max_nodes] = jax.jit(
            jax.value_and_grad(
                lambda x, y, kw=kw: losses.mmix_node_loss_per_graph(x, y, ids, **kw), (0, 1)
            )
        )(u, v)
    for max_nodes in (3, 5):
        np.testing.assert_allclose(got[max_nodes][0], got[None][0], rtol=1e-5)
        for a, b in zip(got[max_nodes][1], got[None][1], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    # Under jit an out-of-range graph id is not checked: that node is left out, and the
    # other nodes keep their places (the dense path's value).
    bad = ids.copy()
    bad[0] = -1
    values = [
        jax.jit(
            lambda x, y, m=m: losses.mmix_node_loss_per_graph(
                x, y, jnp.asarray(bad), num_graphs=3, node_mask=mask, max_nodes=m
            )
        )(u, v)
        for m in (None, 3)
    ]
    np.testing.assert_allclose(values[1], values[0], rtol=1e-5)


def test_a_traced_dropout_rate_drops_as_the_same_concrete_rate():
    """A dropout rate traced under jit (e.g. from a schedule) used to stop the mixer with
    JAX's boolean-conversion error; it now mixes as the concrete rate does."""
    eye = np.eye(N, dtype=np.float32)
    key = jax.random.key(3)

    def mix(rate):
        return mixers.random_mix(jax.random.key(0), eye, dropout=rate, dropout_key=key)

    np.testing.assert_allclose(jax.jit(mix)(0.1), mix(0.1), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(mix)(0.0), mix(0.0), rtol=1e-6)


def test_numpy_booleans_are_flags():
    z = np.eye(N, dtype=np.float32)
    s, r = np.arange(N - 1), np.arange(1, N)
    both = [mixers.mo_mix(z, senders=s, receivers=r, slabs=flag) for flag in (np.True_, True)]
    np.testing.assert_array_equal(both[0], both[1])
    x = np.ones((4, 3), np.float32)
    key = jax.random.key(0)
    a = mixers.imix_mixup(key, x, alpha=1.0, per_sample=np.True_)
    b = mixers.imix_mixup(key, x, alpha=1.0, per_sample=True)
    np.testing.assert_array_equal(a[1], b[1])
