r"""Command line: ``python -m jaxcl.main --config=experiments/<...>.py[:variant] --workdir=DIR``.

Any config key can be overridden on the command line, e.g. ``--config.optim.lr=0.05``; an
unknown key is an error. With no ``--config`` the embedded quickstart runs (scikit-learn's
digits, four methods, a table of linear-probe accuracies, a few minutes on a laptop CPU).
"""

from __future__ import annotations

import logging as logging_std
import os
import tempfile

from absl import app, flags, logging
from ml_collections import config_flags

_DEFAULT = os.path.join(os.path.dirname(__file__), "configs", "quickstart.py")

_CONFIG = config_flags.DEFINE_config_file(
    "config", _DEFAULT, "Path to an ml_collections config file ([:variant]).", lock_config=True
)
_WORKDIR = flags.DEFINE_string(
    "workdir",
    None,
    "Folder for checkpoints, TensorBoard summaries and results (default: a "
    "fresh temporary folder).",
)


class _QuietLibraries(logging_std.Filter):
    """Drops INFO chatter of orbax and TensorFlow (each checkpoint logs ~20 lines)."""

    def filter(self, record):
        noisy = ("/orbax/", "/tensorflow/", "/etils/")
        return record.levelno > logging_std.INFO or not any(p in record.pathname for p in noisy)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    logging.get_absl_handler().addFilter(_QuietLibraries())
    # Imported here so that `--help` answers without loading TensorFlow and JAX.
    from jaxcl import training

    workdir = _WORKDIR.value or tempfile.mkdtemp(prefix="jaxcl_")
    logging.info("workdir: %s", workdir)
    config = _CONFIG.value
    if "variants" in config:
        training.run_variants(config, workdir)
    else:
        results = training.run_repeats(config, workdir)
        print(training.format_table({config.method.name: results}), flush=True)


def run():
    app.run(main)


if __name__ == "__main__":
    run()
