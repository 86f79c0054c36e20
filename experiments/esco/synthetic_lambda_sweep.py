"""ESCo Fig. 3: accuracy on the synthetic data against the trade-off lambda, for ESCo-RFF,
ESCo-SORF and SimCLR with the same trade-off term (the exact kernel).

    python experiments/esco/synthetic_lambda_sweep.py --variant cpu --out /tmp/esco_lambda
    python experiments/esco/synthetic_lambda_sweep.py --variant quick --lams 0.5,1.5  # smoke
    python experiments/esco/synthetic_lambda_sweep.py --out /tmp/esco_lambda --seeds 3 \
        --lams 0.5,0.6,0.7,0.8,0.9,1,1.5,2 --finished-only   # whatever has finished there

Each point is one run of :mod:`jaxcl.configs.esco_synthetic`'s row at that lambda (seeds
``--seeds``), trained in ``--out/<kernel>_lam<lambda>/seed_<k>`` (``..._standardized/``
with ``--features standardized``); a point already finished there is read back, not rerun.
Writes ``lambda_sweep.json`` and ``lambda_sweep.png`` (mean and spread over seeds, the
paper's Table 1 points marked) to ``--out``.

Each point also records the final loss and the encoder's geometry (the mean cosine between
the examples' normalised embeddings, measured from the final checkpoint for runs from before
the paired task reported it); a point with a seed above 0.99 has collapsed and is drawn
hollow.

The configs' data are App. B.1's generator with ReLU hidden layers and a softmax output
(since commit f253723); ``--features standardized`` z-scores them. Measured on them
(``--variant cpu``, seed 0 at every lambda and seeds 0-2 at 0.5; commit d7d61cd, the SimCLR
points at 0.5 and the SORF point at 1.5 being Table 1's runs at 87069fa read back; 2 Zen 3
AMD EPYC cores shared by two or three runs, 3.3-11 min a run; ``--finished-only`` over
``--lams 0.5,0.6,0.7,0.8,0.9,1,1.5,2 --seeds 3``;
``experiments/esco/results/lambda_sweep_relu.{json,png}``), c = collapsed:

======  =====  =====  =====  =====  =======  =======  =======  =======
lambda  0.5    0.6    0.7    0.8    0.9      1.0      1.5      2.0
======  =====  =====  =====  =====  =======  =======  =======  =======
SimCLR  48.48  48.50  49.40  48.15  47.62 c  42.55 c  48.12 c  47.95 c
RFF     49.42                                42.90 c  48.10 c  48.15 c
SORF    49.23         49.20         42.38 c  43.83 c  48.02 c  48.02 c
======  =====  =====  =====  =====  =======  =======  =======  =======

(means over seeds 0-2 at 0.5, seed 0 elsewhere). Every kernel collapses from lambda 0.9-1.0
up (loss log(2N - 1), mean cosine above 0.9994), so the paper's optimum (1.5-1.6) cannot be
tested on this reading; at 0.5 both estimators lie above SimCLR in every seed.

The numbers below are from the earlier reading, softmax after every layer, on which the
float32 gradient is rounding noise (README, ESCo section): they say nothing about lambda,
and are kept as a record.

Measured on softmax-after-every-layer features, unscaled (``--variant cpu --seeds 1 --lams
0.5,1.0,1.5,2.0``, commit 4982b83, 2026-11-29, 2 Zen 5 AMD EPYC cores shared with another
run, 21 min; ``experiments/esco/results/lambda_sweep.{json,png}``; the SimCLR point at 0.5
and the SORF point at 1.5 are the seed-0 runs of Table 1's rows at commit 1230554 with
``--config.data.standardize=False``, the same configs, copied into ``--out`` and read back):

======  =====  =====  =====  =====
lambda  0.5    1.0    1.5    2.0
======  =====  =====  =====  =====
SimCLR  39.23  39.88  38.23  39.67
RFF     41.08  38.55  39.88  37.88
SORF    39.67  39.25  40.05  38.82
======  =====  =====  =====  =====

No trend with lambda for any kernel: the points scatter over 37.9-41.1, about the spread of
Table 1's seeds (1 point for SimCLR); one seed per point cannot place an optimum near the
paper's 1.5-1.6. On softmax-after-every-layer features standardised (then ``--features
standardized``, same lambdas; commit 98b7091, shared cores, 40 min;
``experiments/esco/results/lambda_sweep_standardized.{json,png}``), accuracy fell slightly
with lambda for every kernel, within about one seed spread: SimCLR 52.55 / 51.38 / 51.00 /
51.20, RFF 51.77 / 51.52 / 51.03 / 50.77, SORF 52.45 / 50.98 / 50.75 / 51.15. The paper's
Table 1 reports ESCo at lambda 1.6 (RFF) and 1.5 (SORF), above SimCLR.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from pathlib import Path

KERNELS = {"simclr": "exact", "rff": "rff", "sorf": "sorf"}
# What the variants (paper, cpu, quick) differ in: a finished point is reused only if these
# match, since the point's folder does not name its variant.
_VARIANT_KEYS = (
    ("train", "epochs"),
    ("train", "batch_size"),
    ("optim", "lr"),
    ("data", "num_samples"),
    ("data", "num_features"),
    ("model", "encoder_width"),
    ("model", "encoder_out_dim"),
    ("method", "num_features"),
)
COLLAPSED_COSINE = 0.99  # as jaxcl.training's paired task warns


def _point(
    row: str, lam: float, seed: int, variant: str | None, out: Path, standardize: bool
) -> dict:
    from jaxcl import training
    from jaxcl.configs import esco_synthetic

    suffix = "_standardized" if standardize else ""
    workdir = out / f"{row}_lam{lam:g}{suffix}" / f"seed_{seed}"
    done = workdir / "results.json"
    if done.exists():
        saved = json.loads((workdir / "config.json").read_text())
        if bool(saved["data"].get("standardize", True)) != standardize:  # before the key: True
            raise SystemExit(f"{workdir}: trained with other features than --features asks")
        hidden = esco_synthetic.make(row, variant).data.hidden_activation
        if saved["data"].get("hidden_activation", "softmax") != hidden:  # before: softmax
            raise SystemExit(
                f"{workdir}: trained on data.hidden_activation="
                f"{saved['data'].get('hidden_activation', 'softmax')!r}, the configs use {hidden!r}"
            )
        want = esco_synthetic.make(row, variant)
        for section, key in _VARIANT_KEYS:  # a quick run must not stand in for a cpu one
            have = saved.get(section, {}).get(key)
            if have is not None and have != want[section].get(key):
                raise SystemExit(
                    f"{workdir}: trained with {section}.{key}={have!r}, the {variant or 'paper'}"
                    f" variant has {want[section].get(key)!r}; use another --out"
                )
        method = saved["method"]  # runs from before these keys: redrawn, both negative sets
        redraw, negatives = method.get("redraw_features", True), method.get("esco_negatives")
        if not redraw or negatives not in (None, "both"):
            raise SystemExit(
                f"{workdir}: trained with redraw_features={redraw}, esco_negatives="
                f"{negatives!r}; the sweep's rows redraw the frequencies every step against"
                " both negative sets"
            )
        return json.loads(done.read_text())
    c = esco_synthetic.make(row, variant)
    with c.unlocked():
        c.method.lam = lam
        c.seed = seed
        c.repeats = 1
        c.data.standardize = standardize
    return training.train_and_evaluate(c, str(workdir))


def _with_geometry(result: dict, workdir: Path) -> dict:
    """``result`` with the encoder's ``mean_cosine`` and ``view_sq_distance``: as the run
    reported them, or measured from its final checkpoint (runs from before the key)."""
    if result.get("mean_cosine") is None:
        try:
            result = {**result, **_table().measure_geometry(str(workdir))}
        except FileNotFoundError as err:  # its checkpoints were deleted: not measured
            print(f"[sweep] {workdir}: geometry not measured ({err})", flush=True)
            result = {**result, "mean_cosine": None}
    return result


def _shown(cosine) -> str:
    return "not measured" if cosine is None else f"{cosine:.6f}"


@functools.cache  # loaded once, not once per point measured
def _table():
    import importlib.util

    path = Path(__file__).with_name("synthetic_table.py")
    spec = importlib.util.spec_from_file_location("synthetic_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _plot(points: list[dict], path: Path, features: str, hidden: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from jaxcl.configs import esco_synthetic

    fig, ax = plt.subplots(figsize=(8, 4))
    for row, color in zip(KERNELS, ("tab:gray", "tab:blue", "tab:orange"), strict=True):
        mine = sorted((p for p in points if p["row"] == row), key=lambda p: p["lam"])
        lams = [p["lam"] for p in mine]
        mean = np.array([p["top1_mean"] for p in mine])
        std = np.array([p["top1_std"] for p in mine])
        label = {"simclr": "SimCLR + trade-off (exact)", "rff": "ESCo-RFF", "sorf": "ESCo-SORF"}
        ax.plot(lams, mean, "-", color=color, label=label[row])
        ax.fill_between(lams, mean - std, mean + std, color=color, alpha=0.15)
        for p, m in zip(mine, mean, strict=True):  # hollow: a seed's encoder collapsed
            hollow = any(p.get("collapsed", ()))
            ax.plot([p["lam"]], [m], "o", color=color, mfc="white" if hollow else color)
        lam_paper = esco_synthetic.ROWS[row]["lam"]
        ax.plot([lam_paper], [esco_synthetic.PAPER_TOP1[row]], "*", color=color, ms=12)
    ax.set_xlabel("trade-off lambda")
    ax.set_ylabel("10-fold CV accuracy (%)")
    ax.set_title(
        f"ESCo synthetic data, {features} {hidden}-hidden features: accuracy vs lambda\n"
        "(stars: the paper's Table 1; hollow circles: collapsed encoders)",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)  # clear of the stars
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["cpu", "quick", "paper"], default="cpu")
    parser.add_argument("--lams", default="0.5,1.0,1.5,2.0")
    parser.add_argument("--rows", default=",".join(KERNELS))
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument(
        "--features",
        choices=["raw", "standardized"],
        default="raw",
        help="the encoder's input: the generator's softmax outputs (the configs' default) "
        "or each column standardised (data.standardize)",
    )
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--finished-only",
        action="store_true",
        help="train nothing: summarise the points (and seeds) already finished in --out, so"
        " that rows swept over different lambdas or seeds share one record and plot",
    )
    args = parser.parse_args()
    variant = None if args.variant == "paper" else args.variant
    lams = [float(v) for v in args.lams.split(",")]
    rows = args.rows.split(",")
    for row in rows:
        if row not in KERNELS:
            parser.error(f"--rows: {row!r} is not one of {list(KERNELS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    points, start = [], time.time()
    for row in rows:
        for lam in lams:
            tops, losses, cosines, seeds = [], [], [], []
            standardize = args.features == "standardized"
            suffix = "_standardized" if standardize else ""
            for seed in range(args.seeds):
                workdir = out / f"{row}_lam{lam:g}{suffix}" / f"seed_{seed}"
                if args.finished_only and not (workdir / "results.json").exists():
                    continue
                r = _with_geometry(_point(row, lam, seed, variant, out, standardize), workdir)
                seeds.append(seed)
                tops.append(100 * r["test_top1"])
                losses.append(r["final_loss"])
                cosines.append(r["mean_cosine"])
                cosine = cosines[-1]
                collapsed = " COLLAPSED" if cosine is not None and cosine > COLLAPSED_COSINE else ""
                print(
                    f"[sweep] {row} lam={lam:g} seed={seed}: {tops[-1]:.2f}%, final loss"
                    f" {losses[-1]:.5f}, mean cosine {_shown(cosine)}{collapsed}"
                    f" ({time.time() - start:.0f} s so far)",
                    flush=True,
                )
            if not tops:  # --finished-only and no seed of this point has finished
                continue
            mean = sum(tops) / len(tops)
            std = statistics.stdev(tops) if len(tops) > 1 else 0.0  # sample std, as elsewhere
            points.append(
                dict(row=row, lam=lam, seeds=seeds, top1=tops, top1_mean=mean, top1_std=std,
                     final_loss=losses, mean_cosine=cosines,
                     collapsed=[None if c is None else c > COLLAPSED_COSINE for c in cosines])
            )  # fmt: skip
    from jaxcl.configs import esco_synthetic

    hidden = esco_synthetic.make("simclr", variant).data.hidden_activation
    record = dict(variant=args.variant, features=args.features, hidden_activation=hidden,
                  seeds=args.seeds, points=points,
                  wall_seconds=time.time() - start)  # fmt: skip
    (out / "lambda_sweep.json").write_text(json.dumps(record, indent=2) + "\n")
    _plot(points, out / "lambda_sweep.png", args.features, hidden)
    print(f"[sweep] wrote {out / 'lambda_sweep.json'} and {out / 'lambda_sweep.png'}")
    for p in points:
        collapsed = sum(bool(c) for c in p["collapsed"])
        note = f"  ({collapsed} of {len(p['collapsed'])} collapsed)" if collapsed else ""
        print(f"{p['row']:>7} lam={p['lam']:<4g} {p['top1_mean']:.2f} ± {p['top1_std']:.2f}{note}")


if __name__ == "__main__":
    main()
