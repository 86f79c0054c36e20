"""Speed of SORF's projection paths against RFF inside ESCo's kernel sums, by input dimension.

For each input dimension d the script times, jitted and in float32, forward + backward of what
``jaxcl.losses.esco_loss`` does with one block of rows: project the rows (``[rows, d]`` ->
``[rows, D]``), then sum ``cos`` and ``sin`` of the projections over the rows (D = max(--num-
features, p), p = d rounded up to a power of two). Variants:

- ``rff``: ``rff_projection``, one ``[rows, d] @ [d, D]`` matmul.
- ``sorf``: ``sorf_projection`` as shipped (``dense`` for p <= 256, ``fwht`` above).
- ``sorf_dense``: W_SORF built from the identity by the FWHT chain, then one dense matmul.
- ``sorf_fwht``: the chain ``H D_1 H D_2 H D_3`` on every row, one tile of rows at a time (CPU).
- ``sorf_three_calls``: the chain as three whole-array ``fwht`` calls with the sign products
  between them, the implementation before the two paths above (kept here as the baseline).

All SORF variants compute the same projections (checked against ``sorf_dense`` before timing).
Timings are medians of --repeats calls after a compiling call.

Usage (from the repository root):

  python experiments/benchmarks/sorf_speed_benchmark.py          # d = 64 ... 2048, ~2 min
  python experiments/benchmarks/sorf_speed_benchmark.py --quick  # d = 128, 1024

Writes sorf_speed_benchmark[_quick].json and .png to --out (default
experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
import jax
import jax.numpy as jnp
import numpy as np

from jaxcl import random_features as rf
from jaxcl.random_features import _sorf

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
VARIANTS = ("rff", "sorf", "sorf_dense", "sorf_fwht", "sorf_three_calls")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048])
    parser.add_argument("--rows", type=int, default=4096, help="rows per call (one ESCo block)")
    parser.add_argument("--num-features", type=int, default=1024, help="D (at least p)")
    parser.add_argument("--temperature", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="d = 128 and 1024, 3 repeats")
    args = parser.parse_args()
    if args.quick:
        args.dims, args.repeats = [128, 1024], 3
    return args


def three_calls(z, params, temperature):
    """SORF's projection as three whole-array fwht calls (jaxcl up to commit 25177b4)."""
    num_blocks, _, p = params.signs.shape
    v = jnp.pad(z, [(0, 0), (0, p - params.dim)])[:, None, :] * params.signs[:, 2]
    v = rf.fwht(rf.fwht(rf.fwht(v) * params.signs[:, 1]) * params.signs[:, 0])
    v = v.reshape(z.shape[0], num_blocks * p)[:, : params.num_features]
    return v * jnp.sqrt(p / temperature)


def projections(d: int, args):
    p = 1 << (d - 1).bit_length()
    num = max(args.num_features, p)
    key = jax.random.key(d)
    rff, sorf = rf.draw_rff(key, d, num), rf.draw_sorf(key, d, num)
    tau = args.temperature
    return num, {
        "rff": lambda z: rf.rff_projection(z, rff, temperature=tau),
        "sorf": lambda z: rf.sorf_projection(z, sorf, temperature=tau),
        "sorf_dense": lambda z: _sorf._projection(z, sorf, tau, path="dense"),
        "sorf_fwht": lambda z: _sorf._projection(z, sorf, tau, path="fwht"),
        "sorf_three_calls": lambda z: three_calls(z, sorf, tau),
    }


def time_ms(fn, x, repeats: int) -> float:
    jax.block_until_ready(fn(x))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def kernel_sums_step(project):
    """Forward + backward of ||sum_i cos p_i||^2 + ||sum_i sin p_i||^2 (ESCo's sums' shape)."""

    def value(z):
        proj = project(z)
        cos_sum, sin_sum = jnp.sum(jnp.cos(proj), 0), jnp.sum(jnp.sin(proj), 0)
        return jnp.sum(cos_sum * cos_sum + sin_sum * sin_sum)

    return jax.jit(jax.value_and_grad(value))


def plot(rows, path: pathlib.Path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    dims = [r["dim"] for r in rows]
    for i, name in enumerate(VARIANTS):
        style = "--" if name in ("rff", "sorf_three_calls") else "-"
        for ax, key in zip(axes, ("step_ms", "projection_ms"), strict=True):
            ax.plot(dims, [r[name][key] for r in rows], f"C{i}{style}o", label=name)
    axes[0].set_ylabel("projection + cos/sin sums, forward + backward (ms)")
    axes[1].set_ylabel("projection alone, forward (ms)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("input dimension d")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    _common.finish_figure(
        fig,
        path,
        f"SORF vs RFF projection, {args.rows} rows, D = max({args.num_features}, p), "
        f"tau = {args.temperature}",
    )


def main() -> None:
    args = parse_args()
    env = _common.environment(("jax", "jaxlib"))
    _common.print_environment(env)
    start = time.perf_counter()
    header = f"{'d':>5} {'D':>5} | " + " ".join(f"{v:>16}" for v in VARIANTS)
    print("forward + backward ms (projection alone, forward ms)")
    print(header)
    print("-" * len(header))
    rows = []
    for d in args.dims:
        num, fns = projections(d, args)
        x = jax.random.normal(jax.random.key(0), (args.rows, d), jnp.float32)
        reference = np.asarray(jax.jit(fns["sorf_dense"])(x))
        row = {"dim": d, "num_features": num}
        for name, fn in fns.items():
            if name.startswith("sorf"):
                got = np.asarray(jax.jit(fn)(x))
                np.testing.assert_allclose(got, reference, rtol=1e-3, atol=1e-3, err_msg=name)
            row[name] = {
                "step_ms": time_ms(kernel_sums_step(fn), x, args.repeats),
                "projection_ms": time_ms(jax.jit(fn), x, args.repeats),
            }
        rows.append(row)
        cells = " ".join(
            f"{row[v]['step_ms']:7.1f} ({row[v]['projection_ms']:5.1f})" for v in VARIANTS
        )
        print(f"{d:5d} {num:5d} | {cells}", flush=True)
    seconds = time.perf_counter() - start
    print(f"\n{seconds:.0f} s")
    record = {"env": env, "rows": rows, "seconds": seconds}
    _common.save_record(args, "sorf_speed_benchmark", record, lambda p: plot(rows, p, args))


if __name__ == "__main__":
    main()
