"""m-Mix's graph rows over many draws of the 10-fold split: a table and a dot plot.

One 10-fold SVM number on MUTAG (188 graphs, 18-19 a fold) moves by 1-2 points with the draw
of its folds. ``rescore_svm.py --fold-seeds N`` scores a row's finished pretrainings on N
draws; this script tables, per row, the mean over the draws of each pretraining, their mean
± sample std over the pretrainings, the spread of single draws, and the paper's number, and
plots every single draw::

    python experiments/mmix/rescore_svm.py --config=experiments/mmix/graph_mp.py:mutag \\
        --workdirs W/seed_0 W/seed_1 W/seed_2 --solvers liblinear --fold-seeds 10 --out mp.json
    python experiments/mmix/fold_draws_table.py --data mutag --rows mvgrl=mvgrl.json mp=mp.json

writes ``experiments/mmix/results/fold_draws_<data><tag>.{json,png}``. ``ROW/VARIANT=JSON``
tables several runs of one row side by side (e.g. ``mp/width 32=... mp/width 512=...
--tag _mp_width``), each against the row's paper number.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from jaxcl.configs import mmix_graph, mmix_node

HERE = os.path.dirname(os.path.abspath(__file__))
LABELS = {row: label for row, label in mmix_node.ROW_LABELS.items() if row in mmix_graph.ROWS}


def _run_solver(results_path: str) -> str | None:
    """The SVM solver a run scored with (``eval.svm_solver`` of its seeds' config.json files,
    beside its results.json); None where no config is found, "mixed" where seeds differ."""
    import glob

    here = os.path.dirname(os.path.abspath(results_path))
    found = set()
    for config in [os.path.join(here, "config.json"), *glob.glob(f"{here}/seed_*/config.json")]:
        if os.path.isfile(config):
            found.add(json.load(open(config)).get("eval", {}).get("svm_solver", "liblinear"))
    return None if not found else found.pop() if len(found) == 1 else "mixed"


def load_rescored(path: str, solver: str) -> tuple[list[list[float]], str | None]:
    """Per pretraining, the accuracies (%) of its fold draws, and the SVM solver that gave
    them: from a rescore_svm.py JSON (``solver``'s scores) or from the results.json of a run
    made with ``--config.eval.fold_draws=N`` (its last epoch; the solver its config names)."""
    if not os.path.isfile(path):
        raise SystemExit(f"{path}: not found (rescore_svm.py --out or a run writes it)")
    found = json.load(open(path))
    if "runs" in found:  # a run's results.json (run_repeats)
        draws = []
        for k, r in enumerate(found["runs"]):
            if "per_epoch_fold_draw_top1" not in r:
                raise SystemExit(
                    f"{path}: run {k} has no fold draws (run it with --config.eval.fold_draws=N,"
                    " N > 1)"
                )
            draws.append([100 * m for m in r["per_epoch_fold_draw_top1"][-1]])
        return draws, _run_solver(path)
    rows = found["rows"]
    draws = []
    for r in rows:
        if solver not in r or "over_fold_seeds" not in r[solver]:
            raise SystemExit(
                f"{path}: {r['workdir']} has no {solver} fold draws (rescore_svm.py "
                f"--solvers {solver} --fold-seeds N, N > 1)"
            )
        draws.append([100 * m for m in r[solver]["over_fold_seeds"]["means"]])
    return draws, solver


def _label(row: str, variant: str) -> str:
    return LABELS[row] + (f" ({variant})" if variant else "")


def summarise(draws: list[list[float]]) -> dict:
    means = [float(np.mean(d)) for d in draws]
    return {
        "draws": draws,
        "per_pretraining": means,
        "mean": float(np.mean(means)),
        "std": float(np.std(means, ddof=1)) if len(means) > 1 else 0.0,
        "single_draw_std": float(np.mean([np.std(d, ddof=1) for d in draws])),
        "single_draw_range": [float(np.min(draws)), float(np.max(draws))],
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, choices=sorted(mmix_graph.PAPER_ACCURACY))
    parser.add_argument(
        "--rows", nargs="+", required=True, help="row=JSON ...: rescore_svm.py's or a run's"
    )
    parser.add_argument("--solver", default="liblinear")
    parser.add_argument("--tag", default="")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    paper = mmix_graph.PAPER_ACCURACY[args.data]
    table = {}
    for spec in args.rows:
        name, sep, path = spec.partition("=")
        row, _, variant = name.partition("/")
        if not sep or row not in LABELS or name in table:
            raise SystemExit(
                f"--rows {spec!r}: expected ROW=JSON or ROW/VARIANT=JSON (once each) with ROW "
                f"in {sorted(LABELS)}"
            )
        draws, solver = load_rescored(path, args.solver)
        table[name] = summarise(draws)
        table[name].update(
            file=path, paper=paper.get(row), label=_label(row, variant), solver=solver
        )
    print(f"{args.data}: mean over each pretraining's fold draws, then mean ± std over them")
    print("| row | paper | mean ± std | per pretraining | single draws: std, range |")
    print("|---|---|---|---|---|")
    for t in table.values():
        p = "—" if t["paper"] is None else f"{t['paper'][0]:.1f} ± {t['paper'][1]:.1f}"
        per = ", ".join(f"{m:.2f}" for m in t["per_pretraining"])
        lo, hi = t["single_draw_range"]
        print(
            f"| {t['label']} | {p} | {t['mean']:.2f} ± {t['std']:.2f} | {per} | "
            f"{t['single_draw_std']:.1f}, [{lo:.1f}, {hi:.1f}] |"
        )
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"fold_draws_{args.data}{args.tag}")
    # Each row's solver: --solver for rescore_svm.py's JSONs, a run's own for its results.json
    # (until 2026-11-30 the record named --solver for every row, runs' included).
    solvers = {t["solver"] for t in table.values()}
    record = {
        "data": args.data,
        "solver": solvers.pop() if len(solvers) == 1 else "per row",
        "rows": table,
    }
    with open(stem + ".json", "w") as f:
        json.dump(record, f, indent=2)
    plot(table, args.data, stem + ".png")
    print(f"wrote {stem}.json and .png")
    return record


def plot(table: dict, data: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(table), 4))
    for i, t in enumerate(table.values()):
        for k, d in enumerate(t["draws"]):
            x = i + (k - (len(t["draws"]) - 1) / 2) * 0.12
            ax.plot([x] * len(d), d, "o", ms=3, alpha=0.5, color=f"C{k}")
        ax.hlines(t["mean"], i - 0.3, i + 0.3, color="k", label="mean" if i == 0 else None)
        if t["paper"] is not None:
            ax.plot(i, t["paper"][0], "r*", ms=10, label="paper" if i == 0 else None)
    ax.set_xticks(range(len(table)), [t["label"] for t in table.values()], rotation=20, ha="right")
    ax.set_ylabel("10-fold SVM accuracy (%)")
    ax.set_title(f"{data}: one dot per draw of the folds")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
