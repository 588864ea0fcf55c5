"""Early-stopped graph-classification runs of the fair-comparison protocol trained as one wide stack.

:class:`HoldoutStack`: R runs of one network *shape*, each with its own configuration (learning rate and schedule,
weight decay, dropout, stopping rule, patience, ...) and seed, as one *wide* model (:mod:`gnnbench.training.wide`:
the members side by side in the feature dimension, one forward and backward pass per mini-batch for all of them) —
the model-selection grid points of one shape, and the final runs of a fold (R seeds of the chosen configuration on
one hold-out). It is what ``run_inner``/``run_final`` do with ``stack``; where a model does not widen
(:class:`~gnnbench.training.wide.NotWidenable`) the caller trains the runs one after another, exactly as without
``stack``.

The stack is a step of the training engine (:func:`gnnbench.training.engine.fit`): its state (the members' weights,
optimiser, the shuffling stream) and the fit's run state and rules are one checkpoint, so a stopped job resumes to
the same results.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.data.batching import GraphLoader
from gnnbench.training import wide
from gnnbench.training.best_epoch import Schedule, holdout_results, stopping_rules
from gnnbench.training.engine import Rule, Run, Step, fit, make_optimizer
from gnnbench.training.functional_stack import _reason

WIDE_KIND = "member_stack"  # marks the state of a stack
# what the members of a wide stack share: one batch order (batch_size), one optimiser kind, one clipping threshold
SHARED_KEYS = ("batch_size", "optimizer", "gradient_clipping")


class HoldoutStack(Step):
    """R early-stopped runs, each with its own configuration (learning rate and schedule, ``l2``, dropout,
    ``early_stopping``, ``patience``, ``epochs``, time limit) and its own seed, of one network shape, trained as one
    wide stack (:class:`gnnbench.training.wide.WideStack`: the members side by side in the feature dimension, one
    forward and backward pass per mini-batch for all of them).

    What the blocks of the stack share (they must agree on :data:`SHARED_KEYS`, else ValueError):

    * the training graphs and **one mini-batch order**: the training graphs shuffled by a generator that starts from
      the first block's stream (the global torch RNG seeded with ``seeds[0]``, after its initialisation), so the
      batch order is the one the first run alone draws when it does not drop out. Each run alone shuffles from its
      own seed instead;
    * **the dropout stream**: the wide dropout draws the masks of all blocks at once from the global RNG, started
      from the same stream; each block's mask is drawn with its own rate. Runs alone draw their own masks, so with
      dropout a block is a run of its configuration on other masks, not its run alone;
    * the optimiser kind (``Adam`` or ``SGD`` with coupled L2) and the clipping threshold.

    Each block keeps what makes it its own run: its initialisation (``torch.manual_seed(seeds[r])``, then
    ``builds[r]()``, exactly as its run alone builds it), its weights, optimiser state, learning rate (the step
    schedule of its own configuration, a per-block learning-rate tensor set before every epoch) and weight decay,
    its batch-norm statistics, its loss and gradient (the sum of the blocks' losses has block r's as the only term
    that depends on its weights), its gradient clipping (:func:`~gnnbench.training.wide.clip_members`), and its
    stopping: the rules of :func:`~gnnbench.training.best_epoch.holdout_fit` in the same order, applied by the engine
    to the fit's members. A block whose members have all stopped leaves the stack (its columns leave every
    parameter, buffer and optimiser state), so an epoch costs what the blocks still training cost. A member's
    ``seconds`` are its block's share of the stack's epoch time (wall time divided by the blocks in it); the time
    limit reads them.

    The fit's members: one per block, or with ``observers[r]`` (the stopping settings,
    :data:`~gnnbench.training.best_epoch.OBSERVER_KEYS`, of the configurations that block r's trajectory serves:
    configurations that differ only in them take the same steps) one per observing configuration, blocks in order,
    observers in order; block r then stays in the stack until all its members have stopped (:meth:`fit_parts`).

    ``frozen[r]``: last name components of parameters (``eps``) that block r's run alone has as constants (GIN's ε
    when it is not learnt: built as a parameter so that all blocks have the same structure, it starts at the
    constant's value 0 and its gradient is zeroed in every step, so Adam and SGD with coupled L2 never move it).
    ``num_params[r]`` counts block r's trainable weights without them.

    Where the network cannot be widened (:class:`~gnnbench.training.wide.NotWidenable`, raised here before anything
    trains) the caller trains the runs one after another."""

    def __init__(self, builds: list[Callable[[], nn.Module]], seeds: list[int], cfgs: list[dict], store,
                 parts: dict[str, torch.Tensor], *, device: torch.device, frozen: list[set[str]] | None = None,
                 check_atol: float = 1e-9, observers: list[list[dict]] | None = None) -> None:
        first = cfgs[0]
        for key in SHARED_KEYS:
            if len({repr(c.get(key)) for c in cfgs}) > 1:
                raise ValueError(f"members of a stack share {key}; got {sorted({repr(c.get(key)) for c in cfgs})}")
        self.cfgs, self.seeds, self.device = list(cfgs), list(seeds), device
        frozen = frozen or [set() for _ in cfgs]
        models = []
        for r, (build, seed) in enumerate(zip(builds, seeds, strict=True)):
            torch.manual_seed(seed)
            models.append(build().to(device))
            if r == 0:
                stream = torch.get_rng_state()  # block 0's stream after its initialisation
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
        blocks = len(cfgs)
        try:
            self.optimizer = make_optimizer(
                self.model, torch.tensor([c["learning_rate"] for c in cfgs], dtype=torch.float64),
                torch.tensor([float(c.get("l2", 0.0)) for c in cfgs], dtype=torch.float64),
                first.get("optimizer", "Adam"))
        except ValueError as exc:  # an optimiser the wide stack does not have
            raise wide.NotWidenable(str(exc)) from exc
        self.clip = float(first.get("gradient_clipping", 0.0) or 0.0)
        # the fit's members: each block, or each observer of a block; block_of[m] is member m's block
        observed = [[{}] for _ in cfgs] if observers is None else observers
        self.member_cfgs = [{**c, **o} for c, obs in zip(cfgs, observed, strict=True) for o in obs]
        self.block_of = [r for r, obs in enumerate(observed) for _ in obs]
        self.active = list(range(blocks))  # the block in each column group of the stack

    def fit_parts(self) -> tuple[Run, list[Rule]]:
        """The fit's run (one member per observing configuration, or per block; bound to this step) and its rules:
        each member's stopping rules, then the blocks' learning rates."""
        self.run = Run(len(self.member_cfgs))
        return self.run, [stopping_rules(self.member_cfgs), Schedule(self.member_cfgs, self.set_lrs)]

    def set_lrs(self, members: list[int], lrs: list[float]) -> None:
        """The learning rates of the blocks in the stack for the coming epoch (a block's members share one)."""
        by_block = dict(zip((self.block_of[m] for m in members), lrs, strict=False))
        self.optimizer.lr = torch.tensor([by_block.get(b, 0.0) for b in self.active], dtype=torch.float64)

    def time_share(self, members: list[int]) -> int:
        """Each block's seconds are its share of the epoch: the wall time over the blocks in the stack."""
        return len(self.active)

    def _frozen_masks(self, models: list[nn.Module], frozen: list[set[str]]) -> list[tuple[str, torch.Tensor]]:
        """(parameter name, mask over its block rows: 0 where frozen) of every parameter frozen in some block
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
        """Per block in the stack: (graph-weighted mean loss, accuracy %) over ``loader``'s batches; trains when
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
                    wide.clip_members(self.model, self.clip)
                self.optimizer.step()
            total += loss.detach().double().cpu() * batch.num_graphs
            correct += (logits.detach().argmax(2) == targets).sum(1).cpu()
            graphs += batch.num_graphs
        graphs = max(graphs, 1)
        return total / graphs, correct.double() * 100.0 / graphs

    def epoch(self, run: Run, members: list[int]) -> list[dict]:
        """One epoch of every block in the stack: train, then evaluate; each member gets its block's row."""
        lrs = self.optimizer.lr.tolist()
        self.model.train()
        train_loss, train_acc = self._scores(self.loaders["train"], train=True)
        self.model.eval()
        scores = {}
        with torch.no_grad():
            for part in ("val", "test"):
                if part in self.loaders:
                    scores[part] = self._scores(self.loaders[part], train=False)
        epoch = run.states[members[0]].epoch
        block_rows = {}
        for i, b in enumerate(self.active):
            row = {"epoch": epoch, "lr": lrs[i], "train_loss": float(train_loss[i]),
                   "train_accuracy": float(train_acc[i])}
            finite = math.isfinite(row["train_loss"])  # diverged: no scores of the evaluation (as the run alone)
            for part, (loss, acc) in scores.items():
                row[f"{part}_loss"], row[f"{part}_accuracy"] = (
                    (float(loss[i]), float(acc[i])) if finite else (math.nan, math.nan))
            block_rows[b] = row
        return [dict(block_rows[self.block_of[m]]) for m in members]

    def leave(self, members: list[int]) -> None:
        """Blocks whose members have all stopped leave the stack (the fit's run, :meth:`fit_parts`, says which
        members still train)."""
        going = set(self.block_of[m] for m in self.run.active if m not in members)
        rows = [i for i, b in enumerate(self.active) if b in going]
        if len(rows) == len(self.active):
            return
        if rows:
            idx = torch.tensor(rows, dtype=torch.int64, device=self.device)
            self.model.keep(idx)
            self.optimizer.keep(idx)
            self._frozen, self._params = [(name, mask[idx]) for name, mask in self._frozen], None
        self.active = [self.active[i] for i in rows]

    def member_state_dict(self, block: int) -> dict[str, torch.Tensor]:
        """The weights of ``block`` while it is in the stack."""
        return self.model.member_state_dict(self.active.index(block))

    def results(self, run: Run) -> list[dict]:
        """Each member's result as :func:`~gnnbench.training.best_epoch.holdout_results` gives a run's, with its block's
        parameter count."""
        return [{**r, "num_params": self.num_params[self.block_of[m]]}
                for m, r in enumerate(holdout_results(run))]

    # ------------------------------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict:
        """The stack's weights and optimiser, the blocks still in it and the shuffling stream."""
        return {"kind": WIDE_KIND, "blocks": len(self.cfgs), "active": list(self.active),
                "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "shuffle": self.shuffle.get_state()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output (dropping blocks that had left the stack); ValueError for the state of
        another stack."""
        if state.get("kind") != WIDE_KIND or state["blocks"] != len(self.cfgs):
            raise ValueError("this checkpoint was not written by a stack of these runs")
        if list(state["active"]) != self.active:
            rows = [self.active.index(b) for b in state["active"]]
            idx = torch.tensor(rows, dtype=torch.int64, device=self.device)
            self.model.keep(idx)
            self.optimizer.keep(idx)
            self._frozen, self._params = [(name, mask[idx]) for name, mask in self._frozen], None
            self.active = list(state["active"])
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.shuffle.set_state(state["shuffle"])


def fit_stack(step: HoldoutStack) -> list[dict]:
    """Train ``step``'s runs to their end on the engine (no checkpoint); each member's result
    (:meth:`HoldoutStack.results`)."""
    run, rules = step.fit_parts()
    fit(run, step, rules)
    return step.results(run)
