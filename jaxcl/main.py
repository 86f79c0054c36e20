r"""Command line: ``python -m jaxcl.main --config=experiments/<...>.py[:arg] --workdir=DIR``.

Any config key can be overridden on the command line, e.g. ``--config.optim.lr=0.05``; an
unknown key, or one that does not apply to the run, is an error. With no ``--config`` the
embedded quickstart runs (scikit-learn's digits, four methods, a table of linear-probe
accuracies, a few minutes on a laptop CPU).

A usage error (a config file that does not exist or does not load, an argument the config
does not accept, an unknown key, a value of the wrong type or range, a positional argument,
a ``--workdir`` that is a file, lies below a file or cannot be made) prints one line naming
the flag, the value and what is accepted, and exits with status 2, before any work starts.
"""

from __future__ import annotations

import importlib.util
import logging as logging_std
import os
import sys
import tempfile

import ml_collections
from absl import app, flags, logging
from ml_collections import config_flags

_DEFAULT = os.path.join(os.path.dirname(__file__), "configs", "quickstart.py")

# Defined by run(), after the command line's config and overrides have been checked:
# ml_collections applies overrides to the default config as soon as the flag is defined, and
# an unknown key would fail there with a bare traceback.
_CONFIG: flags.FlagHolder | None = None
_WORKDIR = flags.DEFINE_string(
    "workdir",
    None,
    "Folder for checkpoints, TensorBoard summaries and results (default: a "
    "fresh temporary folder).",
)

USAGE_ERROR = 2


class UsageError(Exception):
    """A command line that cannot run; its message is the one line printed."""


class _QuietLibraries(logging_std.Filter):
    """Drops INFO chatter of orbax and TensorFlow (each checkpoint logs ~20 lines)."""

    def filter(self, record):
        noisy = ("/orbax/", "/tensorflow/", "/etils/")
        return record.levelno > logging_std.INFO or not any(p in record.pathname for p in noisy)


def _flag_value(argv: list[str], name: str) -> str | None:
    """The last value given to ``--name`` (``--name=V`` or ``--name V``; one dash as well,
    as absl takes it), else None."""
    value = None
    for i, arg in enumerate(argv):
        for dashes in ("--", "-"):
            if arg.startswith(f"{dashes}{name}="):
                value = arg.split("=", 1)[1]
            elif arg == f"{dashes}{name}" and i + 1 < len(argv):
                value = argv[i + 1]
    return value


def _override_path(arg: str) -> str | None:
    """The config key an argument overrides (``--config.a.b=V`` -> ``'a.b'``; also with one
    dash and absl's ``--noconfig.a.b`` for a False bool), else None."""
    if not arg.startswith("-"):
        return None
    name = arg[2:] if arg.startswith("--") else arg[1:]
    name = name.split("=", 1)[0]
    for prefix in ("config.", "noconfig."):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return None


def _load_config(spec: str) -> ml_collections.ConfigDict:
    """The config ``--config=PATH[:ARG]`` names, or UsageError in one line."""
    path, _, arg = spec.partition(":")
    if not path:
        raise UsageError("--config='': name a config file, e.g. --config=experiments/quickstart.py")
    if not os.path.isfile(path):
        raise UsageError(
            f"--config={spec}: no such file {path!r} (relative to {os.getcwd()}); configs are "
            "in experiments/<paper>/, e.g. --config=experiments/dacl/tabular_fmnist_dacl.py:cpu"
        )
    if not path.endswith(".py"):
        raise UsageError(
            f"--config={spec}: {path!r} is not a Python file; a config is a .py file that "
            "defines get_config(), e.g. --config=experiments/quickstart.py"
        )
    from jaxcl.training import ConfigError

    module_spec = importlib.util.spec_from_file_location("_jaxcl_cli_config", path)
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:  # the user's file: say in one line what failed
        raise UsageError(
            f"--config={spec}: {path} does not load: {type(err).__name__}: {err}"
        ) from None
    if not hasattr(module, "get_config"):
        raise UsageError(f"--config={spec}: {path} defines no get_config()")
    try:
        config = module.get_config(*([arg] if ":" in spec else []))
    except ConfigError as err:
        raise UsageError(f"--config={spec}: {err}") from None
    if not isinstance(config, ml_collections.ConfigDict):
        raise UsageError(f"--config={spec}: get_config() returned {type(config).__name__}")
    return config


def _check_overrides(argv: list[str], config: ml_collections.ConfigDict) -> None:
    """UsageError naming an override whose key the config does not hold, with the keys
    that level has (ml_collections would fail first with a bare AttributeError)."""
    for arg in argv:
        path = _override_path(arg)
        if path is None:
            continue
        flag = arg.split("=", 1)[0]
        parts = path.split(".")
        if "variants" in config and parts[0] == "method":
            raise UsageError(
                f"{flag}: this config runs config.variants, and each variant's method replaces "
                "config.method; override one variant's: --config.variants.NAME.method."
                f"{'.'.join(parts[1:])} (NAME one of {sorted(config.variants.keys())})"
            )
        node = config
        for depth, part in enumerate(parts):
            if not isinstance(node, ml_collections.ConfigDict) or part not in node:
                where = "config" + "".join(f".{p}" for p in parts[:depth])
                keys = sorted(node.keys()) if isinstance(node, ml_collections.ConfigDict) else []
                raise UsageError(
                    f"{flag}: this config has no key {part!r} under {where}; keys there: {keys}"
                )
            node = node[part]


def _check_config_args(argv: list[str]) -> None:
    """UsageError for a ``--config`` that does not load or an override of a key it lacks."""
    spec = _flag_value(argv, "config")
    if spec is not None or any(_override_path(a) is not None for a in argv):
        config = _load_config(spec if spec is not None else _DEFAULT)
        _check_overrides(argv, config)


def _check_workdir(workdir: str) -> None:
    """UsageError for a local ``--workdir`` that cannot be a folder: it, or the nearest of its
    parents that exists, is a file. (What else stops the folder being made, a permission say,
    is found when ``main`` makes it, before any run; remote paths such as ``gs://`` are left
    to the checkpointer.)"""
    if "://" in workdir:
        return
    path = os.path.abspath(workdir)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise UsageError(f"--workdir={workdir}: exists and is not a folder; name a folder")
        return
    parent = os.path.dirname(path)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageError(
            f"--workdir={workdir}: {parent} is a file, so no folder can be made below it; "
            "name a folder"
        )


def _parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with every failure turned into one line and exit status 2."""
    try:
        rest = flags.FLAGS(argv)
        if len(rest) > 1:
            raise UsageError(
                f"unexpected arguments {rest[1:]}: jaxcl.main takes flags only, e.g. "
                "--config=experiments/quickstart.py --workdir=DIR"
            )
        if _WORKDIR.value:
            _check_workdir(_WORKDIR.value)
        return rest
    except UsageError as err:
        _exit_usage(str(err))
    except flags.Error as err:
        _exit_usage(_one_line(err))


def _one_line(err: flags.Error) -> str:
    """The line of an absl / ml_collections flag error that says what is wrong."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    # ml_collections wraps an error of the config file in its traceback: keep its last line.
    message = lines[-1] if "Error whilst parsing config file" in lines[0] else lines[0]
    if "invalid literal for int()" in message:
        message = message.split(": invalid literal")[0] + ": expected an integer"
    return message


def _exit_usage(message: str) -> None:
    print(f"jaxcl.main: error: {message}", file=sys.stderr, flush=True)
    sys.exit(USAGE_ERROR)


def _processes_from_env() -> int:
    """How many processes the launcher started, read from the variables JAX's own cluster
    detection reads (``jaxcl.training.maybe_initialize_distributed``), without initialising
    anything: JAX's backends must not exist before the trainer's host settings."""
    from jaxcl.training import _mesh  # no JAX backend is created by importing it

    env = os.environ
    hosts = [h for h in env.get("TPU_WORKER_HOSTNAMES", "").split(",") if h.strip()]
    return max(
        _mesh.env_count(env, "JAX_NUM_PROCESSES") if "JAX_COORDINATOR_ADDRESS" in env else 1,
        _mesh.cluster_processes(env),
        len(hosts),
    )


def main(argv):
    del argv  # _parse_flags refuses positional arguments
    logging.get_absl_handler().addFilter(_QuietLibraries())
    # Imported here so that `--help` answers without loading TensorFlow and JAX.
    import jax

    from jaxcl import _tracing, training

    _tracing.collect_garbage_less_often()  # (tracing's garbage; see there)
    if not _WORKDIR.value and _processes_from_env() > 1:
        _exit_usage(
            "--workdir is needed when the run spans several processes (each would make a "
            "temporary folder of its own): give one that every process reaches"
        )
    workdir = _WORKDIR.value or tempfile.mkdtemp(prefix="jaxcl_")
    config = _CONFIG.value
    try:
        # Every run of a sweep is checked before the first one starts.
        runs = training.variant_configs(config) if "variants" in config else {"": config}
        for run_config in runs.values():
            training.validate(run_config)
    except training.ConfigError as err:
        _exit_usage(str(err))
    if "://" not in workdir:
        try:  # the last usage check; the runs start after it
            os.makedirs(workdir, exist_ok=True)
        except OSError as err:
            _exit_usage(f"--workdir={workdir}: cannot be made: {err.strerror}")
    logging.info("workdir: %s", workdir)
    try:
        if "variants" in config:
            training.run_variants(config, workdir)
        else:
            results = training.run_repeats(config, workdir)
            if jax.process_index() == 0:  # as run_variants prints its table
                print(training.format_table({config.method.name: results}), flush=True)
    except training.ConfigError as err:  # found once the data is read (e.g. a missing folder)
        _exit_usage(str(err))


def run():
    global _CONFIG
    try:
        _check_config_args(sys.argv)
    except UsageError as err:
        _exit_usage(str(err))
    if _CONFIG is None:
        try:
            _CONFIG = config_flags.DEFINE_config_file(
                "config", _DEFAULT, "Path to an ml_collections config file ([:arg]).",
                lock_config=True,
            )  # fmt: skip
        except flags.Error as err:  # an override's value, parsed while the flag is defined
            _exit_usage(_one_line(err))
    app.run(main, flags_parser=_parse_flags)


if __name__ == "__main__":
    run()
