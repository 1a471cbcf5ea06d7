"""Every tensor method the PyTorch fixture holds, called with arguments of the wrong kind (strings,
None, huge integers, tensors and arrays where numbers or flags go, tensors that do not fit): each
call answers or raises the project's error naming the call, never numpy's or Python's
(a call with too few or too many arguments is Python's own TypeError, as in PyTorch)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from deepsharp.errors import DeepsharpError
from deepsharp.tensors import Tensor
from tests.support.parity_cases import CASES

METHODS = sorted({c.call.split(".")[-1] for c in CASES if c.call.startswith("x.")}
                 - {"__getattribute__"})  # (attribute access: Python's AttributeError)
JUNK = {"string": lambda: "a", "none": lambda: None, "huge": lambda: 10**20, "negative": lambda: -7,
        "half": lambda: 2.5, "list": lambda: [1, 2], "pair": lambda: (0, 5),
        "wide": lambda: Tensor(np.ones((4, 5), np.float32)),
        "flags": lambda: Tensor(np.array([True, False])), "ids": lambda: Tensor(np.array([[1, 9]])),
        "array": lambda: np.ones((3, 2)), "dict": lambda: {}, "zero": lambda: 0, "one": lambda: 1}


def _arity(error: TypeError) -> bool:
    """Python's own refusal of the call's shape (the method never ran)."""
    text = str(error)
    return "positional argument" in text or "missing" in text or "unexpected keyword" in text


@pytest.mark.parametrize("name", METHODS)
def test_wrong_kinds_of_arguments_are_refused_by_the_project(name):
    x = Tensor(np.ones((2, 3), np.float32))
    method = getattr(x, name)
    raw = []
    for count in (1, 2):
        for args in itertools.product(sorted(JUNK), repeat=count):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    method(*(JUNK[a]() for a in args))
                except DeepsharpError:
                    pass
                except TypeError as error:
                    if not _arity(error):
                        raw.append((args, f"TypeError: {error}"))
                except Exception as error:  # noqa: BLE001 (what the test looks for)
                    raw.append((args, f"{type(error).__name__}: {error}"))
    assert raw[:3] == []


def test_a_tensor_of_several_values_is_no_python_scalar():
    x = Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(DeepsharpError, match="Boolean value of Tensor with more than one value "
                                             "is ambiguous"):
        bool(x)
    with pytest.raises(DeepsharpError, match="only one element tensors can be converted"):
        float(x)
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [0, 1][Tensor(np.array([0, 1]))]
    assert float(Tensor(np.ones(1, np.float32))) == 1.0 and [5, 6][Tensor(np.array(1))] == 6


def test_numpys_refusal_inside_an_operation_names_the_operation():
    with pytest.raises(DeepsharpError) as caught:
        Tensor(np.ones(3, np.float32)) * "a"       # (the string is cast to the tensor's type)
    assert str(caught.value) == ("cast: cannot compute on <U1() with to='<f4': could not convert "
                                 "string to float: np.str_('a')")


FUNCTIONS = sorted({c.call.split(".")[-1] for c in CASES if not c.call.startswith("x.")})


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_take_a_tensor_first_and_refuse_wrong_kinds_by_name(name):
    """deepsharp.functional's functions (torch.* and F.* in the fixture): a tensor or a list of
    them first, then arguments of the wrong kind; only the project's errors come out."""
    from deepsharp import functional

    function = getattr(functional, name)
    x = Tensor(np.ones((2, 3), np.float32))
    raw = []
    for first in (x, [x, x], "x"):
        for count in (0, 1, 2):
            for args in itertools.product(sorted(JUNK), repeat=count):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        function(first, *(JUNK[a]() for a in args))
                    except DeepsharpError:
                        pass
                    except TypeError as error:
                        if not _arity(error):
                            raw.append((type(first).__name__, args, f"TypeError: {error}"))
                    except Exception as error:  # noqa: BLE001 (what the test looks for)
                        raw.append((type(first).__name__, args, f"{type(error).__name__}: {error}"))
    assert raw[:3] == []
