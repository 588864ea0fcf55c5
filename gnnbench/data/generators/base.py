"""What a dataset generator is (:class:`Generator`), the released splits it may name (:class:`PublishedSplit`) and
the default cache of raw downloads: the generators' modules build on these, and the registry
(:mod:`gnnbench.data.generators`) lists them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnnbench.data.download import RawFile
from gnnbench.data.meta import DatasetMeta
from gnnbench.data.store import GraphColumns

RAW_DIR = Path("resources/raw")  # default download cache of raw files (raw_dir/<source>/<file>)


class NonNegative(float):
    """Marks a generator default as a real number ≥ 0 (e.g. an average degree); a plain float default is a
    probability in [0, 1]."""


@dataclass(frozen=True)
class Generator:
    """A dataset generator: its parameters with their defaults, its default split, and the functions that describe
    the dataset (without making it), build its graph columns and name the raw files it needs."""

    name: str
    description: str
    defaults: dict[str, Any]  # every parameter with its default; the default's type is the expected type (int:
    # a count ≥ 1, or ≥ 0 when the default is 0; float: a probability in [0, 1]; NonNegative: a real number ≥ 0)
    # split scheme (and its parameters) used when the config names none; a function of the parameters where they
    # decide it (released: the given split, CSL's published folds)
    default_split: dict[str, Any] | Callable[[dict], dict[str, Any]]
    describe: Callable[[str, dict, int], DatasetMeta]  # metadata without generating (validation, counts)
    build: Callable[..., GraphColumns]  # (params, seed), or (params, seed, raw_dir) when raw_files is set
    check: Callable[[dict, str], None] | None = None  # constraints between parameters; raises ConfigError
    raw_files: Callable[[dict], list[RawFile]] | None = None  # raw files needed (fetched into raw_dir before build)
    # the split files a paper released for (params, source) — split scheme "published"; None: the dataset has none
    published_splits: Callable[[dict, str], PublishedSplit | None] | None = None
    # parameters naming a user's file: a relative path is relative to the suite file's folder (resolve_params)
    path_params: tuple[str, ...] = ()
    # files outside the raw cache the dataset is made from (a user's graph file): inputs of the workflow's dataset job
    input_files: Callable[[dict], list[str]] | None = None
    # a dataset made in shards, one workflow job each, then merged (instead of one build job)
    sharding: Sharding | None = None
    # non-learnt baselines scored on the dataset like a run and reported beside the models in its table
    baselines: tuple[Baseline, ...] = ()


@dataclass(frozen=True)
class Sharding:
    """How a generator makes a dataset in shards, so that a cluster spreads the expensive part (TSP: solving every
    instance). ``count(params)`` shards; ``label(params, seed, shard, out, workers)`` writes shard ``shard``'s file
    atomically; ``merge(params, seed, files)`` builds the dataset's graph columns from every shard's file (and
    refuses files of other parameters, a missing shard or one given twice)."""

    count: Callable[[dict], int]
    label: Callable[..., None]
    merge: Callable[[dict, int, list], GraphColumns]


@dataclass(frozen=True)
class Baseline:
    """A non-learnt baseline a generator's datasets are reported with: ``name`` names its files (``results/baselines
    /{dataset}/{name}.json`` and its run record); ``method`` is one of :data:`gnnbench.baselines.METHODS`, called with
    ``params``."""

    name: str
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class PublishedSplit:
    """A split released with a paper: its files (raw downloads, in the order the source's reader takes them —
    :func:`gnnbench.splits.read_published_folds`) and how many folds the release has."""

    files: tuple[RawFile, ...]
    folds: int
