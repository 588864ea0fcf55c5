"""The splits of one configuration trained at once: Platonov et al.'s procedure (the released ``train.py`` and
``utils.py`` of yandex-research/heterophilous-graphs) for R given splits of one graph as one vmapped stack.

Member r is the run on split r: its own initialisation (``torch.manual_seed(seeds[r])``, then ``build()``), its own
training, validation and test nodes, the same graph and features. Their parameters and buffers are stacked along a
new dim 0 (``torch.func.stack_module_state``) and one vmapped forward pass computes every member's logits
(``torch.func.vmap`` over ``functional_call``; dropout draws differ per member, ``randomness="different"``):

    for step s = 0 .. num_steps − 1, every member r at once:
        lr_s      = lr · ((s + 1) / (W + 1) if s < W else 1)     the released get_lr_scheduler_with_warmup, W warmup
                                                                  steps (num_warmup_steps, else
                                                                  int(num_steps · warmup_proportion))
        loss_r    = mean cross-entropy over r's training nodes    (train mode: dropout; one output column:
                                                                  binary cross-entropy with logits, as released)
        θ_r       ← AdamW(θ_r, ∇ loss_r, lr_s)                    weight decay only on weights, not on biases and
                                                                  normalisation parameters (get_parameter_groups)
        score_r   = metric on r's train / val / test nodes        (eval mode), after every step
        best_r    ← step s if val_score_r(s) > val_score_r(best_r) (the released Logger: the test score of the best
                                                                  validation step is reported)

AdamW is element-wise, so one optimiser over the stacked (R, ...) tensors is R optimisers; the sum of the members'
losses has member r's loss as the only term that depends on θ_r, so one backward pass gives every member its own
gradients. The metric is accuracy, or for a binary task ROC AUC of the class-1 score (``roc_auc`` in the dataset's
``meta.json``), both in percent. A member whose training or validation loss is not finite stops there
(``diverged``) and leaves the stack (its rows dropped from every tensor and from the optimiser state); the others go
on. Where the model cannot be vmapped (a dry forward and backward fails), the members run one after another inside
the same step (each its own forward on its rows of the stacked tensors) — the same procedure, one forward per member.

Decisions (docs/protocols/heterophily.md#departures-from-the-released-code): the released code trains the ten splits
one after another from one ``torch.manual_seed(0)``; here split r is seeded on its own (its results do not depend on
the other splits); the best step is the first with the highest validation score, the first step counting (the
Logger starts from a best of 0, which differs only when every validation score is 0).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from gnnbench.training.engine import Callback, Diverged, MaxEpochs, PerMember, Run, RunState, Step
from gnnbench.training.metrics import positive_score, roc_auc

log = logging.getLogger(__name__)
KIND = "split_stack"  # marks this step's checkpoints
PARTS = ("train", "val", "test")
# utils.get_parameter_groups: parameters whose name holds one of these train without weight decay ("norm" also
# matches the batch_norm / layer_norm names of the other zoos' layers)
NO_DECAY = ("bias", "norm", "label_embeddings")


def no_weight_decay(name: str) -> bool:
    """Whether parameter ``name`` trains without weight decay (a bias or a normalisation parameter)."""
    return any(part in name for part in NO_DECAY)


def warmup_steps(config: dict) -> int:
    """W: ``num_warmup_steps`` when set, else ``int(num_steps · warmup_proportion)`` (the released scheduler)."""
    if config.get("num_warmup_steps") is not None:
        return int(config["num_warmup_steps"])
    return int(config["num_steps"] * config.get("warmup_proportion", 0.0))


def warmup_factor(step: int, warmup: int) -> float:
    """The learning-rate multiplier of 0-based step ``step``: (step + 1) / (W + 1) during the W warmup steps, then 1
    (``get_lr_scheduler_with_warmup``'s ``LambdaLR``)."""
    return (step + 1) / (warmup + 1) if step < warmup else 1.0


class NotStackable(Exception):
    """The model cannot be vmapped (the message says why)."""


class BestScore(Callback):
    """Keep the step with the highest validation score (strictly higher than every earlier one) as the member's
    best: its row (scores of every part at that step) and 0-based step."""

    def on_epoch_end(self, state: RunState, row: dict) -> str | None:
        """Make this step the best when its validation score beats the best so far."""
        if not state.best or row["val_score"] > state.best["val_score"]:
            state.best, state.best_epoch = dict(row), state.epoch - 1
        return None


def split_rules(members: int, num_steps: int) -> list[PerMember]:
    """The rules of every member: stop on a non-finite loss, keep the best validation step, stop after
    ``num_steps`` steps."""
    return [PerMember([[Diverged(), BestScore(), MaxEpochs(num_steps)] for _ in range(members)])]


class SplitStackStep(Step):
    """R splits of one graph trained as one vmapped stack (module docstring). ``build()`` makes the model (weights
    from torch's global generator), ``batch`` is the one graph, ``labels`` (N,) its node labels, ``masks`` the
    (R, N) boolean train / val / test masks of the members, ``metric`` ``accuracy`` or ``roc_auc``."""

    def __init__(self, build: Callable[[], nn.Module], batch, labels: torch.Tensor, masks: dict[str, torch.Tensor],
                 *, metric: str, lr: float, weight_decay: float, warmup: int, seeds: list[int], dropout_seed: int,
                 name: str = "model") -> None:
        self.batch, self.labels, self.metric = batch, labels, metric
        self.masks = {part: masks[part].to(torch.bool) for part in PARTS}
        self.base_lr, self.warmup = lr, warmup
        models = []
        for seed in seeds:
            torch.manual_seed(seed)
            models.append(build())
        self.skeleton = models[0]
        params, buffers = stack_module_state(models)
        trainable = {n for n, p in self.skeleton.named_parameters() if p.requires_grad}
        self.params = {n: p for n, p in params.items() if n in trainable}
        self.buffers = {**{n: p.detach() for n, p in params.items() if n not in trainable}, **buffers}
        self.rows = list(range(len(seeds)))  # member of each row of the stacked tensors
        self._vmapped = vmap(self._member, randomness="different")
        self.stacked = self._try_vmap(name)
        del models
        torch.manual_seed(dropout_seed)
        decay = [p for n, p in self.params.items() if not no_weight_decay(n)]
        plain = [p for n, p in self.params.items() if no_weight_decay(n)]
        groups = [g for g in ({"params": decay}, {"params": plain, "weight_decay": 0.0}) if g["params"]]
        self.optimizer = torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay)

    # ------------------------------------------------------------------------------------------ forward

    def _member(self, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor]) -> torch.Tensor:
        return functional_call(self.skeleton, (params, buffers), (self.batch,))

    def _forward(self) -> torch.Tensor:
        """(R', N, C) logits of the members in the stack: one vmapped call, or one call per member."""
        if self.stacked and len(self.rows) > 1:
            return self._vmapped(self.params, self.buffers)
        return torch.stack([self._member({n: p[i] for n, p in self.params.items()},
                                         {n: b[i] for n, b in self.buffers.items()}) for i in range(len(self.rows))])

    def _try_vmap(self, name: str) -> bool:
        """Whether one vmapped training forward and backward on copies of the first two members' tensors works."""
        rows = min(2, len(self.rows))
        params = {n: p[:rows].detach().clone().requires_grad_() for n, p in self.params.items()}
        buffers = {n: b[:rows].clone() for n, b in self.buffers.items()}
        state = torch.get_rng_state()
        try:
            self.skeleton.train()
            outputs = self._vmapped(params, buffers)
            nodes = self.labels.numel()
            if not (isinstance(outputs, torch.Tensor) and outputs.dim() == 3 and outputs.shape[1] == nodes):
                raise NotStackable(f"its forward returns {getattr(outputs, 'shape', type(outputs).__name__)}")
            outputs.float().sum().backward()
            return True
        except Exception as exc:  # any failure of vmap or of the model under it: the members one after another
            log.info("%s: splits trained one after another inside the step, not vmapped (%s: %s)", name,
                     type(exc).__name__, str(exc).splitlines()[0][:120] if str(exc) else "")
            return False
        finally:
            torch.set_rng_state(state)

    # ------------------------------------------------------------------------------------------ one step

    def _losses(self, logits: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per member and part: the mean cross-entropy (one logit: binary cross-entropy) over the member's nodes of that
        part, (R',) each."""
        r, n, c = logits.shape
        if c == 1:  # one logit of a binary task: the released binary_cross_entropy_with_logits
            target = self.labels.to(logits.dtype).expand(r, n)
            nll = F.binary_cross_entropy_with_logits(logits[..., 0], target, reduction="none")
        else:
            nll = F.cross_entropy(logits.reshape(r * n, c), self.labels.repeat(r), reduction="none").reshape(r, n)
        out = {}
        for part in PARTS:
            mask = self.masks[part][self.rows].to(nll.dtype)
            out[part] = (nll * mask).sum(1) / mask.sum(1).clamp(min=1)
        return out

    def _scores(self, logits: torch.Tensor) -> dict[str, list[float]]:
        """Per part: every member's score (%) on its nodes of that part."""
        out = {part: [] for part in PARTS}
        if self.metric == "roc_auc":
            positive = positive_score(logits)
            for i, member in enumerate(self.rows):
                for part in PARTS:
                    mask = self.masks[part][member]
                    out[part].append(100.0 * float(roc_auc(positive[i][mask], self.labels[mask])))
            return out
        correct = (logits.argmax(-1) == self.labels).to(torch.float64)
        for part in PARTS:
            mask = self.masks[part][self.rows].to(torch.float64)
            out[part] = (100.0 * (correct * mask).sum(1) / mask.sum(1).clamp(min=1)).tolist()
        return out

    def epoch(self, run: Run, members: list[int]) -> list[dict]:
        """One optimisation step of every member in the stack, then every member evaluated on all its parts."""
        step = run.states[members[0]].epoch
        lr = self.base_lr * warmup_factor(step, self.warmup)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.skeleton.train()
        train_loss = self._losses(self._forward())["train"]
        train_loss.sum().backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.skeleton.eval()
        with torch.no_grad():
            logits = self._forward()
            losses, scores = self._losses(logits), self._scores(logits)
        train = train_loss.detach().double().tolist()
        losses = {part: loss.double().tolist() for part, loss in losses.items()}
        rows = []
        for i, member in enumerate(self.rows):
            if member not in members:
                continue
            rows.append({"lr": lr, "train_loss": train[i], "val_loss": losses["val"][i],
                         "test_loss": losses["test"][i], "eval_train_loss": losses["train"][i],
                         **{f"{part}_score": scores[part][i] for part in PARTS}})
        return rows

    def leave(self, members: list[int]) -> None:
        """Drop the rows of ``members`` from the stacked tensors and the optimiser state."""
        keep_rows = [i for i, m in enumerate(self.rows) if m not in members]
        if len(keep_rows) == len(self.rows):
            return
        keep = torch.tensor(keep_rows, dtype=torch.long, device=self.labels.device)
        for p in self.params.values():
            state = self.optimizer.state.get(p, {})
            for key, value in state.items():
                if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == len(self.rows):
                    state[key] = value.index_select(0, keep)
            p.grad = None
            p.data = p.data.index_select(0, keep) if keep_rows else p.data[:0]
        self.buffers = {n: b.index_select(0, keep) for n, b in self.buffers.items()}
        self.rows = [self.rows[i] for i in keep_rows]

    # ------------------------------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict:
        """Stacked parameters and buffers, the rows' members and the optimiser, for a checkpoint."""
        return {"kind": KIND, "rows": list(self.rows), "params": {n: p.detach() for n, p in self.params.items()},
                "buffers": self.buffers, "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Resume from :meth:`state_dict`'s output (ValueError for another step's checkpoint)."""
        if state.get("kind") != KIND:
            raise ValueError("this checkpoint was not written by a stack of splits")
        self.rows = list(state["rows"])
        for n, p in self.params.items():
            p.data = state["params"][n].clone()
        self.buffers = {n: state["buffers"][n].clone() for n in self.buffers}
        self.optimizer.load_state_dict(state["optimizer"])


def member_results(run: Run) -> list[dict]:
    """Per member (split): the scores and losses of its best validation step, the step (0-based), steps trained,
    why it stopped and its status."""
    out = []
    for state in run.states:
        best = state.best if not state.diverged else {}
        out.append({**{f"{part}_score": best.get(f"{part}_score") for part in PARTS},
                    "train_loss": best.get("eval_train_loss"), "val_loss": best.get("val_loss"),
                    "test_loss": best.get("test_loss"), "best_step": None if state.diverged else state.best_epoch,
                    "steps": state.epoch, "stop_reason": state.stop_reason, **state.status(),
                    "seconds": state.elapsed})
    return out
