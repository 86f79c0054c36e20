"""A memory queue of past embeddings (MoCo's keys, MetAug's bank), kept in the train state.

The queue is a dict pytree ``{'keys': [size, dim], 'ptr': int32, 'filled': int32}`` that a
method returns from ``init_extra`` (its layout from :func:`queue_specs` in ``extra_specs``)
and updates in ``after_update`` with :func:`enqueue`, once per step.

Under a mesh with a ``data`` axis of ``n`` devices the queue's rows are split over the
devices (``PartitionSpec('data')``), and each device keeps a ring of ``size / n`` rows into
which it writes its own rows of each global batch. No device sends anything: the update is
an in-place write of each device's slice. As a set, the queue then holds the keys of the
last ``size / batch`` global batches, the same set as one FIFO over the global batch would
hold (only the row order differs, which no contrastive loss sees). On one device it is
that FIFO. ``ptr`` and ``filled`` count rows of one ring; :func:`queue_mask` says which
rows have been written, so that a loss can leave the others out until the queue is full.

The rings depend on the number of devices: a checkpointed queue resumed on another number of
devices is laid out again for it by :func:`relayout_queues` (the trainer does this), keeping
its keys and their FIFO order.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from jaxcl import _checks as checks


def _devices(axis: str) -> int:
    """Devices on ``axis`` of the mesh being traced under (``jax.set_mesh``), else 1."""
    mesh = jax.sharding.get_abstract_mesh()
    return mesh.shape[axis] if axis in mesh.axis_names else 1


def queue_init(size: int, dim: int, *, dtype=jnp.float32) -> dict[str, jax.Array]:
    """An empty queue of ``size`` rows of width ``dim``.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcl.methods import enqueue, queue_init, queue_mask
      >>> q = enqueue(queue_init(4, 2), jnp.ones((2, 2)))
      >>> q["keys"].tolist(), queue_mask(q).tolist()
      ([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]], [True, True, False, False])
    """
    size = checks.positive_int("queue_init", "size", size)
    dim = checks.positive_int("queue_init", "dim", dim)
    if not jnp.issubdtype(dtype, jnp.floating):
        checks.fail("queue_init", f"`dtype` must be a floating dtype, got {jnp.dtype(dtype)}")
    return {
        "keys": jnp.zeros((size, dim), dtype),
        "ptr": jnp.zeros((), jnp.int32),
        "filled": jnp.zeros((), jnp.int32),
    }


def check_queue_size(method: str, config) -> None:
    """ValueError unless ``config.method.queue_size`` is an int >= 1 and a multiple of
    ``config.train.batch_size``. :func:`enqueue` writes each of the ``n`` devices' ``batch /
    n`` rows of a batch into its ring of ``queue_size / n`` rows, which must hold a whole
    number of them: ``(queue_size / n) % (batch / n) == 0``, i.e. ``queue_size % batch == 0``
    whatever ``n`` (the trainer requires ``n`` to divide the batch). Checked when the method
    is built, not at its first step."""
    size = config.method.queue_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(
            f"config.method.queue_size = {size!r}: expected an int >= 1 (the number of past "
            f"embeddings kept as negatives) ({method})"
        )
    batch = config.get("train", {}).get("batch_size")
    if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0 and size % batch:
        raise ValueError(
            f"config.method.queue_size = {size}: expected a multiple of config.train."
            f"batch_size = {batch} (each device's ring of queue_size / n rows takes its "
            f"batch_size / n rows per step, n devices) ({method})"
        )


def queue_specs(axis: str = "data") -> dict[str, P]:
    """The queue's layout for ``Method.extra_specs``: rows split over ``axis``."""
    return {"keys": P(axis), "ptr": P(), "filled": P()}


def _check_queue(fn: str, queue) -> None:
    if not (isinstance(queue, dict) and set(queue) == {"keys", "ptr", "filled"}):
        checks.fail(fn, "`queue` must be the dict queue_init returns ('keys', 'ptr', 'filled')")


def enqueue(queue: dict, keys: jax.typing.ArrayLike, *, axis: str = "data") -> dict:
    """``queue`` with the global batch ``keys`` written over its oldest rows.

    Call inside the jitted step (the trainer traces under ``jax.set_mesh``, which tells
    how many devices share the queue). ``keys`` is ``[batch, dim]``, rows split over ``axis``
    like the batch; each device writes its ``batch / n`` rows into its own ring.

    Args:
      queue: from :func:`queue_init`.
      keys: ``[batch, dim]`` embeddings (cast to the queue's dtype); usually the momentum
        encoder's keys, without gradient.
      axis: the mesh axis the rows are split over.

    Raises:
      ValueError: when the rows of one device's ring are not a multiple of its rows per
        batch (as MoCo's K % batch; a batch of another size that divides the ring, such as
        a partial last batch, is still written as the FIFO's next rows), the widths
        differ, or the queue is not floating.
    """
    fn = "enqueue"
    _check_queue(fn, queue)
    if not jnp.issubdtype(queue["keys"].dtype, jnp.floating):
        checks.fail(fn, f"the queue's keys must be floating, got {queue['keys'].dtype}")
    keys = checks.floating_array(fn, "keys", keys, ndim=2)
    size, dim = queue["keys"].shape
    if keys.shape[1] != dim:
        checks.fail(fn, f"`keys` must have the queue's width {dim}, got shape {keys.shape}")
    devices = _devices(axis)
    if size % devices or keys.shape[0] % devices:
        checks.fail(
            fn,
            f"the queue's {size} rows and the batch's {keys.shape[0]} rows must both be "
            f"multiples of the {devices} devices on `{axis}`",
        )
    ring, rows = size // devices, keys.shape[0] // devices
    if rows > ring or ring % rows:
        checks.fail(
            fn,
            f"each device's ring of {ring} queue rows must be a multiple of its {rows} rows per "
            f"batch (queue size {size}, batch {keys.shape[0]}, {devices} devices)",
        )
    ptr = queue["ptr"]

    def write(local_queue, local_keys, at):
        # Rows at + 0 .. at + rows - 1, modulo the ring: where the batch size changed between
        # calls (a partial last batch), ``at`` need not be a multiple of ``rows``, and a
        # slice write there would be moved back from the ring's end instead of wrapping.
        return local_queue.at[(at + jnp.arange(rows)) % ring].set(local_keys)

    new = keys.astype(queue["keys"].dtype)
    mesh = jax.sharding.get_abstract_mesh()
    old = queue["keys"]
    if axis not in mesh.axis_names:
        written = write(old, new, ptr)
    else:  # (also for one device on the axis: rows typed as split over it refuse a scatter)
        types = dict(zip(mesh.axis_names, mesh.axis_types, strict=True))
        if types[axis] == jax.sharding.AxisType.Explicit:
            # Rows split over the axis, whatever layout the caller's arrays came in.
            old, new = (jax.sharding.reshard(x, P(axis)) for x in (old, new))
        # ptr is an argument, not closed over: shard_map refuses closed-over arrays of a mesh
        # with explicit axes.
        written = jax.shard_map(write, in_specs=(P(axis), P(axis), P()), out_specs=P(axis))(
            old, new, ptr
        )
    return {
        "keys": written,
        "ptr": (ptr + rows) % ring,
        "filled": jnp.minimum(queue["filled"] + rows, ring),
    }


def queue_mask(queue: dict, *, axis: str = "data") -> jax.Array:
    """``[size]`` booleans: the rows written so far (all True once the queue is full)."""
    _check_queue("queue_mask", queue)
    size = queue["keys"].shape[0]
    ring = size // _devices(axis)
    return (jnp.arange(size) % ring) < queue["filled"]


def queue_filled(queue: dict, *, axis: str = "data") -> jax.Array:
    """The number of rows written so far, over all devices (``size`` once full)."""
    _check_queue("queue_filled", queue)
    return queue["filled"] * _devices(axis)


def _is_queue(x) -> bool:
    return isinstance(x, dict) and set(x) == {"keys", "ptr", "filled"}


def _host_value(x) -> np.ndarray:
    """The whole of ``x`` on this host, also where other processes hold parts of it."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


def _placed_like(value, like) -> jax.Array:
    """``value`` (the same on every process) laid out as ``like``: each process places
    its own devices' parts."""
    value = np.asarray(value, like.dtype)
    return jax.make_array_from_callback(value.shape, like.sharding, lambda i: value[i])


def relayout_queues(tree, *, devices: tuple[int, int], batch: int, batch_now: int | None = None):
    """``tree`` (e.g. a train state's ``extra``) with every queue in it laid out again from
    ``devices[0]`` rings to ``devices[1]``: the same keys, oldest first as before, so that
    the queue holds and overwrites what one written on ``devices[1]`` would.

    Runs on the host, outside ``jit`` (on several processes, each gathers the whole queue and
    places its own devices' parts); each queue's arrays keep their shardings. A tree without
    queues comes back as it is.

    Args:
      tree: a pytree holding queues (dicts from :func:`queue_init`).
      devices: the devices on the data axis the queues were written on, and those of now.
      batch: the rows each queue took per step (the global batch); needed only where
        ``tree`` holds a queue.
      batch_now: the rows the queues will take per step from now on, if known: a queue
        cannot be continued with another number (its rings' positions step by the old one).

    Raises:
      ValueError: when a queue's state does not fit ``devices[0]`` rings written ``batch``
        rows per step, ``devices[1]`` does not divide its rows and ``batch``, or
        ``batch_now`` differs from ``batch``.
    """
    fn = "relayout_queues"
    if not (isinstance(devices, tuple | list) and len(devices) == 2):
        checks.fail(fn, f"`devices` must be (devices written on, devices now), got {devices!r}")
    old, new = (checks.positive_int(fn, f"devices[{i}]", d) for i, d in enumerate(devices))

    def one(q):
        if not _is_queue(q):
            return q
        rows_per_step = checks.positive_int(fn, "batch", batch)  # (needed for queues only)
        if batch_now is not None and batch_now != rows_per_step:
            checks.fail(
                fn,
                f"the queue was written {rows_per_step} rows a step and cannot be continued "
                f"with a batch of {batch_now}: resume with the batch it was written with, or "
                "start a new run",
            )
        keys = _host_value(q["keys"])
        size, dim = keys.shape
        ptr, filled = int(_host_value(q["ptr"])), int(_host_value(q["filled"]))
        for d in (old, new):
            if size % d or rows_per_step % d or (size // d) % (rows_per_step // d):
                checks.fail(
                    fn,
                    f"a queue of {size} rows written {rows_per_step} rows a step cannot be "
                    f"split into rings over {d} devices (each ring a multiple of its rows per "
                    "step)",
                )
        ring, rows = size // old, rows_per_step // old
        full = filled == ring
        written = ptr % rows == 0 and 0 <= ptr < ring and (full or ptr == filled)
        if not written:
            checks.fail(
                fn,
                f"a queue with ptr {ptr} and filled {filled} was not written {rows} rows a "
                f"step into rings of {ring} rows ({old} devices, batch {rows_per_step})",
            )
        # Each ring's rows oldest first, then step t's global batch: every ring's t-th rows.
        order = (ptr + np.arange(ring)) % ring if full else np.arange(filled)
        aged = keys.reshape(old, ring, dim)[:, order]
        steps = len(order) // rows
        batches = (
            aged.reshape(old, steps, rows, dim)
            .transpose(1, 0, 2, 3)
            .reshape(steps, rows_per_step, dim)
        )
        ring2, rows2 = size // new, rows_per_step // new
        filled2 = steps * rows2
        # The step count modulo the steps a ring holds is ptr / rows on any layout: the
        # oldest rows go where a run on `new` devices all along would have them.
        ptr2 = ptr // rows * rows2 if full else filled2
        laid = np.zeros((new, ring2, dim), keys.dtype)
        at = (ptr2 + np.arange(filled2)) % ring2 if full else np.arange(filled2)
        laid[:, at] = (
            batches.reshape(steps, new, rows2, dim).transpose(1, 0, 2, 3).reshape(new, filled2, dim)
        )
        return {
            "keys": _placed_like(laid.reshape(size, dim), q["keys"]),
            "ptr": _placed_like(ptr2 % ring2, q["ptr"]),
            "filled": _placed_like(filled2, q["filled"]),
        }

    return jax.tree.map(one, tree, is_leaf=_is_queue)
