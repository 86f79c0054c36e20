"""Node-classification accuracy over a long pretraining, one curve per m-Mix row (Tables 1/5).

The node rows were trained for 200 epochs (MVGRL: 300) where the paper trains "up to 2000
with early stopping". This script reads runs made with periodic evaluation, e.g. (Cora,
seed 0, 1000 epochs, 50 classifiers every 100 epochs, the loss logged every epoch)::

    for row in mp mo random mp_nodiv binary; do
      python -m jaxcl.main --config=experiments/mmix/node_$row.py:cora --config.seed=0 \\
          --config.data.data_dir=../shared/data --workdir=/tmp/curves/cora_$row \\
          --config.train.epochs=1000 --config.eval.node_every_epochs=100 \\
          --config.train.log_every_steps=1
    done
    # MVGRL's row: --config=experiments/mvgrl/cora.py, the same flags
    python experiments/mmix/node_curves.py --data cora \\
        --runs mvgrl=/tmp/curves/cora_mvgrl mp=/tmp/curves/cora_mp ...

and writes ``experiments/mmix/results/node_curves_<data>.{json,png}``: test accuracy (mean and
std over the classifiers) at each evaluated epoch beside the paper's number, the training
loss, and where MVGRL's early stopping (its ``node/train.py``: stop once the loss has not
improved for ``patience`` epochs, evaluate the model of the lowest loss) would have stopped
on that loss, for MVGRL's patience (20) and m-Mix's (30, Appendix A: "2000 epochs ...
early stopping with the patience of 30"). The accuracy at those epochs is not measured (the
runs evaluate every 100 epochs); the JSON gives the stopping and lowest-loss epochs only.
"""

from __future__ import annotations

import argparse
import glob
import json
import os

import numpy as np

# m-Mix Table 5 (MVGRL: their rerun, Table 1), node classification accuracy in %.
PAPER = {
    "cora": {
        "mvgrl": 84.1, "random": 84.1, "binary": 84.9, "mo": 85.4, "mp_nodiv": 85.1, "mp": 85.9,
    },
    "citeseer": {
        "mvgrl": 73.5, "random": 73.8, "binary": 74.1, "mo": 75.1, "mp_nodiv": 74.4, "mp": 75.8,
    },
}  # fmt: skip
LABELS = {
    "mvgrl": "MVGRL",
    "random": "+ random-mix",
    "binary": "+ binary-mix",
    "mo": "+ mo-mix",
    "mp_nodiv": "+ mp-mix w/o div",
    "mp": "+ mp-mix",
}
HERE = os.path.dirname(os.path.abspath(__file__))


def logged_losses(workdir: str) -> tuple[np.ndarray, np.ndarray]:
    """Steps and training losses from a run's TensorBoard events (``loss`` scalars)."""
    import tensorflow as tf  # the trainer's writers need it already

    steps, losses = [], []
    for path in sorted(glob.glob(os.path.join(workdir, "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "loss":
                    steps.append(event.step)
                    losses.append(float(tf.make_ndarray(value.tensor)))
    order = np.argsort(steps, kind="stable")
    steps, losses = np.asarray(steps)[order], np.asarray(losses)[order]
    keep = np.r_[steps[1:] != steps[:-1], True]  # a resumed run logs a step twice: the last
    return steps[keep], losses[keep]


def early_stop(losses: np.ndarray, patience: int) -> tuple[int, int]:
    """MVGRL's rule over per-epoch losses: (epoch it stops after, epoch of the lowest loss
    so far, whose model it evaluates), epochs counted from 1; the last epoch if it never
    stops."""
    best, best_epoch, waited = np.inf, 0, 0
    for epoch, loss in enumerate(losses, start=1):
        if loss < best:
            best, best_epoch, waited = loss, epoch, 0
        else:
            waited += 1
            if waited == patience:
                return epoch, best_epoch
    return len(losses), best_epoch


def summarize(workdir: str, patiences: list[int]) -> dict:
    history = json.load(open(os.path.join(workdir, "eval_history.json")))
    config = json.load(open(os.path.join(workdir, "config.json")))
    steps, losses = logged_losses(workdir)
    if len(steps) and not np.array_equal(steps, np.arange(1, len(steps) + 1)):
        raise SystemExit(
            f"{workdir}: the loss is not logged every epoch (steps {steps[:5].tolist()}...); "
            "rerun with --config.train.log_every_steps=1"
        )
    return {
        "workdir": workdir,
        "method": config["method"]["name"],
        "seed": config["seed"],
        "lr": config["optim"]["lr"],
        "epochs": [h["epoch"] for h in history],
        "test_acc": [100 * h["node_test_acc"] for h in history],
        "test_acc_std_over_classifiers": [100 * h["node_test_acc_std"] for h in history],
        "loss_every_10_epochs": losses[9::10].round(5).tolist(),
        # patience -> (the epoch it stops after, the epoch of the model it keeps)
        "early_stopping": {str(p): early_stop(losses, p) for p in patiences},
    }


def plot(rows: dict, data: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
    for i, (row, r) in enumerate(rows.items()):
        color = f"C{i}"
        ax.errorbar(
            r["epochs"], r["test_acc"], yerr=r["test_acc_std_over_classifiers"],
            color=color, marker="o", ms=3, capsize=2, label=LABELS.get(row, row),
        )  # fmt: skip
        if row in PAPER.get(data, {}):
            ax.axhline(PAPER[data][row], color=color, ls="--", lw=0.8)
        epochs = np.arange(10, 10 * len(r["loss_every_10_epochs"]) + 1, 10)
        bx.plot(epochs, r["loss_every_10_epochs"], color=color, label=LABELS.get(row, row))
        for stop, _ in r["early_stopping"].values():
            bx.axvline(stop, color=color, ls=":", lw=0.8)
    ax.set_xlabel("pretraining epoch")
    ax.set_ylabel("test accuracy, %  (mean ± std of the classifiers)")
    ax.set_title(f"{data}: accuracy during pretraining (dashed: the paper's)")
    ax.legend(fontsize=8)
    bx.set_xlabel("pretraining epoch")
    bx.set_ylabel("training loss")
    bx.set_title("loss (dotted: where early stopping would stop)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, choices=sorted(PAPER))
    parser.add_argument("--runs", nargs="+", required=True, help="row=workdir ...")
    parser.add_argument("--patience", type=int, nargs="+", default=[20, 30])
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    rows = {}
    for item in args.runs:
        row, sep, workdir = item.partition("=")
        if not sep or not os.path.isdir(workdir):
            raise SystemExit(f"--runs {item!r}: expected row=workdir with an existing workdir")
        rows[row] = summarize(workdir, args.patience)
    stops = " | ".join(f"stops (kept), patience {p}" for p in args.patience)
    epochs = " | ".join(str(e) for e in rows[next(iter(rows))]["epochs"])
    print(f"| row | paper | {epochs} | {stops} |")
    for row, r in rows.items():
        accs = " | ".join(f"{a:.1f}" for a in r["test_acc"])
        paper = PAPER[args.data].get(row, float("nan"))
        stops = " | ".join(f"{a} ({b})" for a, b in r["early_stopping"].values())
        print(f"| {LABELS.get(row, row)} | {paper} | {accs} | {stops} |")
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"node_curves_{args.data}")
    with open(stem + ".json", "w") as f:
        json.dump({"data": args.data, "paper": PAPER[args.data], "rows": rows}, f, indent=1)
    plot(rows, args.data, stem + ".png")
    print(f"wrote {stem}.json and {stem}.png")


if __name__ == "__main__":
    main()
