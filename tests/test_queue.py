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


def _run(devices, size=64, count=7, queue=None, first=0):
    """``count`` batches (from number ``first``) enqueued on ``devices``, into a new queue
    or ``queue``; returns the queue and the masks after each batch."""
    mesh = jax.make_mesh((devices,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    specs = methods.queue_specs()
    shardings = {k: NamedSharding(mesh, s) for k, s in specs.items()}
    with jax.set_mesh(mesh):
        if queue is None:
            queue = jax.jit(lambda: methods.queue_init(size, 3), out_shardings=shardings)()
        step = jax.jit(methods.enqueue, out_shardings=shardings, donate_argnums=0)
        masks = []
        for keys in _batches(first + count)[first:]:
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


def test_batches_of_changing_size_stay_a_fifo():
    """A partial batch shifts the write position off a multiple of the next batch's rows:
    the rows still wrap around the ring, oldest overwritten first."""
    queue = methods.queue_init(6, 1)
    for value, rows in ((1.0, 2), (2.0, 3), (3.0, 3)):
        queue = jax.jit(methods.enqueue)(queue, jnp.full((rows, 1), value))
    np.testing.assert_array_equal(np.asarray(queue["keys"])[:, 0], [3, 3, 2, 2, 2, 3])
    assert int(queue["ptr"]) == 2 and int(queue["filled"]) == 6


@pytest.mark.parametrize("devices", [1, 8])
def test_a_plain_queue_under_an_explicit_mesh_is_split_and_wraps_on_every_device(devices):
    # queue_init's arrays and the keys carry no layout: enqueue lays them out over the axis.
    # Batches of 2, 3 and 3 rows per device into rings of 6: each ring ends as one device's
    # FIFO, [3, 3, 2, 2, 2, 3] (each row holds its batch's number).
    mesh = jax.make_mesh((devices,), ("data",), axis_types=(jax.sharding.AxisType.Explicit,))
    with jax.set_mesh(mesh):
        queue = methods.queue_init(6 * devices, 1)
        step = jax.jit(methods.enqueue)
        for value, rows in ((1.0, 2), (2.0, 3), (3.0, 3)):
            queue = step(queue, jnp.full((rows * devices, 1), value))
    assert queue["keys"].sharding.spec[0] == "data"
    rings = np.asarray(queue["keys"])[:, 0].reshape(devices, 6)
    np.testing.assert_array_equal(rings, np.tile([3, 3, 2, 2, 2, 3], (devices, 1)))


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
    with pytest.raises(ValueError, match="`dtype` must be a floating dtype, got int32"):
        methods.queue_init(4, 3, dtype=jnp.int32)
    integer = {**queue, "keys": queue["keys"].astype(jnp.int32)}
    with pytest.raises(ValueError, match="the queue's keys must be floating, got int32"):
        methods.enqueue(integer, jnp.zeros((5, 3)))


@pytest.mark.parametrize("before, after", [(1, 8), (8, 1), (8, 2), (2, 4)])
@pytest.mark.parametrize("count", [2, 7])  # part filled; full and wrapped around
def test_a_queue_laid_out_again_continues_as_if_written_on_the_new_devices(before, after, count):
    """A queue written on ``before`` devices and laid out again for ``after`` holds, masks
    and next overwrites exactly what a queue written on ``after`` devices all along does."""
    queue, _ = _run(before, count=count)
    mesh = jax.make_mesh((after,), ("data",))
    specs = methods.queue_specs()
    moved = {k: jax.device_put(v, NamedSharding(mesh, specs[k])) for k, v in queue.items()}
    moved = methods.relayout_queues({"q": [moved]}, devices=(before, after), batch=16)["q"][0]
    assert moved["keys"].sharding.spec == P("data")
    want, _ = _run(after, count=count)
    for k in ("keys", "ptr", "filled"):
        np.testing.assert_array_equal(np.asarray(moved[k]), np.asarray(want[k]))
    with jax.set_mesh(mesh):
        assert int(jax.jit(methods.queue_filled)(moved)) == min(16 * count, 64)
    # Three more batches on the new devices: the oldest rows go first, as on a FIFO.
    went_on, masks = _run(after, count=3, queue=moved, first=count)
    want, want_masks = _run(after, count=count + 3)
    np.testing.assert_array_equal(np.asarray(went_on["keys"]), np.asarray(want["keys"]))
    np.testing.assert_array_equal(masks[-1], want_masks[-1])


def test_relayout_refuses_a_queue_its_arguments_do_not_describe():
    queue, _ = _run(1, count=3)  # ptr = filled = 48 rows on one device
    with pytest.raises(ValueError, match="ptr 48 and filled 48 was not written 2 rows a step"):
        methods.relayout_queues(queue, devices=(8, 1), batch=16)  # rings of 8 rows
    with pytest.raises(ValueError, match="cannot be split into rings over 3 devices"):
        methods.relayout_queues(queue, devices=(1, 3), batch=16)
    with pytest.raises(ValueError, match="written 16 rows a step and cannot be continued with"):
        methods.relayout_queues(queue, devices=(1, 1), batch=16, batch_now=32)
    with pytest.raises(ValueError, match=r"`devices` must be \(devices written on"):
        methods.relayout_queues(queue, devices=8, batch=16)
    # No queue (e.g. a node task's state, which has no batch): nothing to do, nothing needed.
    assert methods.relayout_queues({"no": 1}, devices=(8, 1), batch=None) == {"no": 1}


_TWO_PROCESSES = """
import sys
import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from jaxcl import methods

port, pid = sys.argv[1], int(sys.argv[2])
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid)
assert jax.device_count() == 4 and jax.local_device_count() == 2
# A queue of 32 rows as two rings wrote it (batch 8, 3 steps: 12 rows per ring, wrapped
# past none), held on the 4 devices of both processes; laid out again for 4 rings.
rng = np.random.default_rng(0)
keys = np.zeros((32, 3), np.float32)
for ring in range(2):
    keys[ring * 16 : ring * 16 + 12] = rng.normal(size=(12, 3))
queue = {"keys": keys, "ptr": np.int32(12), "filled": np.int32(12)}
mesh = jax.make_mesh((4,), ("data",))
specs = methods.queue_specs()
spread = {
    k: jax.make_array_from_callback(np.shape(v), NamedSharding(mesh, specs[k]),
                                    lambda i, v=v: np.asarray(v)[i])
    for k, v in queue.items()
}
got = methods.relayout_queues(spread, devices=(2, 4), batch=8)
assert not got["keys"].is_fully_addressable and got["keys"].sharding.spec == P("data")
local = methods.relayout_queues(
    {k: jax.device_put(v, jax.local_devices()[0]) for k, v in queue.items()},
    devices=(2, 4), batch=8,
)
for shard in got["keys"].addressable_shards:  # each process's part, against one process's
    np.testing.assert_array_equal(np.asarray(shard.data), np.asarray(local["keys"])[shard.index])
assert int(got["ptr"]) == int(local["ptr"]) == 6 and int(got["filled"]) == 6
print("ok", pid)
"""


def test_relayout_across_processes_gives_the_one_process_result(tmp_path):
    """On a pod the queue's rows live in several processes: each gathers the whole queue,
    lays it out again and places its own devices' parts."""
    import os
    import socket
    import subprocess
    import sys

    from conftest import communicate_all, subprocess_xla_flags

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "XLA_FLAGS": subprocess_xla_flags(2), "JAX_PLATFORMS": "cpu"}
    script = tmp_path / "two.py"
    script.write_text(_TWO_PROCESSES)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(port), str(pid)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for pid in range(2)
    ]
    outs = [out for out, _ in communicate_all(procs, timeout=300)]
    for pid, (p, out) in enumerate(zip(procs, outs, strict=True)):
        assert p.returncode == 0 and f"ok {pid}" in out, out[-3000:]
