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
from collections.abc import Sequence
from pathlib import Path

import torch

from gnnbench.training import wide as _wide
from gnnbench.training.checkpoint import CHECKPOINT_FILE, read_checkpoint, restore_rng, rng_state
from gnnbench.training.engine import (
    Checkpoint,
    Diverged,
    MaxEpochs,
    PlateauSchedule,
    RunState,
    TimeLimit,
    stoppable,
)
from gnnbench.training.loop import evaluate_members, train_epoch_members
from gnnbench.training.metrics import get_metric
from gnnbench.training.preemption import StopOnSignal
from gnnbench.training.run import (
    _HISTORY_SCHEMA,
    RunData,
    count_parameters,
    final_results,
    load_run_data,
    log_epoch,
    resume_note,
    train_one,
    write_outputs,
)

log = logging.getLogger(__name__)


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
    return stoppable(lambda guard: _train_seeds(
        guard, dataset_dir=dataset_dir, splits_path=splits_path, fold=fold, config=config, seeds=seeds,
        out_dirs=out_dirs, pe_path=pe_path, device=device, threads=threads, label=label,
        time_limit_hours=time_limit_hours, stack=stack),
        lambda: "; ".join(f"seed {s}: {resume_note(d / CHECKPOINT_FILE)}"
                          for s, d in zip(seeds, out_dirs, strict=True)))


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
        reason = None if stack else "on CPU a wide stack is no faster (gnnbench.training.seed_stack)"
    else:
        reason = None if stack else "one run at a time was asked for"
    if reason is None:
        reason = stackable(data) if len(seeds) > 1 else "one seed"
    if reason is None:
        try:
            return SeedStack(guard, data, cfgs, out_dirs, label).train(setup_start)
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
    member's learning rate from it), run state, stop rules, metric and checkpoint."""

    def __init__(self, guard, data: RunData, cfg: dict, out_dir: Path, key: str) -> None:
        self.cfg, self.seed, self.out_dir = cfg, cfg["seed"], out_dir
        self.model, self.optimizer, scheduler, self.shuffle = data.build(cfg)
        self.num_params = count_parameters(self.model)
        self.state = RunState()
        self.schedule = PlateauSchedule(scheduler, "val_loss", cfg["min_lr"])
        self.rules = [Diverged(), self.schedule, TimeLimit(data.time_limit_s, "max_time"), MaxEpochs(cfg["epochs"])]
        self.metric = get_metric(data.meta.metric, cfg)
        self.checkpoint = Checkpoint(out_dir / CHECKPOINT_FILE, key, guard)
        self.payload: dict = {}  # the last checkpoint's contents (written again, finished, with the outputs)

    @property
    def lr(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def start_epoch(self) -> bool:
        """The rules' checks before an epoch (epochs done, time spent); True when the run stops here."""
        for rule in self.rules:
            if (reason := rule.on_epoch_start(self.state)) is not None:
                self.state.stop_reason = reason
                return True
        return False

    def end_epoch(self, row: dict, seconds: float) -> bool:
        """Record one epoch's row and apply the rules (the first stop reason wins); True when the run stops."""
        state = self.state
        state.elapsed += seconds
        state.epoch += 1
        row["seconds"] = seconds
        state.history.append(row)
        for rule in self.rules:
            if (reason := rule.on_epoch_end(state, row)) is not None:
                state.stop_reason = reason
                return True
        return False

    def save(self, finished: bool = False) -> None:
        """Write the member's checkpoint (``payload`` set by the stack; run state refreshed here)."""
        self.payload.update(self.state.state_dict(), scheduler=self.schedule.state_dict(), lr=self.lr)
        self.checkpoint.save(self.payload, finished)


class SeedStack:
    """The seeds' runs of one config trained as one wide stack (module docstring)."""

    def __init__(self, guard: StopOnSignal, data: RunData, cfgs: list[dict], out_dirs: list[Path],
                 label: str | None) -> None:
        self.guard, self.data, self.label = guard, data, label
        seeds = [cfg["seed"] for cfg in cfgs]
        self.info = {"stack": {"seeds": seeds, "batch_order_seed": seeds[0], "wide": True}}
        # each member built exactly as its separate run (its seed → its weights); the global RNG then continues from
        # the first seed's state after its build, as that seed's separate run would
        self.members, rng_after_first = [], None
        for cfg, out_dir in zip(cfgs, out_dirs, strict=True):
            self.members.append(_Member(guard, data, cfg, out_dir, data.key(cfg, **self.info)))
            if rng_after_first is None:
                rng_after_first = torch.get_rng_state()
        torch.set_rng_state(rng_after_first)
        self.shuffle = self.members[0].shuffle  # the shared mini-batch order: the first seed's stream
        self.loader = data.train_loader(self.shuffle)
        self.example = next(iter(data.loaders["val"])).to(data.dev)
        self.stack = self.optimizer = None
        self.active: list[_Member] = []

    # ------------------------------------------------------------------------------------------------ building

    def _build(self, active: list[_Member]) -> None:
        """The wide stack and its optimiser of the ``active`` members (their models' current weights); raises
        NotWidenable when the model does not widen exactly (eval outputs of every member checked)."""
        models = [m.model for m in active]
        stack = _wide.WideStack(models)
        _wide.check_widened(stack, models, (self.example,))
        self.optimizer = _wide.WideOptimizer(
            stack, "adam", lr=torch.tensor([m.lr for m in active], dtype=torch.float64),
            weight_decay=torch.tensor([m.cfg["weight_decay"] for m in active], dtype=torch.float64))
        self.stack, self.active = stack, list(active)
        self.split = _splitter(stack, models[0], self.example)


    def _keep(self, stay: list[int]) -> None:
        idx = torch.tensor(stay, dtype=torch.int64, device=self.data.dev)
        self.stack.keep(idx)
        self.optimizer.keep(idx)
        self.active = [self.active[i] for i in stay]

    # ------------------------------------------------------------------------------------------------ resume

    def _resume(self) -> list[_Member]:
        """Restore from the members' checkpoints where they agree (module docstring); returns the members still to
        train (all of them when starting afresh). Finished members get their outputs rewritten here."""
        payloads = {}
        for m in self.members:
            try:
                payload = read_checkpoint(m.checkpoint.path)
            except Exception:  # missing or unreadable: nothing to resume for this member
                payload = None
            payloads[m.seed] = payload if payload is not None and payload.get("key") == m.checkpoint.key else None
        running = [m for m in self.members if payloads[m.seed] is not None and not payloads[m.seed]["finished"]]
        finished = [m for m in self.members if payloads[m.seed] is not None and payloads[m.seed]["finished"]]
        fresh = [m for m in self.members if payloads[m.seed] is None]
        stack_states = {(payloads[m.seed]["epoch"], tuple(payloads[m.seed]["stack_members"])) for m in running}
        # a stack stopped mid-way: its running members agree on the epoch and on who was in the stack (all finished:
        # a rerun of a finished job, which trains afresh as a separate run does)
        consistent = (running and not fresh and len(stack_states) == 1
                      and list(next(iter(stack_states))[1]) == [m.seed for m in running])
        if not consistent:
            if running:
                log.info("the seed stack's checkpoints do not agree; training all seeds from the beginning")
            return list(self.members)
        try:
            for m in running + finished:
                payload = payloads[m.seed]
                m.state.load_state_dict(payload)
                m.schedule.load_state_dict(payload["scheduler"])
                for group in m.optimizer.param_groups:  # the lr holder: the schedule's current learning rate
                    group["lr"] = float(payload["lr"])
                m.model.load_state_dict(payload["model"])
            restore_rng(payloads[running[0].seed]["rng"], self.shuffle)
        except (KeyError, TypeError, RuntimeError, ValueError) as exc:
            log.warning("the seed stack's checkpoints do not fit this run (%s); training from scratch", exc)
            raise _Restart() from exc
        self._build(running)
        self.optimizer.load_state_dict(payloads[running[0].seed]["optimizer"])
        for m in finished:
            log.info("seed %d finished before the stop; rewriting its outputs from its checkpoint", m.seed)
            m.payload = payloads[m.seed]
            self._write(m, 0.0)
        log.info("resuming the seed stack %s at epoch %d", [m.seed for m in running], running[0].state.epoch)
        return running

    # ------------------------------------------------------------------------------------------------ training

    def train(self, setup_start: float) -> list[dict]:
        """Train (or resume) every member until it stops, write each one's outputs; their results in seed order."""
        try:
            todo = self._resume()
        except _Restart:
            self.__init__(self.guard, self.data, [m.cfg for m in self.members], [m.out_dir for m in self.members],
                          self.label)
            todo = list(self.members)
        if self.stack is None and todo:
            self._build(todo)
            self._save()  # a stop during the first epoch leaves a resumable state, as a separate run
        self.setup_s = time.perf_counter() - setup_start
        while self.active:
            stopped = [m for m in self.active if m.start_epoch()]
            if stopped:
                self._leave(stopped)
                continue
            lrs = [m.lr for m in self.active]
            self.optimizer.lr.copy_(torch.tensor(lrs, dtype=self.optimizer.lr.dtype, device=self.optimizer.lr.device))
            start = time.perf_counter()
            rows = self._epoch(lrs)
            seconds = time.perf_counter() - start
            stopped = [m for m, row in zip(self.active, rows, strict=True) if m.end_epoch(row, seconds)]
            for m, row in zip(self.active, rows, strict=True):
                log_epoch(row, f"seed {m.seed}: ")
            self._save()
            if stopped:
                self._leave(stopped)
        return [m.results for m in self.members]

    def _epoch(self, lrs: list[float]) -> list[dict]:
        data, stack, members = self.data, self.stack, len(self.active)
        metrics = [m.metric for m in self.active]
        epoch = self.active[0].state.epoch
        train_loss, train_score = train_epoch_members(stack, self.split, members, self.loader, self.optimizer,
                                                      data.loss_fn, metrics, data.dev)
        val_loss, val_score = evaluate_members(stack, self.split, members, data.loaders["val"], data.loss_fn,
                                               metrics, data.dev)
        test_loss, test_score = evaluate_members(stack, self.split, members, data.loaders["test"], data.loss_fn,
                                                 metrics, data.dev)
        rows = []
        for i in range(members):
            row = {"epoch": epoch, "lr": lrs[i], "train_loss": float(train_loss[i]), "train_metric": train_score[i],
                   "val_loss": float(val_loss[i]), "val_metric": val_score[i], "test_loss": float(test_loss[i]),
                   "test_metric": test_score[i]}
            if not math.isfinite(row["train_loss"]):  # diverged: not evaluated, as a separate run
                row.update(val_loss=math.nan, val_metric=math.nan, test_loss=math.nan, test_metric=math.nan)
            rows.append(row)
        return rows

    def _save(self) -> None:
        """Every running member's checkpoint: its weights, run state, schedule, the shared RNGs and the stack's
        optimiser state with the running members' seeds (what a resume rebuilds the stack from)."""
        optimizer = self.optimizer.state_dict()
        seeds = [m.seed for m in self.active]
        rng = rng_state(self.shuffle)
        for i, m in enumerate(self.active):
            m.payload = {"model": self.stack.member_state_dict(i), "optimizer": optimizer, "stack_members": seeds,
                         "rng": rng}
            m.save()

    def _leave(self, stopped: list[_Member]) -> None:
        """Members whose run stopped leave the stack: their final weights go back into their own model, which is
        re-evaluated alone (its last-epoch scores) and its outputs written."""
        for m in stopped:
            i = self.active.index(m)
            m.model.load_state_dict(self.stack.member_state_dict(i))
            m.payload = {"model": m.model.state_dict(), "rng": m.payload.get("rng")}
        for m in stopped:
            self._write(m, self.setup_s)
        stay = [i for i, m in enumerate(self.active) if m not in stopped]
        if stay:
            self._keep(stay)
        else:
            self.active = []

    def _write(self, m: _Member, setup_s: float) -> None:
        m.results = final_results(self.data, m.cfg, m.model, m.metric, m.state, self.label, m.num_params, setup_s,
                                  self.info)
        write_outputs(self.guard, m, m.out_dir, m.results, _HISTORY_SCHEMA)


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


class _Restart(Exception):
    """The checkpoints of a stack could not be restored: train all seeds afresh."""
