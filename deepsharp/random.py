"""RandomStream: counter-based random numbers drawn per named purpose.

Every draw is keyed by the stream's seed and a purpose string (`initialise:3`, `shuffle:0`,
`dropout:2:117`). A purpose always yields the same numbers whatever was drawn before it, so adding a
layer never changes another layer's initial values, and a resumed run draws what the first run drew.
The generator is numpy's Philox, keyed by a 128-bit hash of (seed, purpose).
"""

from __future__ import annotations

import hashlib

import numpy as np

from deepsharp.errors import SpecError


class RandomStream:
    """A seed from which independent generators are drawn by purpose.

    >>> stream = RandomStream(1)
    >>> a = stream.generator("initialise:0").random()
    >>> a == RandomStream(1).generator("initialise:0").random()
    True
    """

    __slots__ = ("seed",)

    def __init__(self, seed: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise SpecError(f"RandomStream: seed must be a non-negative integer, received {seed!r}")
        self.seed = int(seed)

    def generator(self, purpose: str) -> np.random.Generator:
        """A fresh numpy Generator for `purpose`: the same purpose gives the same numbers."""
        digest = hashlib.blake2b(f"{self.seed}\x00{purpose}".encode(), digest_size=16).digest()
        key = int.from_bytes(digest, "little")
        return np.random.Generator(np.random.Philox(key=key))

    def __repr__(self) -> str:
        return f"RandomStream({self.seed})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RandomStream) and other.seed == self.seed

    def __hash__(self) -> int:
        return hash(("RandomStream", self.seed))
