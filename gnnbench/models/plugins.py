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
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from gnnbench.data.meta import TASKS, DatasetMeta
from gnnbench.errors import ConfigError
from gnnbench.models.base import Architecture, Representation
from gnnbench.models.registry import Variant
from gnnbench.papers import MODEL_KEYS, PLUGIN

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
STAND_IN_NODES = (3, 4)  # the stand-in batch: two graphs (unequal sizes: N, E, B and P all differ)
STAND_IN_PAIRS = 5


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


def resolve_plugin(name: str, variant: str | None = None):
    """The :class:`~gnnbench.models.registry.Variant` (variant ``plugin``, kind ``backbone`` or ``full``) of a
    plugin's model name; its class is imported here."""
    if variant not in (None, PLUGIN):
        raise PluginError(f"{name} is a model of your own (variant {PLUGIN}), not of variant {variant!r}; drop "
                          "variant", "variant")
    cls = load_class(name)
    sig = signature(cls, name)
    tasks = getattr(cls, "tasks", TASKS)
    if isinstance(tasks, str) or not all(t in TASKS for t in tasks):
        raise PluginError(f"{name}.tasks is {tasks!r}; it must be a tuple of task names from {', '.join(TASKS)}")
    return plugin_variant(name, cls, sig, tuple(tasks))


@dataclass(frozen=True)
class PluginVariant(Variant):
    """A model from outside the package, registered under variant ``plugin`` (``family`` and ``target``: the model
    name as the config spells it; ``kind``: backbone or full)."""

    cls: type | None = None
    sig: Signature | None = None
    plugin_tasks: tuple[str, ...] = TASKS

    def load(self) -> type:
        """The plugin's class (already imported by :func:`resolve_plugin`)."""
        return self.cls

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks the class offers: its ``tasks`` attribute, else every task."""
        return self.plugin_tasks

    @property
    def own_readout(self) -> bool:
        """True for a full model (it returns the task's outputs itself); a backbone gets gnnbench's head."""
        return self.kind == FULL

    @property
    def architecture_keys(self) -> dict[str, Any]:
        """The config keys that belong to the model: its constructor's arguments and gnnbench's own keys."""
        return architecture_keys(self)


def plugin_variant(name: str, cls: type, sig: Signature, tasks: tuple[str, ...]) -> PluginVariant:
    """The :class:`PluginVariant` of class ``cls`` named ``name``, with its read signature and tasks."""
    note = f"{'backbone: encoders and the task head added' if sig.kind == BACKBONE else 'full model'} ({name})"
    return PluginVariant(name, PLUGIN, name, sig.kind, None, False, note, cls, sig, tasks)


def own_keys(kind: str) -> dict[str, type]:
    """gnnbench's keys of a plugin's config (module docstring)."""
    return BACKBONE_KEYS if kind == BACKBONE else FULL_KEYS


def architecture_keys(v) -> dict[str, Any]:
    """The keys of a plugin's config besides ``model`` and the training keys: gnnbench's own (typed) and the
    constructor's arguments (any value: :data:`gnnbench.config.keys.ANY`)."""
    from gnnbench.config.keys import ANY

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


# ---------------------------------------------------------------------------------------------------------
# Building


def training_keys(default_variant: str | None) -> set[str]:
    """The training keys of the protocol whose own zoo is ``default_variant`` (every protocol's where none is):
    they go to the trainer, never to a plugin's constructor."""
    from gnnbench.protocols import get_protocol, protocol_names

    protocols = [get_protocol(n) for n in protocol_names()]
    own = [p for p in protocols if p.default_variant == default_variant]
    return {k for p in (own or protocols) for k in p.training_keys}


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
            import difflib

            close = difflib.get_close_matches(key, [*sig.arguments, *own], n=1, cutoff=0.7)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise PluginError(f"unknown config key {key!r}{hint}; {unknown_key_hint(v)}", key)
    for key, value in injected.items():
        if key not in INJECTED[v.kind]:
            raise ValueError(f"{key} is not an argument gnnbench injects into a {v.kind} model")
        if key not in kwargs and value is not None and (key in sig.arguments or key in sig.layer_arguments):
            kwargs[key] = value
    return kwargs


def construct(v, kwargs: dict, meta: DatasetMeta) -> nn.Module:
    """``cls(**kwargs)``; a missing argument or any error of the constructor is a one-line PluginError."""
    missing = [a for a in v.sig.required if a not in kwargs]
    if missing:
        raise PluginError(f"{describe_arguments(v)} needs {', '.join(missing)}; set "
                          f"{'them' if len(missing) > 1 else 'it'} (suite: the model's set; command line: --set "
                          f"{missing[0]}=...)")
    try:
        return v.cls(**kwargs)
    except ConfigError:
        raise
    except Exception as exc:  # the user's constructor: any error it raises
        shown = ", ".join(f"{k}={_short(val)}" for k, val in kwargs.items())
        raise PluginError(f"{v.cls.__name__}({shown}) failed for dataset {meta.name}: {_one_line(exc)}; fix the "
                          "model's arguments") from None


def _short(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    if isinstance(value, DatasetMeta):
        return "meta"
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def in_degree_histogram(store, graphs: torch.Tensor | None = None) -> torch.Tensor:
    """``deg[k]``: how many nodes have in-degree k, over ``graphs`` of the store (default all of them) — what PNA's
    degree scalers are normalised by."""
    from gnnbench.data.batching import gather_ranges

    node_ptr = store.node_ptr.to(torch.int64)
    dst = store.edge_index[1].to(torch.int64) + torch.repeat_interleave(node_ptr[:-1], store.num_edges)
    degree = torch.bincount(dst, minlength=int(node_ptr[-1]))
    if graphs is not None:
        graphs = torch.as_tensor(graphs, dtype=torch.int64)
        degree = degree.index_select(0, gather_ranges(node_ptr[graphs], store.num_nodes[graphs]))
    return torch.bincount(degree)


def stand_in_batch(meta: DatasetMeta, pe_dim: int | None = None):
    """Two small graphs (rings of 3 and 4 nodes, both directions) with inputs of the dataset's kinds and sizes, pairs
    to score (link prediction) and positional encodings of ``pe_dim`` dimensions; values from a fixed generator
    (torch's global one is not drawn from)."""
    from gnnbench.data.batching import GraphBatch

    generator = torch.Generator().manual_seed(0)
    counts = torch.tensor(STAND_IN_NODES)
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    src, dst = [], []
    for start, n in zip(ptr[:-1].tolist(), STAND_IN_NODES, strict=True):  # two graphs: a constant, not data
        ring = torch.arange(n) + start
        nxt = torch.roll(ring, -1)
        src += [ring, nxt]
        dst += [nxt, ring]
    edge_index = torch.stack([torch.cat(src), torch.cat(dst)])
    num_nodes, num_edges = int(ptr[-1]), edge_index.shape[1]

    def features(feature, rows: int):
        if feature is None:
            return None
        if feature.kind == "categorical":
            return torch.randint(0, feature.size, (rows,), generator=generator)
        return torch.rand(rows, feature.size, generator=generator)

    pairs = torch.randint(0, num_nodes, (2, STAND_IN_PAIRS), generator=generator)
    return GraphBatch(edge_index=edge_index, batch=torch.repeat_interleave(torch.arange(len(STAND_IN_NODES)), counts),
                      ptr=ptr, num_graphs=len(STAND_IN_NODES), x=features(meta.node_features, num_nodes),
                      edge_attr=features(meta.edge_features, num_edges),
                      pe=None if pe_dim is None else torch.rand(num_nodes, pe_dim, generator=generator),
                      pairs=pairs if meta.task == "link_prediction" else None)


@contextlib.contextmanager
def dry(module: nn.Module):
    """The module to run a dry forward with, in eval mode and without gradients: the module itself where it has lazy
    parameters (the dry forward materialises them), else a copy (so that nothing a forward caches — e.g. a layer's
    normalised stand-in graph — stays in the model)."""
    lazy = any(isinstance(p, nn.parameter.UninitializedParameter) for p in module.parameters())
    target = module
    if not lazy:
        with contextlib.suppress(Exception):  # a module that cannot be copied runs itself
            target = copy.deepcopy(module)
    training = target.training
    target.eval()
    try:
        with torch.no_grad():
            yield target
    finally:
        target.train(training)


def _run(v, call, meta: DatasetMeta):
    try:
        return call()
    except ConfigError:
        raise
    except Exception as exc:  # the user's forward: any error on the stand-in batch
        raise PluginError(f"{v.cls.__name__}.forward failed on a stand-in batch of dataset {meta.name}'s feature "
                          f"sizes: {_one_line(exc)}; fix the model (or its arguments)") from None


class Backbone(Architecture):
    """A user's backbone inside gnnbench's composition: called with the batch's tensors by name (``arguments``, the
    forward's), returns the node representations; ``raw_edges``: continuous edge features reach ``edge_attr``
    unencoded; ``edge_weight``: the one continuous edge feature reaches ``edge_weight``."""

    def __init__(self, module: nn.Module, arguments: tuple[str, ...], *, input_width: int,
                 edge_input_width: int | None, uses_edges: bool, raw_edges: bool, edge_weight: bool,
                 project_continuous: bool, tasks: tuple[str, ...]) -> None:
        super().__init__()
        self.module = module
        self.arguments = arguments
        self.input_width, self.edge_input_width = input_width, edge_input_width
        self.uses_edges, self.raw_edges, self.edge_weight = uses_edges, raw_edges, edge_weight
        self.project_continuous = project_continuous
        self.tasks = tasks
        self.out_width = 0  # set from the dry forward

    def call(self, module: nn.Module, h: torch.Tensor, e: torch.Tensor | None, batch) -> torch.Tensor:
        """``module`` (this backbone's, or its dry-forward copy) on the batch's tensors, passed by name."""
        kwargs = {}
        for name in self.arguments:
            if name == "x":
                kwargs["x"] = h
            elif name == "edge_index":
                kwargs["edge_index"] = batch.edge_index
            elif name == "edge_attr":
                if e is None and self.raw_edges:
                    e = batch.edge_attr if batch.edge_attr.dim() == 2 else batch.edge_attr.unsqueeze(-1)
                if e is not None:
                    kwargs["edge_attr"] = e
            elif name == "edge_weight":
                if self.edge_weight:
                    kwargs["edge_weight"] = batch.edge_attr.reshape(-1)
            elif name == "batch":
                kwargs["batch"] = batch.batch
            elif name == "ptr":
                kwargs["ptr"] = batch.ptr
        return module(**kwargs)

    def forward(self, h: torch.Tensor, e: torch.Tensor | None, batch) -> Representation:
        """The user's module on the encoded inputs ``h``, ``e`` and the batch: its node representations."""
        return Representation(self.call(self.module, h, e, batch))


class FullModel(nn.Module):
    """A user's full model behind the model contract: ``forward(batch)`` → its outputs (a (B, 1) or (P, 1) output of
    a one-target task squeezed to (B,) / (P,)); ``aux_loss`` is the model's own, else 0.0; other attributes (e.g.
    ``l2_penalty``) are the model's."""

    own_readout = True

    def __init__(self, module: nn.Module, squeeze: bool = False) -> None:
        super().__init__()
        self.module = module
        self.squeeze = squeeze

    def forward(self, batch):
        """The user's model on the ``GraphBatch``; a one-target (B, 1) or (P, 1) output squeezed."""
        out = self.module(batch)
        return out.squeeze(-1) if self.squeeze else out

    @property
    def aux_loss(self):
        """The model's own ``aux_loss`` after its last forward (added to the training loss), else 0.0."""
        return getattr(self.module, "aux_loss", 0.0)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "module":
                raise
            return getattr(self.module, name)


def build(v, config: Mapping, data, default_variant: str | None) -> nn.Module:
    """The plugin ``v`` built for ``data`` (a :class:`~gnnbench.models.registry.ModelData`) from its run config."""
    cfg = dict(config)
    meta = data.meta
    if meta.task not in v.tasks:
        raise PluginError(cannot_do(v, meta))
    pe_dim = cfg.get("pos_enc_dim") if cfg.get("pos_enc") else None
    if cfg.get("pos_enc") and not pe_dim:
        raise PluginError("pos_enc is true but pos_enc_dim is missing or 0; set pos_enc_dim (e.g. 20)", "pos_enc_dim")
    deg = None
    if {"deg"} & (set(v.sig.arguments) | set(v.sig.layer_arguments)) and "deg" not in cfg:
        if data.store is not None:
            deg = in_degree_histogram(data.store, getattr(data, "train_graphs", None))
        else:  # no data yet (a check, a parameter count): the stand-in batch's histogram
            stand_in = stand_in_batch(meta)
            deg = torch.bincount(torch.bincount(stand_in.edge_index[1], minlength=stand_in.num_nodes))
    model = (_build_backbone if v.kind == BACKBONE else _build_full)(v, cfg, meta, pe_dim, deg, default_variant)
    prepare = getattr(model.architecture.module if v.kind == BACKBONE else model.module, "prepare", None)
    if callable(prepare) and data.store is not None:
        prepare(data.store)
    return model


def cannot_do(v, meta: DatasetMeta) -> str:
    """The one-line refusal of a plugin on a dataset whose task is outside its class's ``tasks``."""
    return (f"{v.family} cannot do {meta.task} (dataset {meta.name}): its class attribute tasks lists "
            f"{', '.join(v.tasks)}; pick another dataset or model")


def _value(cfg: Mapping, v, key: str):
    """A key's value from the config, else the constructor's default."""
    return cfg.get(key, v.sig.defaults.get(key))


def _build_backbone(v, cfg: dict, meta: DatasetMeta, pe_dim: int | None, deg, default_variant: str | None):
    from gnnbench.models.encoders import EdgeEncoder, NodeEncoder
    from gnnbench.models.heads import make_head
    from gnnbench.models.net import GraphNet
    from gnnbench.models.readout import READOUTS

    readout = cfg.get("readout", "mean")
    if readout not in READOUTS:
        raise PluginError(f"unknown readout {readout!r}; choose one of {', '.join(READOUTS)}", "readout")
    feature = meta.node_features
    explicit = cfg.get("in_channels")
    if explicit is not None:
        width, project = int(explicit), True
    elif feature is not None and feature.kind == "continuous" and pe_dim is None:
        width, project = feature.size, False
    else:
        hidden = _value(cfg, v, "hidden_channels")
        if not isinstance(hidden, int) or isinstance(hidden, bool):
            what = "positional encodings" if pe_dim is not None or feature is None else "categorical node features"
            raise PluginError(f"dataset {meta.name} has {what}, which gnnbench encodes into in_channels features for "
                              f"{v.family}; set in_channels (or hidden_channels)", "in_channels")
        width, project = hidden, True

    # edges: encoded edge features where the forward takes edge_attr; the one continuous feature as edge_weight
    edges = meta.edge_features if cfg.get("edge_feat", True) else None
    takes_attr, takes_weight = "edge_attr" in v.sig.forward, "edge_weight" in v.sig.forward
    attr_required = "edge_attr" in v.sig.forward_required
    edge_width = raw_edges = None
    edge_encoder = None
    if takes_attr and (edges is not None or attr_required):
        explicit_edges = cfg.get("edge_dim")
        if edges is not None and edges.kind == "continuous" and explicit_edges is None:
            edge_width, raw_edges = edges.size, True
        else:
            edge_width = int(explicit_edges) if explicit_edges is not None else width
    edge_weight = takes_weight and edges is not None and edges.kind == "continuous" and edges.size == 1

    injected = {"in_channels": width, "edge_dim": edge_width, "deg": deg}
    module = construct(v, constructor_arguments(v, cfg, default_variant, injected), meta)
    try:
        node_encoder = NodeEncoder(feature, width, pe_dim, meta.pe_usage, project_continuous=project)
        if edge_width is not None and not raw_edges:
            edge_encoder = EdgeEncoder(edges, edges is not None, edge_width)
    except ValueError as exc:
        raise PluginError(f"{v.family} on dataset {meta.name}: {exc}; change the config") from None
    arch = Backbone(module, v.sig.forward, input_width=width, edge_input_width=edge_width,
                            uses_edges=edge_encoder is not None, raw_edges=bool(raw_edges), edge_weight=edge_weight,
                            project_continuous=project, tasks=v.tasks)
    batch = stand_in_batch(meta, pe_dim)
    with dry(module) as target:
        h = node_encoder(batch.x, batch.pe)
        e = edge_encoder(batch.edge_attr, batch.num_edges) if edge_encoder is not None else None
        out = _run(v, lambda: arch.call(target, h, e, batch), meta)
    _check_nodes(v, out, batch)
    arch.out_width = int(out.shape[1])
    try:
        head = make_head(meta.task, arch, meta.num_outputs, readout, meta.num_graph_outputs)
    except ValueError as exc:
        raise PluginError(f"{v.family} on dataset {meta.name}: {exc}; change the config") from None
    net = GraphNet(node_encoder, edge_encoder, arch, head, 0.0)
    net.aux_loss, net.own_readout = 0.0, False
    return net


def _check_nodes(v, out, batch) -> None:
    n = batch.num_nodes
    name = f"{v.cls.__name__}.forward"
    if not isinstance(out, torch.Tensor):
        raise PluginError(f"{name} returned {type(out).__name__}, not a tensor; a backbone returns the node "
                          f"representations (N, H) (or make it a full model: forward(batch) → the task's outputs)")
    if out.dim() != 2 or out.shape[0] != n:
        what = ("a 1-D tensor: keep the feature dimension (e.g. out.unsqueeze(-1))" if out.dim() == 1 and
                out.shape[0] == n else "not one row per node: a backbone returns (N, H) node representations and "
                "gnnbench's head pools them (or make it a full model)")
        raise PluginError(f"{name} returned shape {tuple(out.shape)} on a stand-in batch of {n} nodes, {what}")
    if not out.is_floating_point():
        raise PluginError(f"{name} returned a {out.dtype} tensor; node representations are floating point")
    if out.shape[1] == 0:  # the head would read nothing: a chance-level model that trains without an error
        raise PluginError(f"{name} returned shape {tuple(out.shape)} on a stand-in batch of {n} nodes: node "
                          "representations without features; give the model a width of at least 1 (e.g. "
                          "hidden_channels)")


def _build_full(v, cfg: dict, meta: DatasetMeta, pe_dim: int | None, deg, default_variant: str | None):
    feature, edges = meta.node_features, meta.edge_features
    injected = {"meta": meta, "in_channels": None if feature is None else feature.size,
                "edge_dim": None if edges is None else edges.size, "out_channels": meta.num_outputs,
                "num_classes": meta.num_outputs, "deg": deg}
    module = construct(v, constructor_arguments(v, cfg, default_variant, injected), meta)
    batch = stand_in_batch(meta, pe_dim)
    with dry(module) as target:
        out = _run(v, lambda: target(batch), meta)
    squeeze = _check_outputs(v, out, batch, meta)
    return FullModel(module, squeeze)


def expected_outputs(meta: DatasetMeta, batch) -> tuple[tuple[int, ...], ...]:
    """The output shapes the task asks for on ``batch`` (one per output; multitask: node, then graph)."""
    n, c = batch.num_nodes, meta.num_outputs
    task = meta.task
    if task == "node_classification":
        return ((n, c),)
    if task == "graph_classification":
        return ((batch.num_graphs, c),)
    if task == "graph_regression":
        return ((batch.num_graphs,) if c == 1 else (batch.num_graphs, c),)
    if task == "edge_classification":
        return ((batch.num_edges, c),)
    if task == "link_prediction":
        return ((batch.pairs.shape[1],),)
    return ((n, c), (batch.num_graphs, meta.num_graph_outputs))


def _check_outputs(v, out, batch, meta: DatasetMeta) -> bool:
    """Whether the full model's output fits the task (True: squeeze a (B, 1) / (P, 1) output); else a PluginError
    naming the expected shape."""
    expected = expected_outputs(meta, batch)
    got = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    shapes = tuple(tuple(o.shape) if isinstance(o, torch.Tensor) else type(o).__name__ for o in got)
    squeeze = len(expected) == 1 and len(expected[0]) == 1 and shapes == ((*expected[0], 1),)
    if shapes == expected or squeeze:
        return squeeze
    where = (f"a stand-in batch of {batch.num_graphs} graphs, {batch.num_nodes} nodes, {batch.num_edges} edges"
             + (f", {batch.pairs.shape[1]} pairs" if batch.pairs is not None else ""))
    want = " and ".join(str(s) for s in expected)
    raise PluginError(f"{v.cls.__name__}.forward returned shape {', '.join(map(str, shapes))} on {where}; "
                      f"{meta.task} on dataset {meta.name} needs {want}"
                      + (" (a tuple: node outputs, graph outputs)" if len(expected) > 1 else "")
                      + "; fix the model's output")


# ---------------------------------------------------------------------------------------------------------
# Parameter budgets


def default_width(v) -> str | None:
    """The argument a budget fits when the model entry names none: ``hidden_channels`` where the constructor takes
    it."""
    return "hidden_channels" if "hidden_channels" in v.sig.arguments else None


__all__ = ["BACKBONE", "BACKBONE_KEYS", "ENTRY_POINT_GROUP", "FULL", "FULL_KEYS", "INJECTED", "PLUGIN", "FullModel",
           "PluginError", "absolute_file_spec", "build", "in_degree_histogram", "is_plugin_spec", "load_class",
           "located", "parse_spec", "resolve_plugin", "stand_in_batch", "with_absolute_files"]
