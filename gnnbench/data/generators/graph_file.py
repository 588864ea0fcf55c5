"""Graphs a user already has, from one file (generator ``graph_file``).

Parameters
    ``path``  the file: ``.pt`` (``torch.save`` of a list of PyG ``Data``) or ``.parquet`` (one row per graph, the
              graph store's columns). In a suite, a relative path is relative to the suite file's folder; on the
              command line (``gnnbench generate graph_file --set path=...``), to the working directory. Formats,
              the allow-list of the ``.pt`` reader and the conversion: :mod:`gnnbench.data.graph_import`.
    ``task``  overrides the task inferred from the labels (node_classification, graph_classification,
              graph_regression, edge_classification).

The file is an input of the workflow's dataset job (a changed file makes the dataset again). ``meta.json`` records
the file's SHA-256 (``source.file_sha256``). Metadata (``describe``) comes from the converted file, kept per process
while the file is unchanged (same size and modification time), so loading a suite reads the file once. ``seed`` is not
used.
"""

from __future__ import annotations

import os
from pathlib import Path

from gnnbench.data.generators.base import Generator
from gnnbench.data.graph_import import (
    PARQUET_SUFFIXES,
    PT_SUFFIXES,
    GraphSummary,
    check_task,
    read_graph_file,
)
from gnnbench.data.meta import DatasetMeta
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError
from gnnbench.io import sha256_file

_SUMMARIES: dict[tuple, tuple[GraphSummary, str]] = {}  # per process: (summary, file SHA-256) by file state


def _state(params: dict) -> tuple:
    path = Path(params["path"])
    try:
        stat = path.stat()
        return str(path.absolute()), stat.st_size, stat.st_mtime_ns, params["task"]
    except OSError:
        return str(path.absolute()), None, None, params["task"]


def convert(params: dict) -> tuple[GraphColumns, GraphSummary]:
    """The file's store columns and summary (the summary kept for :func:`describe`)."""
    state = _state(params)
    columns, summary = read_graph_file(params["path"], params["task"])
    _SUMMARIES[state] = (summary, sha256_file(params["path"]))
    return columns, summary


def _build(params: dict, seed: int) -> GraphColumns:
    return convert(params)[0]


def describe(name: str, params: dict, seed: int) -> DatasetMeta:
    """The dataset's description, from the converted file (read once per process while it is unchanged)."""
    found = _SUMMARIES.get(_state(params))
    if found is None:
        convert(params)
        found = _SUMMARIES[_state(params)]
    summary, sha256 = found
    source = {"generator": "graph_file", "seed": seed, "params": params, "file_sha256": sha256}
    return summary.meta(name, source)


def _default_split(params: dict) -> dict:
    """The file's own split when it has one (column ``split``); else random_per_class for one graph,
    stratified_kfold for graph labels."""
    found = _SUMMARIES.get(_state(params))
    return (found[0] if found is not None else convert(params)[1]).default_split()


def _check(params: dict, where: str) -> None:
    path = params["path"]
    if not path:
        raise ConfigError(f"{where}.path: generator graph_file needs the file, e.g. path: my_graphs.pt (relative to "
                          "the suite file)")
    if os.path.splitext(path)[1].lower() not in PT_SUFFIXES + PARQUET_SUFFIXES:
        raise ConfigError(f"{where}.path: {path!r} is neither a .pt file (a list of PyG Data) nor a .parquet file "
                          "(graph store columns); see docs/datasets.md#graphs-you-already-have")
    check_task(params["task"], where)


GRAPH_FILE = Generator(
    name="graph_file",
    description="graphs you already have: a .pt list of PyG Data or a .parquet file in the graph store's columns "
                "(path relative to the suite file); its own split when it has one",
    defaults={"path": "", "task": ""},
    default_split=_default_split,
    describe=describe,
    build=_build,
    check=_check,
    path_params=("path",),
    input_files=lambda params: [params["path"]],
)
