"""m-Mix Table 6 (graph edit distance): a table and a plot of finished graph-row runs' edit
scores, beside the paper's COIL-DEL numbers and the WL kernel on the same triplets.

    python -m jaxcl.main --config=experiments/mmix/graph_mp.py:coil_del,cpu --workdir=/tmp/coil_mp
    python -m jaxcl.main --config=experiments/mmix/graph_mvgrl.py:coil_del,cpu \
        --workdir=/tmp/coil_mvgrl
    python experiments/mmix/edit_table.py --title "COIL-DEL (synthetic)" \
        --run "MVGRL=/tmp/coil_mvgrl" --run "MVGRL + mp-mix=/tmp/coil_mp" --out /tmp/table6

Any graph row scores the triplets when ``eval.edit_nodes`` is set (the ``coil_del`` rows set
it; elsewhere e.g. ``--config.eval.edit_nodes='(10,15,20)'``). Each ``--run`` names a
finished run's workdir (``results.json`` of a run with repeats, or of one run); the WL
kernel's scores are read from the first ``--run`` (each pretraining draws its triplets from
its own seed, so runs with the same ``--config.seed`` and repeats score the same triplets).
Writes ``<out>/edit_table.json`` and ``<out>/edit_table.png`` (triplet accuracy and pair AUC
against the subgraph size, mean ± sample std over the pretrainings) and prints a Markdown
table.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

# m-Mix Table 6 (COIL-DEL), n: (accuracy, AUC); None where the printed table lost the value.
PAPER = {
    "WL kernel": {50: (0.934, 0.525), 20: (0.826, 0.564), 15: (0.791, 0.594), 10: (0.751, 0.626)},
    "MVGRL + mp-mix": {50: (None, 0.663), 20: (None, 0.794), 15: (None, 0.813), 10: (None, 0.854)},
}
SCORES = ("triplet_acc", "pair_auc")


def _per_run(results: dict) -> list[dict]:
    return results.get("runs", [results])


def _sizes(results: dict) -> list[int]:
    found = {int(m.group(1)) for k in results if (m := re.fullmatch(r"edit_n(\d+)_pair_auc", k))}
    return sorted(found)


def _stats(runs: list[dict], key: str) -> dict:
    values = np.array([r[key] for r in runs], np.float64)
    std = float(values.std(ddof=1)) if values.size > 1 else 0.0
    return {"mean": float(values.mean()), "std": std, "per_run": values.round(4).tolist()}


def summarise(named: list[tuple[str, dict]]) -> dict:
    """``{row: {n: {score: {mean, std, per_run}}}}`` with a ``WL kernel`` row."""
    sizes = _sizes(_per_run(named[0][1])[0])
    if not sizes:
        raise SystemExit(f"{named[0][0]}: no edit scores in its results (eval.edit_nodes unset?)")
    for name, results in named[1:]:
        if _sizes(_per_run(results)[0]) != sizes:
            raise SystemExit(
                f"{name}: edit scores at n = {_sizes(_per_run(results)[0])}, the first run's "
                f"at {sizes}: compare runs of the same eval.edit_nodes"
            )
    table = {}
    for name, results in named:
        runs = _per_run(results)
        table[name] = {n: {s: _stats(runs, f"edit_n{n}_{s}") for s in SCORES} for n in sizes}
    wl_runs = _per_run(named[0][1])
    table["WL kernel"] = {
        n: {s: _stats(wl_runs, f"edit_n{n}_wl_{s}") for s in SCORES} for n in sizes
    }
    return table


def markdown(table: dict) -> str:
    sizes = sorted(next(iter(table.values())))
    head = "| row | " + " | ".join(f"acc n={n} | AUC n={n}" for n in sizes) + " |"
    lines = [head, "|---" * (1 + 2 * len(sizes)) + "|"]
    for name, cells in table.items():
        row = []
        for n in sizes:
            for s in SCORES:
                c = cells[n][s]
                row.append(f"{c['mean']:.3f} ± {c['std']:.3f}")
        lines.append(f"| {name} | " + " | ".join(row) + " |")
        paper = PAPER.get(name)
        if paper:
            cells_p = []
            for n in sizes:
                acc, auc = paper.get(n, (None, None))
                cells_p += [f"{v:.3f}" if v is not None else "-" for v in (acc, auc)]
            lines.append(f"| {name}, paper | " + " | ".join(cells_p) + " |")
    return "\n".join(lines)


def plot(table: dict, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, score, label in zip(axes, SCORES, ("triplet accuracy", "pair AUC"), strict=True):
        for k, (name, cells) in enumerate(table.items()):
            sizes = sorted(cells)
            mean = [cells[n][score]["mean"] for n in sizes]
            std = [cells[n][score]["std"] for n in sizes]
            ax.errorbar(sizes, mean, yerr=std, marker="o", capsize=3, label=name, color=f"C{k}")
            paper = PAPER.get(name, {})
            pts = [(n, paper[n][SCORES.index(score)]) for n in sizes if n in paper]
            pts = [(n, v) for n, v in pts if v is not None]
            if pts:
                ax.plot(
                    *zip(*pts, strict=True),
                    ls=":",
                    marker="x",
                    color=f"C{k}",
                    label=f"{name}, paper",
                )
        ax.set_xlabel("subgraph nodes n")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"m-Mix Table 6: graph-edit triplets, {title}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True, help="NAME=WORKDIR")
    parser.add_argument("--title", default="")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    named = []
    for spec in args.run:
        name, _, workdir = spec.partition("=")
        path = Path(workdir) / "results.json"
        if not name or not path.exists():
            parser.error(f"--run {spec!r}: expected NAME=WORKDIR of a finished run ({path})")
        named.append((name, json.loads(path.read_text())))
    table = summarise(named)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "edit_table.json").write_text(
        json.dumps({"title": args.title, "rows": table, "paper_coil_del": PAPER}, indent=1)
    )
    plot(table, args.title, args.out / "edit_table.png")
    print(markdown(table))
    print(f"wrote {args.out / 'edit_table.json'} and {args.out / 'edit_table.png'}")


if __name__ == "__main__":
    main()
