"""Early-stopped graph-classification runs of the fair-comparison protocol trained as one wide stack.

:class:`MemberStack`: R runs of one network *shape*, each with its own configuration (learning rate and schedule,
weight decay, dropout, stopping rule, patience, ...) and seed, as one *wide* model (:mod:`gnnbench.training.wide`:
the members side by side in the feature dimension, one forward and backward pass per mini-batch for all of them) —
the model-selection grid points of one shape, and the final runs of a fold (R seeds of the chosen configuration on
one hold-out). It is what ``run_inner``/``run_final`` do with ``stack``; where a model does not widen
(:class:`~gnnbench.training.wide.NotWidenable`) the caller trains the runs one after another, exactly as without
``stack``.

The whole stack (members' weights, optimiser, stopping and histories, the random stream) is one checkpoint, saved
between epochs (at most every ``checkpoint.every_s`` seconds), so a stopped job resumes to the same results.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphLoader
from gnnbench.training import wide
from gnnbench.training.checkpoint import restore_rng, rng_state
from gnnbench.training.engine import (
    Checkpoint,
    Diverged,
    MaxEpochs,
    Patience,
    RunState,
    TimeLimit,
)
from gnnbench.training.functional_stack import _reason
from gnnbench.training.holdout import Observers, learning_rate

WIDE_KIND = "member_stack"  # marks MemberStack checkpoints
# what the members of a wide stack share: one batch order (batch_size), one optimiser kind, one clipping threshold
SHARED_KEYS = ("batch_size", "optimizer", "gradient_clipping")


class MemberStack:
    """R early-stopped runs, each with its own configuration (learning rate and schedule, ``l2``, dropout,
    ``early_stopping``, ``patience``, ``epochs``, time limit) and its own seed, of one network shape, trained as one
    wide stack (:class:`gnnbench.training.wide.WideStack`: the members side by side in the feature dimension, one
    forward and backward pass per mini-batch for all of them).

    What the members share (they must agree on :data:`SHARED_KEYS`, else ValueError):

    * the training graphs and **one mini-batch order**: the training graphs shuffled by a generator that starts from
      the first member's stream (the global torch RNG seeded with ``seeds[0]``, after its initialisation), so the
      batch order is the one the first member's run alone draws when it does not drop out. Each run alone shuffles
      from its own seed instead;
    * **the dropout stream**: the wide dropout draws the masks of all members at once from the global RNG, started
      from the same stream; each member's mask is drawn with its own rate. Runs alone draw their own masks, so with
      dropout a member is a run of its configuration on other masks, not its run alone;
    * the optimiser kind (``Adam`` or ``SGD`` with coupled L2) and the clipping threshold.

    Each member keeps what makes it its own run: its initialisation (``torch.manual_seed(seeds[r])``, then
    ``builds[r]()``, exactly as its run alone builds it), its weights, optimiser state, learning rate (the step
    schedule of its own configuration, a per-member learning-rate tensor set before every epoch) and weight decay,
    its batch-norm statistics, its loss and gradient (the sum of the members' losses has member r's as the only term
    that depends on its weights), its gradient clipping (:func:`~gnnbench.training.wide.clip_members`), and its
    stopping: the rules of :func:`~gnnbench.training.holdout.train_holdout` in the same order (``Diverged``, its
    own ``Patience`` on its validation scores, ``MaxEpochs``, ``TimeLimit``), its last improving epoch's row as its
    scores. A member that stops leaves the stack (``keep``: its columns leave every parameter, buffer and optimiser
    state), so an epoch costs what the members still training cost. A member's ``seconds`` are its share of the
    stack's epoch time (wall time divided by the members in it); the time limit reads them.

    ``observers[r]``: the stopping settings (:data:`~gnnbench.training.holdout.OBSERVER_KEYS`) of the configurations
    that member r's trajectory serves (:class:`~gnnbench.training.holdout.Observers`: configurations that differ only
    in them take the same steps); member r then stays in the stack until all of them have stopped, its own stopping
    keys are not read, and :meth:`fit` returns one result per observer, members in order, observers in order.

    ``frozen[r]``: last name components of parameters (``eps``) that member r's run alone has as constants (GIN's ε
    when it is not learnt: built as a parameter so that all members have the same structure, it starts at the
    constant's value 0 and its gradient is zeroed in every step, so Adam and SGD with coupled L2 never move it).
    ``num_params[r]`` counts member r's trainable weights without them.

    Where the network cannot be widened (:class:`~gnnbench.training.wide.NotWidenable`, raised here before anything
    trains) the caller trains the runs one after another. The whole stack (its
    weights, optimiser, members' stopping and histories, both random streams) is one checkpoint, saved between epochs
    at most every ``checkpoint.every_s`` seconds, so a stopped job resumes to the same results."""

    def __init__(self, builds: list[Callable[[], nn.Module]], seeds: list[int], cfgs: list[dict], store,
                 parts: dict[str, torch.Tensor], *, device: torch.device, checkpoint: Checkpoint | None = None,
                 frozen: list[set[str]] | None = None, check_atol: float = 1e-9,
                 observers: list[list[dict]] | None = None) -> None:
        first = cfgs[0]
        for key in SHARED_KEYS:
            if len({repr(c.get(key)) for c in cfgs}) > 1:
                raise ValueError(f"members of a stack share {key}; got {sorted({repr(c.get(key)) for c in cfgs})}")
        self.cfgs, self.seeds, self.device, self.checkpoint = list(cfgs), list(seeds), device, checkpoint
        self.wide = wide
        frozen = frozen or [set() for _ in cfgs]
        models = []
        for r, (build, seed) in enumerate(zip(builds, seeds, strict=True)):
            torch.manual_seed(seed)
            models.append(build().to(device))
            if r == 0:
                stream = torch.get_rng_state()  # member 0's stream after its initialisation
        self.num_params = [sum(p.numel() for name, p in m.named_parameters()
                               if p.requires_grad and name.rsplit(".", 1)[-1] not in f)
                           for m, f in zip(models, frozen, strict=True)]
        self.loaders = {part: GraphLoader(store, idx, first["batch_size"]) for part, idx in parts.items()}
        try:
            self.model = wide.WideStack(models)
            example = next(iter(self.loaders["train"])).to(device)
            wide.check_widened(self.model, models, (example,), atol=check_atol)
            if any(torch.is_tensor(getattr(m, "aux_loss", 0.0)) for m in models):
                raise wide.NotWidenable("it has auxiliary losses (one per member is not split by the wide stack)")
        except wide.NotWidenable:
            raise
        except Exception as exc:  # any failure of the wide form: train the usual way
            raise wide.NotWidenable(_reason(exc, "WideStack")) from exc
        finally:
            torch.set_rng_state(stream)
        self._frozen, self._params = self._frozen_masks(models, frozen), None
        del models
        self.shuffle = torch.Generator()
        self.shuffle.set_state(stream)
        self.loaders["train"] = GraphLoader(store, parts["train"], first["batch_size"], shuffle=True,
                                            generator=self.shuffle)
        members = len(cfgs)
        try:
            self.optimizer = wide.WideOptimizer(
                self.model, first.get("optimizer", "Adam"), lr=self._lrs(range(members), 0),
                weight_decay=torch.tensor([float(c.get("l2", 0.0)) for c in cfgs], dtype=torch.float64))
        except ValueError as exc:  # an optimiser the wide stack does not have
            raise wide.NotWidenable(str(exc)) from exc
        self.clip = float(first.get("gradient_clipping", 0.0) or 0.0)
        self.states = [RunState() for _ in range(members)]
        self.patience = [Patience(c["early_stopping"], c["patience"]) for c in cfgs]
        self.rules = [[Diverged(), patience, MaxEpochs(c["epochs"]),
                       TimeLimit(c.get("time_limit_hours", math.inf) * 3600, "time_limit")]
                      for c, patience in zip(cfgs, self.patience, strict=True)]
        self.observers = None
        if observers is not None:  # each member a trajectory observed by several configurations' stopping rules
            self.observers = [Observers([{**c, **o} for o in obs]) for c, obs in zip(cfgs, observers, strict=True)]
            self.patience = self.observers  # saved and restored with the stack
            self.rules = [[o] for o in self.observers]
        self.active = list(range(members))  # the member in each block of the stack
        self.epoch = 0

    def _lrs(self, members, epoch: int) -> torch.Tensor:
        """Each member's learning rate of 0-based ``epoch`` (its configuration's schedule)."""
        return torch.tensor([learning_rate(self.cfgs[m], epoch) for m in members], dtype=torch.float64)

    def _frozen_masks(self, models: list[nn.Module], frozen: list[set[str]]) -> list[tuple[str, torch.Tensor]]:
        """(parameter name, mask over its member rows: 0 where frozen) of every parameter frozen in some member
        (``frozen[r]``: last components of parameter names, e.g. ``eps``)."""
        out = []
        for name, _ in models[0].named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if any(leaf in f for f in frozen):
                out.append((name, torch.tensor([0.0 if leaf in f else 1.0 for f in frozen], device=self.device)))
        return out

    def _zero_frozen(self) -> None:
        if not self._frozen:
            return
        if self._params is None:  # keep() makes new parameter objects: looked up again after it
            self._params = dict(self.model.model.named_parameters())
        for name, mask in self._frozen:
            p = self._params[name]
            if p.grad is not None:
                p.grad.mul_(mask.to(p.grad.dtype).view(-1, *[1] * (p.grad.dim() - 1)))

    # ------------------------------------------------------------------------------------------ training

    def _scores(self, loader, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Per member in the stack: (graph-weighted mean loss, accuracy %) over ``loader``'s batches; trains when
        ``train``."""
        rows = len(self.active)
        total = torch.zeros(rows, dtype=torch.float64)
        correct = torch.zeros(rows, dtype=torch.int64)
        graphs = 0
        for batch in loader:
            batch = batch.to(self.device)
            logits = self.model.split(self.model(batch))  # (R, G, C)
            targets = batch.y.expand(rows, -1)
            loss = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none").mean(1)
            if train:
                self.optimizer.zero_grad()
                loss.sum().backward()
                self._zero_frozen()
                if self.clip:
                    self.wide.clip_members(self.model, self.clip)
                self.optimizer.step()
            total += loss.detach().double().cpu() * batch.num_graphs
            correct += (logits.detach().argmax(2) == targets).sum(1).cpu()
            graphs += batch.num_graphs
        graphs = max(graphs, 1)
        return total / graphs, correct.double() * 100.0 / graphs

    def _step(self, lrs: list[float]) -> list[dict]:
        """One epoch of every member in the stack: train, then evaluate; one history row each."""
        self.model.train()
        train_loss, train_acc = self._scores(self.loaders["train"], train=True)
        self.model.eval()
        scores = {}
        with torch.no_grad():
            for part in ("val", "test"):
                if part in self.loaders:
                    scores[part] = self._scores(self.loaders[part], train=False)
        rows = []
        for i, m in enumerate(self.active):
            row = {"epoch": self.states[m].epoch, "lr": lrs[i], "train_loss": float(train_loss[i]),
                   "train_accuracy": float(train_acc[i])}
            finite = math.isfinite(row["train_loss"])  # diverged: no scores of the evaluation (as the run alone)
            for part, (loss, acc) in scores.items():
                row[f"{part}_loss"], row[f"{part}_accuracy"] = (
                    (float(loss[i]), float(acc[i])) if finite else (math.nan, math.nan))
            rows.append(row)
        return rows

    def _keep(self, rows: list[int]) -> None:
        """Keep the members in stack blocks ``rows`` (in that order) in the model, the optimiser and the masks."""
        idx = torch.tensor(rows, dtype=torch.int64, device=self.device)
        self.model.keep(idx)
        self.optimizer.keep(idx)
        self._frozen, self._params = [(name, mask[idx]) for name, mask in self._frozen], None
        self.active = [self.active[i] for i in rows]

    def _stop(self, done: list[int]) -> None:
        """Members in stack blocks ``done`` leave the stack."""
        if not done:
            return
        rows = [i for i in range(len(self.active)) if i not in done]
        if rows:
            self._keep(rows)
        else:
            self.active = []

    def fit(self) -> list[dict]:
        """Train until every member has stopped; each member's result as
        :func:`~gnnbench.training.holdout.train_holdout` returns it, in member order."""
        while self.active:
            # before an epoch (fit's on_epoch_start): epoch cap and time limit, then the epoch's learning rates
            self._stop([i for i, m in enumerate(self.active)
                        if any(rule.on_epoch_start(self.states[m]) for rule in self.rules[m])])
            if not self.active:
                break
            lrs = self._lrs(self.active, self.epoch)
            self.optimizer.lr = lrs
            start = time.perf_counter()
            rows = self._step(lrs.tolist())
            seconds = (time.perf_counter() - start) / len(self.active)
            self.epoch += 1
            done = []
            for i, (m, row) in enumerate(zip(self.active, rows, strict=True)):
                state = self.states[m]
                state.elapsed += seconds
                state.epoch += 1
                row["seconds"] = seconds
                state.history.append(row)
                for rule in self.rules[m]:  # the run alone's rules, in its order
                    if (reason := rule.on_epoch_end(state, row)) is not None:
                        state.stop_reason = reason
                        done.append(i)
                        break
            self._stop(done)
            if self.checkpoint is not None and self.active and self.checkpoint.due():
                self.checkpoint.save(self.state_dict())
        if self.observers is not None:
            return [{**r, "num_params": self.num_params[m]} for m, o in enumerate(self.observers) for r in o.results()]
        return [self._result(m) for m in range(len(self.states))]

    def _result(self, member: int) -> dict:
        state, patience = self.states[member], self.patience[member]
        last = state.history[-1] if state.history else {}
        scores = {k: math.nan for k in last if k not in ("epoch", "lr", "seconds")} if state.diverged else state.best
        return {"best_epoch": patience.best_epoch, "epochs": state.epoch, "stop_reason": state.stop_reason,
                **state.status(), "seconds": state.elapsed, "scores": scores, "history": state.history,
                "num_params": self.num_params[member]}

    # ------------------------------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict:
        """The whole stack as one checkpoint payload: weights, optimiser, members' stopping states and histories,
        which members are still training, the epoch and the shuffling stream."""
        return {"kind": WIDE_KIND, "members": len(self.states), "active": list(self.active), "epoch": self.epoch,
                "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "states": [s.state_dict() for s in self.states], "patience": [p.state_dict() for p in self.patience],
                "rng": rng_state(self.shuffle)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output (dropping members that had left the stack); ValueError for a
        checkpoint of another stack."""
        if state.get("kind") != WIDE_KIND or state["members"] != len(self.states):
            raise ValueError("this checkpoint was not written by a stack of these runs")
        if list(state["active"]) != self.active:
            self._keep([self.active.index(m) for m in state["active"]])
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.epoch = state["epoch"]
        for s, saved in zip(self.states, state["states"], strict=True):
            s.load_state_dict(saved)
        for p, saved in zip(self.patience, state["patience"], strict=True):
            p.load_state_dict(saved)
        restore_rng(state["rng"], self.shuffle)

    def resume(self) -> bool:
        """Continue from the checkpoint if it is this stack's; True when resumed."""
        payload = None if self.checkpoint is None else self.checkpoint.load()
        if payload is None:
            return False
        self.load_state_dict(payload)
        return True
