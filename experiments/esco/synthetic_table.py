"""ESCo Table 1 from finished runs: each row's accuracy over seeds, and its curve over epochs.

Each run of ``experiments/esco/synthetic_<row>.py`` writes ``workdir/config.json`` and
``workdir/results.json`` (10-fold CV ``test_top1`` and, with ``train.eval_every_epochs``,
``per_epoch_top1`` at ``evaluated_epochs``). This script groups runs by their setting
(kernel, lambda, epochs, learning rate, frequencies redrawn or fixed, negative set,
the feature MLP's hidden activation, standardised or raw features), prints a Markdown
table of each setting's mean ± sample std over seeds beside the paper's Table 1, and writes
``experiments/esco/results/synthetic_table<tag>.{json,png}`` (the plot: every run's
accuracy against epochs, one colour per kernel, one panel per setting)::

    python experiments/esco/synthetic_table.py --tag _paper_scale \\
        --runs /tmp/esco_simclr/seed_0 /tmp/esco_sorf/seed_0 /tmp/esco_rff/seed_0 ...

Runs whose workdirs are gone can be carried over from an earlier table's JSON, which keeps
every run it summarised: ``--from-table experiments/esco/results/synthetic_table_x.json``
(with or without ``--runs``; a seed that appears twice in one setting is an error).

Beside the accuracy each setting gets the final loss and what the paired task measures of
the encoder's normalised outputs (``mean_cosine`` between examples, ``view_sq_distance``
between an example's views; ``embedding_geometry`` in ``jaxcl/training/_paired_task.py``).
A run whose mean cosine exceeds 0.99 has collapsed: every example maps to nearly one point,
and the cross-validated probe then reads what is left of the differences after
standardising each feature, so its accuracy is no measure of the objective. Runs that
predate these keys in ``results.json`` are measured from their final checkpoint with
``--measure-geometry`` (given with ``--runs``; the random encoder keeps no checkpoint).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
# method.rf_method -> Table 1's row; the random encoder (method "none") is a reference.
ROWS = {"none": "random encoder", "exact": "SimCLR", "rff": "ESCo-RFF", "sorf": "ESCo-SORF"}
PAPER = {"exact": 38.11, "rff": 40.52, "sorf": 40.86}
COLORS = {"none": "tab:gray", "exact": "black", "rff": "tab:blue", "sorf": "tab:orange"}


def read_run(workdir: str) -> dict:
    """One run's setting, seed and accuracies (in %)."""
    paths = [os.path.join(workdir, f) for f in ("config.json", "results.json")]
    for path in paths:
        if not os.path.isfile(path):
            raise SystemExit(f"--runs {workdir!r}: no {os.path.basename(path)} (unfinished run?)")
    config, results = (json.load(open(p)) for p in paths)
    if config["data"]["name"] != "esco_synthetic":
        raise SystemExit(f"--runs {workdir!r}: data {config['data']['name']!r}, not esco_synthetic")
    method = config["method"]
    kernel = "none" if method["name"] == "none" else method["rf_method"]
    train, optim = config.get("train", {}), config.get("optim", {})
    return {
        "workdir": workdir,
        "row": kernel,
        "lam": method.get("lam"),
        "epochs": train.get("epochs", 0),
        "lr": optim.get("lr"),
        # What else the variants (paper, cpu, quick) differ in; one setting's seeds must agree.
        "scale": {
            "batch_size": train.get("batch_size"),
            "num_samples": config["data"].get("num_samples"),
            "num_features": method.get("num_features"),
            "encoder_width": config.get("model", {}).get("encoder_width"),
        },
        # Runs from before data.standardize existed trained on standardised features.
        "standardize": bool(config["data"].get("standardize", True)),
        # The feature MLP's hidden activation (runs from before the key: softmax).
        "hidden_activation": config["data"].get("hidden_activation", "softmax"),
        # Runs from before these keys existed drew fresh frequencies against both sets.
        "redraw_features": bool(method.get("redraw_features", True)),
        "negatives": method.get("esco_negatives", "both"),
        "seed": int(config["seed"]),
        "top1": 100.0 * float(results["test_top1"]),
        "curve_epochs": list(results.get("evaluated_epochs") or []),
        "curve_top1": [100.0 * float(a) for a in results.get("per_epoch_top1") or []],
        "pretrain_seconds": float(results.get("pretrain_seconds", float("nan"))),
        "final_loss": results.get("final_loss"),  # None for the random encoder
        # None for runs from before the paired task measured them (see --measure-geometry).
        "mean_cosine": results.get("mean_cosine"),
        "view_sq_distance": results.get("view_sq_distance"),
    }


def measure_geometry(workdir: str) -> dict:
    """``mean_cosine`` and ``view_sq_distance`` of a finished run's encoder, from its final
    checkpoint (for runs from before the paired task reported them)."""
    import jax
    import ml_collections
    import numpy as np

    from jaxcl import training
    from jaxcl.training import _paired_task, _tabular_task

    with open(os.path.join(workdir, "config.json")) as f:  # keys added since: their defaults
        config = training.conform(ml_collections.ConfigDict(json.load(f)))
    run, state = training.load_run(config, workdir)
    model, ds = run.model(state), run.task.ds
    with jax.set_mesh(run.mesh):
        features = jax.jit(lambda x: run.method.features(model, x))
        f, f_a, f_b = (
            _tabular_task.rows_in_batches(features, np.asarray(x, np.float32), run.mesh)
            for x in (ds.x, ds.x_a, ds.x_b)
        )
    return _paired_task.embedding_geometry(f, f_a, f_b)


def runs_from_table(path: str) -> list[dict]:
    """The runs an earlier ``synthetic_table*.json`` summarised, as :func:`read_run` gave them."""
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        raise SystemExit(f"--from-table {path!r}: cannot read it as JSON ({err})") from None
    runs = record.get("runs") if isinstance(record, dict) else None
    if not isinstance(runs, list) or not runs:
        raise SystemExit(f"--from-table {path!r}: no 'runs' list (not a synthetic_table JSON?)")
    keys = {"workdir", "row", "lam", "epochs", "lr", "standardize", "seed", "top1"}
    keys |= {"curve_epochs", "curve_top1", "pretrain_seconds"}
    for i, run in enumerate(runs):
        missing = keys - set(run) if isinstance(run, dict) else keys
        if missing:
            raise SystemExit(f"--from-table {path!r}: runs[{i}] lacks {sorted(missing)}")
        if run["row"] not in ROWS:
            raise SystemExit(
                f"--from-table {path!r}: runs[{i}] has row {run['row']!r}, not one of {list(ROWS)}"
            )
    return runs


# esco_negatives other than SimCLR's set ('both', the configs' choice), as a setting's name.
_NEGATIVES = {"cross": "other view's negatives only, ", "intra": "own view's negatives only, "}


def _drop_repeated(runs: list[dict]) -> list[dict]:
    """``runs`` without the second and later copies of one run (same workdir, seed and
    accuracy: two tables that both recorded it, or a workdir given and also in a table)."""
    seen, out = set(), []
    for run in runs:
        key = (run["workdir"], run["seed"], run["top1"])
        if key not in seen:
            seen.add(key)
            out.append(run)
    return out


def _panel(run: dict) -> str:
    features = "standardised" if run["standardize"] else "raw"
    if run.get("hidden_activation", "softmax") == "softmax":
        features += " softmax-every-layer"
    else:
        features += f" {run['hidden_activation']}-hidden softmax-output"
    if run["row"] == "none":
        return f"{features} features"
    kept = not run.get("redraw_features", True) and run["row"] != "exact"  # exact: none drawn
    extra = "frequencies fixed per run, " if kept else ""
    extra += _NEGATIVES.get(run.get("negatives", "both"), "")
    return f"{run['epochs']} epochs, lr {run['lr']:g}, {extra}{features} features"


def summarize(runs: list[dict]) -> list[dict]:
    """One entry per setting (panel, row, lambda): mean ± sample std of ``top1`` over seeds."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((_panel(run), run["row"], run["lam"]), []).append(run)
    for (panel, row, lam), members in groups.items():  # (tables from before: no "scale")
        scales = {json.dumps(m["scale"], sort_keys=True) for m in members if m.get("scale")}
        if len(scales) > 1:
            raise SystemExit(
                f"{ROWS[row]} (lambda {lam}, {panel}): its runs differ in scale, "
                f"{sorted(scales)}: table each variant on its own (--tag)"
            )
    out = []
    for (panel, row, lam), members in sorted(
        groups.items(), key=lambda kv: (kv[0][0], list(ROWS).index(kv[0][1]), kv[0][2] or 0)
    ):
        members.sort(key=lambda m: m["seed"])
        seeds = [m["seed"] for m in members]
        for a, b in zip(members, members[1:], strict=False):
            if a["seed"] == b["seed"]:
                raise SystemExit(
                    f"{ROWS[row]} ({panel}): seed {a['seed']} given twice, by runs"
                    f" {a['workdir']!r} and {b['workdir']!r}"
                )
        values = [m["top1"] for m in members]
        out.append(
            {
                "setting": panel,
                "row": ROWS[row],
                "rf_method": row,
                "lam": lam,
                "paper": PAPER.get(row),
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else float("nan"),
                "seeds": seeds,
                "per_seed": values,
                "pretrain_minutes": [m["pretrain_seconds"] / 60 for m in members],
                "final_loss": [m.get("final_loss") for m in members],
                "mean_cosine": [m.get("mean_cosine") for m in members],
                "view_sq_distance": [m.get("view_sq_distance") for m in members],
                "collapsed": [_collapsed(m) for m in members],
            }
        )
    return out


COLLAPSED_COSINE = 0.99  # as jaxcl.training's paired task warns


def _collapsed(run: dict) -> bool | None:
    """Whether the run's encoder collapsed (None: not measured)."""
    cosine = run.get("mean_cosine")
    return None if cosine is None else cosine > COLLAPSED_COSINE


def _geometry(r: dict) -> str:
    """The setting's mean cosine and view distance over its seeds, and how many collapsed."""
    measured = [(c, v) for c, v in zip(r["mean_cosine"], r["view_sq_distance"], strict=True)
                if c is not None]  # fmt: skip
    if not measured:
        return "not measured"
    cosine = statistics.fmean(c for c, _ in measured)
    distance = statistics.fmean(v for _, v in measured)
    collapsed = sum(bool(c) for c in r["collapsed"] if c is not None)
    text = f"{cosine:.6f} / {distance:.2g}"
    if collapsed:
        text += f", **{collapsed} of {len(measured)} collapsed**"
    return text


def markdown(rows: list[dict]) -> str:
    lines = [
        "| setting | row (lambda) | paper | jaxcl, mean ± std | per seed | pretrain min "
        "| final loss | mean cosine / view distance |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        std = "" if r["std"] != r["std"] else f" ± {r['std']:.2f}"
        lam = "" if r["lam"] is None else f" ({r['lam']:g})"
        paper = "-" if r["paper"] is None else f"{r['paper']:.2f}"
        per_seed = ", ".join(
            f"{v:.2f} (s{s})" for v, s in zip(r["per_seed"], r["seeds"], strict=True)
        )
        minutes = ", ".join(f"{m:.1f}" for m in r["pretrain_minutes"])
        loss = ", ".join("-" if v is None or v != v else f"{v:.5f}" for v in r["final_loss"])
        lines.append(
            f"| {r['setting']} | {r['row']}{lam} | {paper} | {r['mean']:.2f}{std} "
            f"| {per_seed} | {minutes} | {loss} | {_geometry(r)} |"
        )
    return "\n".join(lines)


def plot(runs: list[dict], path: str) -> bool:
    """Writes the curves to ``path``; False (nothing written) when no run has a curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({_panel(r) for r in runs if r["curve_epochs"]})
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        labelled = set()
        for r in sorted(runs, key=lambda r: (r["row"], r["seed"])):
            if _panel(r) != panel or not r["curve_epochs"]:
                continue
            label = None if r["row"] in labelled else ROWS[r["row"]]
            labelled.add(r["row"])
            ax.plot(
                r["curve_epochs"],
                r["curve_top1"],
                "o-",
                color=COLORS[r["row"]],
                label=label,
                alpha=0.8,
            )
        for row in labelled & set(PAPER):
            ax.axhline(PAPER[row], color=COLORS[row], ls=":", lw=1)
        for r in runs:  # the random encoder on the same features, for reference
            if r["row"] == "none" and panel.endswith(_panel(r)):
                label = None if "none" in labelled else f"{ROWS['none']} (a line per seed)"
                labelled.add("none")
                ax.axhline(r["top1"], color=COLORS["none"], ls="--", lw=1, label=label)
        ax.set_title(panel, fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylabel("10-fold CV accuracy (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("ESCo synthetic data (dotted: the paper's Table 1)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=[], help="finished runs' workdirs")
    parser.add_argument(
        "--from-table",
        nargs="+",
        default=[],
        metavar="JSON",
        help="earlier synthetic_table*.json files whose runs are included as recorded there",
    )
    parser.add_argument("--tag", default="", help="suffix of the output files' names")
    parser.add_argument(
        "--measure-geometry",
        action="store_true",
        help="measure mean_cosine and view_sq_distance from the final checkpoint of --runs"
        " whose results.json lacks them (not the random encoder's runs, which keep no"
        " checkpoint, nor runs read from --from-table)",
    )
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    if not args.runs and not args.from_table:
        parser.error("give --runs, --from-table or both")
    runs = [read_run(w) for w in args.runs]
    for run in runs:
        if args.measure_geometry and run["mean_cosine"] is None and run["row"] != "none":
            run.update(measure_geometry(run["workdir"]))
    for path in args.from_table:
        runs += runs_from_table(path)
    runs = _drop_repeated(runs)
    rows = summarize(runs)
    print(markdown(rows))
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"synthetic_table{args.tag}")
    with open(stem + ".json", "w") as f:
        json.dump({"rows": rows, "runs": runs}, f, indent=1)
    if plot(runs, stem + ".png"):
        print(f"wrote {stem}.json and {stem}.png")
    else:
        print(f"wrote {stem}.json (no run has a curve over epochs: no plot)")


if __name__ == "__main__":
    main()
