"""Re-score finished graph-row pretrainings with the linear-SVM protocol's two solvers.

Loads each workdir's last checkpoint (``jaxcl.training.load_run``), embeds the data set as the
run's evaluation does, and scores the embeddings with ``svm_kfold_accuracy`` once per
``--solvers`` entry (``liblinear``: scikit-learn's ``LinearSVC``, as the published code;
``newton``: jaxcl's exact minimiser of the same SVM), with the fold seed the run used. Prints a
Markdown table (and the run's own recorded score, where its ``results.json`` has one) and
writes ``--out`` as JSON.

``--fold-seeds N`` also scores the same embeddings on N draws of the outer folds (fold seeds
seed, seed + 1, ..., seed + N - 1; the first is the run's own) and reports their mean, sample
std, minimum and maximum: how much of a 10-fold number is the draw of its folds (on MUTAG's
188 graphs, a fold holds 18-19 of them).

    python experiments/mmix/rescore_svm.py --config=experiments/mmix/graph_mo.py:imdb_binary,cpu \
        --workdirs /tmp/imdb/mo/seed_0 /tmp/imdb/mo/seed_1 --out /tmp/rescore_mo.json

``--config`` must name the row and data set the runs were trained with, ``--set KEY=VALUE``
any other overrides they had (``--set model.encoder_width=64``); each workdir's
``config.json`` supplies the seed (a run with ``repeats`` keeps one workdir per pretraining,
``seed_<k>``). ``JAXCL_DATA_DIR`` or ``--data-dir`` points at the data.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import pathlib
import time

import jax
import numpy as np
from flax import nnx

from jaxcl import evaluation, training
from jaxcl.training import _workdir
from jaxcl.training._loop import _as_float32


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="experiment config, e.g. FILE.py:ARG")
    parser.add_argument("--workdirs", nargs="+", required=True, type=pathlib.Path)
    parser.add_argument("--solvers", nargs="+", default=["liblinear", "newton"])
    parser.add_argument(
        "--fold-seeds", type=int, default=1, help="draws of the outer folds (1: the run's own)"
    )
    parser.add_argument("--data-dir", default=None, help="overrides config.data.data_dir")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="config overrides the runs were trained with, as --config.KEY=VALUE gave them "
        "(e.g. model.encoder_width=64); VALUE read as a Python literal",
    )
    parser.add_argument("--out", type=pathlib.Path, default=None)
    return parser.parse_args(argv)


def load_config(spec: str):
    """``get_config(ARG)`` of the file ``PATH`` in ``PATH[:ARG]``, as ``--config`` reads it."""
    path, _, arg = spec.partition(":")
    module_spec = importlib.util.spec_from_file_location("_rescored_config", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.get_config(*([arg] if arg else []))


def apply_overrides(config, overrides: list[str]) -> None:
    """``KEY=VALUE`` pairs set on ``config`` (dotted keys, ``VALUE`` a Python literal)."""
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE, e.g. model.encoder_width=64")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a bare string
        *parents, leaf = key.split(".")
        node = config
        for part in parents:
            node = getattr(node, part)
        if leaf not in node:
            raise SystemExit(f"--set {item!r}: the config has no field {key!r}")
        setattr(node, leaf, value)


def embeddings(config, workdir: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    """The data set's graph embeddings under the workdir's last checkpoint, and its labels."""
    run, state = training.load_run(config, str(workdir))
    with jax.set_mesh(run.mesh):
        model = nnx.merge(run.eval_graphdef, state.params, state.model_state)
        features = jax.jit(lambda batch: _as_float32(run.method.features(model, batch)))
        x = run.task.embeddings(features)
    return x, np.asarray(run.task.ds.labels)


def _cell(r: dict) -> str:
    text = f"{100 * r['mean']:.1f}"
    if "over_fold_seeds" in r:
        f = r["over_fold_seeds"]
        text += (
            f"; {len(f['seeds'])} fold draws {100 * f['mean']:.1f} ± {100 * f['std']:.1f} "
            f"[{100 * f['min']:.1f}, {100 * f['max']:.1f}]"
        )
    return f"{text} ({r['seconds']:.0f} s)"


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    if args.fold_seeds < 1:
        raise SystemExit(f"--fold-seeds {args.fold_seeds}: expected a count of at least 1")
    rows = []
    print(f"| workdir | recorded | {' | '.join(args.solvers)} |")
    print("|---|---|" + "---|" * len(args.solvers))
    for workdir in args.workdirs:
        config = load_config(args.config)
        saved = json.loads((workdir / "config.json").read_text())
        config.seed = saved["seed"]
        config.repeats = 1
        if args.data_dir:
            config.data.data_dir = args.data_dir
        apply_overrides(config, args.set)
        # Settings of the rebuilt config that differ from the run's own (shapes must match to
        # load its checkpoint; others, e.g. eval.folds, may differ on purpose): said and kept.
        rebuilt = json.loads(config.to_json_best_effort())
        differences = [
            d
            for d in _workdir._changed_keys(saved, rebuilt)
            if not d.startswith(("data.data_dir:", "repeats:"))
        ]
        if differences:
            print(f"{workdir}: scored with settings other than the run's: {differences}")
        x, y = embeddings(config, workdir)
        results = workdir / "results.json"
        recorded = json.loads(results.read_text()).get("test_top1") if results.exists() else None
        row = {
            "workdir": str(workdir),
            "seed": config.seed,
            "recorded": recorded,
            "config_differences": differences,
        }
        for solver in args.solvers:
            start = time.perf_counter()
            out = evaluation.svm_kfold_accuracy(
                x, y, num_folds=config.eval.folds, seed=config.seed, solver=solver, n_jobs=-1
            )
            row[solver] = {**out, "seconds": time.perf_counter() - start}
            if args.fold_seeds > 1:
                seeds = [config.seed + k for k in range(args.fold_seeds)]
                means = [out["mean"]] + [
                    evaluation.svm_kfold_accuracy(
                        x, y, num_folds=config.eval.folds, seed=s, solver=solver, n_jobs=-1
                    )["mean"]
                    for s in seeds[1:]
                ]
                row[solver]["over_fold_seeds"] = {
                    "seeds": seeds,
                    "means": means,
                    "mean": float(np.mean(means)),
                    "std": float(np.std(means, ddof=1)),
                    "min": float(np.min(means)),
                    "max": float(np.max(means)),
                }
                row[solver]["seconds"] = time.perf_counter() - start
        rows.append(row)
        cells = [_cell(row[s]) for s in args.solvers]
        shown = "-" if recorded is None else f"{100 * recorded:.1f}"
        print(f"| {workdir} | {shown} | {' | '.join(cells)} |", flush=True)
    if args.out:
        record = {"config": args.config, "set": list(args.set or []), "rows": rows}
        args.out.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.out}")
    return rows


if __name__ == "__main__":
    main()
