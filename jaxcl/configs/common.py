"""Helpers shared by the experiment configs: the config-argument grammar, the shared data
folder, and setting a row's keys where they apply."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ml_collections

from jaxcl.training import ConfigError

# The linear probe the recorded ``cpu`` rows (and the quickstart) were measured with: LARS's
# trust ratio on the classifier and features z-scored with training statistics, both of which
# SimCLR's code leaves out (``False``, the defaults; README, "Linear probe"). Kept so that
# those rows' commands reproduce their numbers.
MEASURED_PROBE = {"eval.linear_trust_ratio": True, "eval.linear_standardize": True}


@dataclasses.dataclass(frozen=True)
class ConfigArg:
    """What a config argument (``--config=FILE:ARG``) chose.

    Attributes:
      dataset: the data set named, or None.
      variant: the scale variant named (``'cpu'``, ``'quick'``), or None (paper scale).
      option: the config's own choice named (e.g. GRACE's ``'rff'``), or None.
    """

    dataset: str | None = None
    variant: str | None = None
    option: str | None = None


def parse_arg(
    arg: str | None,
    *,
    datasets: Sequence[str] = (),
    variants: Sequence[str] = (),
    options: Sequence[str] = (),
    dataset_required: bool = False,
) -> ConfigArg:
    """Parses a config argument: comma-separated words, each a data set, a variant or an
    option, at most one of each, in any order (``'mutag,quick'``, ``'quick,mutag'``,
    ``'cpu'``, ``'rff,quick'``, or nothing).

    Every experiment config reads its argument with this, so one grammar holds everywhere.

    Args:
      arg: the text after ``:`` in ``--config=FILE:ARG`` (None or '' when absent).
      datasets: the data sets the config can run.
      variants: its scale variants (``'cpu'``: minutes to an hour on 2 CPU cores;
        ``'quick'``: a smoke test).
      options: its own choices (e.g. a loss).
      dataset_required: a data set must be named.

    Raises:
      ConfigError: naming the argument, the word that is not accepted and every accepted
        word.

    Example:
      >>> parse_arg("quick,mutag", datasets=("mutag", "ptc_mr"), variants=("quick",))
      ConfigArg(dataset='mutag', variant='quick', option=None)
    """
    groups = {"data set": tuple(datasets), "variant": tuple(variants), "option": tuple(options)}
    accepted = "; ".join(f"{name}: {list(words)}" for name, words in groups.items() if words)
    accepted = accepted or "nothing (this config takes no argument)"
    example = ",".join(words[0] for words in groups.values() if words)
    hint = f"accepted, comma-separated, at most one of each: {accepted}" + (
        f" (e.g. '{example}')" if example else ""
    )
    chosen: dict[str, str] = {}
    words = [w.strip() for w in (arg or "").split(",") if w.strip()]
    for word in words:
        group = next((g for g, allowed in groups.items() if word in allowed), None)
        if group is None:
            raise ConfigError(f"config argument {arg!r}: {word!r} is not accepted; {hint}")
        if group in chosen:
            raise ConfigError(
                f"config argument {arg!r}: two of {group} ({chosen[group]!r}, {word!r}); {hint}"
            )
        chosen[group] = word
    if dataset_required and "data set" not in chosen:
        raise ConfigError(f"config argument {arg!r}: name a data set; {hint}")
    return ConfigArg(chosen.get("data set"), chosen.get("variant"), chosen.get("option"))


def apply_setup(config: ml_collections.ConfigDict, setup: Mapping[str, Any]) -> None:
    """Sets each ``'section.key': value`` of a setup shared by several rows where the key
    applies to ``config``'s run (e.g. head sizes are set for a method with a head and left
    out for No-Pretraining). A key that applies to no run at all is an error."""
    from jaxcl.training import _config

    known = _config._known_anywhere()
    for path, value in setup.items():
        section, _, key = path.rpartition(".")
        if not section:
            raise ConfigError(f"apply_setup: {path!r}: expected 'section.key'")
        if key not in known.get(section, ()):
            raise ConfigError(f"apply_setup: config.{path} is not a key of any component")
        if section in config and key in config[section]:
            config[section][key] = value


def default_data_dir(subdir: str) -> str:
    """The data folder an experiment config should name in ``config.data.data_dir``.

    ``''`` when ``$JAXCL_DATA_DIR`` is set (the trainer reads it then); else the shared data
    folder beside the repository checkout (``<repo>/../shared/data``, the layout CI uses)
    when it holds ``subdir`` (e.g. ``'planetoid'``); else ``''``, and the trainer's error
    says to pass ``--config.data.data_dir=DIR``.
    """
    if os.environ.get("JAXCL_DATA_DIR"):
        return ""
    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return str(shared) if (shared / subdir).is_dir() else ""
