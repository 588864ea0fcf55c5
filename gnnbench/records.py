"""One run record for every protocol: one schema, one writer, one reader.

Every job of every protocol writes the runs it trained as one Parquet file in the schema :data:`SCHEMA`, under
``results/records/{protocol}/{dataset}/{model}/{job}.parquet`` (:data:`gnnbench.paths.RECORD_FILE`). Every run of a
results folder is then one call:

    import pandas as pd
    runs = pd.read_parquet("results/records")          # every protocol, dataset, model and job

One row is one training run:

- ``run_id``: hash of (protocol, dataset, model, stage, split, seed, init, config_id): unique per run
- ``protocol``: the protocol that trained it (``benchmarking-gnns``, ``pitfalls``, ``fair-comparison``)
- ``dataset``, ``model``: the dataset and the suite's model label
- ``architecture``: the model family (config key ``model``); ``variant`` which paper's layers (may be null)
- ``stage``: ``run`` (a scored run), ``inner`` (a model-selection run), ``final`` (a final run), ``trial`` (a
  trial of a hyper-parameter search: :mod:`gnnbench.tuning.record`; never scored on test)
- ``split``: the P1 fold, the P2 random split, the P3 outer fold
- ``split_scheme``: how the dataset was split (:mod:`gnnbench.splits`: P1 ``given``, ``stratified_kfold``,
  ``published``; P2 ``random_per_class``, ``random_sizes``, ``given``; P3 ``stratified_kfold``, ``published``)
- ``seed``: the seed the run trained with
- ``init``: the P2 initialisation, the P3 final-run index, else 0
- ``config_id``, ``config``: hash and JSON of the run's full config
- ``metric``: the score's name (accuracy, MAE, F1, Hits@50, ...); ``higher_is_better`` its direction
- ``train/val/test``: ``{part}_score`` and ``{part}_loss``: the scored epoch's values; null where the part is not
  scored (inner runs have no test part) or the run diverged
- ``epochs``: epochs trained; ``scored_epoch`` the epoch whose weights were scored (P1: the last; P2, P3: the early-
  stopping epoch), ``stop_reason`` why training stopped
- ``status``: ``completed`` or ``diverged`` (a NaN or infinite loss at ``diverged_epoch``)
- ``num_params``: trainable parameters (null where the job does not count them)
- ``seconds``: seconds of the run (P1: the whole run, setup and final scoring included); ``device`` what it ran on;
  ``versions`` JSON of packages
- ``extra``: JSON of a protocol's own values (null where it has none): P1 ``seconds_per_epoch`` (seconds of the
  training epochs over their count, without setup and scoring) and, for multitask datasets, ``per_task`` (part ->
  [[task, score], ...] in the metric's order); a trial ``search``, ``round``, ``trial`` (its 0-based number in
  the search), ``params`` (the sampled values) and ``pruned_epoch`` (0-based epoch after which it was pruned, or
  null)

Scores are as each protocol reports them: accuracies in percent for P2 and P3, the dataset's metric for P1
(:mod:`gnnbench.training.metrics`).

The history record. Each job also writes the per-epoch history of its runs, one row per run and epoch in the schema
:data:`HISTORY_SCHEMA`, at the record's path with its ``records`` folder replaced by ``histories``
(:func:`history_path`; in the workflow ``results/histories/{protocol}/{dataset}/{model}/{job}.parquet``,
:data:`gnnbench.paths.HISTORY_RECORD_FILE`), so that ``pd.read_parquet("results/records")`` stays one schema:

- ``run_id``: the run's record (join on it for the model, seed, split, metric, ...)
- ``epoch``: 0-based; ``lr`` the learning rate the epoch trained with
- ``train/val/test``: ``{part}_loss`` and ``{part}_score`` after the epoch, in the record's units; null where the
  epoch was not evaluated (after a non-finite training loss) or the job does not compute it (P2 keeps the training
  and validation losses and the validation accuracy; model-selection runs have no test part)
- ``seconds``: seconds of the epoch (null where the job does not time epochs)

P1: every epoch of the run. P2: every epoch of every split × initialisation (the learning rate is the config's, which
the protocol never changes; label propagation has none). P3: every epoch of each model-selection and final run, up
to its own stop. A baseline that trains no epoch has no rows.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from gnnbench.errors import DataError, GnnbenchError
from gnnbench.io import atomic_path, sha256_json
from gnnbench.models.registry import resolve

STAGES = ("run", "inner", "final", "trial")
PARTS = ("train", "val", "test")
SCHEMA = pa.schema([
    ("run_id", pa.string()), ("protocol", pa.string()), ("dataset", pa.string()), ("model", pa.string()),
    ("architecture", pa.string()), ("variant", pa.string()), ("stage", pa.string()), ("split", pa.int64()),
    ("split_scheme", pa.string()), ("seed", pa.int64()), ("init", pa.int64()), ("config_id", pa.string()),
    ("config", pa.string()),
    ("metric", pa.string()), ("higher_is_better", pa.bool_()),
    *((f"{part}_{what}", pa.float64()) for what in ("score", "loss") for part in PARTS),
    ("epochs", pa.int64()), ("scored_epoch", pa.int64()), ("stop_reason", pa.string()), ("status", pa.string()),
    ("diverged_epoch", pa.int64()), ("num_params", pa.int64()), ("seconds", pa.float64()), ("device", pa.string()),
    ("versions", pa.string()), ("extra", pa.string()),
])
COLUMNS = tuple(SCHEMA.names)
HISTORY_SCHEMA = pa.schema([("run_id", pa.string()), ("epoch", pa.int64()), ("lr", pa.float64()),
                            *((f"{part}_{what}", pa.float64()) for part in PARTS for what in ("loss", "score")),
                            ("seconds", pa.float64())])
HISTORY_COLUMNS = tuple(HISTORY_SCHEMA.names)
HISTORY_SUFFIX = ".history.parquet"  # the history of a record outside a ``records`` folder (history_path)
_FLOATS = {f.name for f in SCHEMA if pa.types.is_floating(f.type)}
_INTS = {f.name for f in SCHEMA if pa.types.is_integer(f.type)}


def config_json(config: dict) -> str:
    """A config as the record stores it: JSON with sorted keys (the P3 selection files' spelling)."""
    return json.dumps(config, sort_keys=True, default=str)


def config_id(config: dict) -> str:
    """The hash that names a config (its first 16 hex digits; fair-comparison's grid points use the same)."""
    return sha256_json(config)[:16]


def record(*, protocol: str, dataset: str, model: str, config: dict, stage: str = "run", split: int = 0,
           seed: int | None = None, init: int = 0, versions: dict | str | None = None, extra: dict | None = None,
           default_variant: str | None = None, **fields) -> dict:
    """One row of :data:`SCHEMA`: the given fields, the rest null; ``architecture`` defaults to the config's
    ``model``, ``variant`` to the registered variant the config resolves to under the protocol's
    ``default_variant`` (:func:`gnnbench.models.registry.resolve`), ``config_id`` to the config's hash; NaN scores
    and losses become null (not scored, or diverged); ``extra`` (a mapping, or None) is stored as JSON."""
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r}: expected one of {', '.join(STAGES)}")
    unknown = set(fields) - set(COLUMNS)
    if unknown:
        raise ValueError(f"not a run-record column: {', '.join(sorted(unknown))}")
    seed = config.get("seed", 0) if seed is None else seed
    row = {name: None for name in COLUMNS}
    row.update(fields)
    row.update({"protocol": protocol, "dataset": dataset, "model": model, "stage": stage, "split": int(split),
                "seed": int(seed), "init": int(init), "config": config_json(config)})
    row["architecture"] = row["architecture"] or config.get("model")
    row["variant"] = row["variant"] or config.get("variant") or _variant(config, default_variant)
    row["config_id"] = row["config_id"] or config_id(config)
    row["versions"] = versions if isinstance(versions, str) or versions is None else json.dumps(versions,
                                                                                                sort_keys=True)
    row["extra"] = None if extra is None else json.dumps(extra, sort_keys=True)
    for name in _FLOATS:
        value = row[name]
        row[name] = None if value is None or not math.isfinite(float(value)) else float(value)
    for name in _INTS:
        row[name] = None if row[name] is None else int(row[name])
    row["run_id"] = sha256_json({k: row[k] for k in ("protocol", "dataset", "model", "stage", "split", "seed",
                                                     "init", "config_id")})[:16]
    return row


def _variant(config: dict, default_variant: str | None) -> str | None:
    """The variant (which paper's layers) a config's model resolves to; None where it resolves to none."""
    if default_variant is None or "model" not in config:
        return None

    try:
        return resolve(config, default_variant).variant
    except GnnbenchError:
        return None


def write_records(path: str | os.PathLike, rows: list[dict], history=None) -> None:
    """Write one job's run records (rows made by :func:`record`) atomically, in the fixed :data:`SCHEMA`; with
    ``history`` (a DataFrame of :func:`history` rows, or a list of them, empty for runs that train no epoch) also the
    job's history record at :func:`history_path`, first, so that a job whose record exists has its history."""
    path = Path(path)
    if history is not None:
        import pandas as pd

        frames = history if isinstance(history, list) else [history]
        frame = pd.concat(frames, ignore_index=True) if frames else history_frame([], "")
        target = history_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as tmp:
            pq.write_table(pa.Table.from_pandas(frame[list(HISTORY_COLUMNS)], schema=HISTORY_SCHEMA,
                                                preserve_index=False), tmp)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in rows], schema=SCHEMA), tmp)


def history_path(record_path: str | os.PathLike) -> Path:
    """The history record of a run-record file: the same path with its last folder named ``records`` replaced by
    ``histories`` (``results/records/p/d/m/job.parquet`` → ``results/histories/p/d/m/job.parquet``; the command
    line's ``OUT/records/run.parquet`` → ``OUT/histories/run.parquet``); a record outside any ``records`` folder has
    its history beside it as ``{name}.history.parquet``, which :func:`read_runs` skips."""
    path = Path(record_path)
    parts = path.parts
    if "records" in parts[:-1]:
        i = len(parts) - 2 - parts[-2::-1].index("records")
        return Path(*parts[:i], "histories", *parts[i + 1:])
    return path.with_name(f"{path.stem}{HISTORY_SUFFIX}")


def history_frame(epochs, run_id, score: str = "metric", lr: float | None = None):
    """The history rows (:data:`HISTORY_COLUMNS`) of per-epoch values ``epochs`` (a DataFrame, or anything it is
    made from: a list of rows, a mapping of columns) of the run(s) ``run_id`` (one id, or one per row): columns
    ``epoch``, ``lr``, ``{part}_loss``, ``{part}_{score}`` (the job's name of the score: ``metric``, ``accuracy``)
    and ``seconds`` are taken as they are, an absent one is null (NaN); ``lr`` fills an absent learning rate."""
    import numpy as np
    import pandas as pd

    epochs = (epochs if isinstance(epochs, pd.DataFrame) else pd.DataFrame(epochs)).reset_index(drop=True)
    rows = len(epochs)
    ids = [run_id] * rows if isinstance(run_id, str) else list(run_id)
    out = pd.DataFrame({"run_id": pd.Series(ids, dtype=object),
                        "epoch": epochs["epoch"].to_numpy(dtype=np.int64) if rows else np.zeros(0, np.int64)})
    for column in HISTORY_COLUMNS[2:]:
        part, _, what = column.partition("_")
        source = f"{part}_{score}" if what == "score" else column
        default = lr if column == "lr" else None
        out[column] = epochs[source].to_numpy(dtype=float) if source in epochs else np.full(
            rows, np.nan if default is None else default, dtype=float)
    return out


def read_tables(files: list[str | os.PathLike], what: str = "run-record", schema: pa.Schema | None = None):
    """The Parquet files of jobs (``what`` names them in errors: "run-record", "runs", "final-runs"), concatenated in
    the given order as one DataFrame; a missing or unreadable file is a one-line DataError naming it."""
    tables = []
    for path in map(Path, files):
        if not path.is_file():
            raise DataError(f"{what} file {path} does not exist; run snakemake for it")
        try:
            missing = [] if schema is None else [n for n in schema.names if n not in pq.read_schema(path).names]
            tables.append(pq.read_table(path, schema=schema))
        except (pa.ArrowException, OSError) as exc:
            raise DataError(f"{what} file {path} is corrupt ({str(exc).splitlines()[0]}); delete it and rerun "
                            "snakemake for that job") from None
        if missing:  # Parquet would read an absent column as nulls: a file of an older schema, not a run's values
            raise DataError(f"{what} file {path} has no column {', '.join(missing)} (written by an older gnnbench); "
                            "delete it and rerun snakemake for that job")
    if not tables:
        import pandas as pd

        return pd.DataFrame({name: pd.Series(dtype=object) for name in (schema.names if schema else ())})
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def read_runs(source: str | os.PathLike | list[str | os.PathLike]):
    """Every run record under a folder (e.g. ``results/records``: all of them), or of the given record files in
    their order, as one DataFrame with the :data:`SCHEMA` columns."""
    return read_tables(record_files(source), "run-record", SCHEMA)


def record_files(source: str | os.PathLike | list[str | os.PathLike]) -> list[Path]:
    """The run-record files :func:`read_runs` reads: those under a folder (sorted; no history files), or the given
    file(s)."""
    return [Path(p) for p in _files(source, skip=HISTORY_SUFFIX)]


def read_histories(source: str | os.PathLike | list[str | os.PathLike]):
    """Every history record under a folder (e.g. ``results/histories``), or of the given history files in their
    order, as one DataFrame with the :data:`HISTORY_SCHEMA` columns (join it with :func:`read_runs` on ``run_id``)."""
    return read_tables(_files(source), "history", HISTORY_SCHEMA)


def _files(source, skip: str | None = None) -> list:
    """The Parquet files under a folder (sorted; hidden ones and, with ``skip``, names ending in it left out), or the
    given file(s)."""
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        return sorted(p for p in Path(source).rglob("*.parquet") if not p.name.startswith((".", "_"))
                      and not (skip and p.name.endswith(skip)))
    return [source] if isinstance(source, (str, os.PathLike)) else list(source)


def extras(runs) -> list[dict]:
    """The ``extra`` column of read records as mappings (an empty one where it is null), in row order."""
    return [json.loads(value) if isinstance(value, str) else {} for value in runs["extra"]]
