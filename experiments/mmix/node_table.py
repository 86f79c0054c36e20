"""m-Mix's node table (Tables 1/5) over pretraining seeds, from ``node_curves.py``'s JSONs.

``node_curves.py`` scores the checkpoints of one run per row; run it once per seed (each
with its own ``--tag``), then::

    python experiments/mmix/node_table.py --data cora \
        --jsons experiments/mmix/results/node_curves_cora.json \
                experiments/mmix/results/node_curves_cora_seed1.json ...

takes every row's accuracy at its config's epoch (``--epoch row=E``; default 200 for the
mixing rows and 300 for MVGRL, the configs' ``train.epochs``) from every JSON that has that
row at that epoch (one JSON per seed; a seed found twice is an error unless ``--first``),
and prints and writes (``experiments/mmix/results/node_table_<data><tag>.{json,png}``) the
mean ± sample std over the seeds beside the paper's mean ± std, with the k-means NMI / ARI
where the JSONs have them (``node_curves.py --clustering``). The plot shows every seed as a
dot.

``--pick best`` reads each run as m-Mix's official node script can be read: it scores the
test set every 10 epochs and plots the curve, without saying which point its table reports;
``best`` takes the highest mean over the classifiers among the checkpoints up to the row's
epoch (the best checkpoint chosen on the test set), ``best_max`` the highest maximum over the
classifiers (the script prints min / mean / max over its 50), ``last`` (the default) the
row's epoch. The picked epochs are in the JSON; clustering is read only with ``last``.

``--runs row=workdir ...`` takes runs' own results instead of (or beside) node_curves'
JSONs: ``workdir/results.json`` (the final model's ``test_top1``, ``cluster_nmi``,
``cluster_ari``, scored by the config's classifier, MVGRL's) and the seed, data set and
epochs of ``workdir/config.json``, which must be the row's epoch::

    python experiments/mmix/node_table.py --data citeseer --tag _mvgrl_view \
        --runs mvgrl=/tmp/w_mvgrl_s0 mvgrl=/tmp/w_mvgrl_s1 mp=/tmp/w_mp_s0 ...
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from jaxcl.configs import mmix_node

HERE = os.path.dirname(os.path.abspath(__file__))
PAPER = mmix_node.PAPER_ACCURACY  # m-Mix Table 5: (mean, std) in %
LABELS = mmix_node.ROW_LABELS
DEFAULT_EPOCHS = {"mvgrl": 300}  # the others: 200


PICKS = ("last", "best", "best_max")


def pick_checkpoint(p: dict, epoch: int, pick: str = "last") -> tuple[float, int]:
    """(accuracy, its epoch) from one protocol's scores ``p`` (node_curves' layout): at
    ``epoch`` (``last``), or the highest mean (``best``) / maximum over the classifiers
    (``best_max``) among the checkpoints up to ``epoch``; the earliest where tied."""
    if pick not in PICKS:
        raise ValueError(f"pick = {pick!r}: expected one of {list(PICKS)}")
    if pick == "last":
        return p["test_acc"][p["epochs"].index(epoch)], epoch
    values = p["test_acc" if pick == "best" else "test_acc_max_over_classifiers"]
    upto = [i for i, e in enumerate(p["epochs"]) if e <= epoch]
    i = max(upto, key=lambda i: (values[i], -i))
    return values[i], p["epochs"][i]


def collect(
    paths: list[str],
    epochs: dict[str, int],
    protocol: str = "mvgrl",
    first: bool = False,
    pick: str = "last",
    data: str | None = None,
) -> dict:
    """``{row: {'seeds': [...], 'test_acc': [...], 'nmi': [...], 'ari': [...], 'files':
    [...], 'picked_epochs': [...]}}`` at each row's epoch (or the checkpoint ``pick`` chooses
    up to it, :func:`pick_checkpoint`), one entry per JSON holding it; a row's seed found in
    two JSONs is an error, or with ``first`` the first JSON's is kept (e.g. a rerun with
    clustering listed before the original). ``data``: the data set every JSON must be of; a
    row without the protocol or the epoch is left out, and said so."""
    rows: dict[str, dict] = {}
    for path in paths:
        found = json.load(open(path))
        if data is not None and found.get("data") not in (None, data):
            raise SystemExit(f"{path}: curves of {found['data']}, not of --data {data}")
        for row, r in found["rows"].items():
            epoch = epochs.get(row, DEFAULT_EPOCHS.get(row, 200))
            p = r["protocols"].get(protocol)
            if p is None or epoch not in p["epochs"]:
                why = f"no {protocol} protocol" if p is None else f"no checkpoint at epoch {epoch}"
                print(f"{path}: {row} (seed {r.get('seed')}) left out: {why}")
                continue
            k = r.get("clustering")
            cluster = None
            if k is not None and epoch in k["epochs"] and pick == "last":
                j = k["epochs"].index(epoch)
                cluster = (k["nmi"][j], k["ari"][j])
            acc, at = pick_checkpoint(p, epoch, pick)
            name = os.path.basename(path)
            _add(rows, row, epoch, r["seed"], acc, cluster, path, name, first, at)
    return rows


def _add(rows, row, epoch, seed, acc, cluster, source, name, first, picked=None) -> None:
    """One seed's accuracy (and ``(nmi, ari)`` or None) for ``row``; a seed already there is
    an error, or with ``first`` left as it is."""
    out = rows.setdefault(
        row,
        {
            "epoch": epoch, "seeds": [], "test_acc": [], "nmi": [], "ari": [], "files": [],
            "picked_epochs": [],
        },
    )  # fmt: skip
    if seed in out["seeds"]:
        if first:
            print(f"{source}: row {row!r} seed {seed}: kept the earlier one")
            return
        raise SystemExit(f"{source}: row {row!r} seed {seed} found twice (--first keeps the first)")
    out["seeds"].append(seed)
    out["test_acc"].append(acc)
    out["files"].append(name)
    out["picked_epochs"].append(epoch if picked is None else picked)
    if cluster is not None:
        out["nmi"].append(cluster[0])
        out["ari"].append(cluster[1])


def collect_runs(
    items: list[str], data: str, epochs: dict[str, int], rows: dict, first: bool = False
) -> dict:
    """Adds ``row=workdir`` runs' own results to ``rows`` (:func:`collect`'s layout)."""
    for item in items:
        row, sep, workdir = item.partition("=")
        if not sep or not os.path.isfile(os.path.join(workdir, "results.json")):
            raise SystemExit(f"--runs {item!r}: expected row=workdir holding results.json")
        result = json.load(open(os.path.join(workdir, "results.json")))
        config = json.load(open(os.path.join(workdir, "config.json")))
        epoch = epochs.get(row, DEFAULT_EPOCHS.get(row, 200))
        if config["data"]["name"] != data or config["train"]["epochs"] != epoch:
            raise SystemExit(
                f"--runs {item!r}: a run of {config['data']['name']} for "
                f"{config['train']['epochs']} epochs; expected {data} for {epoch} (--epoch "
                f"{row}=E for another)"
            )
        cluster = None
        if "cluster_nmi" in result:
            cluster = (result["cluster_nmi"], result["cluster_ari"])
        acc = 100 * result["test_top1"]
        _add(rows, row, epoch, config["seed"], acc, cluster, f"--runs {item!r}", workdir, first)
    return rows


def mean_std(values) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    v = np.asarray(values, np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def plot(rows: dict, data: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.55 * len(rows) + 1.6))
    for y, (row, r) in enumerate(rows.items()):
        ax.scatter(r["test_acc"], [y] * len(r["test_acc"]), color="C0", s=14, zorder=3)
        m, s = mean_std(r["test_acc"])
        ax.errorbar(m, y, xerr=s, color="C0", marker="D", capsize=3, zorder=2)
        if row in PAPER.get(data, {}):
            pm, ps = PAPER[data][row]
            ax.errorbar(pm, y + 0.25, xerr=ps, color="C3", marker="s", capsize=3)
    ax.set_yticks(range(len(rows)), [LABELS.get(row, row) for row in rows])
    ax.invert_yaxis()
    ax.set_xlabel("test accuracy, %")
    ax.set_title(
        f"{data}: jaxcl (blue: seeds, mean ± sample std) and the paper (red, mean ± std)",
        fontsize=9,
    )
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, choices=sorted(PAPER))
    parser.add_argument("--jsons", nargs="*", default=[], help="node_curves.py outputs")
    parser.add_argument("--runs", nargs="*", default=[], help="row=workdir: runs' own results")
    parser.add_argument("--epoch", nargs="*", default=[], help="row=epoch overrides")
    parser.add_argument("--protocol", default="mvgrl", help="the classifier (node_curves')")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    parser.add_argument("--tag", default="", help="appended to the output files' names")
    parser.add_argument(
        "--first", action="store_true", help="a row's seed in several JSONs: keep the first"
    )
    parser.add_argument(
        "--pick", choices=PICKS, default="last",
        help="each run's checkpoint: the row's epoch, or the best on test up to it (--jsons)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    epochs = {}
    for item in args.epoch:
        row, sep, value = item.partition("=")
        if not sep or not value.isdigit():
            raise SystemExit(f"--epoch {item!r}: expected row=epoch, e.g. mp=200")
        epochs[row] = int(value)
    if not args.jsons and not args.runs:
        parser.error("give --jsons, --runs or both")
    if args.runs and args.pick != "last":
        parser.error(f"--runs with --pick {args.pick}: runs hold their last epoch's result")
    if args.runs and args.protocol != "mvgrl":
        parser.error(f"--runs with --protocol {args.protocol}: runs report MVGRL's classifier")
    rows = collect(args.jsons, epochs, args.protocol, args.first, args.pick, args.data)
    rows = collect_runs(args.runs, args.data, epochs, rows, args.first)
    if not rows:
        raise SystemExit("no row of the JSONs has a checkpoint at its epoch")
    order = [r for r in LABELS if r in rows] + [r for r in rows if r not in LABELS]
    rows = {row: rows[row] for row in order}
    print("| row | paper | jaxcl (mean ± std) | seeds | per seed | NMI / ARI |")
    print("|---|---|---|---|---|---|")
    for row, r in rows.items():
        m, s = mean_std(r["test_acc"])
        r["mean"], r["std"] = m, s
        paper = PAPER[args.data].get(row)
        paper = f"{paper[0]} ± {paper[1]}" if paper else "-"
        seeds = ", ".join(f"{a:.2f}" for a in r["test_acc"])
        if args.pick != "last":
            seeds += f" (epochs {', '.join(map(str, r['picked_epochs']))})"
        cluster = "-"
        if r["nmi"]:
            cluster = f"{np.mean(r['nmi']):.3f} / {np.mean(r['ari']):.3f} ({len(r['nmi'])})"
        ours = f"{m:.1f} ± {s:.1f}" if len(r["seeds"]) > 1 else f"{m:.1f}"
        print(
            f"| {LABELS.get(row, row)} | {paper} | {ours} | {len(r['seeds'])} "
            f"({', '.join(map(str, r['seeds']))}) | {seeds} | {cluster} |"
        )
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"node_table_{args.data}{args.tag}")
    with open(stem + ".json", "w") as f:
        out = {"data": args.data, "protocol": args.protocol, "pick": args.pick, "rows": rows}
        json.dump(out, f, indent=1)
    plot(rows, args.data, stem + ".png")
    print(f"wrote {stem}.json and {stem}.png")


if __name__ == "__main__":
    main()
