"""m-Mix's graph rows scored along training, as its graph script scores them.

m-Mix's official ``graph/main.py`` evaluates the embeddings after its 0-based epochs 0, 10,
20, ... (10-fold linear SVM, fresh random folds each time), prints each 10-fold mean and plots
the curve; the paper does not say which point of it its tables report. jaxcl scores the
embeddings after the last epoch. Runs made with ``--config.eval.curve_every_epochs=10
--config.eval.folds_per_epoch=True`` carry the curve as well (its epochs 1, 11, ..., 191 and
the last); this script tables, per row, the last epoch's accuracy (our number), the curve's
maximum (the best of about 20 test-set evaluations: what a table read off the script's curve
would show) and the paper's, and plots the curves::

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \\
        --config=experiments/mmix/graph_mp.py:mutag --config.repeats=3 \\
        --config.eval.curve_every_epochs=10 --config.eval.folds_per_epoch=True --workdir=W_mp
    python experiments/mmix/graph_curves.py --data mutag --runs mvgrl=W_mvgrl mp=W_mp ...

writes ``experiments/mmix/results/graph_curves_<data><tag>.{json,png}``. Means ± sample std
over a row's pretrainings.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from jaxcl.configs import mmix_graph, mmix_node

HERE = os.path.dirname(os.path.abspath(__file__))
PAPER = mmix_graph.PAPER_ACCURACY
LABELS = {row: label for row, label in mmix_node.ROW_LABELS.items() if row in mmix_graph.ROWS}


def load_run(workdir: str) -> dict:
    """One row's pretrainings from ``workdir``: per run the last epoch's accuracy, the curve
    (epochs, accuracies) and its maximum, in %."""
    path = os.path.join(workdir, "results.json")
    if not os.path.isfile(path):
        raise SystemExit(f"{workdir}: no results.json (has the run finished?)")
    summary = json.load(open(path))
    runs = summary.get("runs", [summary])  # repeats > 1: a summary; else the run itself
    missing = [k for k, r in enumerate(runs) if "curve_top1" not in r]
    if missing:
        raise SystemExit(
            f"{workdir}: run(s) {missing} carry no curve; train with "
            "--config.eval.curve_every_epochs=10 --config.eval.folds_per_epoch=True"
        )
    # repeats > 1: each run in workdir/seed_<seed>/, seeds seed, seed + 1, ... in order
    dirs = (
        [workdir]
        if "runs" not in summary
        else sorted(
            (d for d in os.listdir(workdir) if d.startswith("seed_")), key=lambda d: int(d[5:])
        )
    )
    configs = [json.load(open(os.path.join(workdir, d, "config.json"))) for d in dirs]
    if len(configs) != len(runs):
        raise SystemExit(f"{workdir}: {len(runs)} runs in results.json, {len(configs)} configs")
    config = configs[0]
    epochs = [r["curve_epochs"] for r in runs]
    if any(e != epochs[0] for e in epochs):
        raise SystemExit(f"{workdir}: its runs were scored at different epochs: {epochs}")
    return {
        "data": config["data"]["name"],
        "epochs": config["train"]["epochs"],
        "seeds": [c["seed"] for c in configs],
        "last": [100 * r["test_top1"] for r in runs],
        "curve_epochs": epochs[0],
        "curve": [[100 * a for a in r["curve_top1"]] for r in runs],
        "max": [100 * r["curve_max_top1"] for r in runs],
        "max_epoch": [r["curve_max_epoch"] for r in runs],
        "workdir": workdir,
    }


def mean_std(values) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    v = np.asarray(values, np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def table(rows: dict, data: str) -> list[str]:
    lines = [
        "| row | paper | last epoch (ours) | curve's maximum | at epochs | epoch 1 |",
        "|---|---|---|---|---|---|",
    ]
    for row, r in rows.items():
        paper = PAPER.get(data, {}).get(row)
        cells = [f"{m:.1f} ± {s:.1f}" for m, s in (mean_std(r["last"]), mean_std(r["max"]))]
        first = mean_std([c[0] for c in r["curve"]])
        lines.append(
            f"| {LABELS.get(row, row)} | {f'{paper[0]} ± {paper[1]}' if paper else '-'} | "
            f"{cells[0]} | {cells[1]} | {', '.join(map(str, r['max_epoch']))} | "
            f"{first[0]:.1f} ± {first[1]:.1f} |"
        )
    return lines


def plot(rows: dict, data: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    for k, (row, r) in enumerate(rows.items()):
        color = f"C{k}"
        curve = np.asarray(r["curve"])
        ax.plot(
            r["curve_epochs"], curve.mean(0), color=color, marker=".", label=LABELS.get(row, row)
        )
        ax.fill_between(r["curve_epochs"], curve.min(0), curve.max(0), color=color, alpha=0.12)
        paper = PAPER.get(data, {}).get(row)
        if paper:
            ax.axhline(paper[0], color=color, linestyle="--", linewidth=1)
    ax.set_xlabel("epoch")
    ax.set_ylabel("10-fold SVM accuracy, %")
    ax.set_title(
        f"{data}: mean over pretrainings (band: min to max), the paper's number dashed",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, choices=sorted(PAPER))
    parser.add_argument("--runs", nargs="+", required=True, help="row=workdir")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    parser.add_argument("--tag", default="", help="appended to the output files' names")
    args = parser.parse_args(argv)
    rows = {}
    for item in args.runs:
        row, sep, workdir = item.partition("=")
        if not sep or row not in mmix_graph.ROWS:
            raise SystemExit(
                f"--runs {item!r}: expected row=workdir with a row of {sorted(mmix_graph.ROWS)}"
            )
        if row in rows:
            raise SystemExit(f"--runs: row {row!r} given twice")
        r = load_run(workdir)
        if r["data"] != args.data:
            raise SystemExit(f"--runs {item!r}: a run of {r['data']}, not {args.data}")
        rows[row] = r
    order = [r for r in LABELS if r in rows] + [r for r in rows if r not in LABELS]
    rows = {row: rows[row] for row in order}
    lines = table(rows, args.data)
    print("\n".join(lines))
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"graph_curves_{args.data}{args.tag}")
    with open(stem + ".json", "w") as f:
        json.dump({"data": args.data, "table": lines, "rows": rows}, f, indent=1)
    plot(rows, args.data, stem + ".png")
    print(f"wrote {stem}.json and {stem}.png")


if __name__ == "__main__":
    main()
