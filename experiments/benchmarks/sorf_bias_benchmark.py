"""Bias and variance of Gaussian-kernel estimates: RFF, SORF (ESCo Eq. 12), SORF with chi norms.

For each input dimension d (16 ... 1024) and each estimator, the script draws --draws
independent feature maps with D = --num-features projections and, with each, one random pair
of unit vectors x, y at a given angle (90 degrees: ||x - y||^2 = 2; 60 degrees: 1), and
records the estimate ``phi(x) . phi(y)`` of ``k(x, y) = exp(-||x - y||^2 / (2 tau))`` at
tau = --temperature. It reports the bias (mean estimate minus k, with its standard error)
relative to k, and the standard deviation of one estimate.

Estimators (``jaxcl.random_features``):

- ``rff``: ``draw_rff`` (Gaussian rows; unbiased).
- ``sorf``: ``draw_sorf(..., norms='fixed')``, ESCo's SORF: three sign-diagonal Hadamard
  products, every row of norm sqrt(p) (p = d rounded up to a power of two). Biased by O(1/d).
- ``sorf_chi``: ``draw_sorf(..., norms='chi')``: the same rows rescaled to chi-distributed
  norms, as orthogonal random features (Yu et al., 2016) do.

Usage (from the repository root):

  python experiments/benchmarks/sorf_bias_benchmark.py             # 4000 draws, ~40 min*
  python experiments/benchmarks/sorf_bias_benchmark.py --quick     # 400 draws

(*) The stored ``results/sorf_bias_benchmark.json`` took 2,496 s (its ``seconds``); the
time grows with the draws, so ``--quick`` takes several minutes too.

Writes sorf_bias_benchmark[_quick].json and .png to --out (default
experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
import jax
import jax.numpy as jnp
import numpy as np

from jaxcl import random_features as rf

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
DIMS = (16, 32, 64, 128, 256, 512, 1024)
ANGLES = (90, 60)
ESTIMATORS = ("rff", "sorf", "sorf_chi")
DRAWS_PER_CALL = 200


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=4000, help="feature maps per setting")
    parser.add_argument("--num-features", type=int, default=1024, help="projections D")
    parser.add_argument("--temperature", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="400 draws")
    args = parser.parse_args()
    if args.quick:
        args.draws = 400
    return args


def unit_pair(key, d: int, angle_deg: float):
    """A uniformly random pair of unit vectors in R^d at the given angle."""
    k1, k2 = jax.random.split(key)
    x = jax.random.normal(k1, (d,))
    x = x / jnp.linalg.norm(x)
    u = jax.random.normal(k2, (d,))
    u = u - (u @ x) * x
    u = u / jnp.linalg.norm(u)
    t = math.radians(angle_deg)
    return x, math.cos(t) * x + math.sin(t) * u


def estimates(name: str, d: int, angle: float, args) -> np.ndarray:
    tau, num = args.temperature, args.num_features

    def one(key):
        k_pair, k_feat = jax.random.split(key)
        x, y = unit_pair(k_pair, d, angle)
        if name == "rff":
            params = rf.draw_rff(k_feat, d, num)
            phi = lambda v: rf.rff_features(v, params, temperature=tau)  # noqa: E731
        else:
            norms = "chi" if name == "sorf_chi" else "fixed"
            params = rf.draw_sorf(k_feat, d, num, norms=norms)
            phi = lambda v: rf.sorf_features(v, params, temperature=tau)  # noqa: E731
        return phi(x) @ phi(y)

    keys = jax.random.split(jax.random.key(args.seed), args.draws)
    batched = jax.jit(jax.vmap(one))  # draws in chunks: RFF's [d, D] matrices add up
    chunks = [keys[i : i + DRAWS_PER_CALL] for i in range(0, args.draws, DRAWS_PER_CALL)]
    return np.concatenate([np.asarray(batched(k), np.float64) for k in chunks])


def plot(rows, path: pathlib.Path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for angle, style in zip(ANGLES, ("-", "--"), strict=True):
        for i, name in enumerate(ESTIMATORS):
            sel = [r for r in rows if r["estimator"] == name and r["angle_deg"] == angle]
            dims = [r["dim"] for r in sel]
            axes[0].errorbar(
                dims,
                [100 * r["relative_bias"] for r in sel],
                yerr=[200 * r["relative_bias_se"] for r in sel],
                color=f"C{i}",
                linestyle=style,
                marker="o",
                capsize=2,
                label=f"{name}, {angle} deg",
            )
            axes[1].plot(dims, [r["std"] for r in sel], f"C{i}{style}o", label=f"{name}, {angle}")
    axes[0].axhline(0.0, color="black", linewidth=0.8)
    axes[0].set_ylabel("bias / k (%), +-2 s.e.")
    axes[1].set_ylabel("std of one estimate")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("input dimension d")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    _common.finish_figure(
        fig,
        path,
        f"Gaussian kernel estimates, D = {args.num_features}, tau = {args.temperature}, "
        f"{args.draws} draws per point",
    )


def main() -> None:
    args = parse_args()
    env = _common.environment(("jax", "jaxlib"))
    _common.print_environment(env)
    start = time.perf_counter()
    rows = []
    header = (
        f"{'d':>5} {'angle':>5} {'estimator':>9} | {'k':>7} {'bias/k %':>9} {'+-se %':>7} | "
        f"{'std':>7}"
    )
    print(header)
    print("-" * len(header))
    for d in DIMS:
        for angle in ANGLES:
            exact = math.exp(-(2.0 - 2.0 * math.cos(math.radians(angle))) / (2 * args.temperature))
            for name in ESTIMATORS:
                est = estimates(name, d, angle, args)
                bias = est.mean() - exact
                se = est.std(ddof=1) / math.sqrt(len(est))
                row = {
                    "dim": d,
                    "angle_deg": angle,
                    "estimator": name,
                    "exact": exact,
                    "mean": float(est.mean()),
                    "relative_bias": float(bias / exact),
                    "relative_bias_se": float(se / exact),
                    "std": float(est.std(ddof=1)),
                }
                rows.append(row)
                print(
                    f"{d:5d} {angle:5d} {name:>9} | {exact:7.4f} {100 * bias / exact:9.2f} "
                    f"{100 * se / exact:7.2f} | {row['std']:7.4f}"
                )
    seconds = time.perf_counter() - start
    print(f"\n{seconds:.0f} s")
    record = {"env": env, "setup": vars(args) | {"out": str(args.out)}, "rows": rows}
    record["seconds"] = seconds
    _common.save_record(args, "sorf_bias_benchmark", record, lambda p: plot(rows, p, args))


if __name__ == "__main__":
    main()
