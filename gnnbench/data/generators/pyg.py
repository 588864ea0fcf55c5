"""Any PyTorch Geometric dataset class, converted once into the graph store (generator ``pyg``).

Parameters
    ``class``   the dataset class: a name in ``torch_geometric.datasets`` (``Planetoid``), a dotted path
                (``torch_geometric.datasets.TUDataset``) or ``package.module:Class``. Imported only when a suite
                names it; it must subclass ``torch_geometric.data.Dataset``.
    ``args``    its constructor arguments (a mapping), e.g. ``{name: Cora}``. ``root`` is set by gnnbench (below);
                ``transform``, ``pre_transform`` and ``pre_filter`` are refused (a suite holds data, not code: a
                dataset that needs preprocessing is a small subclass, named by ``package.module:Class``).
    ``splits``  for classes whose constructor selects a part (``ZINC(split="train")``, ``GNNBenchmarkDataset``,
                ``LRGBDataset``): ``{train: {split: train}, val: {split: val}, test: {split: test}}`` — the extra
                arguments of each part. The three datasets are stored train, val, test with a graph column
                ``split``, so split scheme ``given`` is that split. Empty (default): one dataset from ``args``.
                (Those three classes unpickle their raw files: they need ``trust_raw``, below.)
    ``task``    overrides the task inferred from the labels (:mod:`gnnbench.data.graph_import`): one of
                node_classification, graph_classification, graph_regression, edge_classification.
    ``trust_raw``  (default false) the user trusts the files in ``resources/raw/pyg/<ClassName>``: the class then
                reads them as PyG does, unverified and with PyG's own ``torch.load`` (below).

The class is constructed with ``root = <raw_dir>/pyg/<ClassName>`` (``resources/raw/pyg/Planetoid`` in the
workflow) when its constructor takes a ``root``; downloads go through PyG's own code into that folder (the user's
choice of class), and a folder already holding the files is used offline. While the class is constructed, torch's,
NumPy's and Python's global random generators are seeded with the dataset's ``seed`` (``FakeDataset`` and
``Planetoid(split="random")`` draw from them) and restored afterwards, so the same seed gives the same store. What PyG
prints (``Processing...``, ``Downloading ...``) is logged instead.

Conversion: an ``InMemoryDataset`` (no ``transform``, not an index view) is converted from its collated ``_data``
and ``slices`` — every graph's tensors at once; any other dataset graph by graph (``dataset[i]``) and then PyG's
collate. The class's own split: ``train_mask`` / ``val_mask`` / ``test_mask`` of one graph become the node column
``split`` (scheme ``given``); conversion rules and checks: :func:`gnnbench.data.graph_import.to_columns`.

Raw files (no download runs code). A class reads the files it downloads into its raw folder in its ``process``
method, and several of PyG's classes unpickle them. Unless ``trust_raw`` is set, the class that defines the
``process`` the dataset uses (the first in its MRO) decides, by the table :mod:`gnnbench.data.pyg_raw`:

* audited (``AUDITED``: reads its raw files without running code) — used as it is;
* pinned (``PINNED``: the SHA-256 of each raw file) — the class is constructed as a thin subclass of the same name
  whose ``download`` first checks that every raw file it will fetch has a pin, and whose ``process`` first checks
  every raw file against its pin, so verification runs after PyG downloads and before it reads anything, also when
  the files were already there (offline);
* any other class of ``torch_geometric`` — refused by the suite check (ConfigError naming the dataset key), before
  anything is downloaded;
* any other class (the user's own ``process``) — refused by that thin subclass when the dataset has raw files
  (``raw_file_names``), before they are downloaded or read; a class without raw files, or without a ``process``
  (``FakeDataset``, ``KarateClub``), reads none.

When the processed files of an earlier run exist, PyG loads them instead of calling ``process`` (raw files are not
read). PyG 2.8 loads processed files with ``torch.load(weights_only=True)`` but falls back to an unrestricted
``torch.load`` when torch's allow-list refuses a global, and loads ``processed/pre_transform.pt`` and
``pre_filter.pt`` unrestricted: so while the class is constructed and its graphs are read, ``torch.load`` is
``weights_only=True`` whatever the caller asks (torch's ``TORCH_FORCE_WEIGHTS_ONLY_LOAD``, process-wide like the
seeding), and a file that this refuses is one line naming the dataset's folder.

Metadata (``describe``) comes from the converted data, so loading a suite constructs the class once (downloading
then, if the files are not there yet); the summary is kept per process (keyed by class, args, splits, task and seed),
so describing and building the same dataset in one process converts it once.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import logging
import os
import pickle
import random
import warnings
from pathlib import Path

import numpy as np

from gnnbench.data import pyg_raw
from gnnbench.data.generators.base import RAW_DIR, Generator
from gnnbench.data.graph_import import (
    GraphSummary,
    _pt_allowed,
    _reason,
    _Source,
    check_task,
    collate_graphs,
    from_pyg,
    to_columns,
)
from gnnbench.data.meta import DatasetMeta
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError, DataError, GnnbenchError
from gnnbench.io import sha256_file, sha256_json

log = logging.getLogger(__name__)

REFUSED_ARGS = ("root", "transform", "pre_transform", "pre_filter")
PARTS = ("train", "val", "test")
_SUMMARIES: dict[str, GraphSummary] = {}  # per process: see the module doc
_LAST: dict[str, GraphSummary] = {}  # the latest summary of the same parameters, any seed (default_split)


def class_path(name: str) -> tuple[str, str]:
    """(module, class name) of a ``class`` parameter."""
    if ":" in name:
        module, _, attr = name.partition(":")
    elif "." in name:
        module, _, attr = name.rpartition(".")
    else:
        module, attr = "torch_geometric.datasets", name
    return module, attr


def dataset_class(name: str, where: str) -> type:
    """The dataset class a suite names (module doc); a one-line ConfigError when it cannot be used."""
    module_name, attr = class_path(name)
    if not module_name or not attr or not all(part.isidentifier() for part in [*module_name.split("."), attr]):
        raise ConfigError(f"{where}: {name!r} is not a class path; write Planetoid, "
                          "torch_geometric.datasets.Planetoid or package.module:Class")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 — any failure of the user's module is reported in one line
        raise ConfigError(f"{where}: cannot import {module_name} ({_reason(exc)}); install the package or fix the "
                          "class path") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise ConfigError(f"{where}: module {module_name} has no {attr}; fix the class name")
    from torch_geometric.data import Dataset

    if not (inspect.isclass(cls) and issubclass(cls, Dataset)):
        raise ConfigError(f"{where}: {module_name}.{attr} is not a torch_geometric.data.Dataset subclass; name a "
                          "PyG dataset class")
    return cls


@contextlib.contextmanager
def _seeded(seed: int):
    """torch's, NumPy's and Python's global generators seeded with ``seed``; their states restored afterwards."""
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def qualified(cls: type) -> str:
    """``module.QualifiedName`` of a class (the key of :mod:`gnnbench.data.pyg_raw`)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def process_owner(cls: type) -> type | None:
    """The class whose ``process`` a dataset of class ``cls`` runs (the first in the MRO that defines one), or None
    when PyG calls none: the same rule as PyG's ``Dataset.has_process``."""
    from torch_geometric.data import Dataset, InMemoryDataset
    from torch_geometric.data.dataset import overrides_method

    if not overrides_method(cls, "process"):
        return None
    return next(c for c in cls.__mro__ if "process" in vars(c) and c not in (Dataset, InMemoryDataset))


def _check_reader(cls: type, params: dict, where: str) -> None:
    """Refuse a class of PyG whose ``process`` reads raw files that :mod:`gnnbench.data.pyg_raw` does not vouch for
    (module doc), before anything is downloaded."""
    owner = process_owner(cls)
    name = qualified(owner) if owner is not None else ""
    if (params["trust_raw"] or not name.startswith("torch_geometric.") or name in pyg_raw.AUDITED
            or name in pyg_raw.PINNED):
        return  # trusted, nothing read, vouched for, or the user's own process (checked when constructed)
    alternative = pyg_raw.ALTERNATIVES.get(name)
    raise ConfigError(f"{where}.class: {params['class']} is refused: its process ({name}) reads the raw files PyG "
                      f"downloads into {RAW_DIR / 'pyg' / cls.__name__}, and gnnbench neither knows it to read them "
                      "without running code (it may unpickle them) nor pins their checksums; "
                      f"{alternative + ', or ' if alternative else ''}set {where}.trust_raw: true if you trust the "
                      "files there")


def _raw_paths(dataset) -> list[Path]:
    try:
        return [Path(path) for path in dataset.raw_paths]
    except NotImplementedError:  # no raw_file_names: the class names no raw files
        return []


def _check_raw_files(dataset, owner: type, what: str, verify: bool) -> None:
    """Raise a DataError unless every raw file of ``dataset`` has a pin in :mod:`gnnbench.data.pyg_raw` (and, with
    ``verify``, the pinned SHA-256)."""
    paths = _raw_paths(dataset)
    if not paths:
        return
    name, folder = qualified(owner), Path(dataset.raw_dir)
    pins = pyg_raw.PINNED.get(name)
    if pins is None:
        raise DataError(f"{what}: refused: its process ({name}) reads raw files in {folder} that gnnbench can "
                        "neither verify nor knows to be read without running code; set params.trust_raw: true if "
                        "you trust the files there")
    unpinned = [path.name for path in paths if path.name not in pins]
    if unpinned:
        alternative = pyg_raw.ALTERNATIVES.get(name)
        raise DataError(f"{what}: refused: {name} unpickles its raw files and gnnbench pins no SHA-256 for "
                        f"{', '.join(unpinned)}; {alternative + ', or ' if alternative else ''}set "
                        f"params.trust_raw: true if you trust the files in {folder}")
    for path in paths if verify else []:
        got = sha256_file(path)
        if got != pins[path.name]:
            raise DataError(f"{what}: raw file {path} has SHA-256 {got}, expected the pinned {pins[path.name]}; it "
                            f"is not the published file, and {name} would unpickle it (which can run code): delete "
                            "it so that PyG downloads it again, or set params.trust_raw: true if you trust it")


def _guarded(cls: type, what: str) -> type:
    """``cls``, or a subclass of the same name whose ``download`` and ``process`` first check the raw files (module
    doc). PyG calls ``download`` / ``process`` only where a class overrides them: the subclass overrides no other."""
    from torch_geometric.data.dataset import overrides_method

    owner = process_owner(cls)
    if owner is None or qualified(owner) in pyg_raw.AUDITED:
        return cls

    def download(self) -> None:
        _check_raw_files(self, owner, what, verify=False)  # before a byte is fetched
        cls.download(self)

    def process(self) -> None:
        _check_raw_files(self, owner, what, verify=True)  # after download, before the class reads a file
        cls.process(self)

    namespace = {"process": process, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__doc__": cls.__doc__}
    if overrides_method(cls, "download"):
        namespace["download"] = download
    return type(cls.__name__, (cls,), namespace)


@contextlib.contextmanager
def _weights_only(what: str, root: Path):
    """Every ``torch.load`` reads with ``weights_only=True`` whatever its caller asks (module doc): torch's own switch,
    the environment variable ``TORCH_FORCE_WEIGHTS_ONLY_LOAD``, set meanwhile (and its opposite unset), with torch's
    process-wide allow-list (and what PyG registers) plus a pickled ``Data``'s classes
    (:func:`~gnnbench.data.graph_import.load_pt`'s). A file that this refuses raises a DataError naming the folder
    of the files read; the variables and the allow-list are restored afterwards."""
    import torch.serialization as serialization

    saved = {name: os.environ.pop(name, None) for name in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD",
                                                            "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")}
    allowed = serialization.get_safe_globals()
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    serialization.add_safe_globals(_pt_allowed())  # torch.save(data) in a process, as PyG's tutorial does
    try:
        with warnings.catch_warnings():  # PyG warns before its fallback, which refuses too: the error says it all
            warnings.filterwarnings("ignore", message="Weights only load failed")
            yield
    except pickle.UnpicklingError as exc:
        raise DataError(f"{what}: refused a file under {root}: torch.load(weights_only=True) cannot read it "
                        f"({_reason(exc)}), and PyG would load it without that restriction, which can run code the "
                        "file holds; delete the folder's processed/ files (and any raw file you do not trust) so "
                        "that PyG makes or downloads them again, or set params.trust_raw: true if you trust the files "
                        f"in {root}") from None
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
        serialization.clear_safe_globals()
        serialization.add_safe_globals(allowed)


def construct(cls: type, args: dict, seed: int, root: Path, src: _Source, trust_raw: bool = False):
    """``cls(**args)`` (with ``root`` when the constructor takes one), seeded; PyG's prints go to the log. Unless
    ``trust_raw``, the raw files are checked first (:func:`_guarded`)."""
    kwargs = dict(args)
    if "root" in inspect.signature(cls).parameters:
        kwargs["root"] = str(root)
    printed = io.StringIO()
    try:
        with _seeded(seed), contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            dataset = (cls if trust_raw else _guarded(cls, src.what))(**kwargs)
    except (GnnbenchError, pickle.UnpicklingError):  # refusals: named by _guarded, _weights_only
        raise
    except Exception as exc:  # noqa: BLE001 — a user's class may raise anything: one line, naming the class
        raise DataError(f"{src.what} failed ({_reason(exc)}); fix params.args (the class's constructor arguments), "
                        f"or make its files available under {root}") from None
    finally:
        if printed.getvalue().strip():
            log.info("%s: %s", src.what, " | ".join(printed.getvalue().split("\n")).strip(" |"))
    try:
        size = len(dataset)
    except Exception as exc:  # noqa: BLE001
        raise DataError(f"{src.what} has no length ({_reason(exc)}); name a PyG dataset class") from None
    if size < 1:
        raise DataError(f"{src.what} holds no graphs; check params.args")
    return dataset


def raw_columns(dataset, src: _Source) -> tuple[GraphColumns, list[str]]:
    """Raw columns of a constructed dataset: its collated tensors at once where PyG keeps them (an
    ``InMemoryDataset`` without transform or index view), else graph by graph."""
    from torch_geometric.data import Data, InMemoryDataset

    data = getattr(dataset, "_data", None)
    if (isinstance(dataset, InMemoryDataset) and isinstance(data, Data) and dataset.transform is None
            and getattr(dataset, "_indices", None) is None):
        return from_pyg(data, dataset.slices, src)
    return collate_graphs([dataset[i] for i in range(len(dataset))], src)  # fallback: per graph


def _describe_source(params: dict) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in params["args"].items())
    return f"PyG dataset {params['class']}({args})"


def _key(params: dict, seed: int | None) -> str:
    fields = {k: params[k] for k in ("class", "args", "splits", "task")}
    return sha256_json(fields if seed is None else {**fields, "seed": seed})


def convert(params: dict, seed: int, raw_dir: str | Path | None = None) -> tuple[GraphColumns, GraphSummary]:
    """Construct the dataset (each part of ``splits``) and convert it; the summary is kept for :func:`describe`.
    Unless ``trust_raw``, ``torch.load`` is restricted meanwhile (module doc): a dataset that is not in memory loads
    its graphs while it is converted."""
    cls = dataset_class(params["class"], "params.class")
    root = Path(RAW_DIR if raw_dir is None else raw_dir) / "pyg" / cls.__name__
    src = _Source(_describe_source(params), "its data does not fit gnnbench's graph store "
                  "(docs/datasets.md#your-own-dataset); set task, or use a subclass that prepares the data")
    trust = params["trust_raw"]
    with contextlib.nullcontext() if trust else _weights_only(src.what, root):
        if not params["splits"]:
            raw, notes = raw_columns(construct(cls, params["args"], seed, root, src, trust), src)
        else:
            parts = []
            for part in PARTS:
                part_src = _Source(f"{src.what[:-1]}, {part} part {params['splits'][part]})", src.fix)
                part_raw, notes = raw_columns(construct(cls, {**params["args"], **params["splits"][part]}, seed,
                                                        root, part_src, trust), part_src)
                if "split" in part_raw.node:
                    raise part_src.error("holds one graph with its own node split (masks)",
                                         "drop splits: the masks are used with scheme given")
                parts.append(part_raw)
    if params["splits"]:
        raw = _concat(parts, src)
        raw.graph["split"] = np.repeat(np.arange(len(PARTS), dtype=np.int8), [p.num_graphs for p in parts])
        notes = [*notes, "graphs stored train, val, test (the class's parts by params.splits); graph column split"]
    columns, summary = to_columns(raw, params["task"], src, notes)
    _SUMMARIES[_key(params, seed)] = _LAST[_key(params, None)] = summary
    return columns, summary


def _concat(parts: list[GraphColumns], src: _Source) -> GraphColumns:
    layouts = {(tuple(sorted(p.node)), tuple(sorted(p.edge)), tuple(sorted(p.graph))) for p in parts}
    if len(layouts) != 1:
        raise src.error("the train, val and test parts have different attributes")
    try:
        return GraphColumns.concat(parts)
    except ValueError as exc:
        raise src.error(f"the train, val and test parts do not fit together ({_reason(exc)})") from None


def summary(params: dict, seed: int) -> GraphSummary:
    """The dataset's summary: kept from this process's conversion, else converted now (raw files under
    ``resources/raw``)."""
    found = _SUMMARIES.get(_key(params, seed))
    return found if found is not None else convert(params, seed)[1]


def _build(params: dict, seed: int, raw_dir: Path) -> GraphColumns:
    return convert(params, seed, raw_dir)[0]


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description, from the converted data (the class is constructed once per process)."""
    import torch_geometric

    module, attr = class_path(params["class"])
    source = {"generator": "pyg", "seed": seed, "params": params, "class": f"{module}.{attr}",
              "torch_geometric": torch_geometric.__version__}
    return summary(params, seed).meta(name, source)


def _default_split(params: dict) -> dict:
    """The class's own split when it has one (masks, or ``splits``); else the protocol-neutral scheme of the task
    (random_per_class for one graph, stratified_kfold for graph labels)."""
    if params["splits"]:
        return {"scheme": "given"}
    return (_LAST.get(_key(params, None)) or summary(params, 0)).default_split()


def _check(params: dict, where: str) -> None:
    if not params["class"]:
        raise ConfigError(f"{where}.class: generator pyg needs the dataset class, e.g. class: Planetoid (or "
                          "package.module:Class)")
    _check_reader(dataset_class(params["class"], f"{where}.class"), params, where)
    for key in params["args"]:
        if not isinstance(key, str):
            raise ConfigError(f"{where}.args: argument names must be strings, got {key!r}")
        if key in REFUSED_ARGS:
            why = ("gnnbench sets it to resources/raw/pyg/<Class>" if key == "root" else
                   "a suite holds data, not code: subclass the dataset and name it as package.module:Class")
            raise ConfigError(f"{where}.args.{key}: not accepted ({why}); remove it")
    if params["splits"]:
        if sorted(params["splits"]) != sorted(PARTS) or not all(isinstance(v, dict) for v in
                                                                 params["splits"].values()):
            raise ConfigError(f"{where}.splits: expected a mapping train / val / test -> constructor arguments, e.g. "
                              "{train: {split: train}, val: {split: val}, test: {split: test}}")
        refused = [k for v in params["splits"].values() for k in v if k in REFUSED_ARGS]
        if refused:
            raise ConfigError(f"{where}.splits: argument {refused[0]} is not accepted; remove it")
    check_task(params["task"], where)


PYG = Generator(
    name="pyg",
    description="any PyTorch Geometric dataset class (class: Planetoid, args: {name: Cora}), converted once into "
                "the graph store; its own split (masks, or the parts named by splits) when it has one",
    defaults={"class": "", "args": {}, "splits": {}, "task": "", "trust_raw": False},
    default_split=_default_split,
    describe=describe,
    build=_build,
    check=_check,
    raw_files=lambda params: [],  # nothing gnnbench downloads; build gets the raw folder for PyG's root
)
