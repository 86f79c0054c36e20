"""Benchmark: jaxcl.random_features.fwht vs a dense Hadamard matmul vs one elementwise pass.

For every (rows, d) the script times, jitted and in float32, the forward transform, the dense
``x @ H_d / sqrt(d)`` it replaces (skipped where it would cost more than --max-dense-gflop),
and ``x * 2.0``, one read and one write of the array, which no transform can beat. It also
times the backward pass (vector-Jacobian product) at a few sizes, then checks two targets:

  1. fwht is >= 8x faster than the dense matmul at d = 4096;
  2. fwht is within 3x of the elementwise pass at d = 1024 with 16,384 rows.

Timings are medians of --repeats calls after one warm-up (compile) call; the minimum is kept
in the JSON as well, since on a shared machine it is the least disturbed number.

Usage (from the repository root, with jaxcl installed or on PYTHONPATH):

  python experiments/benchmarks/fwht_benchmark.py            # full run, a few minutes
  python experiments/benchmarks/fwht_benchmark.py --quick    # a few seconds
  python experiments/benchmarks/fwht_benchmark.py --sweep --dims 1024 4096  # radix/tile sweep

Writes fwht_benchmark[_quick].json and .png to --out (default experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import itertools
import math
import os
import pathlib
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import matplotlib
import scipy.linalg

matplotlib.use("Agg")
import _common  # noqa: E402  (experiments/benchmarks/_common.py: the script's folder is on sys.path)
import matplotlib.pyplot as plt  # noqa: E402

from jaxcl.random_features import _fwht, fwht  # noqa: E402

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
DENSE_TARGET_D, DENSE_TARGET_SPEEDUP = 4096, 8.0
FLOOR_TARGET_D, FLOOR_TARGET_ROWS, FLOOR_TARGET_RATIO = 1024, 16384, 3.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[4096, 16384])
    parser.add_argument(
        "--dims", type=int, nargs="+", default=[128, 256, 512, 1024, 2048, 4096, 8192]
    )
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per measurement")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--max-dense-gflop",
        type=float,
        default=200.0,
        help="skip the dense matmul where one call needs more than this many GFLOP",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, runs in seconds")
    parser.add_argument(
        "--sweep", action="store_true", help="time radix factorizations and tile sizes instead"
    )
    args = parser.parse_args()
    if args.quick:
        args.rows, args.dims, args.repeats = [2048], [256, 1024], 3
    return args


def time_ms(fn, *args, repeats: int) -> dict:
    """Median and minimum wall time of ``fn(*args)`` in ms, after one compiling call."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "all_ms": times}


def machine() -> dict:
    device = jax.devices()[0]
    return {
        "jax_version": jax.__version__,
        "device": f"{device.platform}: {device.device_kind}",
        "num_devices": jax.device_count(),
        "cpu_model": _common.cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def run_forward(args) -> list[dict]:
    fwht_jit = jax.jit(fwht)
    dense_jit = jax.jit(lambda x, h: x @ h)
    floor_jit = jax.jit(lambda x: x * 2.0)
    results = []
    for rows, d in itertools.product(args.rows, args.dims):
        x = jax.random.normal(jax.random.key(d + rows), (rows, d), jnp.float32)
        entry = {"rows": rows, "d": d}
        entry["fwht"] = time_ms(fwht_jit, x, repeats=args.repeats)
        entry["elementwise"] = time_ms(floor_jit, x, repeats=args.repeats)
        gflop = 2 * rows * d * d / 1e9
        if gflop <= args.max_dense_gflop:
            h = jnp.asarray(scipy.linalg.hadamard(d), jnp.float32) / math.sqrt(d)
            entry["dense"] = time_ms(dense_jit, x, h, repeats=args.repeats)
            error = float(jnp.max(jnp.abs(fwht_jit(x) - dense_jit(x, h))))
            entry["max_abs_diff_vs_dense"] = error
            del h
        else:
            entry["dense"] = None
            entry["dense_skipped"] = f"{gflop:.0f} GFLOP per call > --max-dense-gflop"
        results.append(entry)
        print_row(entry)
        del x
    return results


def run_backward(args) -> list[dict]:
    """Backward (vjp) and forward+backward time of fwht, relative to its forward time."""
    sizes = [(r, d) for r, d in [(16384, 1024), (4096, 4096)] if r in args.rows and d in args.dims]
    if args.quick:
        sizes = [(args.rows[0], args.dims[-1])]
    fwd = jax.jit(fwht)
    bwd = jax.jit(lambda x, g: jax.vjp(fwht, x)[1](g)[0])

    @jax.jit
    def fwd_bwd(x, g):
        y, pullback = jax.vjp(fwht, x)
        return y, pullback(g)[0]

    results = []
    for rows, d in sizes:
        x = jax.random.normal(jax.random.key(0), (rows, d), jnp.float32)
        g = jax.random.normal(jax.random.key(1), (rows, d), jnp.float32)
        entry = {
            "rows": rows,
            "d": d,
            "forward": time_ms(fwd, x, repeats=args.repeats),
            "backward": time_ms(bwd, x, g, repeats=args.repeats),
            "forward_and_backward": time_ms(fwd_bwd, x, g, repeats=args.repeats),
        }
        results.append(entry)
    return results


def print_header():
    print(
        f"{'rows':>6} {'d':>5} | {'fwht ms':>8} {'dense ms':>9} {'x*2 ms':>8} | "
        f"{'dense/fwht':>10} {'fwht/(x*2)':>10}"
    )
    print("-" * 70)


def print_row(entry):
    f = entry["fwht"]["median_ms"]
    e = entry["elementwise"]["median_ms"]
    if entry["dense"] is None:
        dense, speedup = f"{'skipped':>9}", f"{'-':>10}"
    else:
        dense = f"{entry['dense']['median_ms']:9.1f}"
        speedup = f"{entry['dense']['median_ms'] / f:10.1f}"
    print(
        f"{entry['rows']:>6} {entry['d']:>5} | {f:8.2f} {dense} {e:8.2f} | {speedup} {f / e:10.2f}"
    )


def check_targets(results) -> list[dict]:
    targets = []
    dense_rows = [r for r in results if r["d"] == DENSE_TARGET_D and r["dense"] is not None]
    if dense_rows:
        r = max(dense_rows, key=lambda r: r["rows"])
        speedup = r["dense"]["median_ms"] / r["fwht"]["median_ms"]
        status = "PASS" if speedup >= DENSE_TARGET_SPEEDUP else "FAIL"
        detail = f"{speedup:.1f}x faster than dense at d={DENSE_TARGET_D}, rows={r['rows']}"
    else:
        status, detail = "SKIP", f"no dense timing at d={DENSE_TARGET_D} in this run"
    targets.append(
        {
            "target": f">= {DENSE_TARGET_SPEEDUP:g}x faster than dense x @ H at d={DENSE_TARGET_D}",
            "status": status,
            "detail": detail,
        }
    )
    floor_rows = [r for r in results if r["d"] == FLOOR_TARGET_D and r["rows"] == FLOOR_TARGET_ROWS]
    if floor_rows:
        r = floor_rows[0]
        ratio = r["fwht"]["median_ms"] / r["elementwise"]["median_ms"]
        status = "PASS" if ratio <= FLOOR_TARGET_RATIO else "FAIL"
        detail = f"{ratio:.2f}x the elementwise pass"
    else:
        status, detail = "SKIP", f"d={FLOOR_TARGET_D}, rows={FLOOR_TARGET_ROWS} not in this run"
    targets.append(
        {
            "target": f"within {FLOOR_TARGET_RATIO:g}x of one elementwise pass at "
            f"d={FLOOR_TARGET_D}, rows={FLOOR_TARGET_ROWS}",
            "status": status,
            "detail": detail,
        }
    )
    return targets


def plot(results, path: pathlib.Path, info: dict):
    rows_list = sorted({r["rows"] for r in results})
    fig, axes = plt.subplots(1, len(rows_list), figsize=(6 * len(rows_list), 4.5), squeeze=False)
    for ax, rows in zip(axes[0], rows_list, strict=True):
        sub = sorted((r for r in results if r["rows"] == rows), key=lambda r: r["d"])
        dims = [r["d"] for r in sub]
        ax.plot(dims, [r["fwht"]["median_ms"] for r in sub], "o-", label="jaxcl fwht")
        ax.plot(dims, [r["elementwise"]["median_ms"] for r in sub], "s--", label="x * 2.0 (floor)")
        dense = [(r["d"], r["dense"]["median_ms"]) for r in sub if r["dense"] is not None]
        if dense:
            dense_d, dense_ms = zip(*dense, strict=True)
            ax.plot(dense_d, dense_ms, "^-", label="dense x @ H")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("d")
        ax.set_ylabel("ms (median)")
        ax.set_title(f"{rows} rows, float32 forward")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(
        f"FWHT on {info['cpu_model']} ({info['cpu_count']} cores), jax {info['jax_version']}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def factorizations(d: int, max_radix: int = 64, max_stages: int = 4) -> list[tuple[int, ...]]:
    """Non-increasing factorizations of ``d`` into powers of two in [2, max_radix]."""
    out = []

    def rec(rest, prefix):
        if rest == 1:
            out.append(tuple(prefix))
            return
        if len(prefix) == max_stages:
            return
        r = min(rest, max_radix, prefix[-1] if prefix else max_radix)
        while r >= 2:
            if rest % r == 0:
                rec(rest // r, [*prefix, r])
            r //= 2

    rec(d, [])
    return out


def run_sweep(args):
    """Times every radix factorization x tile size with the library's private kernels."""
    rows = args.rows[0]
    print(f"sweep at {rows} rows (median ms); library default radices marked with *")
    for d in args.dims:
        x = jax.random.normal(jax.random.key(d), (rows, d), jnp.float32)
        floor = time_ms(jax.jit(lambda x: x * 2.0), x, repeats=args.repeats)["median_ms"]
        print(f"d={d}: elementwise {floor:.1f} ms")
        tiles_mb = [0.5, 1, 2, 4]
        print(f"  {'radices':<18}" + "".join(f"{mb:>8g}MB" for mb in tiles_mb) + f"{'untiled':>10}")
        for radices in factorizations(d):
            scale = 1 / math.sqrt(d)
            cells = []
            for mb in tiles_mb:
                stages = functools.partial(_fwht._stages, radices=radices, scale=scale)
                fn = jax.jit(
                    functools.partial(
                        _fwht.map_row_tiles, stages, row_bytes=4 * d, tile_bytes=int(mb * 2**20)
                    )
                )
                cells.append(time_ms(fn, x, repeats=args.repeats)["median_ms"])
            untiled = jax.jit(functools.partial(_fwht._stages, radices=radices, scale=scale))
            cells.append(time_ms(untiled, x, repeats=args.repeats)["median_ms"])
            mark = "*" if radices == _fwht._radices(d) else " "
            print(f" {mark}{str(radices):<18}" + "".join(f"{c:10.1f}" for c in cells))


def main():
    args = parse_args()
    info = machine()
    print(
        f"jax {info['jax_version']} on {info['device']}, {info['cpu_model']}, "
        f"{info['cpu_count']} cpus, {info['date']}"
    )
    if args.sweep:
        run_sweep(args)
        return
    print_header()
    results = run_forward(args)
    backward = run_backward(args)
    if backward:
        print("\nbackward pass (vjp) of fwht, median ms:")
        for b in backward:
            f, bw, fb = (b[k]["median_ms"] for k in ("forward", "backward", "forward_and_backward"))
            print(
                f"  rows={b['rows']:>6} d={b['d']:>5}: forward {f:.1f}, backward {bw:.1f} "
                f"({bw / f:.2f}x forward), forward+backward {fb:.1f} ({fb / f:.2f}x forward)"
            )
    targets = check_targets(results)
    print()
    for t in targets:
        print(f"[{t['status']}] {t['target']}: {t['detail']}")
    record = {
        **info,
        "radices": {d: _fwht._radices(d) for d in args.dims},
        "tile_bytes": _fwht._TILE_BYTES,
        "forward": results,
        "backward": backward,
        "targets": targets,
    }
    _common.save_record(args, "fwht_benchmark", record, lambda path: plot(results, path, info))


if __name__ == "__main__":
    main()
