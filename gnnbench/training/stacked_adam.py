"""Adam for stacked parameters (leading dimension = independent runs), with TensorFlow 1's update.

TF1's ``AdamOptimizer`` (the optimiser of Shchur et al.'s released code, shchur/gnn-benchmark) applies ε to the
bias-corrected step ("ε-hat"; docs/protocols/pitfalls.md#tensorflow-1s-adam):

    t ← t + 1;   lr_t = lr · √(1 − β₂ᵗ) / (1 − β₁ᵗ)
    m ← β₁ m + (1 − β₁) g;   v ← β₂ v + (1 − β₂) g²
    θ ← θ − lr_t · m / (√v + ε)

``torch.optim.Adam`` divides by (√v / √(1 − β₂ᵗ) + ε) instead; the two differ only while √v is comparable to ε.
Runs never interact: every element's update depends on its own gradient only, so R runs stacked along dim 0 train
exactly as R separate optimisers would. Finished runs are dropped with :meth:`select` (the same rows of every
parameter and state tensor), which keeps the step count: all runs of a stack started together.

Members with their own learning rates (tuning trials stacked: ``lr`` a list, one per run): the same kernel runs
once per span of consecutive runs that share a rate, on those rows of every tensor; the kernel is elementwise, so a
run's update is the one it would get alone.

Implemented with torch's fused Adam kernel (one pass over every parameter and its state): TF's step equals torch's
with the step-dependent ε_t = ε / √(1 − β₂ᵗ), since lr_t·m/(√v + ε) = lr/(1 − β₁ᵗ)·m/(√v/√(1 − β₂ᵗ) + ε_t).
"""

from __future__ import annotations

import math

import torch


class StackedAdam:
    """TensorFlow 1's Adam over parameters whose dim 0 indexes independent runs (module docstring); L2 belongs in the
    loss (no ``weight_decay``). ``lr``: one learning rate, or one per run."""

    def __init__(self, params: list[torch.nn.Parameter], lr: float | list[float],
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.params = list(params)
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.step_count = 0
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self._steps = [torch.zeros((), dtype=torch.float32, device=p.device) for p in self.params]

    def zero_grad(self) -> None:
        """Drop every parameter's gradient."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One TF1 Adam step of every parameter that has a gradient (all runs at once; the step count is shared)."""
        params = [p for p in self.params if p.grad is not None]
        if not params:
            return
        index = [i for i, p in enumerate(self.params) if p.grad is not None]
        self.step_count += 1
        steps = [self._steps[i].fill_(self.step_count) for i in index]  # the kernel reads t from these
        eps_t = self.eps / math.sqrt(1 - self.beta2 ** self.step_count)
        tensors = (params, [p.grad for p in params], [self.exp_avg[i] for i in index],
                   [self.exp_avg_sq[i] for i in index])
        for lr, rows in self._spans():
            part = tensors if rows is None else [[t.narrow(0, *rows) for t in ts] for ts in tensors]
            torch._fused_adam_(*part, [], steps, lr=lr, beta1=self.beta1, beta2=self.beta2, weight_decay=0.0,
                               eps=eps_t, amsgrad=False, maximize=False)

    def _spans(self) -> list[tuple[float, tuple[int, int] | None]]:
        """(learning rate, (first row, rows)) per span of consecutive runs with one rate; (lr, None) for all."""
        if not isinstance(self.lr, list):
            return [(self.lr, None)]
        spans: list[list] = []
        for row, lr in enumerate(self.lr):
            if spans and spans[-1][0] == lr:
                spans[-1][2] += 1
            else:
                spans.append([lr, row, 1])
        return [(lr, (first, n)) for lr, first, n in spans]

    @torch.no_grad()
    def select(self, keep: torch.Tensor) -> None:
        """Keep only the runs at positions ``keep`` in the optimiser state (the parameters are sliced by the caller)."""
        self.exp_avg = [s.index_select(0, keep) for s in self.exp_avg]
        self.exp_avg_sq = [s.index_select(0, keep) for s in self.exp_avg_sq]
        if isinstance(self.lr, list):
            self.lr = [self.lr[i] for i in keep.tolist()]

    def state_dict(self) -> dict:
        """Step count and moment estimates (and the runs' learning rates where they have their own), for a
        checkpoint."""
        state = {"step": self.step_count, "exp_avg": self.exp_avg, "exp_avg_sq": self.exp_avg_sq}
        return {**state, "lr": list(self.lr)} if isinstance(self.lr, list) else state

    def load_state_dict(self, state: dict) -> None:
        """Restore the state :meth:`state_dict` returned."""
        self.step_count = state["step"]
        self.exp_avg, self.exp_avg_sq = list(state["exp_avg"]), list(state["exp_avg_sq"])
        if "lr" in state:
            self.lr = list(state["lr"])
