"""Memory bandwidth of fwht, SORF and RFF projections: achieved bytes/s against the device's.

The FWHT and SORF's projection do O(log d) flops per element and should be limited by memory
traffic, above all on a GPU. For one array of N rows and d columns (default N = 10^6,
d = 1024, bfloat16: a 2 GB array) the script times, jitted:

- ``x * 2``: one read and one write of the array, the bandwidth an elementwise pass attains;
- ``fwht(x)``, forward, and forward + backward (``jax.vjp``: the result and the gradient);
- ``sorf_projection`` from [N, d] to [N, D] (D = --num-features, 1024), as ESCo projects its
  embeddings, forward and forward + backward (gradient with respect to the input);
- ``rff_projection`` (one [N, d] @ [d, D] matmul) the same way, for comparison;
- for a non-float32 dtype also, as a diagnostic, the FWHT stages run in that dtype
  (``_fwht.transform_rows``; the library's fwht computes in float32 and rounds once);
- on a GPU (--pallas, default there) fwht and sorf_projection with ``implementation='pallas'``,
  the fused kernel that reads each row once and writes it once, forward and forward +
  backward; with --sweep also the kernel's launch settings (rows per program, warps, and the
  row-at-a-time variant) as diagnostics.

Each time is the median of --repeats calls after a compiling call (``jax.block_until_ready``).
The achieved bandwidth of each is its *minimal* memory traffic over its time: a read of its
inputs and a write of its outputs (the forward + backward calls read x and the cotangent and
write the result and the gradient); intermediates that a kernel had to write out count as
overhead. It is reported as GB/s, as a fraction of the elementwise pass's, and as a fraction
of the device's nominal peak bandwidth (a small table of GPUs by ``device_kind``; None on CPU
or an unknown device, or --peak-bandwidth-gbs). XLA's own estimate of the bytes each compiled
program accesses and its optimized HLO (``*_hlo.txt``) are kept to show where traffic goes.

Each timed result's first and last rows are checked against float64 NumPy: fwht against
``x @ H_d / sqrt(d)`` (Sylvester's H_d, as ``scipy.linalg.hadamard``), sorf_projection against
its dense ``W_SORF = sqrt(p / tau) H D_1 H D_2 H D_3`` built from the drawn signs, rff against
``z @ omega / sqrt(tau)``; the gradients against the transposed products. A mismatch is
reported (FAIL) and the run goes on.

Target (issue: ESCo scaling on a GPU): fwht and SORF's projection (forward) reach >= 50 % of
the GPU's peak memory bandwidth at d = 1024, N = 10^6, bfloat16 (SKIP on another
configuration or where the peak is unknown), each by the faster of its implementations whose
results passed the check. The same for forward + backward is reported too.

Usage (from the repository root):

  python experiments/benchmarks/fwht_bandwidth_benchmark.py          # GPU: N=1e6, d=1024, bf16
  python experiments/benchmarks/fwht_bandwidth_benchmark.py --dtype float32
  python experiments/benchmarks/fwht_bandwidth_benchmark.py --quick  # N=16384, d=256, seconds

The default size needs ~2 GB per array and is refused on CPU (--allow-large-cpu overrides).

Writes fwht_bandwidth_benchmark[_quick][_<dtype>][_<platform>].json, .png and _hlo.txt to
--out (default experiments/benchmarks/results); ``_<dtype>`` unless bfloat16, ``_<platform>``
(--platform-tag, default: JAX's backend, e.g. ``gpu``, and nothing on CPU) so that a GPU run
does not overwrite a CPU one.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import pathlib
import re
import statistics
import time
import traceback
from collections import Counter

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
import jax
import jax.numpy as jnp
import numpy as np

from jaxcl import random_features as rf
from jaxcl.random_features import _fwht, _hadamard_pallas

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
NAME = "fwht_bandwidth_benchmark"
TARGET_N, TARGET_D, TARGET_DTYPE, TARGET_FRACTION = 1_000_000, 1024, "bfloat16", 0.5
# Nominal peak memory bandwidth (bytes/s) by a substring of jax's device_kind, first match.
PEAK_BANDWIDTH = (
    ("GH200", None),  # 4.0 or 4.9 TB/s by memory: not told apart here
    ("H200", 4.8e12),
    ("H100 80GB HBM3", 3.35e12),  # H100 SXM5
    ("H100 NVL", 3.9e12),
    ("H100 PCIe", 2.0e12),
)
# --sweep: (variant, rows per program, warps) of the fused kernel, timed as diagnostics.
SWEEP = tuple(
    [("transpose", r, w) for r in (1, 2, 4, 8, 16) for w in (2, 4, 8)]
    + [("alternate", 4, 4), ("rowloop", 16, 4), ("rowloop", 64, 4)]
)
# SORF: (variant, precision, rows per program, warps). At 1885518 (variant 'transpose',
# precision 'split') 4 rows and 4 warps were the fastest (5.12 ms); 'alternate' (one transpose
# per transform instead of two) and 'tf32' (one matmul per float32 operand instead of two) are
# the next things to time.
SORF_SWEEP = (
    ("transpose", "split", 2, 4),
    ("transpose", "split", 4, 4),
    ("alternate", "split", 4, 4),
    ("transpose", "tf32", 4, 4),
    ("alternate", "tf32", 4, 4),
    ("alternate", "tf32", 2, 4),
    ("alternate", "tf32", 8, 4),
)
CHECK_ROWS = 8  # the first and the last rows of each result compared with float64 NumPy
LARGE_CPU_BYTES = 1 << 30  # an input array above this is refused on CPU


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help=f"rows N (default {TARGET_N})")
    parser.add_argument("--d", type=int, default=None, help=f"columns d (default {TARGET_D})")
    parser.add_argument(
        "--num-features", type=int, default=None, help="D of the projections (default 1024)"
    )
    parser.add_argument(
        "--dtype", choices=["bfloat16", "float32"], default=None, help="default bfloat16"
    )
    parser.add_argument("--temperature", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=None, help="timed calls (default 10)")
    parser.add_argument(
        "--peak-bandwidth-gbs",
        type=float,
        default=None,
        help="the device's peak memory bandwidth in GB/s (default: from the table by device_kind)",
    )
    parser.add_argument(
        "--platform-tag",
        default="auto",
        help="suffix of the output files: auto (JAX's backend, e.g. gpu; none on CPU), or "
        "any name (e.g. h100); 'none' for no suffix",
    )
    parser.add_argument(
        "--allow-large-cpu", action="store_true", help="run a > 1 GiB array on CPU anyway"
    )
    parser.add_argument(
        "--pallas",
        choices=["auto", "yes", "no"],
        default="auto",
        help="also time implementation='pallas' (the fused kernel; auto: on a GPU)",
    )
    parser.add_argument(
        "--sweep", action="store_true", help="time the kernel's launch settings (GPU)"
    )
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--quick", action="store_true", help="N = 16384, d = D = 256, float32, 3 repeats"
    )
    args = parser.parse_args()
    quick = {"n": 16384, "d": 256, "num_features": 256, "dtype": "float32", "repeats": 3}
    full = {"n": TARGET_N, "d": TARGET_D, "num_features": 1024, "dtype": "bfloat16", "repeats": 10}
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.d & (args.d - 1):
        parser.error(f"--d must be a power of two (fwht), got {args.d}")
    if args.pallas == "auto":
        args.pallas = jax.default_backend() == "gpu"
    else:
        args.pallas = args.pallas == "yes"
    return args


def platform_tag(args) -> str:
    if args.platform_tag == "none":
        return ""
    if args.platform_tag != "auto":
        return args.platform_tag
    backend = jax.default_backend()
    return "" if backend == "cpu" else backend


def peak_bandwidth(device_kind: str, override_gbs: float | None) -> tuple[float | None, str]:
    """The device's nominal peak bandwidth in bytes/s and where it came from."""
    if override_gbs is not None:
        return override_gbs * 1e9, "--peak-bandwidth-gbs"
    for pattern, peak in PEAK_BANDWIDTH:
        if pattern in device_kind:
            return peak, f"table: '{pattern}'"
    return None, "unknown device"


def device_info() -> dict:
    device = jax.devices()[0]
    info = {
        "platform": device.platform,
        "device_kind": device.device_kind,
        "device_count": jax.device_count(),
        "jax": jax.__version__,
    }
    from importlib import metadata

    for package in ("jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin"):
        try:
            info[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    info["memory_stats"] = memory_stats()
    return info


def memory_stats() -> dict | None:
    """The device allocator's bytes in use, peak and limit (None on CPU)."""
    stats = jax.devices()[0].memory_stats()
    if not stats:
        return None
    keys = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")
    return {k: int(stats[k]) for k in keys if k in stats}


# --------------------------------------------------------------------------------------------
# Dense float64 references
# --------------------------------------------------------------------------------------------


def f64(a) -> np.ndarray:
    """The first and the last CHECK_ROWS rows of a device array as float64 (sliced on the
    device: the [N, d] array never comes to the host)."""
    rows = a if a.shape[0] <= 2 * CHECK_ROWS else jnp.concatenate([a[:CHECK_ROWS], a[-CHECK_ROWS:]])
    return np.asarray(rows.astype(jnp.float32), dtype=np.float64)


def sorf_dense(params, temperature: float) -> np.ndarray:
    """``W_SORF^T``, ``[dim, num_features]`` in float64, from the drawn signs (ESCo Eq. 12):
    block ``t`` is ``sqrt(p / tau) H D_1 H D_2 H D_3`` with ``H`` orthonormal, ``D_i =
    diag(signs[t, i - 1])``, the blocks stacked and cut to ``num_features`` rows."""
    signs = np.asarray(params.signs, dtype=np.float64)
    num_blocks, _, p = signs.shape
    h = hadamard(p) / math.sqrt(p)
    blocks = []
    for t in range(num_blocks):
        d1, d2, d3 = (np.diag(signs[t, i]) for i in range(3))
        w = math.sqrt(p / temperature) * h @ d1 @ h @ d2 @ h @ d3
        if params.scales is not None:
            w = np.asarray(params.scales[t], np.float64)[:, None] * w
        blocks.append(w)
    w = np.concatenate(blocks, axis=0)[: params.num_features, : params.dim]
    return w.T


def hadamard(d: int) -> np.ndarray:
    """Sylvester's ``d x d`` Hadamard matrix (``scipy.linalg.hadamard``'s order), float64:
    built here so that the check does not share code with the library (nor need SciPy)."""
    h = np.ones((1, 1))
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    return h


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """Largest absolute deviation over the reference's root mean square."""
    rms = float(np.sqrt(np.mean(want**2)))
    return float(np.max(np.abs(got - want))) / max(rms, 1e-30)


# --------------------------------------------------------------------------------------------
# The timed programs
# --------------------------------------------------------------------------------------------


def forward_and_backward(fn):
    """``(x, g, *rest) -> (fn(x, *rest), vjp of fn at x applied to g)``."""

    def both(x, g, *rest):
        y, pullback = jax.vjp(lambda v: fn(v, *rest), x)
        return y, pullback(g)[0]

    return both


def variants(args, x, g_d, g_big) -> list[dict]:
    """What is timed: name, function, arguments, minimal bytes, and the float64 references of
    its outputs' first rows."""
    n, d, big = args.n, args.d, args.num_features
    item = jnp.dtype(args.dtype).itemsize
    tau = args.temperature
    key = jax.random.key(1)
    sorf, rff = rf.draw_sorf(key, d, big), rf.draw_rff(key, d, big)
    params_bytes = {
        name: sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(p))
        for name, p in (("sorf", sorf), ("rff", rff))
    }
    h = hadamard(d) / math.sqrt(d)
    w_sorf = sorf_dense(sorf, tau)  # [d, D]
    w_rff = np.asarray(rff.omega, np.float64) / math.sqrt(tau)
    x0, gd0, gb0 = f64(x), f64(g_d), f64(g_big)

    def sorf_fn(z, params, implementation="xla"):
        return rf.sorf_projection(z, params, temperature=tau, implementation=implementation)

    # fwht's and sorf's timed rows, without their name, label and function
    fwht_row = dict(args=(x,), bytes=2 * n * d * item, refs=[x0 @ h])
    sorf_row = dict(
        args=(x, sorf), bytes=n * (d + big) * item + params_bytes["sorf"], refs=[x0 @ w_sorf]
    )

    def transform_rows(suffix, label_suffix, fwht_impl, sorf_impl):
        """fwht and sorf_projection, forward and forward + backward, of one implementation."""
        return [
            dict(fwht_row, name="fwht" + suffix, label="fwht" + label_suffix, fn=fwht_impl),
            dict(
                name=f"fwht{suffix}_fwd_bwd",
                label=f"fwht fwd+bwd{label_suffix}",
                fn=forward_and_backward(fwht_impl),
                args=(x, g_d),
                bytes=4 * n * d * item,
                refs=[x0 @ h, gd0 @ h],
            ),
            dict(
                sorf_row, name="sorf" + suffix, label="sorf_projection" + label_suffix, fn=sorf_impl
            ),
            dict(
                name=f"sorf{suffix}_fwd_bwd",
                label=f"sorf fwd+bwd{label_suffix}",
                fn=forward_and_backward(sorf_impl),
                args=(x, g_big, sorf),
                bytes=2 * n * (d + big) * item + params_bytes["sorf"],
                refs=[x0 @ w_sorf, gb0 @ w_sorf.T],
            ),
        ]

    def rff_fn(z, params):
        return rf.rff_projection(z, params, temperature=tau)

    out = [
        dict(
            name="elementwise",
            label="x * 2 (elementwise)",
            fn=lambda v: v * 2,
            args=(x,),
            bytes=2 * n * d * item,
            refs=[2.0 * x0],
        ),
        *transform_rows("", "", rf.fwht, sorf_fn),
        dict(
            name="rff",
            label="rff_projection",
            fn=rff_fn,
            args=(x, rff),
            bytes=n * (d + big) * item + params_bytes["rff"],
            refs=[x0 @ w_rff],
        ),
        dict(
            name="rff_fwd_bwd",
            label="rff fwd+bwd",
            fn=forward_and_backward(rff_fn),
            args=(x, g_big, rff),
            bytes=2 * n * (d + big) * item + params_bytes["rff"],
            refs=[x0 @ w_rff, gb0 @ w_rff.T],
        ),
    ]
    if args.pallas:  # the same four rows through the fused kernel (GPU only)
        out += transform_rows(
            "_pallas",
            ", pallas",
            functools.partial(rf.fwht, implementation="pallas"),
            functools.partial(sorf_fn, implementation="pallas"),
        )
    if args.sweep:  # the kernel's launch settings and variants, as diagnostics
        for variant, block_rows, warps in SWEEP:
            settings = dict(variant=variant, block_rows=block_rows, num_warps=warps)
            out.append(
                dict(
                    fwht_row,
                    name=f"fwht_pallas_{variant}_r{block_rows}_w{warps}",
                    label=f"fwht pallas {variant} r{block_rows} w{warps}",
                    fn=functools.partial(_hadamard_pallas.fwht_rows, **settings),
                    diagnostic=True,
                )
            )
        for variant, precision, block_rows, warps in SORF_SWEEP:
            settings = dict(
                variant=variant, precision=precision, block_rows=block_rows, num_warps=warps
            )
            out.append(
                dict(
                    sorf_row,
                    name=f"sorf_pallas_{variant}_{precision}_r{block_rows}_w{warps}",
                    label=f"sorf pallas {variant} {precision} r{block_rows} w{warps}",
                    fn=functools.partial(
                        _hadamard_pallas.sorf_projection_rows, temperature=tau, **settings
                    ),
                    diagnostic=True,
                )
            )
    if args.dtype != "float32":
        scale = 1.0 / math.sqrt(d)
        out.append(
            dict(
                name="fwht_stages_native_dtype",
                label=f"fwht stages in {args.dtype} (diag.)",
                fn=lambda v: _fwht.transform_rows(v, scale),
                args=(x,),
                bytes=2 * n * d * item,
                refs=[x0 @ h],
                diagnostic=True,
            )
        )
    # The target's rows first (a run cut short by a time limit keeps them), then the rest.
    order = [
        "elementwise",
        "fwht_pallas",
        "sorf_pallas",
        "fwht_pallas_fwd_bwd",
        "sorf_pallas_fwd_bwd",
        "fwht",
        "sorf",
        "fwht_fwd_bwd",
        "sorf_fwd_bwd",
        "rff",
        "rff_fwd_bwd",
    ]
    return sorted(out, key=lambda v: order.index(v["name"]) if v["name"] in order else len(order))


def time_ms(call, repeats: int) -> dict:
    """Median and minimum wall time of ``call()`` in ms (its first call already made)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(call())
        times.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "all_ms": times}


def hlo_summary(text: str) -> dict:
    """Instructions of the optimized HLO's entry computation by opcode (the kernels a GPU
    launches are its fusions and custom calls), and the custom calls' targets."""
    ops, targets, entry = Counter(), Counter(), False
    trivial = {"parameter", "tuple", "get-tuple-element", "bitcast", "constant"}
    for line in text.splitlines():
        if line.startswith("ENTRY"):
            entry = True
            continue
        if entry and line.startswith("}"):
            break
        if not entry or " = " not in line:
            continue
        match = re.search(r"([a-z][a-z0-9_-]*)\(", line.split(" = ", 1)[1])
        if match and match.group(1) not in trivial:
            ops[match.group(1)] += 1
            target = re.search(r'custom_call_target="([^"]+)"', line)
            if target:
                targets[target.group(1)] += 1
    return {"entry_ops": dict(ops), "custom_call_targets": dict(targets)}


def measure(v: dict, args, peak_bps: float | None) -> tuple[dict, str]:
    """Compiles, checks and times one variant; returns its record and its optimized HLO."""
    start = time.perf_counter()
    compiled = jax.jit(v["fn"]).lower(*v["args"]).compile()
    compile_s = time.perf_counter() - start
    outputs = compiled(*v["args"])
    jax.block_until_ready(outputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    tol = 1e-2 if args.dtype == "float32" else 5e-2
    errors = [relative_error(f64(o), ref) for o, ref in zip(outputs, v["refs"], strict=True)]
    del outputs
    timing = time_ms(lambda: compiled(*v["args"]), args.repeats)
    try:  # XLA's estimates: diagnostics only, never worth losing the timings over
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list | tuple) else cost
        xla_memory = _common.xla_memory(compiled)
        text = compiled.as_text()
    except Exception as e:
        cost, xla_memory, text = None, None, f"// unavailable: {e!r}"
    xla_bytes = (cost or {}).get("bytes accessed")
    seconds = timing["median_ms"] / 1e3
    record = {
        "name": v["name"],
        "label": v["label"],
        "diagnostic": v.get("diagnostic", False),
        "minimal_bytes": v["bytes"],
        **timing,
        "compile_s": compile_s,
        "achieved_bytes_per_s": v["bytes"] / seconds,
        "fraction_of_peak": v["bytes"] / seconds / peak_bps if peak_bps else None,
        # Below the minimal traffic, XLA's count missed the work: a Pallas kernel is a custom
        # call whose bytes cost analysis cannot see (it reports -1 or a few bytes). Not a
        # measurement, so not recorded as one; the raw figure stays beside it.
        "xla_bytes_accessed": (
            float(xla_bytes) if xla_bytes is not None and xla_bytes >= v["bytes"] else None
        ),
        "xla_bytes_accessed_raw": float(xla_bytes) if xla_bytes is not None else None,
        "xla_flops": float(cost["flops"]) if cost and "flops" in cost else None,
        "xla_memory": xla_memory,
        "check": {
            "max_error_over_rms": errors,
            "tolerance": tol,
            "rows": 2 * CHECK_ROWS,
            "passed": all(e <= tol for e in errors),
        },
        "hlo": hlo_summary(text),
        "memory_stats_after": memory_stats(),
    }
    return record, text


def fmt_fraction(f: float | None) -> str:
    return f"{'-':>8}" if f is None else f"{100 * f:7.1f}%"


def print_row(r: dict) -> None:
    xla = r["xla_bytes_accessed"]
    seen = xla is not None and xla >= r["minimal_bytes"]  # records from before the check
    passes = f"{xla / r['minimal_bytes']:8.2f}" if seen else f"{'-':>8}"
    check = "ok" if r["check"]["passed"] else "FAILED"
    check += f" {max(r['check']['max_error_over_rms']):.1e}"
    print(
        f"{r['label']:<34}{r['median_ms']:10.3f}{r['achieved_bytes_per_s'] / 1e9:9.1f}"
        f"{fmt_fraction(r.get('fraction_of_elementwise'))}{fmt_fraction(r['fraction_of_peak'])}"
        f"{passes}{r['compile_s']:10.1f}  {check}",
        flush=True,
    )


def best_implementation(by_name: dict, kind: str, suffix: str) -> dict:
    """The fastest of ``kind``'s implementations (xla, pallas) whose results passed the
    check; else the xla one's record (a failed or missing run has no "check")."""
    runs = [by_name.get(kind + impl + suffix, {}) for impl in ("", "_pallas")]
    passed = [r for r in runs if r.get("check", {}).get("passed")]
    return max(passed, key=lambda r: r["achieved_bytes_per_s"]) if passed else runs[0]


def check_targets(args, results: list[dict], peak_bps: float | None) -> list[dict]:
    by_name = {r["name"]: r for r in results}
    here = (args.n, args.d, args.dtype)
    targets = []
    for suffix, what in (("", "forward"), ("_fwd_bwd", "forward + backward")):
        target = (
            f"fwht and SORF ({what}) >= {100 * TARGET_FRACTION:g} % of peak bandwidth at "
            f"d={TARGET_D}, N=1e6, {TARGET_DTYPE}"
        )
        runs = [best_implementation(by_name, k, suffix) for k in ("fwht", "sorf")]
        if any("check" not in r for r in runs):
            targets.append({"target": target, "status": "FAIL", "detail": "a variant failed"})
            continue
        fractions = {r["label"]: r["fraction_of_peak"] for r in runs}
        if here != (TARGET_N, TARGET_D, TARGET_DTYPE):
            status, detail = "SKIP", f"this run is N={args.n}, d={args.d}, {args.dtype}"
        elif peak_bps is None:
            status, detail = "SKIP", "the device's peak bandwidth is unknown"
        else:
            ok = all(f >= TARGET_FRACTION for f in fractions.values())
            status = "PASS" if ok else "FAIL"
            detail = ", ".join(f"{k} {100 * f:.1f} %" for k, f in fractions.items())
        if not all(r["check"]["passed"] for r in runs):
            status, detail = "FAIL", detail + " (results differ from the dense reference)"
        targets.append({"target": target, "status": status, "detail": detail})
    return targets


def plot(results: list[dict], path: pathlib.Path, title: str, peak_bps, floor_bps) -> None:
    try:
        import matplotlib
    except ImportError:  # a bare GPU environment: the JSON has it all
        print("matplotlib is not installed: no plot")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [r for r in results if "error" not in r]
    fig, ax = plt.subplots(figsize=(9, max(4.5, 1.0 + 0.24 * len(results))))
    labels = [r["label"] for r in results]
    values = [r["achieved_bytes_per_s"] / 1e9 for r in results]
    colors = ["C7" if r["diagnostic"] else "C0" for r in results]
    ax.barh(labels, values, color=colors)
    if peak_bps:
        ax.axvline(peak_bps / 1e9, color="C3", ls="--", label="nominal peak")
        ax.axvline(TARGET_FRACTION * peak_bps / 1e9, color="C3", ls=":", label="50 % of peak")
    if floor_bps:
        ax.axvline(floor_bps / 1e9, color="C2", ls="--", label="x * 2 (attained)")
    ax.invert_yaxis()
    ax.set_xlabel("achieved GB/s (minimal bytes / median time)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    _common.finish_figure(fig, path, title)


def main() -> None:
    args = parse_args()
    env = _common.environment(("jax", "jaxlib"))
    _common.print_environment(env)
    info = device_info()
    dtype = jnp.dtype(args.dtype)
    array_bytes = args.n * args.d * dtype.itemsize
    if info["platform"] == "cpu" and array_bytes > LARGE_CPU_BYTES and not args.allow_large_cpu:
        raise SystemExit(
            f"[{args.n}, {args.d}] {args.dtype} is {array_bytes / 2**30:.1f} GiB per array: "
            "meant for a GPU (use --quick on CPU, or --allow-large-cpu)"
        )
    peak_bps, peak_source = peak_bandwidth(info["device_kind"], args.peak_bandwidth_gbs)
    print(
        f"# device {info['platform']}: {info['device_kind']} x {info['device_count']}, "
        f"jax {info['jax']}, nominal peak bandwidth "
        f"{'unknown' if peak_bps is None else f'{peak_bps / 1e9:.0f} GB/s'} ({peak_source})"
    )
    print(
        f"# N={args.n}, d={args.d}, D={args.num_features}, {args.dtype} "
        f"({array_bytes / 1e9:.2f} GB per [N, d] array), tau={args.temperature}, median of "
        f"{args.repeats}; fwht radices {_fwht._radices(args.d)}"
    )
    kx, kg, kh = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(kx, (args.n, args.d), dtype)
    g_d = jax.random.normal(kg, (args.n, args.d), dtype)
    g_big = jax.random.normal(kh, (args.n, args.num_features), dtype)
    header = (
        f"{'variant':<34}{'ms':>10}{'GB/s':>9}{'of x*2':>8}{'of peak':>8}{'XLA/min':>8}"
        f"{'compile s':>10}  check (max err / rms)"
    )
    print(header)
    print("-" * len(header))
    settings = tuple(s for s in ("" if args.dtype == "bfloat16" else args.dtype,) if s)
    tag = platform_tag(args)
    settings += (tag,) if tag else ()
    stem = NAME + ("_quick" if args.quick else "") + "".join(f"_{s}" for s in settings)
    args.out.mkdir(parents=True, exist_ok=True)
    results, hlo = [], []
    record = {
        "env": env,
        "device": info,
        "config": {
            "n": args.n,
            "d": args.d,
            "num_features": args.num_features,
            "dtype": args.dtype,
            "temperature": args.temperature,
            "repeats": args.repeats,
            "fwht_radices": list(_fwht._radices(args.d)),
            "pallas": args.pallas,
            "pallas_defaults": {
                "block_rows": max(1, _hadamard_pallas.DEFAULT_ROW_ELEMENTS // args.d),
                "num_warps": _hadamard_pallas.DEFAULT_NUM_WARPS,
            },
            "sweep": list(SWEEP) if args.sweep else None,
            "sorf_sweep": list(SORF_SWEEP) if args.sweep else None,
        },
        "peak_bandwidth_bytes_per_s": peak_bps,
        "peak_bandwidth_source": peak_source,
        "elementwise_bytes_per_s": None,
        "results": results,
    }

    def save_partial():  # after every variant: a run cut short keeps what it measured
        (args.out / f"{stem}.json").write_text(json.dumps({**record, "partial": True}, indent=2))
        (args.out / f"{stem}_hlo.txt").write_text("\n".join(hlo))

    floor_bps = None
    start = time.perf_counter()
    for v in variants(args, x, g_d, g_big):
        try:
            result, text = measure(v, args, peak_bps)
        except Exception as e:  # one run on a lent GPU: keep the others
            result, text = {"name": v["name"], "label": v["label"], "error": repr(e)}, ""
            print(f"{v['label']:<34}  ERROR {e!r}"[:300], flush=True)
            traceback.print_exc()  # the whole of it in the log: a lent GPU's run is short
            results.append(result)
            save_partial()
            continue
        if v["name"] == "elementwise":  # first: the reference for the others
            floor_bps = record["elementwise_bytes_per_s"] = result["achieved_bytes_per_s"]
        result["fraction_of_elementwise"] = (
            result["achieved_bytes_per_s"] / floor_bps if floor_bps else None
        )
        results.append(result)
        hlo.append(f"// ===== {v['name']} =====\n{text}")
        print_row(result)
        save_partial()
    seconds = time.perf_counter() - start
    targets = check_targets(args, results, peak_bps)
    print(f"\n{seconds:.0f} s")
    for t in targets:
        print(f"[{t['status']}] {t['target']}: {t['detail']}")
    failed = [r["name"] for r in results if not r.get("check", {}).get("passed")]
    if failed:
        print(f"[FAIL] failed, or differ from the float64 dense reference: {', '.join(failed)}")

    info["memory_stats"] = memory_stats()
    peak_in_use = (info["memory_stats"] or {}).get("peak_bytes_in_use")
    if peak_in_use:
        limit = info["memory_stats"].get("bytes_limit", 0)
        print(f"# device memory: peak in use {peak_in_use / 2**30:.2f} GiB of {limit / 2**30:.1f}")
    record.update(targets=targets, seconds=seconds)
    title = (
        f"{info['device_kind']}: N={args.n}, d={args.d}, D={args.num_features}, {args.dtype}, "
        f"jax {info['jax']}"
    )
    _common.save_record(
        args,
        NAME,
        record,
        lambda p: plot(results, p, title, peak_bps, floor_bps),
        settings=settings,
    )
    print(f"wrote {args.out / (stem + '_hlo.txt')}")


if __name__ == "__main__":
    main()
