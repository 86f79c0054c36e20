"""Losses inside shard_map / pmap on 8 fake CPU devices equal the single-device global loss."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcl import losses, training

N, D = 32, 6  # 4 rows per device


def _views(seed=0):
    ka, kb = jax.random.split(jax.random.key(seed))
    za = jax.random.normal(ka, (N, D))
    return za, za + 0.7 * jax.random.normal(kb, (N, D))


def _cases():
    key = jax.random.key(42)
    perm_local = jnp.asarray(np.random.default_rng(0).permutation(N // 8))
    cases = {
        "infonce": functools.partial(losses.infonce, temperature=0.3),
        "infonce_sym": functools.partial(losses.infonce, temperature=0.3, symmetric=True),
        "nt_xent": functools.partial(losses.nt_xent, temperature=0.5),
        # blocks of 3 rows: local (4) and global (32, 64) rows are padded to whole blocks
        "infonce_blockwise": functools.partial(
            losses.infonce, temperature=0.3, symmetric=True, block_size=3
        ),
        "nt_xent_blockwise": functools.partial(losses.nt_xent, temperature=0.5, block_size=3),
    }
    for method in ("exact", "rff", "sorf", "positive"):
        cases[f"esco_{method}"] = functools.partial(
            losses.esco_loss,
            key=key,
            method=method,
            temperature=0.5,
            lam=1.2,
            num_features=64,
            symmetric=True,
        )
    for method in ("exact", "rff", "positive"):  # GRACE's negative set, anchor left out
        cases[f"esco_both_{method}"] = functools.partial(
            losses.esco_loss,
            key=key,
            method=method,
            negatives="both",
            temperature=0.5,
            lam=1.0,
            num_features=64,
            symmetric=True,
        )
    # Blocks of 2 of the 4 rows per device: the chunked (lax.scan) path under shard_map.
    for method in ("exact", "sorf", "positive"):
        cases[f"esco_{method}_chunked"] = functools.partial(
            cases[f"esco_{method}"].func, **cases[f"esco_{method}"].keywords, chunk_size=2
        )
    cases["esco_intra"] = functools.partial(
        losses.esco_loss, key=key, method="sorf", negatives="intra", temperature=0.5, lam=1.2
    )
    return cases, perm_local


CASES, PERM_LOCAL = _cases()


# MoCo's queue: the same whole queue on every device (not gathered), 5 of 12 rows filled.
QUEUE = jax.random.normal(jax.random.key(3), (12, D))
QUEUE_FILLED = jnp.arange(12) < 5
IMIX = {
    "imix": functools.partial(losses.imix_npair_loss, lam=0.3, temperature=0.4),
    "imix_moco": functools.partial(
        losses.imix_npair_loss,
        lam=0.3,
        temperature=0.4,
        negatives=QUEUE,
        negatives_where=QUEUE_FILLED,
    ),
    "imix_byol": functools.partial(losses.imix_byol_loss, lam=0.3),
}


def _global_reference(name, za, zb):
    """The same loss on one device over the global batch."""
    if name in IMIX:
        # Mixing happened per shard: device k's row i was mixed with its row perm[i].
        perm = jnp.concatenate([k * (N // 8) + PERM_LOCAL for k in range(8)])
        return IMIX[name](za, zb, perm=perm)
    return CASES[name](za, zb)


def _sharded(name, axis_name):
    if name in IMIX:
        return functools.partial(IMIX[name], perm=PERM_LOCAL, axis_name=axis_name)
    return functools.partial(CASES[name], axis_name=axis_name)


ALL = [*CASES, *IMIX]


def _sharded_value_and_grads(loss, num_devices, *rows_arrays):
    """``loss`` and its gradients in its first two arguments, inside ``shard_map`` with every
    argument's rows split over ``num_devices`` devices on the axis ``"data"``."""
    mesh = jax.make_mesh((num_devices,), ("data",))
    rows = NamedSharding(mesh, P("data"))

    @jax.jit
    @functools.partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P("data"),) * len(rows_arrays),
        out_specs=(P(), (P("data"), P("data"))),
    )
    def sharded(*args):
        return jax.value_and_grad(loss, argnums=(0, 1))(*args)

    return sharded(*(jax.device_put(x, rows) for x in rows_arrays))


@pytest.mark.parametrize("name", ALL)
def test_shard_map_value_and_gradient_equal_global(name, num_devices):
    za, zb = _views()
    value, grads = jax.jit(
        jax.value_and_grad(lambda a, b: _global_reference(name, a, b), argnums=(0, 1))
    )(za, zb)

    s_value, s_grads = _sharded_value_and_grads(_sharded(name, "data"), num_devices, za, zb)
    np.testing.assert_allclose(s_value, value, rtol=1e-5)
    for s_g, g in zip(s_grads, grads, strict=True):
        np.testing.assert_allclose(s_g, g, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["infonce_sym", "esco_sorf", "esco_positive", "imix"])
def test_pmap_value_equal_and_gradient_scaled_by_device_count(name, num_devices):
    za, zb = _views(1)
    value, grads = jax.jit(
        jax.value_and_grad(lambda a, b: _global_reference(name, a, b), argnums=(0, 1))
    )(za, zb)
    loss = _sharded(name, "d")
    p_value, p_grads = jax.pmap(jax.value_and_grad(loss, argnums=(0, 1)), axis_name="d")(
        za.reshape(num_devices, -1, D), zb.reshape(num_devices, -1, D)
    )
    np.testing.assert_allclose(p_value, np.full(num_devices, value), rtol=1e-5)
    for p_g, g in zip(p_grads, grads, strict=True):
        # pmap's psum transposes to psum: the documented factor of the device count.
        np.testing.assert_allclose(p_g.reshape(N, D) / num_devices, g, rtol=1e-4, atol=1e-6)


def test_per_device_key_is_refused(num_devices):
    za, zb = _views(2)
    mesh = jax.make_mesh((num_devices,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    keys = jax.device_put(jax.random.split(jax.random.key(0), num_devices), rows)

    @functools.partial(
        jax.shard_map, mesh=mesh, in_specs=(P("data"), P("data"), P("data")), out_specs=P()
    )
    def sharded(a, b, k):
        return losses.esco_loss(a, b, key=k[0], method="rff", lam=1.0, axis_name="data")

    with pytest.raises(ValueError, match="differs across devices"):
        sharded(jax.device_put(za, rows), jax.device_put(zb, rows), keys)


def test_esco_sharded_sums_features_instead_of_gathering(num_devices):
    """The random-feature path communicates D-vectors (psum), never the embeddings."""
    za, zb = _views(3)
    mesh = jax.make_mesh((num_devices,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    za, zb = jax.device_put(za, rows), jax.device_put(zb, rows)
    loss = functools.partial(CASES["esco_sorf"], axis_name="data")
    sharded = jax.shard_map(
        loss, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P(), check_vma=True
    )
    text = str(jax.make_jaxpr(sharded)(za, zb))
    assert "psum" in text
    assert "all_gather" not in text
    exact = jax.shard_map(
        functools.partial(CASES["esco_exact"], axis_name="data"),
        mesh=mesh,
        in_specs=(P("data"), P("data")),
        out_specs=P(),
    )
    assert "all_gather" in str(jax.make_jaxpr(exact)(za, zb))


def test_where_mask_sharded(num_devices):
    za, zb = _views(4)
    where = jnp.arange(N) % 5 != 1
    value = losses.nt_xent(za, zb, temperature=0.5, where=where)
    mesh = jax.make_mesh((num_devices,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    sharded = jax.jit(
        jax.shard_map(
            lambda a, b, w: losses.nt_xent(a, b, temperature=0.5, where=w, axis_name="data"),
            mesh=mesh,
            in_specs=(P("data"), P("data"), P("data")),
            out_specs=P(),
        )
    )
    out = sharded(jax.device_put(za, rows), jax.device_put(zb, rows), jax.device_put(where, rows))
    np.testing.assert_allclose(out, value, rtol=1e-5)


@pytest.mark.parametrize("name", ["infonce_sym", "nt_xent", "esco_exact", "esco_sorf"])
def test_masked_nan_rows_sharded_equal_global_subset(name, num_devices):
    """Padding rows holding NaN/inf on some devices leak into no device's value or gradient:
    both equal the single-device loss on the kept rows, and padding rows get exactly 0."""
    za, zb = _views(5)
    where = np.arange(N) % 5 != 1  # one or two padding rows on every device
    poison = np.where(np.arange(N) % 2 == 0, np.nan, np.inf)[:, None]
    bad_a = jnp.where(where[:, None], za, poison)
    bad_b = jnp.where(where[:, None], zb, -poison)
    value, grads = jax.value_and_grad(CASES[name], argnums=(0, 1))(za[where], zb[where])

    loss = _sharded(name, "data")
    s_value, s_grads = _sharded_value_and_grads(
        lambda a, b, w: loss(a, b, where=w), num_devices, bad_a, bad_b, where
    )
    np.testing.assert_allclose(s_value, value, rtol=1e-5)
    for s_g, g in zip(s_grads, grads, strict=True):
        s_g = np.asarray(s_g)
        assert np.all(s_g[~where] == 0.0)
        np.testing.assert_allclose(s_g[where], g, rtol=1e-4, atol=1e-6)


def _step_collectives(loss, num_devices, n, d=16):
    mesh = jax.make_mesh((num_devices,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    z = jax.device_put(jnp.ones((n, d), jnp.float32), rows)
    sharded = jax.shard_map(loss, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P())
    step = jax.jit(jax.value_and_grad(sharded, argnums=(0, 1)))
    return training.collective_bytes(step.lower(z, z).compile())


def test_esco_step_communicates_feature_sums_not_embeddings(num_devices):
    """Measured from the compiled forward + backward program: data-parallel ESCo (sorf, rff)
    all-reduces its D-vectors, one per view and pass, the same bytes at any batch size;
    exact InfoNCE gathers the embeddings, bytes growing with N * d."""
    dim, features = 16, 256
    for method in ("sorf", "rff"):
        loss = functools.partial(
            losses.esco_loss, key=jax.random.key(0), method=method, lam=1.0,
            num_features=features, axis_name="data",
        )  # fmt: skip
        small = _step_collectives(loss, num_devices, 64, dim)
        large = _step_collectives(loss, num_devices, 1024, dim)
        assert small["total"] == large["total"], (small, large)
        assert {o["op"] for o in small["ops"]} == {"all-reduce"}
        # Forward: the feature sums of view B (2 D floats for [cos, sin]) and the count;
        # backward: their cotangents. Under 4 * (2 D + 2) float32 in all.
        assert 2 * features * 4 <= small["total"] <= 4 * (2 * features + 2) * 4, small
    exact = functools.partial(losses.infonce, temperature=0.5, axis_name="data")
    small = _step_collectives(exact, num_devices, 64, dim)
    large = _step_collectives(exact, num_devices, 1024, dim)
    assert "all-gather" in {o["op"] for o in small["ops"]}
    assert large["total"] >= 1024 * dim * 4 > small["total"]


def test_collective_bytes_reads_shapes_and_groups():
    text = "\n".join(
        [
            "  %a = (f32[], bf16[1024]{0}) all-reduce(%x, %y), replica_groups={{0,1,2,3}}",
            "  %b = f32[64,8]{1,0} reduce-scatter(%z), replica_groups={{0,1,2,3}}, dims={0}",
            "  %c = (f32[8,8]{1,0}, f32[32,8]{1,0}) all-gather-start(%w), replica_groups={}",
            "  %d = f32[32,8]{1,0} all-gather-done(%c)",
            "  %e = f32[10]{0} add(%p, %q)",
            "  %f = f32[16]{0} reduce-scatter(%v), replica_groups=[2,4]<=[8], dimensions={0}",
            "  %g = f32[16]{0} reduce-scatter(%u), replica_groups={}, dimensions={0}",
            # async permute: (operand, result, context): its payload is the result, once
            "  %h = (f32[1024]{0}, f32[1024]{0}, u32[], u32[]) collective-permute-start(%t)",
            "  %i = f32[1024]{0} collective-permute-done(%h)",
            "  %j = f8e4m3fnuz[256]{0} all-reduce(%s), replica_groups={}",
        ]
    )
    r = training.collective_bytes(text, num_devices=8)
    assert [o["op"] for o in r["ops"]] == ["all-reduce", "reduce-scatter", "all-gather"] + [
        "reduce-scatter"
    ] * 2 + ["collective-permute", "all-reduce"]
    assert [o["group_size"] for o in r["ops"]] == [4, 4, 8, 4, 8, 8, 8]
    assert [o["bytes"] for o in r["ops"]] == [
        4 + 2048, 64 * 8 * 4 * 4, 32 * 8 * 4, 16 * 4 * 4, 16 * 4 * 8, 4096, 256
    ]  # fmt: skip
    assert r["total"] == sum(o["bytes"] for o in r["ops"])
