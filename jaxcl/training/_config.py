"""The run configuration: every key with its default, and the checks made before training."""

from __future__ import annotations

import math
import numbers

import ml_collections

from jaxcl.training._optim import OPTIMIZERS, SCHEDULES

DATASETS = ("fashion_mnist", "digits", "tfds")
GRAPH_DATASETS = ("mutag", "ptc_mr", "imdb_binary", "imdb_multi", "proteins", "nci1")
NODE_DATASETS = ("cora", "citeseer")


class ConfigError(ValueError):
    """A configuration key that does not exist or holds a value that cannot work."""


def base_config() -> ml_collections.ConfigDict:
    """Every key the trainer reads, with its default. Experiment configs start from this.

    ``method`` holds the method's name and its own hyperparameters (see ``jaxcl.methods``);
    everything else is shared by all methods.
    """
    c = ml_collections.ConfigDict()
    c.seed = 0
    c.method = ml_collections.ConfigDict({"name": "dacl"})

    c.data = ml_collections.ConfigDict()
    c.data.name = "digits"  # see DATASETS, GRAPH_DATASETS, NODE_DATASETS
    # idx folder (fashion_mnist), prepared tfds folder, or the folder holding tu_gin/,
    # tu_raw/ and planetoid/ for graphs ("" = default / $JAXCL_DATA_DIR).
    c.data.data_dir = ""
    c.data.graph_format = "gin"  # gin | tu: which file format graph classification reads
    # Graph classification node features: auto (one-hot tags, or one-hot degree where the
    # tags do not vary, e.g. IMDB) | tags | degree | constant (a 1 per node, as PyG code).
    c.data.node_features = "auto"
    # Graph classification: remove the nodes whose one-hot tag is this column (-1: none).
    # GIN-format PTC + 16 (its explicit hydrogens) = TU's PTC_MR.
    c.data.drop_node_tag = -1
    # Graph batches: standard deviations above the mean batch size at which the padding
    # ladder has rungs (jaxcl.graphs.padding_budgets): more rungs, less padding, more
    # compilations.
    c.data.padding_anchors = (1.0, 3.0)
    c.data.tfds_name = "fashion_mnist"
    c.data.permutation_seed = 0  # the fixed pixel permutation of the "tabular" proxy
    # Node data sets: divide each feature row by its sum (GCN's, GRACE's and MVGRL's input).
    c.data.normalize_features = False

    c.model = ml_collections.ConfigDict()
    c.model.encoder = "mlp"  # mlp (tabular) | gin (graphs) | gcn (nodes)
    # GIN kernels: lecun_normal (flax's default) | glorot_uniform (torch's xavier_uniform_,
    # which InfoGraph's and DACL's code apply to every linear layer).
    c.model.gin_kernel_init = "lecun_normal"
    c.model.encoder_depth = 12
    c.model.encoder_width = 1024
    c.model.head_depth = 3
    c.model.head_width = 1024
    c.model.embed_dim = 128

    c.optim = ml_collections.ConfigDict()
    c.optim.name = "lars"
    c.optim.lr = 0.1
    c.optim.weight_decay = 1e-6
    c.optim.momentum = 0.9
    c.optim.warmup_epochs = 10.0
    c.optim.schedule = "cosine"  # cosine (warm-up + cosine decay) | constant (after warm-up)

    c.train = ml_collections.ConfigDict()
    c.train.batch_size = 4096
    c.train.epochs = 1000
    c.train.log_every_steps = 50
    c.train.checkpoint_every_steps = 500
    c.train.keep_checkpoints = 3
    c.train.knn_every_epochs = 0  # 0 = only at the end
    # Keep freed host memory for reuse (glibc) and dispatch CPU computations synchronously, so
    # that XLA:CPU's per-step temporaries are not page-faulted in afresh every step
    # (jaxcl.training.reuse_host_memory). Worth it for large full-batch steps (GRACE on Cora,
    # 2 CPU cores: 524 -> 456 ms per epoch; on in their configs); costs runs of many short
    # steps their asynchronous dispatch (the quickstart: 10-15% slower), hence off here.
    c.train.reuse_host_memory = False

    c.eval = ml_collections.ConfigDict()
    c.eval.linear_epochs = 200
    c.eval.linear_batch_size = 256
    c.eval.linear_lr = 0.1
    c.eval.linear_optimizer = "lars"
    c.eval.knn_k = 20
    c.eval.knn_max_train = 10000  # kNN monitor on at most this many training examples
    # Graph classification (DACL §5.3): evaluated after each of the last `last_epochs`.
    c.eval.graph_protocol = "linear"  # linear (DACL) | svm (InfoGraph, m-Mix)
    c.eval.last_epochs = 5
    c.eval.folds = 10
    c.eval.graph_linear_steps = 100
    c.eval.graph_linear_lr = 1e-2
    # Node classification (GRACE): logistic regression on a split of the nodes.
    c.eval.node_split = "random"  # random (GRACE's 10/10/80) | public (Planetoid)
    c.eval.node_every_epochs = 0  # 0 = only at the end

    c.mesh = ml_collections.ConfigDict()
    c.mesh.data = -1  # devices on the "data" axis; -1 = all

    # Independent runs (seeds seed, seed+1, ...) summarised as mean and std.
    c.repeats = 1
    return c


def _walk(config, prefix=""):
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, ml_collections.ConfigDict):
            yield from _walk(value, path + ".")
        else:
            yield path, value


def _unknown_keys(config, reference, prefix=""):
    for key, value in config.items():
        path = f"{prefix}{key}"
        if key not in reference:
            yield path, sorted(reference.keys())
        elif isinstance(value, ml_collections.ConfigDict) and isinstance(
            reference[key], ml_collections.ConfigDict
        ):
            yield from _unknown_keys(value, reference[key], path + ".")


def _fail(path, value, expected):
    raise ConfigError(f"config.{path} = {value!r}: expected {expected}")


def _number(path, value, *, minimum=None, exclusive=False, integer=False):
    ok_type = isinstance(value, numbers.Integral if integer else numbers.Real) and not isinstance(
        value, bool
    )
    kind = "an integer" if integer else "a number"
    if not ok_type:
        _fail(path, value, kind)
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        _fail(path, value, f"{kind} {'>' if exclusive else '>='} {minimum}")


def validate(config: ml_collections.ConfigDict, method_defaults: dict) -> None:
    """Raises ``ConfigError`` naming the first unknown key or unusable value.

    Args:
      config: the run's configuration.
      method_defaults: the chosen method's hyperparameters with their defaults; keys under
        ``config.method`` other than these (and ``name``) are unknown.
    """
    reference = base_config()
    reference.method = ml_collections.ConfigDict({"name": "", **method_defaults})
    for path, known in _unknown_keys(config, reference):
        raise ConfigError(f"config.{path} is not a known key; keys at that level: {known}")
    for path, _ in _unknown_keys(reference, config):
        raise ConfigError(f"config.{path} is missing (start configs from base_config())")

    names = DATASETS + GRAPH_DATASETS + NODE_DATASETS
    if config.data.name not in names:
        _fail("data.name", config.data.name, f"one of {list(names)}")
    if config.data.graph_format not in ("gin", "tu"):
        _fail("data.graph_format", config.data.graph_format, "'gin' or 'tu'")
    if config.data.node_features not in ("auto", "tags", "degree", "constant"):
        _fail("data.node_features", config.data.node_features, "auto, tags, degree or constant")
    _number("data.drop_node_tag", config.data.drop_node_tag, minimum=-1, integer=True)
    anchors = config.data.padding_anchors
    if not (
        isinstance(anchors, (tuple, list))
        and anchors
        and all(
            isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a)
            for a in anchors
        )
    ):
        _fail("data.padding_anchors", anchors, "a non-empty tuple of finite numbers")
    if config.data.graph_format == "tu" and config.data.name not in ("mutag", "proteins"):
        _fail(
            "data.graph_format",
            "tu",
            f"'gin' for {config.data.name} (TU's own format is available for mutag, proteins)",
        )
    if config.eval.graph_protocol not in ("linear", "svm"):
        _fail("eval.graph_protocol", config.eval.graph_protocol, "'linear' or 'svm'")
    if config.eval.node_split not in ("random", "public"):
        _fail("eval.node_split", config.eval.node_split, "'random' or 'public'")
    for key in ("last_epochs", "graph_linear_steps"):
        _number(f"eval.{key}", config.eval[key], minimum=1, integer=True)
    _number("eval.folds", config.eval.folds, minimum=2, integer=True)
    _number("eval.graph_linear_lr", config.eval.graph_linear_lr, minimum=0, exclusive=True)
    _number("eval.node_every_epochs", config.eval.node_every_epochs, minimum=0, integer=True)
    _number("repeats", config.repeats, minimum=1, integer=True)
    if config.model.gin_kernel_init not in ("lecun_normal", "glorot_uniform"):
        _fail(
            "model.gin_kernel_init",
            config.model.gin_kernel_init,
            "'lecun_normal' or 'glorot_uniform'",
        )
    if config.model.encoder not in ("mlp", "gin", "gcn"):
        _fail("model.encoder", config.model.encoder, "one of ['mlp', 'gin', 'gcn']")
    graph_data = config.data.name in GRAPH_DATASETS
    node_data = config.data.name in NODE_DATASETS
    wanted = "gin" if graph_data else "gcn" if node_data else "mlp"
    if config.model.encoder != wanted:
        _fail(
            "model.encoder", config.model.encoder, f"{wanted!r} for data.name={config.data.name!r}"
        )
    for key in ("encoder_depth", "encoder_width", "head_depth", "head_width", "embed_dim"):
        _number(f"model.{key}", config.model[key], minimum=1, integer=True)
    if config.optim.name not in OPTIMIZERS:
        _fail("optim.name", config.optim.name, f"one of {list(OPTIMIZERS)}")
    if config.optim.schedule not in SCHEDULES:
        _fail("optim.schedule", config.optim.schedule, f"one of {list(SCHEDULES)}")
    if not isinstance(config.data.normalize_features, bool):
        _fail("data.normalize_features", config.data.normalize_features, "True or False")
    _number("optim.lr", config.optim.lr, minimum=0, exclusive=True)
    _number("optim.weight_decay", config.optim.weight_decay, minimum=0)
    _number("optim.momentum", config.optim.momentum, minimum=0)
    _number("optim.warmup_epochs", config.optim.warmup_epochs, minimum=0)
    _number("train.batch_size", config.train.batch_size, minimum=1, integer=True)
    _number("train.epochs", config.train.epochs, minimum=0, integer=True)
    for key in ("log_every_steps", "checkpoint_every_steps", "keep_checkpoints"):
        _number(f"train.{key}", config.train[key], minimum=1, integer=True)
    _number("train.knn_every_epochs", config.train.knn_every_epochs, minimum=0, integer=True)
    if not isinstance(config.train.reuse_host_memory, bool):
        _fail("train.reuse_host_memory", config.train.reuse_host_memory, "True or False")
    _number("eval.linear_epochs", config.eval.linear_epochs, minimum=1, integer=True)
    _number("eval.linear_batch_size", config.eval.linear_batch_size, minimum=1, integer=True)
    _number("eval.linear_lr", config.eval.linear_lr, minimum=0, exclusive=True)
    if config.eval.linear_optimizer not in OPTIMIZERS:
        _fail("eval.linear_optimizer", config.eval.linear_optimizer, f"one of {list(OPTIMIZERS)}")
    _number("eval.knn_k", config.eval.knn_k, minimum=1, integer=True)
    _number("eval.knn_max_train", config.eval.knn_max_train, minimum=1, integer=True)
    _number("mesh.data", config.mesh.data, minimum=-1, integer=True)
    if config.mesh.data == 0:
        _fail("mesh.data", 0, "a positive device count, or -1 for all devices")
    for path, value in _walk(config.method, "method."):
        default = method_defaults.get(path.split(".", 1)[1])
        if isinstance(default, numbers.Real) and not isinstance(default, bool):
            _number(path, value)
