"""The length a graph's symbolic axis must take for the weights it holds.

PyTorch's dynamic axes leave a series' steps symbolic even where a Flatten then a Linear fix
them: the Linear's kernel has a row for each value of the flattened series, so the network runs
at one length only. The importer lowers the layers it read at a trial length (EXAMPLE_LENGTHS)
and, where a dense layer's kernel then has other rows than the graph's, looks for the length
that gives them: the layers before that dense, lowered alone (its kernel may be large), give a
row that grows with the length (convolutions and pools), so a binary search finds it.
"""

from __future__ import annotations

import numpy as np

from deepsharp.network import Network
from deepsharp.sequential import Sequential
from deepsharp.shape import Shape

LONGEST = 1 << 20  # steps searched at most


def mismatched_rows(network: Network, state: dict[str, np.ndarray]) -> tuple[int, int] | None:
    """(the place of the first top-level layer whose 2-D kernel has other rows than the graph's,
    the graph's rows) where only the rows differ; None when every slot's shape agrees (or
    another one differs: not a length's doing)."""
    for path, value in network.state_dict().items():
        wanted = state.get(path)
        if wanted is None or np.shape(wanted) == np.shape(value):
            continue
        top, _, name = path.partition(".")
        if "." in name or np.ndim(value) != 2 or np.ndim(wanted) != 2 \
                or np.shape(value)[1] != np.shape(wanted)[1]:
            return None
        return int(top), int(np.shape(wanted)[0])
    return None


def length_for(stack: Sequential, dims: tuple[int, ...], axis: int, place: int,
               rows: int) -> int | None:
    """The least length of `dims[axis]` at which the layers before `place` give `rows` values
    an example, or None when no length does."""
    def values(length: int) -> int:
        shape = list(dims)
        shape[axis] = length
        out = stack.shape_after(place, Shape(*shape))
        return 0 if out is None else int(np.prod(tuple(out)))  # None: too short for a window
    low, high = 1, LONGEST
    if values(high) < rows:
        return None
    while low < high:
        middle = (low + high) // 2
        if values(middle) < rows:
            low = middle + 1
        else:
            high = middle
    return low if values(low) == rows else None
