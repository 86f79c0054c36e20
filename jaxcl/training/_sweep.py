"""Several runs from one config (``config.variants``) and a table of their results."""

from __future__ import annotations

import math
import os

import jax
import ml_collections
import numpy as np
from etils import epath

from jaxcl.training._config import conform
from jaxcl.training._loop import train_and_evaluate
from jaxcl.training._workdir import write_json


def variant_configs(config: ml_collections.ConfigDict) -> dict[str, ml_collections.ConfigDict]:
    """One full config per entry of ``config.variants`` (which is removed from each).

    A variant is a partial config: its ``method`` replaces the base ``method`` wholesale
    (methods have different hyperparameters; the ones it leaves out take the method's
    defaults); its other sections update the base's. Each result holds exactly the keys
    that apply to its run (:func:`jaxcl.training.conform`): e.g. a variant without
    pretraining has no optimiser or head keys.
    """
    out = {}
    for name, variant in config.variants.items():
        cfg = config.copy_and_resolve_references()
        with cfg.unlocked():
            del cfg["variants"]
            for key, value in variant.items():
                if (
                    key == "method"
                    or key not in cfg
                    or not isinstance(value, ml_collections.ConfigDict)
                ):
                    cfg[key] = value
                else:
                    cfg[key].update(value)
        out[name] = conform(cfg)
    return out


def _pct(r, key):
    if key not in r:
        return "-"
    text = f"{100 * r[key]:.1f}"
    if f"{key}_std" in r:
        text += f" ± {100 * r[key + '_std']:.1f}"
    return text


def format_table(rows: dict[str, dict]) -> str:
    """A Markdown table of each variant's accuracies (mean ± std over repeats), loss, time.

    A multi-label node set (PPI) has micro-F1 instead of top-1; its cell says so."""
    lines = [
        "| run | method | test top-1 | kNN top-1 | final loss | pretrain s | runs |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        loss = "-" if math.isnan(r["final_loss"]) else f"{r['final_loss']:.4f}"  # no training
        test = _pct(r, "test_top1")
        if "test_top1" not in r and "test_micro_f1" in r:
            test = f"micro-F1 {_pct(r, 'test_micro_f1')}"
        lines.append(
            f"| {name} | {r['method']} | {test} | {_pct(r, 'knn_top1')} | "
            f"{loss} | {r['pretrain_seconds']:.1f} | {r.get('repeats', 1)} |"
        )
    return "\n".join(lines)


def run_repeats(config: ml_collections.ConfigDict, workdir: str) -> dict:
    """``config.repeats`` runs with seeds ``seed, seed + 1, ...``: mean and sample std
    (``n - 1``) of each number.

    One run (``repeats == 1``) trains in ``workdir`` itself; several train in
    ``workdir/seed_<k>`` and the summary (``mean`` under each key, ``<key>_std`` beside it,
    the individual runs under ``runs``) is written to ``workdir/results.json``.
    """
    if config.repeats == 1:
        return train_and_evaluate(config, workdir)
    runs = []
    for k in range(config.repeats):
        cfg = config.copy_and_resolve_references()
        with cfg.unlocked():
            cfg.seed = config.seed + k
            cfg.repeats = 1
        runs.append(train_and_evaluate(cfg, os.path.join(workdir, f"seed_{cfg.seed}")))
    summary = {"method": runs[0]["method"], "data": runs[0]["data"], "repeats": len(runs)}
    for key, value in runs[0].items():
        if isinstance(value, float | int) and not isinstance(value, bool):
            values = np.array([r[key] for r in runs], np.float64)
            summary[key] = float(values.mean())
            # Sample std (n - 1), as the README and the tables report spreads over seeds;
            # results.json files written before 2026-11-30 hold the population std (n).
            summary[f"{key}_std"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    summary["runs"] = runs
    write_json(os.path.join(workdir, "results.json"), summary)
    return summary


def run_variants(config: ml_collections.ConfigDict, workdir: str) -> dict[str, dict]:
    """Trains and evaluates every variant in ``workdir/<name>``; writes ``summary.{json,md}``."""
    results = {}
    for name, cfg in variant_configs(config).items():
        results[name] = run_repeats(cfg, os.path.join(workdir, name))
    table = format_table(results)
    write_json(os.path.join(workdir, "summary.json"), results)
    if jax.process_index() == 0:
        epath.Path(workdir, "summary.md").write_text(table + "\n")
        print("\n" + table, flush=True)
    return results
