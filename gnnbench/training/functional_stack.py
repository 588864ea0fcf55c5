"""R initialisations of *any* model of the model contract trained at once, without a hand-written stacked form: the
pitfalls task (:mod:`gnnbench.training.init_stack`) for the other zoos' networks and for users' own models.

R copies of the model are built exactly as :class:`~gnnbench.training.init_stack.SequentialStep` builds
initialisation r (``torch.manual_seed(seeds[r])``, then ``build()``); their parameters and buffers are stacked along
a new dim 0 (``torch.func.stack_module_state``) and one forward pass computes every member's outputs on the one
graph (``torch.func.vmap`` over ``torch.func.functional_call`` of the first copy, the full batch shared):

    every epoch, for every active member r:
        loss_r      = mean CE over the training nodes (model.train()) + L2_r         one backward for all members
        θ_r         ← TF1 Adam step                                                  one optimiser on (R, ...) tensors
        val_loss_r  = mean CE over the validation nodes (model.eval()) + L2_r
        rule(val_loss_r, val_acc_r) → save θ_r (and buffers) as best / stop member r

which is :class:`SequentialStep`'s procedure member by member:

* Adam is element-wise and TF1's step count is shared by members that started together, so one optimiser on the
  stacked tensors is R optimisers; L2 is a loss term (the model's own ``l2_penalty()`` evaluated on each member's
  weights, else ``weight_decay``/2·Σ‖w‖² over its trainable parameters), so weight decay needs no optimiser support.
* The sum of the members' losses has member r's loss as the only term that depends on member r's weights: the
  gradients are those of R separate backward passes.
* Batch norm in training mode updates each member's running statistics (the buffers are stacked per member and
  updated in place under vmap); in eval mode it reads them. "Best weights" are parameters and buffers.
* Random draws inside the forward pass (dropout) use ``randomness="same"``: one draw of the unbatched shape from
  the global generator, shared by every member. The trainer seeds that generator with the split's dropout seed,
  so at epoch e every member sees the e-th draw of that stream — exactly the masks SequentialStep gives each
  member (it reseeds the split's dropout seed for every initialisation). Results therefore do not depend on R or
  on which members share a stack, with or without dropout; what differs from R separate runs is float rounding
  (batched products and batch-norm reductions sum in another order), e.g. the gradients of biases just before a
  train-mode batch norm, which are rounding noise in both (batch norm removes such a bias).
* Members that stop (patience, divergence, epoch cap) leave the stack: their rows are dropped from every stacked
  tensor and the optimiser and stopping state, so an epoch costs what the members still training cost (a mask
  would keep paying for all R members until the last one stops).

What stacking saves is what R separate runs pay per operation (Python, dispatch, kernel launches), so it pays off
most on small graphs and on GPUs. It does not reduce arithmetic, and on a CPU message passing over R members'
features can cost more per member than separate runs do on a graph of CORA's size (vmap turns an unbatched-index
``index_select`` into a ``gather``; R members' edge features leave the cache); ``benchmarks/plugin_stack_speed.py``
measures it. A hand-written stacked form (Shchur's zoo: sparse input features, fused kernels) is faster still.

Where a model cannot be stacked — a dry vmapped forward and backward on the real graph fails (e.g. an
``autograd.Function`` without a vmap rule, data-dependent Python control flow on weights, ``.item()``), its output
is not (N, C) logits, or a member's vmapped outputs differ from that copy's own forward (state the functional call
does not replace) — :func:`stacked_or_sequential` falls back to :class:`SequentialStep` (R initialisations one
after another in the same process) and logs one line saying why.

The trainer's whole state is a ``state_dict`` (as the other trainers'), so a job checkpoints between epochs and
resumes to the same results.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from gnnbench.training.engine import Run, make_optimizer
from gnnbench.training.init_stack import PARTS, SequentialStep, SplitResult, StackMembers, masked_scores

log = logging.getLogger(__name__)
KIND = "functional_stack"  # marks this trainer's checkpoints
_explained: set[tuple[str, str]] = set()  # (model, reason) already logged by this process


class NotStackable(Exception):
    """The model cannot be trained as a functional stack (the message says why)."""


class _WithPenalty(nn.Module):
    """A model whose own ``l2_penalty()`` is read with each member's weights: forward → (outputs, L2 term)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch):
        return self.model(batch), self.model.l2_penalty()


class FunctionalStackStep(StackMembers):
    """R initialisations of a contract model (``forward(batch)`` → (N, C) logits of the one graph) trained as one
    vmapped model (module docstring); the interface and records of
    :class:`~gnnbench.training.init_stack.StackedStep`. Arguments as :class:`SequentialStep`'s.
    Raises :class:`NotStackable` when the copies cannot be stacked or the dry run fails (nothing trained)."""

    def __init__(self, build: Callable[[], nn.Module], batch, labels: torch.Tensor, parts: dict[str, torch.Tensor],
                 *, learning_rate: float, weight_decay: float, criterion: str, patience: int, max_epochs: int,
                 init_ids: list[int], seeds: list[int], dropout_seed: int, tolerance: float = 0.0) -> None:
        self.batch, self.labels, self.parts = batch, labels, parts
        self.targets = {part: labels.index_select(0, nodes) for part, nodes in parts.items()}
        self.init_ids, self.weight_decay = list(init_ids), weight_decay
        models = []
        for seed in seeds:  # initialisation r as SequentialStep builds it
            torch.manual_seed(seed)
            models.append(build())
        self.skeleton = models[0]  # the module every member runs, its tensors replaced by the member's
        self.own_penalty = callable(getattr(self.skeleton, "l2_penalty", None))
        self._module = _WithPenalty(self.skeleton) if self.own_penalty else self.skeleton
        try:
            params, buffers = stack_module_state(models)
        except Exception as exc:  # e.g. parameters of different shapes per copy, uninitialised lazy parameters
            raise NotStackable(_reason(exc, "torch.func.stack_module_state")) from exc
        trainable = {name for name, p in self.skeleton.named_parameters() if p.requires_grad}
        self.params = {name: p for name, p in params.items() if name in trainable}
        # frozen parameters travel with the buffers: stacked per member, never updated by the optimiser
        self.buffers = {**{name: p.detach() for name, p in params.items() if name not in trainable}, **buffers}
        self._forward = vmap(self._member, randomness="same")
        self._dry_run(models)
        del models
        torch.manual_seed(dropout_seed)
        self.optimizer = make_optimizer(list(self.params.values()), learning_rate, name="TF1Adam")
        self._start_members(init_ids, criterion=criterion, patience=patience, max_epochs=max_epochs,
                            tolerance=tolerance, device=labels.device)

    # ------------------------------------------------------------------------------------------ one member

    def _member(self, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor]):
        """One member's (outputs, L2 term) from its own tensors (called under vmap)."""
        if self.own_penalty:
            state = {f"model.{name}": t for name, t in {**params, **buffers}.items()}
            outputs, penalty = functional_call(self._module, state, (self.batch,))
            return outputs, penalty.reshape(())
        outputs = functional_call(self._module, (params, buffers), (self.batch,))
        if not params:
            return outputs, outputs.new_zeros(())
        return outputs, self.weight_decay / 2 * sum(p.pow(2).sum() for p in params.values())

    def _call(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(outputs (R', N, C), L2 terms (R',)) of the members in the stack. A member training alone runs without
        vmap (its row's views, so the stacked tensors still receive its gradients and batch-norm updates): the same
        arithmetic and, with ``randomness="same"``, the same random draws, without vmap's cost per operation."""
        if self.active.numel() != 1:
            return self._forward(self.params, self.buffers)
        outputs, penalty = self._member({n: p[0] for n, p in self.params.items()},
                                        {n: b[0] for n, b in self.buffers.items()})
        return outputs.unsqueeze(0), penalty.reshape(1)

    def _tensors(self) -> dict[str, torch.Tensor]:
        return {**self.params, **self.buffers}

    def _dry_run(self, models: list[nn.Module]) -> None:
        """One training forward and backward and one eval forward of the first (at most two) members on copies of
        their tensors; the eval outputs must equal those copies' own forward passes."""
        rows = min(2, len(models))
        params = {n: p[:rows].detach().clone().requires_grad_() for n, p in self.params.items()}
        buffers = {n: b[:rows].clone() for n, b in self.buffers.items()}
        nodes = self.labels.numel()
        try:
            self.skeleton.train()
            outputs, penalty = self._forward(params, buffers)
            if not (isinstance(outputs, torch.Tensor) and outputs.dim() == 3 and outputs.shape[1] == nodes):
                shape = tuple(outputs.shape[1:]) if isinstance(outputs, torch.Tensor) else type(outputs).__name__
                raise NotStackable(f"its forward returns {shape}, not (N, C) logits of the graph's {nodes} nodes")
            (outputs.float().sum() + penalty.sum()).backward()
            self.skeleton.eval()
            buffers = {n: b[:rows].clone() for n, b in self.buffers.items()}  # the initial statistics again
            with torch.no_grad():
                draws = torch.get_rng_state()
                stacked, _ = self._forward(params, buffers)
                check_members(stacked, models[:rows], self.batch, draws)
        except NotStackable:
            raise
        except Exception as exc:  # any failure of vmap or of the model under it: train the usual way
            raise NotStackable(_reason(exc)) from exc
        finally:
            self.skeleton.train()

    # ------------------------------------------------------------------------------------------ training

    def _scores(self, outputs: torch.Tensor, part: str) -> tuple[torch.Tensor, torch.Tensor]:
        return masked_scores(outputs.index_select(1, self.parts[part]), self.targets[part])

    def _losses(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A training step of every member in the stack (train mode), then the validation loss and accuracy (eval
        mode)."""
        self.skeleton.train()
        self.optimizer.zero_grad()
        outputs, penalty = self._call()
        train_ce, _ = self._scores(outputs, "train")
        (train_ce + penalty).sum().backward()
        self.optimizer.step()
        self.skeleton.eval()
        with torch.no_grad():
            outputs, val_penalty = self._call()
            val_ce, val_acc = self._scores(outputs, "val")
            val_loss = val_ce + val_penalty
        return train_ce + penalty, val_loss, val_acc

    def _drop(self, keep: torch.Tensor) -> None:
        for p in self.params.values():  # the same leaf tensors: the optimiser keeps its references
            p.grad = None
            p.data = p.data.index_select(0, keep)
        self.buffers = {name: b.index_select(0, keep) for name, b in self.buffers.items()}

    @torch.no_grad()
    def results(self, run: Run) -> SplitResult:
        """Every member's best weights restored, scored on train / val / test (eval mode), one record each."""
        for name, p in self.params.items():
            p.data = self.final[name].clone()
        self.buffers = {name: self.final[name].clone() for name in self.buffers}
        self.skeleton.eval()
        outputs, penalty = self._forward(self.params, self.buffers)
        scores = {}
        for part in PARTS:
            ce, acc = self._scores(outputs, part)
            scores[part] = ((ce + penalty).double().cpu(), acc.cpu())
        return self.records(run, scores)

    def member_state(self, position: int) -> dict[str, torch.Tensor]:
        """The state dict (parameters and buffers) of the member at ``position`` among all members: its best weights
        once it has finished."""
        rows = (self.active == position).nonzero().flatten().tolist()
        if rows:
            return {name: t[rows[0]].detach() for name, t in self._tensors().items()}
        return {name: t[position] for name, t in self.final.items()}

    # ------------------------------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict:
        """Stacked parameters and buffers, optimiser, best weights and history, for a checkpoint."""
        return {"kind": KIND, "params": {n: p.detach() for n, p in self.params.items()}, "buffers": self.buffers,
                **self._members_state()}

    def load_state_dict(self, state: dict) -> None:
        """Resume from a :meth:`state_dict` of this trainer (ValueError for another trainer's checkpoint)."""
        if state.get("kind") != KIND:
            raise ValueError("this checkpoint was not written by a functional stack of initialisations")
        for name, p in self.params.items():
            p.data = state["params"][name].clone()
        self.buffers = {name: state["buffers"][name].clone() for name in self.buffers}
        self._load_members_state(state)


def check_members(stacked: torch.Tensor, models: list[nn.Module], batch, draws: torch.Tensor) -> None:
    """Raise :class:`NotStackable` unless each member's vmapped eval outputs ``stacked[r]`` equal its own model's
    forward pass on ``batch`` (from the random state ``draws``, for models that drop out at evaluation too)."""
    for r, model in enumerate(models):
        model.eval()
        torch.set_rng_state(draws)
        own = model(batch)
        scale = float(own.abs().max()) if own.numel() else 0.0
        if not torch.allclose(stacked[r], own, rtol=1e-3, atol=1e-3 * max(scale, 1e-6)):
            raise NotStackable(f"member {r}'s vmapped outputs differ from its own forward pass (state that "
                               "torch.func.functional_call does not replace?)")


def _reason(exc: Exception, where: str = "vmap") -> str:
    """Why ``where`` failed, in a few words."""
    message = str(exc).strip()
    if "autograd.Function" in message and "setup_context" in message:
        return "it uses a torch.autograd.Function without a vmap rule"
    first = message.splitlines()[0] if message else ""
    return f"{where}: {type(exc).__name__}: {first[:120]}"


def stacked_or_sequential(build: Callable[[], nn.Module], batch, labels: torch.Tensor,
                          parts: dict[str, torch.Tensor], *, name: str = "model", **settings):
    """A :class:`FunctionalStackStep` of the model ``build()`` makes, or, where it cannot be stacked, a
    :class:`~gnnbench.training.init_stack.SequentialStep` with the same settings (one log line per model and
    reason per process)."""
    try:
        return FunctionalStackStep(build, batch, labels, parts, **settings)
    except NotStackable as exc:
        if (name, str(exc)) not in _explained:
            _explained.add((name, str(exc)))
            log.info("%s: initialisations trained one after another, not stacked (%s)", name, exc)
        return SequentialStep(build, batch, labels, parts, **settings)
