"""Helpers shared by the experiment configs."""

from __future__ import annotations

import os
from pathlib import Path


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
