"""i-Mix against its baselines, from finished runs' own results (images, or the tabular rows).

Each ``experiments/imix/image_<row>.py`` (or ``tabular_fmnist_<row>.py``) run writes
``workdir/results.json`` (linear-probe ``test_top1`` and the kNN monitor's ``knn_top1``) and
``workdir/config.json`` (method, seed, epochs, the probe's settings). This script groups
runs by method and epochs (an i-Mix run with ``method.lam_per_sample=True``, the official
code's per-sample Mixup coefficient, is a row of its own), pairs each i-Mix run with its
baseline's run of the same seed and epochs, and prints and writes
(``experiments/imix/results/<name><tag>.{json,png}``, name ``image_table`` unless given)
every row's mean ± sample std and the per-seed gap i-Mix minus baseline::

    python experiments/imix/image_table.py --tag _epochs6 \
        --runs /tmp/w_byol_s0 /tmp/w_imix_byol_s0 /tmp/w_byol_s1 ...
    python experiments/imix/image_table.py --name tabular_table \
        --runs /tmp/w_npair_s0 /tmp/w_imix_s0 ...   # -> results/tabular_table.{json,png}

``--records`` adds the runs an earlier table recorded in its JSON (their workdirs may be
gone), e.g. seeds trained in another session beside new ones::

    python experiments/imix/image_table.py --name tabular_table --tag _per_sample \
        --records experiments/imix/results/tabular_table.json --runs /tmp/w_imix_ps_s0 ...

Runs scored with different linear probes (any of the ``eval.linear_*`` settings in
``PROBE_KEYS``: optimiser, learning rate, epochs, batch, augmentation, trust ratio,
standardisation) are refused in one table: their numbers do not compare.

The plot shows each row's runs as dots (linear probe and kNN), one panel per epoch count.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
# i-Mix's method -> its baseline's method (jaxcl.methods names).
_PAIRS = {"imix_image": "npair_image", "imix_moco": "moco", "imix_byol": "byol", "imix": "npair"}
_LABELS = {
    "npair": "N-pair (tabular)",
    "imix": "N-pair + i-Mix (tabular)",
    "npair_image": "N-pair (SimCLR)",
    "imix_image": "N-pair + i-Mix",
    "moco": "MoCo v2",
    "imix_moco": "MoCo v2 + i-Mix",
    "byol": "BYOL",
    "imix_byol": "BYOL + i-Mix",
}
# Runs with ``method.lam_per_sample=True`` (one lambda per example, as i-Mix's code) are rows
# of their own, ``<method>_per_sample``, paired with the same baseline.
PER_SAMPLE = "_per_sample"
PAIRS = {**_PAIRS, **{m + PER_SAMPLE: b for m, b in _PAIRS.items()}}
LABELS = {}
for _m, _label in _LABELS.items():
    LABELS[_m] = _label
    if _m in _PAIRS:
        LABELS[_m + PER_SAMPLE] = _label.replace("i-Mix", "i-Mix, per-sample λ")
ORDER = list(LABELS)
METRICS = ("test_top1", "knn_top1")


def read_run(workdir: str, labels: dict | None = None) -> dict:
    """One run's method, seed, epochs, data and scores (in %); its method must be one of
    ``labels`` (default: i-Mix's rows and baselines)."""
    labels = _LABELS if labels is None else labels
    paths = [os.path.join(workdir, f) for f in ("config.json", "results.json")]
    for path in paths:
        if not os.path.isfile(path):
            raise SystemExit(f"--runs {workdir!r}: no {os.path.basename(path)} (unfinished run?)")
    config, results = (json.load(open(p)) for p in paths)
    method = config["method"]["name"]
    if method == "esco_simclr":  # ESCo's image rows differ by their estimator alone
        method = f"esco_{config['method']['rf_method']}"
    if method not in labels:
        raise SystemExit(f"--runs {workdir!r}: method {method!r} is not one of {list(labels)}")
    if config["method"].get("lam_per_sample", False):
        method += PER_SAMPLE
    return {
        "workdir": workdir,
        "method": method,
        "seed": int(config["seed"]),
        "epochs": int(config.get("train", {}).get("epochs", 0)),  # 0: no pretraining
        "data": config["data"]["name"],
        "probe": _probe(config),
        "model": _model(config),
        **{m: 100.0 * float(results[m]) for m in METRICS},
        "pretrain_seconds": float(results.get("pretrain_seconds", float("nan"))),
    }


def read_records(path: str, labels: dict | None = None) -> list[dict]:
    """The runs an earlier table recorded in its JSON (``runs``), as :func:`read_run` gives
    them."""
    labels = LABELS if labels is None else labels
    with open(path) as f:
        runs = json.load(f).get("runs")
    keys = ("workdir", "method", "seed", "epochs", "data", "probe", *METRICS)
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise SystemExit(f"--records {path!r}: no list of runs under 'runs'")
    for r in runs:
        missing = [k for k in keys if k not in r]
        if missing or r["method"] not in labels:
            raise SystemExit(f"--records {path!r}: a run without {missing or 'a known method'}")
    return runs


# Settings that change what a row trains beyond its method's name: a row's seeds must agree.
MODEL_KEYS = (
    ("model", "encoder"),
    ("model", "resnet_depth"),
    ("model", "base_width"),
    ("model", "width_multiplier"),
    ("model", "head_output_norm"),
    ("method", "bn_groups"),
)


def _model(config: dict) -> str:
    return ", ".join(f"{s}.{k}={config.get(s, {}).get(k)!r}" for s, k in MODEL_KEYS)


# The settings of the linear probe a run was scored with (jaxcl.training's eval.linear_*).
PROBE_KEYS = (
    "linear_optimizer",
    "linear_lr",
    "linear_epochs",
    "linear_batch_size",
    "linear_augment",
    "linear_trust_ratio",
    "linear_standardize",
)


# What the probe did before a setting existed, for runs whose config.json predates it: until
# 2026-11-29 (commits 4301297, 1e696f2) LARS took the trust ratio and the probe on cached
# features standardised them (the augmented probe did not), which the measured rows' configs
# keep (jaxcl.configs.common.MEASURED_PROBE).
PROBE_BEFORE = {"linear_trust_ratio": True, "linear_standardize": True}


def _probe(config: dict) -> str:
    """The linear probe a run was scored with, as ``key=value`` of its settings (a setting an
    older run's config.json lacks: what the probe did then, ``PROBE_BEFORE``)."""
    ev = config.get("eval", {})
    before = {**PROBE_BEFORE, "linear_standardize": not ev.get("linear_augment", False)}
    ev = {**before, **ev}
    return ", ".join(f"{k.removeprefix('linear_')}={ev[k]}" for k in PROBE_KEYS if k in ev)


def summary(values: list[float]) -> dict:
    return {
        "mean": statistics.mean(values),
        "std": statistics.stdev(values) if len(values) > 1 else None,
        "n": len(values),
    }


def summarise(methods: dict[str, dict[int, dict]], order) -> dict:
    """``{method: its seeds, workdirs, scores and their summaries}`` for the methods of
    ``order`` that have runs (``methods``: method -> seed -> run)."""
    rows = {}
    for method in order:
        if method not in methods:
            continue
        by_seed = [methods[method][s] for s in sorted(methods[method])]
        rows[method] = {
            "seeds": [r["seed"] for r in by_seed],
            "workdirs": [r["workdir"] for r in by_seed],
            "pretrain_seconds": [r["pretrain_seconds"] for r in by_seed],
            **{m: [r[m] for r in by_seed] for m in METRICS},
            **{f"{m}_summary": summary([r[m] for r in by_seed]) for m in METRICS},
        }
    return rows


def table(runs: list[dict]) -> dict:
    """``{epochs: {'rows': {method: ...}, 'gaps': {imix_method: ...}}}``; a (method, seed,
    epochs) given twice is an error."""
    data = sorted({r["data"] for r in runs})
    if len(data) > 1:
        raise SystemExit(f"--runs mix data sets {data}: table one data set at a time")
    probes = sorted({r["probe"] for r in runs})
    if len(probes) > 1:
        raise SystemExit(f"--runs were scored with different linear probes {probes}")
    for method in sorted({r["method"] for r in runs}):  # records from before: no "model"
        models = sorted({r["model"] for r in runs if r["method"] == method and r.get("model")})
        if len(models) > 1:
            raise SystemExit(f"{method}: its runs trained different models {models}")
    seen: set[tuple] = set()
    by_epochs: dict[int, dict[str, dict[int, dict]]] = {}
    for r in runs:
        key = (r["method"], r["seed"], r["epochs"])
        if key in seen:
            raise SystemExit(f"method {key[0]}, seed {key[1]}, {key[2]} epochs given twice")
        seen.add(key)
        by_epochs.setdefault(r["epochs"], {}).setdefault(r["method"], {})[r["seed"]] = r
    out = {}
    for epochs, methods in sorted(by_epochs.items()):
        rows = summarise(methods, ORDER)
        gaps = {}
        for mix, base in PAIRS.items():
            if mix not in methods or base not in methods:
                continue
            seeds = sorted(set(methods[mix]) & set(methods[base]))
            if not seeds:
                continue
            per = {m: [methods[mix][s][m] - methods[base][s][m] for s in seeds] for m in METRICS}
            gaps[mix] = {
                "baseline": base,
                "seeds": seeds,
                **per,
                **{f"{m}_summary": summary(per[m]) for m in METRICS},
                "imix_ahead": sum(g > 0 for g in per["test_top1"]),
            }
        out[epochs] = {"rows": rows, "gaps": gaps}
    return out


def fmt(s: dict) -> str:
    return f"{s['mean']:.1f}" + (f" ± {s['std']:.1f}" if s["std"] is not None else "")


def row_lines(title: str, rows: dict, labels: dict, digits: int = 1) -> list[str]:
    """A title line and a Markdown table of ``rows`` (as :func:`summarise` gives them)."""
    lines = [
        f"\n{title}",
        "| row | linear top-1 | kNN top-1 | per seed (linear) | seeds |",
        "|---|---|---|---|---|",
    ]
    for method, r in rows.items():
        per = " / ".join(f"{v:.{digits}f}" for v in r["test_top1"])
        lines.append(
            f"| {labels[method]} | {fmt(r['test_top1_summary'])} | "
            f"{fmt(r['knn_top1_summary'])} | {per} | {', '.join(map(str, r['seeds']))} |"
        )
    return lines


def render(result: dict) -> str:
    lines = []
    for epochs, t in result.items():
        lines += row_lines(f"{epochs} epochs", t["rows"], LABELS)
        for mix, g in t["gaps"].items():
            per = " / ".join(f"{v:+.1f}" for v in g["test_top1"])
            knn = " / ".join(f"{v:+.1f}" for v in g["knn_top1"])
            lines.append(
                f"{LABELS[mix]} minus {LABELS[g['baseline']]}: linear {per} (mean "
                f"{g['test_top1_summary']['mean']:+.1f}), kNN {knn}; ahead in "
                f"{g['imix_ahead']} of {len(g['seeds'])} seeds"
            )
    return "\n".join(lines)


# How the y axis names the runs' data set (a run's ``config.data.name``).
DATA_NAMES = {
    "fashion_mnist_images": "Fashion-MNIST",
    "cifar10": "CIFAR-10",
    "cifar100": "CIFAR-100",
    "stl10": "STL-10",
    "imagenet2012": "ImageNet",
    "tiny_imagenet": "Tiny ImageNet",
}


def plot(
    result: dict, path: str, labels: dict | None = None, title=None, data: str | None = None
) -> None:
    """One panel per key of ``result`` (epochs; ``title(key)`` its title), each row's runs
    as marks (linear probe and kNN) and their mean as a bar; ``data``: the runs' data set."""
    labels = LABELS if labels is None else labels
    title = title or (lambda epochs: f"{epochs} epochs: each run a mark, its row's mean a bar")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(result.items())
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    for ax, (key, t) in zip(axes[0], panels, strict=True):
        methods = list(t["rows"])
        for i, method in enumerate(methods):
            r = t["rows"][method]
            for j, (metric, marker, label) in enumerate(
                (("test_top1", "o", "linear probe"), ("knn_top1", "x", "kNN"))
            ):
                xs = [i + (j - 0.5) * 0.2] * len(r[metric])
                ax.scatter(
                    xs, r[metric], marker=marker, color=f"C{j}", label=label if i == 0 else None
                )
                ax.hlines(r[f"{metric}_summary"]["mean"], xs[0] - 0.08, xs[0] + 0.08, color=f"C{j}")
        ax.set_xticks(range(len(methods)), [labels[m] for m in methods], rotation=30, ha="right")
        name = DATA_NAMES.get(data, data)
        ax.set_ylabel(f"{name} test top-1 (%)" if name else "test top-1 (%)")
        ax.set_title(title(key), fontsize=9)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table_arguments(description: str, out_dir: str) -> argparse.ArgumentParser:
    """The arguments a table script takes: ``--runs``, ``--records``, ``--tag``, ``--out-dir``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", nargs="+", default=[], help="finished runs' workdirs")
    parser.add_argument(
        "--records", nargs="+", default=[], help="JSON files of earlier tables: their runs"
    )
    parser.add_argument("--tag", default="", help="suffix of the output files' names")
    parser.add_argument("--out-dir", default=out_dir)
    return parser


def runs_of(parser, args, labels: dict | None = None) -> list[dict]:
    """The runs ``--runs`` and ``--records`` name (methods among ``labels``)."""
    if not args.runs and not args.records:
        parser.error("give finished runs' workdirs (--runs) or earlier tables (--records)")
    runs = [read_run(w, labels) for w in args.runs]
    return runs + [r for p in args.records for r in read_records(p, labels)]


def main(argv=None) -> None:
    parser = table_arguments(__doc__.split("\n\n")[0], os.path.join(HERE, "results"))
    parser.add_argument("--name", default="image_table", help="the output files' name")
    args = parser.parse_args(argv)
    runs = runs_of(parser, args)
    result = table(runs)
    print(f"linear probe: {runs[0]['probe']}")
    print(render(result))
    os.makedirs(args.out_dir, exist_ok=True)
    stem = os.path.join(args.out_dir, f"{args.name}{args.tag}")
    with open(stem + ".json", "w") as f:
        json.dump(
            {
                "probe": runs[0]["probe"],
                "runs": runs,
                "table": {str(k): v for k, v in result.items()},
            },
            f,
            indent=1,
        )
    plot(result, stem + ".png", data=runs[0].get("data"))
    print(f"wrote {stem}.json and {stem}.png")


if __name__ == "__main__":
    main()
