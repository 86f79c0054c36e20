"""Node-classification accuracy over a long pretraining, one curve per m-Mix row (Tables 1/5).

The node rows were trained for 200 epochs (MVGRL: 300) where the paper trains "up to 2000
with early stopping". This script reads runs that kept a checkpoint every 100 epochs, e.g.
(Cora, seed 0, 600 epochs, the loss logged every epoch)::

    for row in mp mo random mp_nodiv binary; do
      python -m jaxcl.main --config=experiments/mmix/node_$row.py:cora --config.seed=0 \
          --config.data.data_dir=../shared/data --workdir=/tmp/curves/cora_$row \
          --config.train.epochs=600 --config.train.checkpoint_every_steps=100 \
          --config.train.keep_checkpoints=6 --config.train.log_every_steps=1
    done
    # MVGRL's row: --config=experiments/mvgrl/cora.py, the same flags
    python experiments/mmix/node_curves.py --data cora \
        --runs mvgrl=/tmp/curves/cora_mvgrl mp=/tmp/curves/cora_mp ...

scores every checkpoint with two node classifiers (50 logistic regressions each, the mean
reported): ``mvgrl``, the classifier of MVGRL's and m-Mix's code (300 Adam steps on the raw
embeddings, the last step; the configs' default) and ``grace``, GRACE's / PyGCL's (5000
steps on unit-norm embeddings, the step with the best validation accuracy; ``--protocols``
picks), records the minimum and maximum over the classifiers too (m-Mix's script prints
both), with ``--clustering`` k-means NMI / ARI of every checkpoint (Table 8), and writes
``experiments/mmix/results/node_curves_<data><tag>.{json,png}``: test accuracy at each checkpoint
beside the paper's number, the training loss, and where MVGRL's early stopping (its
``node/train.py``: stop once the loss has not improved for ``patience`` epochs, keep the
model of the lowest loss) would have stopped on that loss, for MVGRL's patience (20) and
m-Mix's (30, Appendix A: "2000 epochs ... early stopping with the patience of 30"). The
accuracy at those epochs is not measured unless they fall on a checkpoint; the JSON gives the
stopping and lowest-loss epochs.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from jaxcl import training
from jaxcl.configs import mmix_node, mvgrl_node

# m-Mix Table 5's means (MVGRL: their rerun), node classification accuracy in %.
PAPER = {
    data: {row: mean for row, (mean, _) in rows.items()}
    for data, rows in mmix_node.PAPER_ACCURACY.items()
}
LABELS = mmix_node.ROW_LABELS
HERE = os.path.dirname(os.path.abspath(__file__))


def logged_losses(workdir: str) -> tuple[np.ndarray, np.ndarray]:
    """Steps and training losses from a run's TensorBoard events (``loss`` scalars)."""
    steps, losses = training.read_scalars(workdir, "loss")
    if not steps:  # a run made without `tensorboard`, or one that logged no loss yet
        return np.zeros(0, int), np.zeros(0)
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


CLASSIFIER_KEYS = ("steps", "eval_every", "normalize", "weight_decay")


def grace_classifier(c) -> None:
    """GRACE's / PyGCL's node classifier: the node task's own defaults of the keys
    ``eval.node_classifier_*``."""
    defaults = training.base_config(c.data.name, c.method.name).eval
    c.eval.update(
        {f"node_classifier_{k}": defaults[f"node_classifier_{k}"] for k in CLASSIFIER_KEYS}
    )


# The node classifiers compared: each sets the config keys eval.node_classifier_*.
PROTOCOLS = {"mvgrl": mvgrl_node.apply_mvgrl_classifier, "grace": grace_classifier}


def score_checkpoints(
    workdir: str, classifiers: int = 50, protocols=tuple(PROTOCOLS), clustering: bool = False
) -> dict:
    """Test accuracy (mean, std, min and max over ``classifiers`` logistic regressions, %) of
    every checkpoint of a run, for each of ``protocols`` (names in :data:`PROTOCOLS`); with
    ``clustering``, k-means NMI / ARI of every checkpoint's embeddings too (Table 8, under the
    key ``clustering``)."""
    import jax
    import ml_collections

    from jaxcl import evaluation

    config = ml_collections.ConfigDict(json.load(open(os.path.join(workdir, "config.json"))))
    config = training.conform(config)  # keys added since the run, at their defaults
    out, clusters = {}, []
    for name in protocols:
        c = ml_collections.ConfigDict(config.to_dict())
        PROTOCOLS[name](c)
        c.eval.node_classifier_runs = classifiers
        run, _ = training.load_run(c, workdir)
        checkpointer = run.checkpointer(workdir)
        steps = checkpointer.all_steps()
        scores = []
        with jax.set_mesh(run.mesh):
            for step in steps:
                state = checkpointer.restore(run.abstract_state, step)
                x = run.method.features(run.model(state), run.task.graph)
                scores.append(run.task.evaluate(lambda _, x=x: x, step // run.task.steps_per_epoch))
                if clustering and name == protocols[0]:  # the embeddings: once per checkpoint
                    clusters.append(evaluation.kmeans_nmi_ari(x, run.task.ds.labels, seed=c.seed))
        checkpointer.close()
        epochs = [s // run.task.steps_per_epoch for s in steps]
        out[name] = {
            "epochs": epochs,
            **{
                key: [100 * r[f"node_test_acc{suffix}"] for r in scores]
                for key, suffix in [
                    ("test_acc", ""),
                    ("test_acc_std_over_classifiers", "_std"),
                    ("test_acc_min_over_classifiers", "_min"),
                    ("test_acc_max_over_classifiers", "_max"),
                ]
            },
            **{k: c.eval[f"node_classifier_{k}"] for k in CLASSIFIER_KEYS},
        }
    if clustering:
        out["clustering"] = {
            "epochs": epochs,
            "nmi": [r["nmi"] for r in clusters],
            "ari": [r["ari"] for r in clusters],
        }
    return out


def summarize(
    workdir: str,
    patiences: list[int],
    classifiers: int = 50,
    protocols=tuple(PROTOCOLS),
    clustering: bool = False,
) -> dict:
    config = json.load(open(os.path.join(workdir, "config.json")))
    steps, losses = logged_losses(workdir)
    if len(steps) and not np.array_equal(steps, np.arange(1, len(steps) + 1)):
        raise SystemExit(
            f"{workdir}: the loss is not logged every epoch (steps {steps[:5].tolist()}...); "
            "rerun with --config.train.log_every_steps=1"
        )
    scores = score_checkpoints(workdir, classifiers, protocols, clustering)
    out = {
        "workdir": workdir,
        "method": config["method"]["name"],
        "seed": config["seed"],
        "lr": config["optim"]["lr"],
        "classifiers": classifiers,
        "protocols": {name: scores[name] for name in protocols},
        "logged_epochs": len(losses),
        "loss_every_10_epochs": losses[9::10].round(5).tolist(),
        # patience -> (the epoch it stops after, the epoch of the model it keeps)
        "early_stopping": {str(p): early_stop(losses, p) for p in patiences},
    }
    if clustering:
        out["clustering"] = scores["clustering"]
    return out


def plot(rows: dict, data: str, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    protocols = list(next(iter(rows.values()))["protocols"])
    clustering = all("clustering" in r for r in rows.values())
    panels = len(protocols) + 1 + clustering
    fig, axes = plt.subplots(1, panels, figsize=(5.7 * panels, 4.8), squeeze=False)
    axes = axes[0]
    accuracy_axes, loss_ax = axes[: len(protocols)], axes[len(protocols)]
    titles = {"mvgrl": "MVGRL's classifier (the configs')", "grace": "GRACE's classifier"}
    for i, (row, r) in enumerate(rows.items()):
        color, label = f"C{i}", LABELS.get(row, row)
        for ax, (name, p) in zip(accuracy_axes, r["protocols"].items(), strict=True):
            ax.errorbar(
                p["epochs"], p["test_acc"], yerr=p["test_acc_std_over_classifiers"],
                color=color, marker="o", ms=3, capsize=2, label=label,
            )  # fmt: skip
            if row in PAPER.get(data, {}):
                ax.axhline(PAPER[data][row], color=color, ls="--", lw=0.8)
            ax.set_title(f"{data}: {titles.get(name, name)}; dashed: the paper's")
        epochs = np.arange(10, 10 * len(r["loss_every_10_epochs"]) + 1, 10)
        loss_ax.plot(epochs, r["loss_every_10_epochs"], color=color, label=label)
        for stop, _ in r["early_stopping"].values():
            if stop < r["logged_epochs"]:  # it stopped (else: the run's last epoch)
                loss_ax.axvline(stop, color=color, ls=":", lw=0.8)
        if clustering:
            k = r["clustering"]
            axes[-1].plot(k["epochs"], k["nmi"], color=color, marker="o", ms=3, label=label)
            axes[-1].plot(k["epochs"], k["ari"], color=color, marker="s", ms=3, ls="--")
    low = min(ax.get_ylim()[0] for ax in accuracy_axes)
    high = max(ax.get_ylim()[1] for ax in accuracy_axes)
    for ax in accuracy_axes:
        ax.set_ylim(low, high)  # the classifiers on one scale
        ax.set_xlabel("pretraining epoch")
        ax.set_ylabel("test accuracy, %  (mean ± std over the classifiers)")
        ax.legend(fontsize=7)
    loss_ax.set_xlabel("pretraining epoch")
    loss_ax.set_ylabel("training loss")
    loss_ax.set_title("loss (dotted: where early stopping would stop)")
    if clustering:
        axes[-1].set_xlabel("pretraining epoch")
        axes[-1].set_ylabel("k-means NMI (solid) / ARI (dashed)")
        axes[-1].set_title("clustering (Table 8)")
        axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, choices=sorted(PAPER))
    parser.add_argument("--runs", nargs="+", required=True, help="row=workdir ...")
    parser.add_argument("--patience", type=int, nargs="+", default=[20, 30])
    parser.add_argument("--classifiers", type=int, default=50, help="per checkpoint and protocol")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    parser.add_argument("--tag", default="", help="appended to the output files' names")
    parser.add_argument(
        "--protocols", nargs="+", choices=sorted(PROTOCOLS), default=list(PROTOCOLS),
        help="the node classifiers to score each checkpoint with",
    )  # fmt: skip
    parser.add_argument(
        "--clustering", action="store_true",
        help="k-means NMI / ARI of every checkpoint too (m-Mix Table 8)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    rows = {}
    for item in args.runs:
        row, sep, workdir = item.partition("=")
        if not sep or not os.path.isdir(workdir):
            raise SystemExit(f"--runs {item!r}: expected row=workdir with an existing workdir")
        rows[row] = summarize(
            workdir, args.patience, args.classifiers, tuple(args.protocols), args.clustering
        )
    for name in args.protocols:
        epochs = sorted({e for r in rows.values() for e in r["protocols"][name]["epochs"]})
        print(f"\n{name} classifier\n| row | paper | {' | '.join(map(str, epochs))} |")
        for row, r in rows.items():
            p = r["protocols"][name]
            acc = dict(zip(p["epochs"], p["test_acc"], strict=True))
            accs = " | ".join(f"{acc[e]:.1f}" if e in acc else "" for e in epochs)
            paper = PAPER[args.data].get(row, float("nan"))
            print(f"| {LABELS.get(row, row)} | {paper} | {accs} |")
        print("  (max over the classifiers at the last checkpoint: ", end="")
        print(", ".join(
            f"{row} {r['protocols'][name]['test_acc_max_over_classifiers'][-1]:.1f}"
            for row, r in rows.items()
        ) + ")")  # fmt: skip
    if args.clustering:
        print("\nk-means NMI / ARI at the last checkpoint (m-Mix Table 8)")
        for row, r in rows.items():
            k = r["clustering"]
            print(f"  {LABELS.get(row, row)}: {k['nmi'][-1]:.4f} / {k['ari'][-1]:.4f}")
    print("\nearly stopping on the loss: stops after epoch (keeps epoch); the last epoch: never")
    for row, r in rows.items():
        stops = ", ".join(f"patience {p}: {a} ({b})" for p, (a, b) in r["early_stopping"].items())
        print(f"  {LABELS.get(row, row)}: {stops}")
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"node_curves_{args.data}{args.tag}")
    with open(stem + ".json", "w") as f:
        json.dump({"data": args.data, "paper": PAPER[args.data], "rows": rows}, f, indent=1)
    plot(rows, args.data, stem + ".png")
    print(f"wrote {stem}.json and {stem}.png")


if __name__ == "__main__":
    main()
