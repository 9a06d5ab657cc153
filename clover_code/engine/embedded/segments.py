"""Where attention segments of the committed prefix start and end.

A segment is a run of tokens that attend to each other causally or, when bidirectional,
both ways; every token sees all earlier segments. With `prefix_attention = "causal"` the
prefix is one causal run (any position can be a cut). With `"block"`, the prefix is a
chain of bidirectional segments, and a reply must not depend on what was decoded before
it, so the segmentation of a prompt is defined from the prompt alone (the *cold grid*):

- the prompt: chunks on multiples of the block size, `[0, B), [B, 2B), ...`, the last one
  ending at the prompt's end (both alignments);
- each decoded block: one segment (with absolute alignment the first block is shorter,
  so later blocks sit on multiples of B again).

A cached prefix can serve a new prompt only up to a cut where its own segmentation
equals the new prompt's cold grid (`grid_cut`); beyond it the prompt is re-encoded.
"""

from __future__ import annotations

import torch

Segment = tuple[int, bool]  # (length, bidirectional inside the segment)


def commit_segments(start: int, count: int, block_size: int, *, block_prefix: bool,
                    absolute: bool) -> list[Segment]:
    """Segments of `count` clean tokens appended at prefix position `start`. Chunks start
    where the commit starts (prompt alignment) or on absolute multiples: a commit that
    starts on the grid (a cold or cut prompt, a decoded block) gets the grid."""
    if not block_prefix:
        return [(count, False)]
    segments = []
    while count > 0:
        offset = start % block_size if absolute else 0
        n = min(count, block_size - offset)
        segments.append((n, True))
        start, count = start + n, count - n
    return segments


def grid_cut(boundaries: list[int], keep: int, block_size: int) -> int:
    """The longest prefix of a block-causal cache, at most `keep` tokens long, whose segment
    ends `boundaries` (ascending, from 0) are exactly the multiples of `block_size`."""
    cut = 0
    for i, end in enumerate(boundaries):
        if end > keep or end != i * block_size:
            break
        cut = end
    return cut


def segment_mask(segments: list[Segment], past: int, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """Additive mask `[1, 1, T, past + T]`: every query sees the whole cached past, earlier
    segments, and its own segment causally or (bidirectional segments) both ways."""
    lengths = torch.tensor([n for n, _ in segments], device=device)
    seg = torch.repeat_interleave(torch.arange(len(segments), device=device), lengths)  # [T]
    both_ways = torch.tensor([b for _, b in segments], device=device)[seg]  # [T]
    q = torch.arange(seg.shape[0], device=device)
    same = seg[:, None] == seg[None, :]  # [T, T]
    visible = (seg[None, :] < seg[:, None]) | (same & (both_ways[:, None] | (q[None, :] <= q[:, None])))
    visible = torch.cat([torch.ones(seg.shape[0], past, dtype=torch.bool, device=device), visible], dim=1)
    mask = torch.zeros(visible.shape, dtype=dtype, device=device).masked_fill(~visible, torch.finfo(dtype).min)
    return mask[None, None]  # [1, 1, T, past + T]
