"""The seeds of one benchmarking-gnns config on one fold trained in one job (Dwivedi et al., Appendix C: every
configuration is run with 4 seeds; docs/protocols/benchmarking-gnns.md#seeds-in-one-job-seeds_per_job-and-stack).

:func:`train_seeds` loads the dataset, split part, positional encodings and evaluation loaders once and trains the
seeds' runs in one process, in one of two ways:

* **wide stack** (``stack=True``; by default on CUDA, where the model widens): the seeds' models, each built
  exactly as its separate run builds it (its own seed → its own initial weights), are laid side by side in one
  :class:`~gnnbench.training.wide.WideStack` and trained by one forward/backward per mini-batch with a
  :class:`~gnnbench.training.wide.WideOptimizer` (Adam with a per-member learning rate). Every member keeps its own
  run: its own ReduceLROnPlateau on its own validation loss (its learning rate), its own stop (lr below ``min_lr``,
  ``epochs``, the time budget, divergence) after which it leaves the stack, its own last-epoch scores (re-evaluated
  alone after it leaves), history, ``metrics.json``, checkpoint and run record, written where its separate run
  writes them. **The one departure from separate runs: the members share one mini-batch order**
  (docs/protocols/benchmarking-gnns.md#seeds-trained-as-one-stack), the first seed's
  stream (its shuffling generator; the global RNG — positional-encoding sign flips, dropout masks — continues from
  the first seed's too). A separate run draws its own order from its seed; so a member equals the run of its seed
  trained alone on the first seed's batch order (in float64 without dropout up to rounding:
  ``tests/test_p1_seed_stack.py``), and the spread over seeds no longer includes the batch order's part. With
  dropout the members' masks are drawn together (one draw for the stack), so they differ from a separate run's.
  ``metrics.json`` records the stack (``stack``: seeds, batch-order seed); the checkpoint key includes it, so a
  separate run never resumes a stack member's checkpoint or the other way round. Times (``seconds`` per epoch,
  the time budget) are wall-clock times of the stack's epochs: what the member's run took.
* **one after another** (``stack=False``, by default on CPU, and the fallback): when the model does not widen
  (:class:`~gnnbench.training.wide.NotWidenable`, logged with its reason), for one graph with node splits (WikiCS),
  the original dense schedule and link prediction, the seeds train one after another in the same process, each
  exactly its separate run (own batch order, same checkpoint key and outputs).

Why one after another on CPU by default: there the P1 models are bound by arithmetic and memory traffic, not by
per-operation overhead, and their wide forms (grouped products over strided member blocks) cost about as much per
member as the separate models, with more peak memory (``benchmarks/p1_seed_stack_speed.py``; the figures are on the
docs/performance.md page). That does not pay for the shared batch order; the job's real gain on CPU is sharing one
process (interpreter, imports, the dataset, warm caches), which one after another has too, with exact separate-run
results. On CUDA a ZINC-sized batch is bound by kernel launches, which a stack shares; that is where the wide stack
is the default.

Pre-emption: every member's checkpoint is written after each epoch (its weights, run state, schedule, the shared
shuffling RNG and the stack's optimiser state). A rerun resumes the stack when the checkpoints of its running
members agree (same epoch, same members); a member that had finished is restored from its finished checkpoint (final
weights, history) and its outputs are rewritten without training. Otherwise (a rerun of a finished job included, as
for a separate run) the stack starts afresh.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from gnnbench.training import wide as _wide
from gnnbench.training.checkpoint import CHECKPOINT_FILE
from gnnbench.training.engine import (
    Checkpoint,
    PerMember,
    PlateauSchedule,
    Run,
    SingleStep,
    Step,
    fit_or_resume,
    make_optimizer,
    payload,
    stoppable,
)
from gnnbench.training.last_epoch import (
    _HISTORY_SCHEMA,
    RunData,
    count_parameters,
    final_results,
    load_run_data,
    log_epoch,
    p1_rules,
    resume_note,
    train_one,
    write_outputs,
)
from gnnbench.training.loop import evaluate_members, train_epoch_members
from gnnbench.training.metrics import get_metric
from gnnbench.training.preemption import StopOnSignal

log = logging.getLogger(__name__)
STACK_CHECKPOINT = "stack_checkpoint.pt"  # in the first seed's run folder: the whole stack's state


def train_seeds(*, dataset_dir, splits_path, fold: int, config: dict, seeds: Sequence[int],
                out_dirs: Sequence, pe_path=None, device: str = "auto", threads: int | None = None,
                label: str | None = None, time_limit_hours: float | None = None,
                stack: bool | None = None) -> list[dict]:
    """Train the runs of ``config`` with each of ``seeds`` on ``fold`` in this process (module docstring) and write
    each run's outputs in its ``out_dirs`` entry; returns their ``metrics.json`` contents in the seeds' order.
    ``stack``: True a wide stack (where the model widens), False one after another, None the device's default (wide
    on CUDA, one after another on CPU).

    Raises :class:`~gnnbench.training.preemption.Preempted` on SIGTERM, naming the checkpoints a rerun resumes from.
    """
    seeds, out_dirs = [int(s) for s in seeds], [Path(d) for d in out_dirs]
    if len(seeds) != len(out_dirs) or len(set(seeds)) != len(seeds) or not seeds:
        raise ValueError(f"train_seeds needs distinct seeds and one output folder each; got seeds {seeds} and "
                         f"{len(out_dirs)} folder(s)")

    def note() -> str:
        stacked = out_dirs[0] / STACK_CHECKPOINT
        return "; ".join(f"seed {s}: {resume_note(stacked if stacked.is_file() else d / CHECKPOINT_FILE)}"
                         for s, d in zip(seeds, out_dirs, strict=True))

    return stoppable(lambda guard: _train_seeds(
        guard, dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config, seeds=seeds,
        out_dirs=out_dirs, pe_path=pe_path, device=device, threads=threads, label=label,
        time_limit_hours=time_limit_hours, stack=stack), note)


def stackable(data: RunData) -> str | None:
    """Why the seeds of ``data``'s config cannot train as a wide stack (None: they can try)."""
    if data.meta.transductive:
        return "one graph with node splits trains full-batch, one run at a time"
    if data.original_schedule:
        return "dense_schedule: original trains one graph per step, one run at a time"
    return None


def _train_seeds(guard: StopOnSignal, *, dataset_dir, splits_path, fold, config, seeds, out_dirs, pe_path, device,
                 threads, label, time_limit_hours, stack) -> list[dict]:
    setup_start = time.perf_counter()
    data = load_run_data(dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config,
                         pe_path=pe_path, device=device, threads=threads, time_limit_hours=time_limit_hours)
    cfgs = [{**data.cfg, "seed": seed} for seed in seeds]
    if stack is None:  # the device's default (module docstring)
        stack = data.dev.type == "cuda"
        reason = None if stack else "on CPU a wide stack is no faster (gnnbench.training.last_epoch_stack)"
    else:
        reason = None if stack else "one run at a time was asked for"
    if reason is None:
        reason = stackable(data) if len(seeds) > 1 else "one seed"
    if reason is None:
        try:
            return train_stack(guard, data, cfgs, out_dirs, label, setup_start)
        except _wide.NotWidenable as exc:
            reason = f"the model does not widen ({exc})"
    if len(seeds) > 1:
        log.info("training seeds %s one after another: %s", seeds, reason)
    results = []
    for cfg, out_dir in zip(cfgs, out_dirs, strict=True):
        results.append(train_one(guard, data, cfg, out_dir, label, setup_start))
        setup_start = time.perf_counter()
    return results


class _Member:
    """One seed's run inside a stack: its config, model (its initial weights; its final weights after it leaves),
    lr holder (its own Adam and ReduceLROnPlateau: the schedule steps on its validation loss and the stack reads the
    member's learning rate from it), metric, output folder and the checkpoint of its finished run."""

    def __init__(self, guard, data: RunData, cfg: dict, out_dir: Path, key: str) -> None:
        self.cfg, self.seed, self.out_dir = cfg, cfg["seed"], out_dir
        self.model, self.optimizer, scheduler, self.shuffle = data.build(cfg)
        self.num_params = count_parameters(self.model)
        self.schedule = PlateauSchedule(scheduler, "val_loss", cfg["min_lr"])
        self.metric = get_metric(data.meta.metric, cfg)
        self.checkpoint = Checkpoint(out_dir / CHECKPOINT_FILE, key, guard)


class SeedStackStep(Step):
    """The seeds' runs of one config as one wide stack (module docstring): one epoch trains every member still in the
    stack, each with its own learning rate (its schedule's); a member that stops leaves the stack, its final weights
    go back into its own model, which is re-evaluated alone (its last-epoch scores) and its outputs written."""

    def __init__(self, guard: StopOnSignal, data: RunData, cfgs: list[dict], out_dirs: list[Path],
                 label: str | None, setup_s: float) -> None:
        self.guard, self.data, self.label, self.setup_s = guard, data, label, setup_s
        seeds = [cfg["seed"] for cfg in cfgs]
        self.info = {"stack": {"seeds": seeds, "batch_order_seed": seeds[0], "wide": True}}
        # each member built exactly as its separate run (its seed → its weights); the global RNG then continues from
        # the first seed's state after its build, as that seed's separate run would
        self.seed_runs, rng_after_first = [], None
        for cfg, out_dir in zip(cfgs, out_dirs, strict=True):
            self.seed_runs.append(_Member(guard, data, cfg, out_dir, data.key(cfg, **self.info)))
            if rng_after_first is None:
                rng_after_first = torch.get_rng_state()
        torch.set_rng_state(rng_after_first)
        self.shuffle = self.seed_runs[0].shuffle  # the shared mini-batch order: the first seed's stream
        self.loader = data.train_loader(self.shuffle)
        self.example = next(iter(data.loaders["val"])).to(data.dev)
        self.results: dict[int, dict] = {}
        self.finished: dict[int, dict] = {}  # member -> its final weights (outputs rewritten after a resume)
        self._build(list(range(len(self.seed_runs))))

    def _build(self, active: list[int]) -> None:
        """The wide stack and its optimiser of the ``active`` members (their models' current weights); raises
        NotWidenable when the model does not widen exactly (eval outputs of every member checked)."""
        models = [self.seed_runs[m].model for m in active]
        stack = _wide.WideStack(models)
        _wide.check_widened(stack, models, (self.example,))
        self.optimizer = make_optimizer(
            stack, torch.tensor([self.seed_runs[m].schedule.lr for m in active], dtype=torch.float64),
            torch.tensor([self.seed_runs[m].cfg["weight_decay"] for m in active], dtype=torch.float64))
        self.stack, self.active = stack, list(active)
        self.split = _splitter(stack, models[0], self.example)

    def rules(self, time_limit_s: float) -> list:
        """Every member's run rules (:func:`~gnnbench.training.last_epoch.p1_rules`, its own schedule)."""
        return [PerMember([p1_rules(m.schedule, m.cfg, time_limit_s) for m in self.seed_runs])]

    def epoch(self, run: Run, members: list[int]) -> list[dict]:
        """One epoch of the stack: each member's learning rate, then training, validation and test passes (no test
        pass for data without a test loader: tuning trials)."""
        data = self.data
        lrs = [self.seed_runs[m].schedule.lr for m in members]
        self.optimizer.lr.copy_(torch.tensor(lrs, dtype=self.optimizer.lr.dtype, device=self.optimizer.lr.device))
        metrics = [self.seed_runs[m].metric for m in members]
        count, loss_fn = len(members), data.loss_fn
        train_loss, train_score = train_epoch_members(self.stack, self.split, count, self.loader, self.optimizer,
                                                      loss_fn, metrics, data.dev)
        val_loss, val_score = evaluate_members(self.stack, self.split, count, data.loaders["val"], loss_fn, metrics,
                                               data.dev)
        test_loss, test_score = [math.nan] * count, [math.nan] * count
        if "test" in data.loaders:
            test_loss, test_score = evaluate_members(self.stack, self.split, count, data.loaders["test"], loss_fn,
                                                     metrics, data.dev)
        rows = []
        for i, m in enumerate(members):
            row = {"epoch": run.states[m].epoch, "lr": lrs[i], "train_loss": float(train_loss[i]),
                   "train_metric": train_score[i], "val_loss": float(val_loss[i]), "val_metric": val_score[i],
                   "test_loss": float(test_loss[i]), "test_metric": test_score[i]}
            if not math.isfinite(row["train_loss"]):  # diverged: not evaluated, as a separate run
                row.update(val_loss=math.nan, val_metric=math.nan, test_loss=math.nan, test_metric=math.nan)
            rows.append(row)
        return rows

    def bind(self, run: Run) -> None:
        """The run whose members this step trains (their states, for the outputs written when they leave)."""
        self.run = run

    def leave(self, members: list[int]) -> None:
        """The members leave the stack: their final weights into their own models, their outputs written."""
        for m in members:
            self.finished[m] = self.stack.member_state_dict(self.active.index(m))
            self.seed_runs[m].model.load_state_dict(self.finished[m])
            self.write(m)
        stay = [i for i, m in enumerate(self.active) if m not in members]
        if stay:
            idx = torch.tensor(stay, dtype=torch.int64, device=self.data.dev)
            self.stack.keep(idx)
            self.optimizer.keep(idx)
        self.active = [self.active[i] for i in stay]

    def write(self, m: int) -> None:
        """Member ``m``'s outputs: its last-epoch scores (its model re-evaluated alone), history, ``metrics.json``
        and its run's finished checkpoint (final weights)."""
        member, state = self.seed_runs[m], self.run.states[m]
        self.results[m] = final_results(self.data, member.cfg, member.model, member.metric, state, self.label,
                                        member.num_params, self.setup_s, self.info)
        own = Run(1)  # the member's run alone: its checkpoint in the format of a separate run's
        own.states[0], own.active = state, []
        final = payload(own, SingleStep(None, {"model": member.model}), [], self.shuffle)
        write_outputs(self.guard, member.checkpoint, final, member.out_dir, self.results[m], state.history,
                      _HISTORY_SCHEMA)

    def state_dict(self) -> dict:
        """The stack's weights and optimiser, which members it holds, and the final weights of those that left."""
        return {"stack": self.stack.state_dict(), "optimizer": self.optimizer.state_dict(),
                "active": list(self.active), "finished": {str(m): w for m, w in self.finished.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Rebuild the stack of the saved members and restore its weights and optimiser; the members that had left
        get their final weights back (their outputs are rewritten by :func:`train_stack`)."""
        self.finished = {int(m): w for m, w in state["finished"].items()}
        for m, weights in self.finished.items():
            self.seed_runs[m].model.load_state_dict(weights)
        self._build(list(state["active"]))
        self.stack.load_state_dict(state["stack"])
        self.optimizer.load_state_dict(state["optimizer"])


def train_stack(guard: StopOnSignal, data: RunData, cfgs: list[dict], out_dirs: list[Path], label: str | None,
                setup_start: float, more_rules: Callable[[], list] = list) -> list[dict]:
    """The seeds' runs as one wide stack on the engine, resumed from the stack's checkpoint (in the first seed's run
    folder) where it is this stack's; a member that had finished before a stop has its outputs rewritten (Snakemake
    removes a failed job's outputs). Their results in seed order. ``cfgs`` may differ in their learning rate, weight
    decay and dropout (a tuning round's trials of one shape); ``more_rules()``: rules beside the runs' own (the
    round's pruner)."""
    def make():
        step = SeedStackStep(guard, data, cfgs, out_dirs, label, time.perf_counter() - setup_start)
        run = Run(len(cfgs))
        step.bind(run)
        return run, step, [*step.rules(data.time_limit_s), *more_rules()]

    seeds = [c["seed"] for c in cfgs]
    # members of other configs (a tuning round's trials) are part of what the stack is
    others = {"members": cfgs} if any({**c, "seed": 0} != {**cfgs[0], "seed": 0} for c in cfgs) else {}
    checkpoint = Checkpoint(out_dirs[0] / STACK_CHECKPOINT, data.key(cfgs[0], seeds=seeds, stack=True, **others),
                            guard, label=f"the seed stack {seeds}")

    def log_rows(run: Run, members: list[int], rows) -> None:
        for m, row in zip(members, rows, strict=True):
            log_epoch(row, f"seed {cfgs[m]['seed']}: ")

    def resumed_outputs(step: SeedStackStep, run: Run) -> None:
        for m in range(len(cfgs)):
            if m not in run.active and m not in step.results:
                log.info("seed %d finished before the stop; rewriting its outputs", cfgs[m]["seed"])
                step.write(m)

    run, step, _ = fit_or_resume(make, checkpoint, lambda step: step.shuffle, after_epoch=log_rows,
                                 on_resume=lambda run, step: resumed_outputs(step, run))
    checkpoint.save(payload(run, step, step.rules(data.time_limit_s), step.shuffle), finished=True)
    return [step.results[m] for m in range(len(cfgs))]


def _splitter(stack, model: torch.nn.Module, example):
    """The stack's output → (R, ...) per member, in the shape of a member's own output: a regression head that
    squeezes its one output gives (B,) alone and (B, R) wide (one column per member), others (..., R·C) wide."""
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        training = model.training
        own = model.eval()(example)
        model.train(training)
    squeezed = torch.is_tensor(own) and own.dim() == 1
    if not squeezed:
        return stack.split

    def split(out: torch.Tensor) -> torch.Tensor:
        return out.unsqueeze(0) if out.dim() == own.dim() and stack.members == 1 else out.movedim(-1, 0)

    return split
