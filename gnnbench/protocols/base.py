"""What a protocol is, for the suite and the workflow.

A protocol answers "how are models compared fairly": which split schemes it evaluates on, what one run (one
training job) is, when training stops and which weights are scored, and how runs aggregate into tables. A suite's
benchmark block names its protocol (``protocol: pitfalls``; default ``benchmarking-gnns``); the protocol turns the
block into a :class:`Benchmark` — the models with resolved configs and the run grid — which lists the files the
workflow must produce. Shared code (store, batching, models, training loops, checkpoints) knows no protocol; each
protocol composes them in its own module.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from gnnbench.errors import ConfigError


@dataclass
class ModelSpec:
    label: str
    preset: str | None
    config: dict  # resolved run config (the run's seed is filled in per run where the protocol has seeds)


@dataclass
class Benchmark(ABC):
    """The runs a benchmark block of a suite asks for: one dataset, its models, the protocol's run grid."""

    dataset: str
    protocol: str
    models: dict[str, ModelSpec] = field(default_factory=dict)

    @abstractmethod
    def run_files(self) -> list[str]:
        """The training outputs of every model (what the tables are made from)."""

    @abstractmethod
    def table_files(self) -> list[str]:
        """The per-dataset reports: tables (and plots)."""


def model_entries(entry: dict, where: str, protocol: str, why_no_budget: str):
    """For every model of a benchmark block: (label, its entry as a mapping, its config overrides — the block's
    ``set``, then the model's own ``set`` and ``model`` — and where it sits in the suite). Protocols that take
    published configs refuse a parameter budget (``why_no_budget`` says why)."""
    shared = entry.get("set") or {}
    for label, model in entry["models"].items():
        model_where = f"{where}.models.{label}"
        model = {"preset": model} if isinstance(model, str) else model
        if "seeds" in model:
            raise ConfigError(f"{model_where}.seeds: per-model seeds belong to protocol benchmarking-gnns; protocol "
                              f"{protocol} seeds its runs itself")
        for key in ("budget", "layers"):
            if key in model:
                raise ConfigError(f"{model_where}.{key}: protocol {protocol} {why_no_budget}; parameter budgets "
                                  "belong to protocol benchmarking-gnns")
        own = {**shared, **(model.get("set") or {})}
        if "model" in model:
            own["model"] = model["model"]
        yield label, model, own, model_where


class Protocol(ABC):
    name: str
    title: str
    split_schemes: tuple[str, ...]  # split schemes this protocol evaluates on

    @abstractmethod
    def default_split(self, dataset) -> dict:
        """The split config used when the dataset entry names none."""

    @abstractmethod
    def check_dataset(self, dataset, where: str) -> None:
        """Raise a ConfigError when the protocol cannot evaluate on this dataset."""

    @abstractmethod
    def benchmark(self, dataset, entry: dict, where: str) -> Benchmark:
        """Resolve a benchmark block of the suite (models, run grid) for ``dataset`` (a DatasetSpec)."""

    def check_suite(self, benchmarks: list[Benchmark], all_benchmarks: dict[str, Benchmark]) -> None:  # noqa: B027
        """Checks across this protocol's benchmarks of a suite (none by default)."""

    def suite_files(self, benchmarks: list[Benchmark]) -> list[str]:
        """Reports spanning every benchmark of this protocol in a suite (none by default)."""
        return []

    def check_split(self, dataset, where: str) -> None:
        scheme = dataset.split["scheme"]
        if scheme not in self.split_schemes:
            raise ConfigError(f"{where}: protocol {self.name} evaluates on split schemes "
                              f"{', '.join(self.split_schemes)}, but dataset {dataset.name} is split by {scheme}; "
                              f"change datasets.{dataset.name}.split.scheme or the protocol")
