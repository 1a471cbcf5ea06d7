"""ONNX nodes for the primitives an operation record can hold.

One table, keyed by primitive name, used by the writers of layers that apply a primitive (the
activations) and by the tracer, so a primitive is written the same way whoever writes it. Each
entry takes an `Emit` (a tape bound to a name), the input value names, the record's attributes and
the input ranks, and returns the output value name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from deepsharp_export_onnx.graph import Tape


@dataclass
class Emit:
    """A tape bound to a base name: the first node takes the name, later ones `name/suffix`."""

    tape: Tape
    name: str

    def __call__(self, op_type: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None,
                 *, suffix: str | None = None, outputs: int = 1) -> Any:
        name = self.name if suffix is None else f"{self.name}/{suffix}"
        return self.tape.op(op_type, inputs, attrs, name=name, outputs=outputs)

    def constant(self, label: str, values: Any, dtype: Any = np.int64) -> str:
        return self.tape.constant(f"{self.name}/{label}", values, dtype)


PrimitiveWriter = Callable[[Emit, Sequence[str], dict[str, Any], Sequence[int]], str]
PRIMITIVE_NODES: dict[str, PrimitiveWriter] = {}


def writes_primitive(*names: str) -> Callable[[PrimitiveWriter], PrimitiveWriter]:
    def register(fn: PrimitiveWriter) -> PrimitiveWriter:
        for name in names:
            if name in PRIMITIVE_NODES:
                raise ValueError(f"primitive {name!r} has two ONNX writers")
            PRIMITIVE_NODES[name] = fn
        return fn

    return register


def _same_name(op_type: str) -> PrimitiveWriter:
    return lambda emit, inputs, attrs, ranks: emit(op_type, inputs)


for _primitive, _op in {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh",
                        "softplus": "Softplus", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
                        "neg": "Neg", "abs": "Abs", "sin": "Sin", "cos": "Cos",
                        "add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
                        "matmul": "MatMul", "maximum": "Max", "minimum": "Min",
                        "where": "Where"}.items():
    writes_primitive(_primitive)(_same_name(_op))


@writes_primitive("gelu")
def _gelu(emit, inputs, attrs, ranks):
    return emit("Gelu", inputs, {"approximate": "tanh" if attrs["approximate"] else "none"})


@writes_primitive("silu")
def _silu(emit, inputs, attrs, ranks):
    """x * Sigmoid(x): ONNX has no SiLU operator."""
    s = emit("Sigmoid", inputs, suffix="sigmoid")
    return emit("Mul", [inputs[0], s])


@writes_primitive("elu")
def _elu(emit, inputs, attrs, ranks):
    return emit("Elu", inputs, {"alpha": float(attrs["alpha"])})


@writes_primitive("leaky_relu")
def _leaky_relu(emit, inputs, attrs, ranks):
    return emit("LeakyRelu", inputs, {"alpha": float(attrs["slope"])})


def _softmax_like(op_type: str) -> PrimitiveWriter:
    def write(emit, inputs, attrs, ranks):
        axis = int(attrs["axis"])
        # `_last_axis` lets opsets.needs keep the old (2-D coercing) form for the last axis
        return emit(op_type, inputs, {"axis": axis, "_last_axis": axis == ranks[0] - 1})

    return write


writes_primitive("softmax")(_softmax_like("Softmax"))
writes_primitive("log_softmax")(_softmax_like("LogSoftmax"))


# The sequence primitives (embedding, attention, lstm, gru) register themselves here too.
from deepsharp_export_onnx import sequence_nodes  # noqa: E402,F401
