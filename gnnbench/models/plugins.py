"""Models from outside the package: a user's class, run under every protocol beside the zoos' networks.

Naming a model (the ``model`` key of a suite's model entry, or ``--set model=...``):

- ``package.module:Class``: an importable module's class;
- ``path/to/my_gnn.py:Class``: a Python file (a relative path is read from the suite file's folder, or on the
  command line from the working folder); the file's folder is on ``sys.path`` while it is imported, so it may
  import modules beside it;
- ``entrypoint:Name``: an entry point ``Name`` of group ``gnnbench.models`` (a pip-installed model package); a
  bare ``Name`` that no zoo family has is looked up there too (the zoos' families win);
- ``package.module.Class``: a class path without a colon, e.g. ``torch_geometric.nn.models.GCN``.

A plugin is imported only when a config names it: never when gnnbench is imported, and nothing is scanned. Its run
configs carry ``variant: plugin`` (it is no paper's network: no published row sits beside it).

Two kinds, told apart by the signature of ``forward``:

- **backbone**: ``forward(x, edge_index, ...)`` → node representations (N, H), like PyTorch Geometric's
  ``BasicGNN`` models. gnnbench adds the dataset's input encoders and the benchmark's task head (node, edge,
  link, graph and multitask heads: :func:`gnnbench.models.heads.make_head`), so the composition is the zoo's
  :class:`~gnnbench.models.net.GraphNet`. Forward arguments are passed by name where the signature has them:
  ``x`` (encoded node input), ``edge_index`` (2, E) int64, ``edge_attr`` (encoded edge features),
  ``edge_weight`` (a dataset's one continuous edge feature, (E,)), ``batch`` (graph of every node), ``ptr``
  (node offsets of the graphs).
- **full**: ``forward(batch)`` with one argument, the :class:`~gnnbench.data.batching.GraphBatch`, → the task's
  outputs as the zoo's models return them (node scores (N, C); graph scores (B, C), (B,) for one regression
  target; edge scores (E, C); link scores (P,) for ``batch.pairs``; multitask a tuple (node (N, C), graph
  (B, C'))). gnnbench adds nothing; a (B, 1) or (P, 1) output is squeezed.

A class attribute ``tasks`` (a tuple of task names) restricts the tasks a plugin is offered; without it every task
is, and the dry build below refuses what the model's output cannot serve.

Constructor arguments: every config key that is neither ``model``/``variant`` nor a training key of the running
protocol goes to the constructor (a key the signature lacks is refused in one line listing the arguments, unless the
constructor takes ``**kwargs``). Arguments gnnbench knows are injected when the signature names them and the config
leaves them out (:data:`INJECTED`). PyTorch Geometric's ``BasicGNN`` models take their layers' arguments as
``**kwargs``: ``edge_dim`` is injected for those whose layers read edge features (GAT, PNA) and ``deg`` for PNA.
Their forward takes ``edge_attr`` and ``edge_weight`` whatever their layers read: these are passed only where the
layers read them (``supports_edge_attr``, ``supports_edge_weight``).

Encoders of a backbone (the benchmark's :class:`~gnnbench.models.encoders.NodeEncoder` / ``EdgeEncoder``): the node
input reaches the model as ``in_channels`` features — continuous features raw (``in_channels`` = their width) unless
the config sets ``in_channels`` (then projected by a Linear), categorical ids embedded into ``in_channels`` (default:
``hidden_channels``); positional encodings (``pos_enc``) are projected and added or replace the input as the dataset
says. Edge features, when the forward takes ``edge_attr`` and the dataset has them (``edge_feat: false`` turns them
off): categorical embedded into ``edge_dim`` (default: the node input width), continuous raw unless ``edge_dim`` is
set. A forward whose ``edge_attr`` has no default gets the benchmark's constant edge input (Linear on ones) on a
dataset without edge features. Graph tasks pool the node representations with ``readout`` (sum, mean, max; default
mean). These keys (:data:`BACKBONE_KEYS`) are gnnbench's and reach the constructor too where its signature names
them.

Every build runs the model once on a stand-in batch of the dataset's feature sizes (two graphs of 3 and 4 nodes,
in eval mode, without gradients; on a copy unless the model has lazy parameters, which this dry forward resolves):
it finds a backbone's output width and refuses a wrong signature or output shape in one line before any job runs.
An optional ``prepare(store)`` (per-dataset precomputation, as the zoo's ECC) is called when the store is known.
The user's guide is ``docs/model-contract.md``.

This module names, loads and reads a plugin class and sorts its config's keys (no torch until a class is loaded);
:mod:`gnnbench.models.registry` resolves a name to its :class:`~gnnbench.models.registry.PluginVariant`, and
:mod:`gnnbench.models.adapters` builds the model behind the contract.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnnbench.data.meta import DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.papers import MODEL_KEYS, PLUGIN, TRAINING_KEYS

BACKBONE, FULL = "backbone", "full"
ENTRY_POINT_GROUP = "gnnbench.models"
ENTRY_POINT_PREFIX = "entrypoint:"
# what a backbone's forward may take, and where it comes from (module docstring)
FORWARD_ARGUMENTS = ("x", "edge_index", "edge_attr", "edge_weight", "batch", "ptr")
# gnnbench's own keys of a backbone's config (and of a full model's: the positional encodings it may read)
BACKBONE_KEYS: dict[str, type] = {"in_channels": int, "edge_dim": int, "readout": str, "edge_feat": bool,
                                  "pos_enc": bool, "pos_enc_dim": int}
FULL_KEYS: dict[str, type] = {"pos_enc": bool, "pos_enc_dim": int}
# constructor arguments gnnbench fills in when the signature names them and the config leaves them out
INJECTED = {
    BACKBONE: ("in_channels", "edge_dim", "deg"),
    FULL: ("meta", "in_channels", "edge_dim", "out_channels", "num_classes", "deg"),
}
ANY = object  # a plugin constructor's argument: any value (the model checks it)


class PluginError(ConfigError):
    """A plugin problem located at a config key (``model`` by default): ``str`` is ``"{key}: {message}"``; a
    protocol reports it as ``{where}.{key}: {message}`` (:func:`located`)."""

    def __init__(self, message: str, key: str = "model") -> None:
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message


def located(where: str, exc: Exception) -> ConfigError:
    """``exc`` as one ConfigError at ``where`` (a suite position such as ``benchmarks.D.models.X``; on the command
    line, ``--preset`` or ``--set``: a plugin's keys come from ``--set``)."""
    if isinstance(exc, PluginError):
        return ConfigError(f"--set {exc.key}: {exc.message}" if where.startswith("--") else
                           f"{where}.{exc.key}: {exc.message}")
    return ConfigError(f"{where}: {exc}" if where else str(exc))


# ---------------------------------------------------------------------------------------------------------
# Naming and loading


def parse_spec(name: str) -> tuple[str, str, str | None]:
    """(source, target, attribute) of a plugin's model name: ``("file", path, Class)``, ``("module", module,
    Class)`` or ``("entrypoint", name, None)`` (the spellings of the module docstring)."""
    if name.startswith(ENTRY_POINT_PREFIX):
        return "entrypoint", name[len(ENTRY_POINT_PREFIX):], None
    if ":" in name:
        left, attribute = name.rsplit(":", 1)
        if left.endswith(".py") or "/" in left or "\\" in left:
            return "file", left, attribute
        return "module", left, attribute
    if "." in name:
        module, attribute = name.rsplit(".", 1)
        return "module", module, attribute
    return "entrypoint", name, None


def is_plugin_spec(name: object) -> bool:
    """Whether a ``model`` value names a class from outside the package by its spelling (a colon or a dot; a bare
    entry-point name is recognised by :func:`entry_point` once no zoo family has it)."""
    return isinstance(name, str) and (":" in name or "." in name)


def entry_point(name: str):
    """The installed entry point ``name`` of group ``gnnbench.models`` (metadata only: nothing is imported), or
    None."""
    from importlib.metadata import entry_points

    return next(iter(entry_points(group=ENTRY_POINT_GROUP, name=name)), None)


def installed_entry_points() -> list[str]:
    """The names of every installed entry point of group ``gnnbench.models``, sorted (for error messages)."""
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def absolute_file_spec(name: object, base_dir: str | Path) -> object:
    """A ``path/to/file.py:Class`` model name with its path made absolute against ``base_dir`` (a suite file's
    folder): the training jobs may run in another working folder. Other values are returned unchanged."""
    if not isinstance(name, str) or not is_plugin_spec(name):
        return name
    source, target, attribute = parse_spec(name)
    if source != "file" or Path(target).expanduser().is_absolute():
        return name
    return f"{(Path(base_dir) / target).resolve()}:{attribute}"


def with_absolute_files(config: Mapping, base_dir: str | Path) -> dict:
    """A suite config whose model entries' file names (``model:``, and ``model`` in a ``set``) are absolute against
    ``base_dir``; the rest is unchanged (a copy: the caller's config is not modified)."""
    out = dict(config)
    benchmarks = {}
    for name, entry in (config.get("benchmarks") or {}).items():
        if not isinstance(entry, Mapping):
            benchmarks[name] = entry
            continue
        entry = dict(entry)
        if isinstance(entry.get("set"), Mapping) and "model" in entry["set"]:
            entry["set"] = {**entry["set"], "model": absolute_file_spec(entry["set"]["model"], base_dir)}
        if isinstance(entry.get("models"), Mapping):
            models = {}
            for label, model in entry["models"].items():
                if isinstance(model, Mapping):
                    model = dict(model)
                    if "model" in model:
                        model["model"] = absolute_file_spec(model["model"], base_dir)
                    if isinstance(model.get("set"), Mapping) and "model" in model["set"]:
                        model["set"] = {**model["set"], "model": absolute_file_spec(model["set"]["model"], base_dir)}
                models[label] = model
            entry["models"] = models
        benchmarks[name] = entry
    if "benchmarks" in config:
        out["benchmarks"] = benchmarks
    return out


_CLASSES: dict[tuple, type] = {}


def load_class(name: str) -> type:
    """The class a plugin's model name names, imported once per process (a file: once per version of the file).
    Import errors, a missing attribute and an object that is not an ``nn.Module`` subclass are one-line
    PluginErrors."""
    from torch import nn  # a plugin is a torch module: torch loads with the first plugin a config names

    source, target, attribute = parse_spec(name)
    key: tuple = (source, target, attribute)
    if source == "file":
        path = Path(target).expanduser().resolve()
        if not path.is_file():
            raise PluginError(f"file {target} does not exist (a relative path is read from the suite file's folder, "
                              "or on the command line from the working folder); fix the path in model")
        stat = path.stat()
        key = (source, str(path), attribute, stat.st_mtime_ns, stat.st_size)
    if key in _CLASSES:
        return _CLASSES[key]
    if source == "entrypoint":
        ep = entry_point(target)
        if ep is None:
            installed = installed_entry_points()
            listing = f" (installed: {', '.join(installed)})" if installed else " (none is installed)"
            raise PluginError(f"{target!r} is neither a model of the zoos nor an entry point of group "
                              f"{ENTRY_POINT_GROUP}{listing}; pip install the package that provides it, or name the "
                              "class as package.module:Class or path/to/file.py:Class")
        try:
            obj = ep.load()
        except Exception as exc:  # the user's package: any error while importing it
            raise PluginError(f"entry point {target} ({ep.value}) could not be loaded: {_one_line(exc)}; fix the "
                              "package that provides it") from None
        where = f"entry point {target} ({ep.value})"
    else:
        module = _import_file(path) if source == "file" else _import_module(target)
        obj = module
        for part in attribute.split("."):
            if not hasattr(obj, part):
                classes = sorted(n for n, c in vars(module).items() if isinstance(c, type)
                                 and issubclass(c, nn.Module) and c.__module__ == module.__name__)
                hint = f"; it defines {', '.join(classes)}" if classes else "; it defines no nn.Module subclass"
                raise PluginError(f"{target} has no class {attribute!r}{hint}: name one of them after the colon")
            obj = getattr(obj, part)
        where = name
    if not (isinstance(obj, type) and issubclass(obj, nn.Module)):
        what = f"a {'class' if isinstance(obj, type) else type(obj).__name__}"
        raise PluginError(f"{where} is {what}, not a torch.nn.Module subclass; point model at the model's class "
                          "(a subclass of torch.nn.Module)")
    _CLASSES[key] = obj
    return obj


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _import_module(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise PluginError(f"cannot import module {name!r} (no module named {exc.name!r}); install the package "
                              "or fix the name (package.module:Class, or path/to/file.py:Class for a file)") from None
        raise PluginError(f"importing module {name!r} failed: {_one_line(exc)}; install what it imports") from None
    except Exception as exc:  # the user's module: any error while importing it
        raise PluginError(f"importing module {name!r} failed: {_one_line(exc)}; fix the module") from None


def _import_file(path: Path):
    name = f"gnnbench_plugin_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise PluginError(f"{path} cannot be imported as a Python file; name a .py file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses, pickling and typing resolve the module by name
    sys.path.insert(0, str(path.parent))  # the file may import modules beside it
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: any error while running it
        sys.modules.pop(name, None)
        raise PluginError(f"importing {path} failed: {_one_line(exc)}; fix the file") from None
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(path.parent))
    return module


# ---------------------------------------------------------------------------------------------------------
# What a plugin class is


@dataclass(frozen=True)
class Signature:
    """What gnnbench reads from a plugin class: its kind, the forward arguments it is called with, its constructor's
    arguments (``required`` ones without default) and whether the constructor takes ``**kwargs``."""

    kind: str
    forward: tuple[str, ...]
    forward_required: tuple[str, ...]
    arguments: tuple[str, ...]
    required: tuple[str, ...]
    defaults: dict = field(default_factory=dict)
    open: bool = False
    layer_arguments: tuple[str, ...] = ()  # injectable arguments a **kwargs constructor passes to its layers (PyG)


def signature(cls: type, name: str) -> Signature:
    """The kind of a plugin class (module docstring) and its arguments; a forward that fits neither kind is a
    one-line PluginError."""
    try:
        forward = inspect.signature(cls.forward)
        init = inspect.signature(cls.__init__)
    except (TypeError, ValueError) as exc:
        raise PluginError(f"{name}: cannot read the signature of forward or __init__ ({exc}); define them in "
                          "Python") from None
    fparams = [p for p in list(forward.parameters.values())[1:]
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    names = [p.name for p in fparams]
    required = tuple(p.name for p in fparams if p.default is p.empty)
    shown = f"forward({', '.join(names)})"
    if names[:2] == ["x", "edge_index"]:
        unknown = [n for n in required if n not in FORWARD_ARGUMENTS]
        if unknown:
            raise PluginError(f"{name}.{shown}: gnnbench cannot fill the required argument(s) {', '.join(unknown)}; "
                              f"a backbone's forward takes x, edge_index and any of {', '.join(FORWARD_ARGUMENTS[2:])}"
                              " (give other arguments a default)")
        kind = BACKBONE
        unused = _pyg_unused_edge_inputs(cls)
        called = tuple(n for n in names if n in FORWARD_ARGUMENTS and n not in unused)
    elif len(required) == 1 and names and names[0] == required[0]:
        kind, called = FULL, required
    else:
        raise PluginError(f"{name}.{shown} fits neither kind of model: a backbone's forward takes (x, edge_index, "
                          "...) and returns node representations; a full model's takes one argument, the GraphBatch, "
                          "and returns the task's outputs; change the forward's arguments")
    iparams = list(init.parameters.values())[1:]
    arguments = tuple(p.name for p in iparams if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    init_required = tuple(p.name for p in iparams
                          if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty)
    defaults = {p.name: p.default for p in iparams if p.default is not p.empty}
    open_kwargs = any(p.kind == p.VAR_KEYWORD for p in iparams)
    return Signature(kind, called, required if kind == FULL else tuple(n for n in required if n in called),
                     arguments, init_required, defaults, open_kwargs, _pyg_layer_arguments(cls))


def _pyg_unused_edge_inputs(cls: type) -> tuple[str, ...]:
    """The edge inputs a PyTorch Geometric BasicGNN's forward takes but its layers ignore (``supports_edge_attr``,
    ``supports_edge_weight`` false): gnnbench builds no edge encoder for them."""
    if not cls.__module__.startswith("torch_geometric."):
        return ()
    from torch_geometric.nn.models.basic_gnn import BasicGNN

    if not issubclass(cls, BasicGNN):
        return ()
    return (() if cls.supports_edge_attr else ("edge_attr",)) + (() if cls.supports_edge_weight else ("edge_weight",))


def _pyg_layer_arguments(cls: type) -> tuple[str, ...]:
    """PyTorch Geometric's BasicGNN models pass ``**kwargs`` to their layers: ``edge_dim`` reaches layers that read
    edge features (GAT, PNA), ``deg`` PNA's layers."""
    if not cls.__module__.startswith("torch_geometric."):
        return ()
    from torch_geometric.nn.models import PNA
    from torch_geometric.nn.models.basic_gnn import BasicGNN

    if not issubclass(cls, BasicGNN):
        return ()
    return (("edge_dim",) if cls.supports_edge_attr else ()) + (("deg",) if issubclass(cls, PNA) else ())


# ---------------------------------------------------------------------------------------------------------
# Its config's keys


def own_keys(kind: str) -> dict[str, type]:
    """gnnbench's keys of a plugin's config (module docstring)."""
    return BACKBONE_KEYS if kind == BACKBONE else FULL_KEYS


def architecture_keys(v) -> dict[str, Any]:
    """The keys of a plugin's config besides ``model`` and the training keys: gnnbench's own (typed) and the
    constructor's arguments (any value: :data:`ANY`)."""
    return {**{a: ANY for a in v.sig.arguments}, **own_keys(v.kind)}


def describe_arguments(v) -> str:
    """``Class(arg, arg=default, ..., **kwargs)``: the constructor as a user writes the suite's keys."""
    parts = [a if a not in v.sig.defaults else f"{a}={v.sig.defaults[a]!r}" for a in v.sig.arguments]
    return f"{v.cls.__name__}({', '.join(parts + (['**kwargs'] if v.sig.open else []))})"


def unknown_key_hint(v) -> str:
    """The end of an unknown-key error for a plugin's config: what it takes instead."""
    own = ", ".join(own_keys(v.kind))
    return (f"model {v.family} takes the arguments of {describe_arguments(v)}, gnnbench's keys {own} and the "
            "protocol's training keys; fix the key")


def training_keys(default_variant: str | None) -> set[str]:
    """The training keys of the protocol whose own zoo is ``default_variant`` (every protocol's where none is;
    :data:`gnnbench.papers.TRAINING_KEYS`): they go to the trainer, never to a plugin's constructor."""
    if default_variant in TRAINING_KEYS:
        return set(TRAINING_KEYS[default_variant])
    return {k for keys in TRAINING_KEYS.values() for k in keys}


def constructor_arguments(v, cfg: Mapping, default_variant: str | None, injected: Mapping[str, Any]) -> dict:
    """The constructor's keyword arguments: the config's keys that are neither ``model``/``variant``, training keys
    nor gnnbench's own (those go too where the signature names them), then the ``injected`` values where the
    signature (or a PyG model's layers) takes them and the config leaves them out. An unknown key is a one-line
    PluginError at that key."""
    sig, training, own = v.sig, training_keys(default_variant), own_keys(v.kind)
    kwargs = {}
    for key, value in cfg.items():
        if key in MODEL_KEYS or key in training:
            continue
        if key in sig.arguments or (sig.open and key not in own):
            kwargs[key] = value
        elif key not in own:
            close = difflib.get_close_matches(key, [*sig.arguments, *own], n=1, cutoff=0.7)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise PluginError(f"unknown config key {key!r}{hint}; {unknown_key_hint(v)}", key)
    for key, value in injected.items():
        if key not in INJECTED[v.kind]:
            raise ValueError(f"{key} is not an argument gnnbench injects into a {v.kind} model")
        if key not in kwargs and value is not None and (key in sig.arguments or key in sig.layer_arguments):
            kwargs[key] = value
    return kwargs


def cannot_do(v, meta: DatasetMeta) -> str:
    """The one-line refusal of a plugin on a dataset whose task is outside its class's ``tasks``."""
    return (f"{v.family} cannot do {meta.task} (dataset {meta.name}): its class attribute tasks lists "
            f"{', '.join(v.tasks)}; pick another dataset or model")


# ---------------------------------------------------------------------------------------------------------
# Parameter budgets


def default_width(v) -> str | None:
    """The argument a budget fits when the model entry names none: ``hidden_channels`` where the constructor takes
    it."""
    return "hidden_channels" if "hidden_channels" in v.sig.arguments else None


__all__ = ["ANY", "BACKBONE", "BACKBONE_KEYS", "ENTRY_POINT_GROUP", "FULL", "FULL_KEYS", "INJECTED", "PLUGIN",
           "PluginError", "absolute_file_spec", "is_plugin_spec", "load_class", "located", "parse_spec", "signature",
           "with_absolute_files"]
