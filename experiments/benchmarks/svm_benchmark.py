"""Benchmark: the graph protocol's linear-SVM search, scikit-learn's liblinear vs jaxcl's Newton.

``jaxcl.evaluation.svm_kfold_accuracy`` (InfoGraph's protocol, which m-Mix and MVGRL follow:
10 stratified outer folds, ``C`` in {1e-3, ..., 1e3} by 5-fold grid search, ``LinearSVC`` with
liblinear's dual solver, as InfoGraph's code ran it) with
``solver='liblinear'`` (scikit-learn, ``n_jobs=-1``) and ``solver='newton'`` (the exact
minimiser of the same objective). Features are synthetic and shaped like the graph embeddings
the protocol scores (unscaled, correlated, row norms spread by graph size; see
``embeddings_like``), labels from a noisy function of the same latent factors. On such
features, as on real ones, liblinear stops at ``max_iter`` for the larger ``C``, so the two
solvers can choose other ``C`` in some folds; the script reports both accuracies, the chosen
``C`` and the time.

Settings: ``imdb_binary`` (1,000 x 512, 2 classes: the m-Mix rows' embeddings on IMDB-BINARY),
``imdb_multi`` (1,500 x 512, 3 classes), ``imdb_multi_mvgrl`` (1,500 x 2,048, 3 classes: the
MVGRL row's four layers of 512).

Usage (from the repository root):

  python experiments/benchmarks/svm_benchmark.py            # all three settings
  python experiments/benchmarks/svm_benchmark.py --settings imdb_binary imdb_multi  # 2.3 min
  python experiments/benchmarks/svm_benchmark.py --quick    # 300 x 64, seconds
  python experiments/benchmarks/svm_benchmark.py --settings imdb_binary --solvers newton

Writes svm_benchmark[_quick][_<solver>_only].json and .png to --out (default
experiments/benchmarks/results; ``_<solver>_only`` when ``--solvers`` names one).
"""

from __future__ import annotations

import argparse
import pathlib
import time
import warnings

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from jaxcl.evaluation import svm_kfold_accuracy  # noqa: E402

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
# name: (rows, feature dimension, classes)
SETTINGS = {
    "imdb_binary": (1000, 512, 2),
    "imdb_multi": (1500, 512, 3),
    "imdb_multi_mvgrl": (1500, 2048, 3),
}
QUICK = {"quick": (300, 64, 3)}
SOLVERS = ("liblinear", "newton")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", choices=sorted(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--solvers", nargs="+", choices=SOLVERS, default=list(SOLVERS))
    parser.add_argument("--seed", type=int, default=0, help="features, labels and fold shuffle")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="one 300 x 64 setting, seconds")
    return parser.parse_args()


def embeddings_like(n: int, dim: int, num_classes: int, seed: int, rank: int = 24):
    """Features shaped like sum-pooled graph embeddings, and labels from the same factors.

    Each row is a rank-``rank`` latent map plus noise, scaled by a log-normal factor (a sum
    over a graph's nodes grows with its size): row norms spread about as m-Mix's IMDB-BINARY
    embeddings' do (5th / 50th / 95th percentile about 5 / 15 / 41, there 8 / 16 / 42).
    """
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, rank))
    size = np.exp(0.6 * rng.normal(size=(n, 1)))
    x = size * (z @ rng.normal(size=(rank, dim)) / np.sqrt(rank) + 0.3 * rng.normal(size=(n, dim)))
    x *= 18.0 / np.linalg.norm(x, axis=1).mean()
    logits = z @ rng.normal(size=(rank, num_classes)) * 0.5 + np.log(size) * rng.normal(
        size=(1, num_classes)
    )
    logits += rng.normal(size=(n, num_classes))
    return x.astype(np.float32), np.argmax(logits, axis=1)


def run(name: str, shape, solvers, seed: int) -> dict:
    n, dim, k = shape
    x, y = embeddings_like(n, dim, k, seed)
    row = {"setting": name, "rows": n, "dim": dim, "classes": k}
    for solver in solvers:
        with warnings.catch_warnings():
            # liblinear's "failed to converge" for large C, expected here (and printed anyway
            # by the grid search's worker processes)
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            out = svm_kfold_accuracy(x, y, seed=seed, solver=solver, n_jobs=-1)
            seconds = time.perf_counter() - start
        row[solver] = {
            "seconds": seconds,
            "mean": out["mean"],
            "std": out["std"],
            "per_fold": out["per_fold"],
            "best_c": out["best_c"],
        }
        print(
            f"{name:>17} {n:>5} x {dim:<5} {k} classes | {solver:>9}: {seconds:7.1f} s, "
            f"accuracy {100 * out['mean']:.2f} ± {100 * out['std']:.2f}, C {out['best_c']}",
            flush=True,
        )
    if all(s in row for s in SOLVERS):
        lib, newton = row["liblinear"], row["newton"]
        row["speedup"] = lib["seconds"] / newton["seconds"]
        row["folds_same_c"] = sum(
            a == b for a, b in zip(lib["best_c"], newton["best_c"], strict=True)
        )
        print(
            f"{'':>17} newton {row['speedup']:.1f}x faster; the same C in "
            f"{row['folds_same_c']} of {len(lib['best_c'])} folds; accuracy difference "
            f"{100 * (newton['mean'] - lib['mean']):+.2f} points",
            flush=True,
        )
    return row


def plot(rows, path: pathlib.Path, env: dict) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    width = 0.38
    for i, solver in enumerate(SOLVERS):
        xs = [j + (i - 0.5) * width for j, r in enumerate(rows) if solver in r]
        ys = [r[solver]["seconds"] for r in rows if solver in r]
        bars = ax.bar(xs, ys, width, label=solver)
        for bar, r in zip(bars, [r for r in rows if solver in r], strict=True):
            ax.annotate(
                f"{100 * r[solver]['mean']:.1f}%",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=7,
            )
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(
        [f"{r['setting']}\n{r['rows']} x {r['dim']}, {r['classes']} cl." for r in rows]
    )
    ax.set_yscale("log")
    ax.set_ylabel("seconds per 10-fold evaluation (log)")
    ax.legend(title="solver (label: accuracy)")
    _common.finish_figure(
        fig, path, f"linear-SVM protocol, {env['cpu_model']} x {env['cpu_count']}, {env['commit']}"
    )


def main() -> None:
    args = parse_args()
    env = _common.environment(("jax", "numpy", "scipy", "scikit-learn"))
    _common.print_environment(env)
    settings = QUICK if args.quick else {s: SETTINGS[s] for s in args.settings}
    rows = [run(name, shape, args.solvers, args.seed) for name, shape in settings.items()]
    record = {"env": env, "rows": rows}
    # one solver alone (e.g. newton before and after a change) does not overwrite the figures
    # of the comparison
    only = (f"{args.solvers[0]}_only",) if len(args.solvers) == 1 else ()
    _common.save_record(args, "svm_benchmark", record, lambda p: plot(rows, p, env), settings=only)


if __name__ == "__main__":
    main()
