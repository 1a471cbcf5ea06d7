"""Cases for the primitives that place values: setitem (what an in-place write is recorded as)."""

from __future__ import annotations

from deepsharp.tensors.indexing import END, START
from tests.support.cases import case, normal

# x[1:3, ::2] = v (v broadcast along the first axis); x[-1, 4:0:-2] = v; x[...] = v (fill_)
case("setitem", "slices")(lambda: ([normal(4, 5), normal(1, 3)],
                                   {"starts": (1, 0), "stops": (3, END), "steps": (1, 2)}))
case("setitem", "negative")(lambda: ([normal(4, 5), normal(1, 2)],
                                     {"starts": (-1, 4), "stops": (END, 0), "steps": (1, -2)}))
case("setitem", "reversed-all")(lambda: ([normal(3, 4), normal(3, 1)],
                                         {"starts": (-1, 0), "stops": (START, END),
                                          "steps": (-1, 1)}))
