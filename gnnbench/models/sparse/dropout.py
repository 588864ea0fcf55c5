"""Dropout draws from the global torch RNG: :func:`bernoulli_mask`, :func:`dropout_mask`,
:func:`bernoulli_positions`."""

from __future__ import annotations

import math

import torch


def bernoulli_positions(n: int, p: float, device: torch.device | str = "cpu") -> torch.Tensor:
    """The sorted positions of the successes in n independent Bernoulli(p) trials (int64), from the global torch RNG.

    Drawn as geometric gaps between successes, g = ⌊log(U) / log(1 − p)⌋ with U uniform on (0, 1], so the work is
    proportional to the ~n·p successes instead of n trials (5× fewer random numbers at dropout 0.8). U comes from
    ``torch.rand`` (float32, multiples of 2⁻²⁴), which caps a gap at log(2⁻²⁴)/log(1 − p): a gap that long has
    probability ≈ 2⁻²⁴ ≈ 6·10⁻⁸, the same resolution as a float32 uniform compared with p."""
    if n <= 0 or p <= 0:
        return torch.zeros(0, dtype=torch.int64, device=device)
    if p >= 1:
        return torch.arange(n, device=device)
    scale = 1.0 / math.log1p(-p)
    found: list[torch.Tensor] = []
    start = 0  # first trial not covered yet
    while start < n:
        mean = (n - start) * p
        draws = int(mean + 6.0 * math.sqrt(mean * (1 - p)) + 16)  # enough in all but ~1e-9 of the calls
        gaps = torch.rand(draws, device=device).neg_().log1p_().mul_(scale)  # log(1 − U) / log(1 − p) ≥ 0
        steps = gaps.to(torch.int64).add_(1)
        steps[0] += start - 1
        positions = torch.cumsum(steps, 0)
        last = int(positions[-1])
        if last >= n:  # sorted: cut at the first position past the end
            positions = positions[: int(torch.searchsorted(positions, positions.new_full((1,), n)))]
        found.append(positions)
        start = last + 1
    return found[0] if len(found) == 1 else torch.cat(found)


def random_words(count: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """``count`` int64 words from the global torch RNG whose low 63 bits are uniform (``random_``)."""
    return torch.empty(count, dtype=torch.int64, device=device).random_()


def bernoulli_mask(shape: tuple[int, ...], keep: float, device: torch.device | str = "cpu") -> torch.Tensor:
    """Independent Bernoulli(``keep``) trials (True = success) as a bool tensor of ``shape``, from the global torch RNG.

    Where the rarer outcome has probability ≤ ``POSITIONS_BELOW`` only its positions are drawn
    (:func:`bernoulli_positions`); otherwise each trial compares 31 uniform random bits (half a word of
    :func:`random_words`) with round(keep·2³¹), so its success probability is ``keep`` to within 2⁻³²
    (``torch.rand(…) < keep`` in float32 resolves 2⁻²⁴)."""
    n = math.prod(shape)
    if keep >= 1 or keep <= 0:
        return torch.full(shape, keep >= 1, dtype=torch.bool, device=device)
    if min(keep, 1 - keep) <= POSITIONS_BELOW:
        rare = keep if keep < 0.5 else 1 - keep
        mask = torch.full((n,), keep >= 0.5, dtype=torch.bool, device=device)
        return mask.index_fill_(0, bernoulli_positions(n, rare, device), keep < 0.5).view(shape)
    halves = random_words((n + 1) // 2, device).view(torch.int32)
    halves.bitwise_and_(0x7FFFFFFF)  # 31 uniform bits in both halves of a word (random_ leaves bit 63 at 0)
    return torch.lt(halves[:n], round(keep * 2**31)).view(shape)


def dropout_mask(shape: tuple[int, ...], p: float, device: torch.device | str = "cpu") -> torch.Tensor:
    """Inverted-dropout mask: each element independently 1/(1 − p) with probability 1 − p, else 0 (float32).

    Where the rarer outcome has probability ≤ ``POSITIONS_BELOW`` only its positions are drawn
    (:func:`bernoulli_positions`, work ∝ their number), otherwise one comparison of random bits per element
    (:func:`bernoulli_mask`); both ~3× faster than ``F.dropout`` on CPU (measured at p = 0.8 and 0.5)."""
    n = math.prod(shape)
    keep = 1.0 - p
    if min(p, keep) > POSITIONS_BELOW:
        return bernoulli_mask(shape, keep, device).view(torch.uint8).to(torch.float32).mul_(1.0 / keep)
    if keep >= 0.5:
        mask = torch.full((n,), 1.0 / keep, device=device).index_fill_(0, bernoulli_positions(n, p, device), 0.0)
    else:
        mask = torch.zeros(n, device=device).index_fill_(0, bernoulli_positions(n, keep, device), 1.0 / keep)
    return mask.view(shape)


POSITIONS_BELOW = 0.2  # measured crossover of the two ways to draw a dropout mask (one CPU core)
