"""What a compiled program communicates: its collectives and their sizes, read from the HLO."""

from __future__ import annotations

import re

# Bytes per element of HLO's element types.
_ELEMENT_BYTES = {
    "pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1,
    "f8e4m3fnuz": 1, "f8e5m2fnuz": 1, "f8e4m3b11fnuz": 1, "f8e8m0fnu": 1, "f8e4m3": 1,
    "bf16": 2, "f16": 2, "s16": 2, "u16": 2, "f32": 4, "s32": 4, "u32": 4,
    "f64": 8, "s64": 8, "u64": 8, "c64": 8, "c128": 16,
}  # fmt: skip
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
_OP = re.compile(r"=\s*(?P<shape>.+?)\s+(?P<op>" + "|".join(COLLECTIVES) + r")(?P<start>-start)?\(")
_ARRAY = re.compile(r"(?P<dtype>[a-z]+\d*[a-z0-9]*)\[(?P<dims>[0-9,]*)\]")
# replica_groups={{0,1,2,3},{4,...}} (explicit) or =[num_groups,group_size]<=[...] (iota).
_GROUPS = re.compile(r"replica_groups=(?:\{\{(?P<first>[0-9,]+)\}|\[\d+,(?P<size>\d+)\]<=)")


def _array_bytes(text: str) -> list[int]:
    out = []
    for m in _ARRAY.finditer(text):
        if m["dtype"] not in _ELEMENT_BYTES:
            continue
        size = 1
        for d in filter(None, m["dims"].split(",")):
            size *= int(d)
        out.append(int(size * _ELEMENT_BYTES[m["dtype"]]))
    return out


def collective_bytes(compiled, num_devices: int | None = None) -> dict:
    """The collectives of a compiled program and the bytes each operates on, per device.

    Reads the optimised HLO (``jax.jit(f).lower(...).compile()``, or its ``as_text()``). For
    each collective the *payload* is the size of the whole buffer it works on as one device
    sees it: an all-reduce's (or all-to-all's, collective-permute's) result, an all-gather's
    gathered result, a reduce-scatter's input (its result times the group size). What
    crosses the wire per device depends on the algorithm (a ring all-reduce of ``B`` bytes
    over ``n`` devices sends ``2 (n - 1) / n * B``); the payload is the quantity that grows
    with the problem, which is what this is for: e.g. checking that a loss communicates
    O(D) bytes rather than O(N d).

    Args:
      compiled: a ``jax.stages.Compiled`` or its HLO text.
      num_devices: the size of a collective's group when the HLO names none
        (``replica_groups={}``: all devices); default ``jax.device_count()``.

    Returns:
      ``{'total': bytes, 'ops': [{'op', 'bytes', 'group_size'}, ...]}`` in program order
      (an asynchronous ``*-start``/``*-done`` pair counts once).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.training import collective_bytes
      >>> collective_bytes(jax.jit(jnp.sin).lower(1.0).compile())["total"]
      0
    """
    text = compiled if isinstance(compiled, str) else compiled.as_text()
    if num_devices is None:
        import jax

        num_devices = jax.device_count()
    ops = []
    for line in text.splitlines():
        m = _OP.search(line)
        if m is None:
            continue
        sizes = _array_bytes(m["shape"])
        if m["start"] and m["op"] == "all-gather" and len(sizes) > 1:
            sizes = sizes[len(sizes) // 2 :]  # (operands..., results...): the results
        if m["start"] and m["op"] == "collective-permute" and len(sizes) > 1:
            sizes = sizes[1:2]  # (operand, result, u32[] context...): the result
        groups = _GROUPS.search(line)
        if groups is None:  # replica_groups={}: one group of every device
            group = num_devices
        elif groups["size"]:
            group = int(groups["size"])
        else:
            group = len(groups["first"].split(","))
        size = sum(sizes) * (group if m["op"] == "reduce-scatter" else 1)
        ops.append({"op": m["op"], "bytes": size, "group_size": group})
    return {"total": sum(o["bytes"] for o in ops), "ops": ops}
