"""Symbolic sizes: how a reshape gives its output axes the atoms of its input (docs/tracing.md)."""

from __future__ import annotations

import pytest

from deepsharp.tracing.reshape import Inexpressible, groups, reshape_dims
from deepsharp.tracing.symbols import Atom, Sym, describe, onnx_dims

B = Atom("batch", 3, 0, source=0, axis=0)
T = Atom("steps", 5, 1, source=0, axis=1)
b, t = Sym(1, (B,)), Sym(1, (T,))


def test_a_symbol_is_coefficient_times_atoms():
    dim = Sym.of([T, B], 4)
    assert dim == Sym(4, (B, T)) and dim.example == 60 and str(dim) == "4*batch*steps"
    assert Sym.of([], 6) == 6
    assert onnx_dims((b, 7, dim)) == ("batch", 7, "4*batch*steps")
    assert describe((b,)) == "(batch,)"


def test_groups_of_equal_element_count():
    assert groups((3, 5, 4), (15, 2, 2)) == [([0, 1], [0]), ([2], [1, 2])]
    assert groups((3, 1, 4), (3, 4, 1)) == [([0], [0]), ([1], []), ([2], [1]), ([], [2])]
    assert groups((6,), (2, 3)) == [([0], [0, 1])]


@pytest.mark.parametrize("dims, shape, expected", [
    ((b, t, 4), (15, 4), (Sym(1, (B, T)), 4)),                 # merge
    ((Sym(1, (B, T)), 4), (3, 5, 4), (b, t, 4)),               # split back, exact products
    ((Sym(1, (B, T)), 4), (5, 3, 4), (t, b, 4)),
    ((b, t, 4), (3, 20), (b, Sym(4, (T,)))),                   # a divisor: 4 x steps
    ((b, t, 8), (3, 5, 2, 4), (b, t, 2, 4)),                   # fixed sizes stay fixed
    ((b, 1, t), (3, 5), (b, t)),                               # squeeze
    ((b, t), (3, 1, 5, 1), (b, 1, t, 1)),                      # unsqueeze
    ((Sym(2, (B,)), 4), (2, 3, 4), (2, b, 4)),                 # exact beats a coefficient
    ((b, t, 4), (6, 10), (Sym(2, (B,)), Sym(2, (T,)))),        # divisors on both axes
    ((b, t), (5, 3), (t, b)),                                  # a transposing reshape
])
def test_reshape_gives_each_axis_its_atoms(dims, shape, expected):
    assert reshape_dims(dims, shape) == expected


def test_a_fixed_size_equal_to_a_symbol_is_ambiguous():
    with pytest.raises(Inexpressible, match=r"ambiguous, the output could be \(3, batch\) or "
                                            r"\(batch, 3\)"):
        reshape_dims((Sym(3, (B,)),), (3, 3))  # batch is 3, and so is the fixed 3


def test_a_symbol_that_divides_no_output_axis_is_inexpressible():
    six = Atom("batch", 6, 0, source=0, axis=0)
    with pytest.raises(Inexpressible, match="cannot be spread over the output sizes"):
        reshape_dims((Sym(1, (six,)), t, 4), (8, 15))


def test_an_empty_tensor_with_symbols_is_inexpressible():
    with pytest.raises(Inexpressible, match="empty"):
        reshape_dims((b, 0), (0, 3))
    assert reshape_dims((3, 0), (0, 3)) == (0, 3)
