"""The run configuration: the keys that apply to a run, their defaults, and the checks made
before training.

A run's config holds exactly the keys that apply to it, and each comes from the component
that reads it: the shared keys (seed, mesh, checkpoints, ...), the task kind of
``data.name`` (its data, batch and evaluation keys), the encoder of ``model.encoder``, the
method of ``method.name`` (its hyperparameters, and the model keys of its heads) and the
optimiser of ``optim.name``. A method that does not train has no ``optim`` keys and no
training schedule. :func:`base_config` builds such a config with every default;
:func:`validate` rejects a key that is unknown or does not apply, a missing key, and a value
that cannot work, naming the key.
"""

from __future__ import annotations

import numbers
from typing import Any

import ml_collections

from jaxcl import methods, optim
from jaxcl.training import _task
from jaxcl.training._config_checks import CHECKS, fail, flag, number
from jaxcl.training._errors import ConfigError

SHARED = {
    "seed": 0,
    # Independent runs (seeds seed, seed+1, ...) summarised as mean and std.
    "repeats": 1,
    "mesh": {"data": -1},  # devices on the "data" axis; -1 = all
}
# Task kinds whose results can come from an earlier epoch's parameters (final(epoch=...)).
EARLY_STOPPING_TASKS = ("node", "graph")
# Only for methods that pretrain.
TRAINING = {
    "optim": {"lr": 0.1, "weight_decay": 1e-6, "warmup_epochs": 10.0, "schedule": "cosine"},
    "train": {
        "epochs": 1000,
        "log_every_steps": 50,
        "checkpoint_every_steps": 500,
        "keep_checkpoints": 3,
        # Keep freed host memory for reuse (glibc) and dispatch CPU computations
        # synchronously, so that XLA:CPU's per-step temporaries are not page-faulted in
        # afresh every step (jaxcl.training.reuse_host_memory). Worth it for large
        # full-batch steps (GRACE on Cora, 2 CPU cores: 524 -> 456 ms per epoch; on in their
        # configs); costs runs of many short steps their asynchronous dispatch (the
        # quickstart: 10-15% slower), hence off by default.
        "reuse_host_memory": False,
        # XLA:CPU convolutions through Eigen rather than YNNPACK (jaxlib 0.10: ResNet-18's
        # SimCLR step 2x faster on 2 cores); jaxcl.training.eigen_cpu_convolutions.
        "eigen_cpu_convolutions": True,
        # > 0: stop after this many epochs in a row without a lower mean training loss and
        # evaluate the best epoch's parameters (MVGRL's code: 20; m-Mix's paper: 30); node
        # and graph tasks. train.epochs is then the most epochs. 0 = off.
        "early_stopping_patience": 0,
    },
}


def _section(values: dict) -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict(
        {k: _section(v) if isinstance(v, dict) else v for k, v in values.items()}
    )


def _reference(
    data: str, method: str, encoder: str | None, optimizer: str, chosen=None
) -> ml_collections.ConfigDict:
    """Every key that applies to this combination, with defaults (no value checks)."""
    kind = _task.kind_of(data)
    task = _task.TASKS[kind]
    method_cls = methods.get(method)
    encoder = encoder or task.default_encoder
    enc = methods.ENCODERS.get(encoder)
    tree: dict[str, Any] = {"seed": SHARED["seed"], "repeats": SHARED["repeats"]}
    tree["method"] = {"name": method, **method_cls.defaults}
    tree["data"] = {"name": data}
    model = {"encoder": encoder, "compute_dtype": "float32"}
    model.update(enc.defaults if enc is not None else {})
    model.update(method_cls.model_defaults)
    tree["model"] = model
    tree["train"] = {}
    tree["eval"] = {}
    if method_cls.pretrains:
        tree["optim"] = {
            "name": optimizer,
            **TRAINING["optim"],
            **optim.OPTIMIZER_HYPERPARAMETERS.get(optimizer, {}),
        }
        tree["train"].update(TRAINING["train"])
    for section, keys in task.defaults(data, method_cls, chosen).items():
        tree.setdefault(section, {}).update(keys)
    tree["mesh"] = dict(SHARED["mesh"])
    return _section(tree)


def base_config(
    data: str = "digits",
    method: str = "dacl",
    *,
    encoder: str | None = None,
    optimizer: str = "lars",
) -> ml_collections.ConfigDict:
    """A config with every key that applies to ``method`` on ``data``, at its default.

    Experiment configs start from this and set what they change.

    Args:
      data: ``config.data.name``; its task kind decides the data, batch and evaluation keys.
      method: ``config.method.name`` (its hyperparameters and its heads' model keys).
      encoder: ``config.model.encoder``; default the task kind's (``mlp`` for tabular data,
        ``gin`` for graphs, ``gcn`` for nodes).
      optimizer: ``config.optim.name`` (its own hyperparameters), for methods that train.

    Example:
      >>> from jaxcl.training import base_config
      >>> c = base_config("digits", "dacl", optimizer="adam")
      >>> c.model.encoder, sorted(c.method), "momentum" in c.optim
      ('mlp', ['alpha', 'name', 'temperature'], False)
    """
    _check_names(data, method, encoder, optimizer)
    return _reference(data, method, encoder, optimizer)


def _check_names(data, method, encoder, optimizer) -> None:
    kind = _task.kind_of(data)
    try:
        method_cls = methods.get(method)
    except ValueError as err:
        raise ConfigError(f"config.method.name = {method!r}: {err}") from None
    if kind not in method_cls.data_kinds:
        raise ConfigError(
            f"config.method.name = {method!r}: trains on {list(method_cls.data_kinds)} data, "
            f"but config.data.name = {data!r} is {kind!r} data"
        )
    if encoder is not None:
        if encoder not in methods.ENCODERS:
            raise ConfigError(
                f"config.model.encoder = {encoder!r}: unknown encoder; known encoders: "
                f"{sorted(methods.ENCODERS)}"
            )
        if kind not in methods.ENCODERS[encoder].data_kinds:
            raise ConfigError(
                f"config.model.encoder = {encoder!r}: encodes "
                f"{list(methods.ENCODERS[encoder].data_kinds)} data, but config.data.name = "
                f"{data!r} is {kind!r} data"
            )
    if method_cls.pretrains and optimizer not in optim.OPTIMIZERS:
        raise ConfigError(
            f"config.optim.name = {optimizer!r}: expected one of {list(optim.OPTIMIZERS)}"
        )


def _names(config) -> tuple[str, str, str | None, str]:
    """The component names a config chooses, read defensively (before key checks)."""

    def read(section, key, default=None):
        sec = config.get(section) if hasattr(config, "get") else None
        return sec.get(key, default) if isinstance(sec, ml_collections.ConfigDict) else default

    data, method = read("data", "name"), read("method", "name")
    if not isinstance(data, str):
        raise ConfigError(f"config.data.name = {data!r}: expected a data set name")
    if not isinstance(method, str):
        raise ConfigError(f"config.method.name = {method!r}: expected a method name")
    return data, method, read("model", "encoder"), read("optim", "name", "lars")


def reference_for(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """The keys that apply to ``config``'s choice of data, method, encoder and optimiser."""
    data, method, encoder, optimizer = _names(config)
    _check_names(data, method, encoder, optimizer)
    return _reference(data, method, encoder, optimizer, chosen=config)


def _known_anywhere() -> dict[str, set[str]]:
    """Every key any registered component can add, by section (for 'does not apply')."""
    known: dict[str, set[str]] = {}

    def add(section, keys):
        known.setdefault(section, set()).update(keys)

    for section, values in {**SHARED, **TRAINING}.items():
        add(section, values if isinstance(values, dict) else ())
    add("optim", {"name"})
    add("data", {"name"})
    add("model", {"encoder", "compute_dtype"})
    for enc in methods.ENCODERS.values():
        add("model", enc.defaults)
    for cls in methods.REGISTRY.values():
        add("model", cls.model_defaults)
        add("method", cls.defaults)
    for hp in optim.OPTIMIZER_HYPERPARAMETERS.values():
        add("optim", hp)
    for name, task in _task.TASKS.items():
        del name
        for data in task.datasets:
            for cls in methods.REGISTRY.values():
                for section, keys in task.defaults(data, cls, None).items():
                    add(section, keys)
    return known


def _describe(config) -> str:
    data, method, encoder, optimizer = _names(config)
    kind = _task.kind_of(data)
    text = f"data {data!r} ({kind}), method {method!r}, encoder {encoder!r}"
    return text + (f", optimizer {optimizer!r}" if methods.get(method).pretrains else "")


def _walk(config, prefix=""):
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, ml_collections.ConfigDict):
            yield from _walk(value, path + ".")
        else:
            yield path, value


def _extra_keys(config, reference, prefix=""):
    """Paths in ``config`` that ``reference`` lacks, with the reference level's keys."""
    for key, value in config.items():
        path = f"{prefix}{key}"
        if key not in reference:
            yield path, key, prefix, sorted(reference.keys())
        elif isinstance(value, ml_collections.ConfigDict) and isinstance(
            reference[key], ml_collections.ConfigDict
        ):
            yield from _extra_keys(value, reference[key], path + ".")


def _check_keys(config, reference) -> None:
    known = _known_anywhere()
    for path, key, prefix, level in _extra_keys(config, reference):
        section = prefix.rstrip(".")
        if section == "method":
            raise ConfigError(
                f"config.{path} is not a key of method {config.method.name!r}; its keys: {level}"
            )
        if key in known.get(section, ()) or (not section and key in known):
            raise ConfigError(
                f"config.{path} does not apply to this run ({_describe(config)}); keys at that "
                f"level: {level}"
            )
        raise ConfigError(f"config.{path} is not a known key; keys at that level: {level}")
    for path, *_ in _extra_keys(reference, config):
        raise ConfigError(
            f"config.{path} is missing (start configs from jaxcl.training.base_config())"
        )


def conform(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """A copy of ``config`` with exactly the keys that apply to it: keys of other components
    (e.g. a head's sizes, in a variant that switches to a method without a head) dropped,
    missing keys added at their defaults. An unknown key stays (and :func:`validate` names
    it)."""
    reference = reference_for(config)
    known = _known_anywhere()
    out = reference.copy_and_resolve_references()

    def merge(dst, src, ref, section):
        for key, value in src.items():
            if key in ref:
                if isinstance(value, ml_collections.ConfigDict) and isinstance(
                    ref[key], ml_collections.ConfigDict
                ):
                    merge(dst[key], value, ref[key], key)
                else:
                    dst[key] = value
            elif section != "method" and (
                key in known.get(section, ()) or (not section and key in known)
            ):
                continue  # applies to another component
            else:
                with dst.unlocked():
                    dst[key] = value

    merge(out, config, reference, "")
    return out


# Graph sets read from TU's own format (tu_raw/): those whose files are here in it, and
# COIL-DEL, which GIN's text format does not carry.
TU_FORMAT = ("mutag", "proteins", "coil_del")


def validate(config: ml_collections.ConfigDict) -> None:
    """Raises ``ConfigError`` naming the first key that is unknown, does not apply, is
    missing, or holds a value that cannot work."""
    if not isinstance(config, ml_collections.ConfigDict):
        raise ConfigError(f"config: expected an ml_collections.ConfigDict, got {type(config)}")
    for section in ("data", "method"):
        if not isinstance(config.get(section), ml_collections.ConfigDict):
            raise ConfigError(f"config.{section} is missing (start configs from base_config())")
    reference = reference_for(config)
    _check_keys(config, reference)
    for path, value in _walk(config):
        if path in CHECKS:
            CHECKS[path](path, value)
    graph_format = config.data.get("graph_format")
    if graph_format == "tu" and config.data.name not in TU_FORMAT:
        fail(
            "data.graph_format",
            "tu",
            f"'gin' for {config.data.name} (TU's own format is read for {', '.join(TU_FORMAT)})",
        )
    if graph_format == "gin" and config.data.name == "coil_del":
        fail("data.graph_format", "gin", "'tu' for coil_del (it exists in TU's format only)")
    if config.get("train", {}).get("early_stopping_patience", 0):
        kind = _task.kind_of(config.data.name)
        if kind not in EARLY_STOPPING_TASKS:
            fail(
                "train.early_stopping_patience",
                config.train.early_stopping_patience,
                f"0 for {config.data.name} (a {kind} task; early stopping is for the "
                f"{' and '.join(EARLY_STOPPING_TASKS)} tasks)",
            )
        if config.eval.get("last_epochs", 1) != 1:
            fail(
                "eval.last_epochs",
                config.eval.last_epochs,
                "1 with train.early_stopping_patience (the best epoch alone is scored)",
            )
    if config.get("eval", {}).get("linear_augment") and config.eval.get("linear_standardize"):
        # the augmented probe trains on fresh crops every epoch: no cached features to take
        # training statistics from
        fail(
            "eval.linear_standardize",
            True,
            "False with eval.linear_augment = True (the augmented probe trains on fresh crops "
            "every epoch and has no cached training features to standardise)",
        )
    model = config.get("model", {})
    if model.get("base_width", 0) and model.get("width_multiplier", 1) != 1:
        fail(
            "model.base_width",
            model.base_width,
            f"0 with model.width_multiplier = {model.width_multiplier} (the first stage is "
            "64 * width_multiplier channels wide, or base_width when > 0: give one)",
        )
    method_cls = methods.get(config.method.name)
    for path, value in _walk(config.method, "method."):
        default = method_cls.defaults.get(path.split(".", 1)[1])
        if isinstance(default, numbers.Real) and not isinstance(default, bool):
            number(path, value)
        elif isinstance(default, bool):
            flag(path, value)
    try:  # the method's own checks of its hyperparameters
        method_cls(config)
    except ValueError as err:
        raise ConfigError(str(err)) from None
