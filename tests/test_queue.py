"""The public memory queue: on one device a FIFO over global batches; split over 8 devices
the same set of rows (each device a ring of its own rows), written in place; the mask of
written rows; errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcl import methods


def _batches(count, batch=16, dim=3):
    # Row r of batch b holds b * 1000 + r in every column: each row says where it came from.
    return [
        jnp.broadcast_to((b * 1000 + jnp.arange(batch, dtype=jnp.float32))[:, None], (batch, dim))
        for b in range(count)
    ]


def _run(devices, size=64, count=7):
    mesh = jax.make_mesh((devices,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    specs = methods.queue_specs()
    shardings = {k: NamedSharding(mesh, s) for k, s in specs.items()}
    with jax.set_mesh(mesh):
        queue = jax.jit(lambda: methods.queue_init(size, 3), out_shardings=shardings)()
        step = jax.jit(methods.enqueue, out_shardings=shardings, donate_argnums=0)
        masks = []
        for keys in _batches(count):
            queue = step(queue, jax.device_put(keys, rows))
            masks.append(np.asarray(jax.jit(methods.queue_mask)(queue)))
    return queue, masks


def test_one_device_is_a_fifo_over_global_batches():
    queue, masks = _run(1)
    # 64 rows = the last 4 batches of 16, in ring order: batches 4, 5, 6 and then 3.
    got = np.asarray(queue["keys"])[:, 0]
    want = np.concatenate([b * 1000 + np.arange(16) for b in (4, 5, 6, 3)])
    np.testing.assert_array_equal(got, want)
    assert [int(m.sum()) for m in masks] == [16, 32, 48, 64, 64, 64, 64]
    assert int(queue["ptr"]) == (7 * 16) % 64 and int(queue["filled"]) == 64


def test_eight_devices_hold_the_same_rows_each_device_its_own():
    one, _ = _run(1)
    eight, masks = _run(8)
    assert eight["keys"].sharding.spec == P("data")
    # The same set of keys as the FIFO: the last 4 global batches.
    np.testing.assert_array_equal(
        np.sort(np.asarray(eight["keys"])[:, 0]), np.sort(np.asarray(one["keys"])[:, 0])
    )
    # Device d's slice holds only rows that device d had in each batch (rows 2d, 2d + 1).
    for d, shard in enumerate(sorted(eight["keys"].addressable_shards, key=lambda s: s.index)):
        rows = np.asarray(shard.data)[:, 0] % 1000
        assert set(rows.tolist()) == {2 * d, 2 * d + 1}
    # Three batches in, 6 of each device's 8 rows are written.
    np.testing.assert_array_equal(masks[2], np.tile(np.arange(8) < 6, 8))


def test_enqueue_refuses_what_would_wrap_or_mismatch():
    queue = methods.queue_init(10, 3)
    with pytest.raises(ValueError, match="multiple of its 4 rows per batch"):
        methods.enqueue(queue, jnp.zeros((4, 3)))
    with pytest.raises(ValueError, match="`keys` must have the queue's width 3"):
        methods.enqueue(queue, jnp.zeros((5, 2)))
    with pytest.raises(ValueError, match="the dict queue_init returns"):
        methods.enqueue({"keys": queue["keys"]}, jnp.zeros((5, 3)))
    with pytest.raises(ValueError, match="`size` must be a positive integer"):
        methods.queue_init(0, 3)
