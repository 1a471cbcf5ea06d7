"""Smaller graphs: float16 weights, and int8 weights through ONNX Runtime's own quantizer.

    weights="float16"   every weight (an initializer holding a slot's values) is stored float16
                        and read through a `Cast` to float32, so every node computes in float32
                        as before (ONNX Runtime folds the Casts when it loads the graph). The
                        constants the writers make (a mask's -1e9, a positions table) and the
                        preparation stay float32. A weight holding a finite value beyond
                        float16's range (65504) is refused by name.
    quantize="dynamic"  `onnxruntime.quantization.quantize_dynamic` (int8 weights, 7-bit range:
                        `reduce_range`, which keeps the u8 x s8 products of x86 kernels without
                        VNNI from saturating) on the graph written at operator set 11 or newer.
                        A node holding weights the quantizer has no integer form for (GRU,
                        ConvTranspose) is refused by name, as is any weight it leaves float32.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from pathlib import Path
from typing import Iterator

import numpy as np
import onnx
from onnx import TensorProto

from deepsharp_export_onnx.errors import ExportRefused
from deepsharp_export_onnx.graph import Node, Tape

WEIGHTS = ("float32", "float16")
QUANTIZE = (None, "dynamic")
FLOAT16_LARGEST = float(np.finfo(np.float16).max)  # 65504
QUANTIZE_OPSET = 11  # the oldest set ONNX Runtime's quantizer writes its nodes in
# node types whose weights an int8 form stores in 8 bits (per-channel vectors, such as biases and
# norms' scales, stay float32 in every int8 form)
WEIGHT_NODES = ("MatMul", "Gemm", "Conv", "ConvTranspose", "LSTM", "GRU", "RNN", "Gather")
RUNTIME_NEEDED = ("needs onnxruntime, which is not installed (pip install onnxruntime, or "
                  "deepsharp[runtime])")


def option_faults(weights: str, quantize: str | None, external_data: bool | None) -> list[str]:
    faults = []
    if weights not in WEIGHTS:
        faults.append(f"weights must be one of {WEIGHTS}, received {weights!r}")
    if quantize not in QUANTIZE:
        faults.append(f"quantize must be one of {QUANTIZE}, received {quantize!r}")
    if weights != "float32" and quantize is not None:
        faults.append(f"weights={weights!r} and quantize={quantize!r}: choose one smaller form")
    if quantize is not None and external_data is True:
        faults.append(f"quantize={quantize!r} and external_data=True: the int8 graph is written "
                      f"whole (it takes graphs whose weights stay under 2 GiB)")
    if external_data not in (None, True, False):
        faults.append(f"external_data must be None (when over 2 GiB), True or False, received "
                      f"{external_data!r}")
    return faults


def _reader_of(tape: Tape, name: str) -> Node | None:
    return next((n for n in tape.nodes if name in n.inputs), None)


def _owner(tape: Tape, name: str) -> str:
    node = _reader_of(tape, name)
    return f"step {node.owner}" if node is not None and node.owner else "the graph"


def _float_weights(tape: Tape) -> list[str]:
    return [n for n, a in tape.initializers.items() if n in tape.weights and a.dtype == np.float32]


# -- float16 --------------------------------------------------------------------------------------
def float16_faults(tape: Tape) -> list[str]:
    faults = []
    for name in _float_weights(tape):
        array = tape.initializers[name]
        finite = np.abs(array[np.isfinite(array)])
        if finite.size and finite.max() > FLOAT16_LARGEST:
            faults.append(f"{_owner(tape, name)}: weight {name!r} holds {finite.max():.6g}, beyond "
                          f"float16's largest finite value ({FLOAT16_LARGEST:.0f}): "
                          f"weights='float16' cannot hold it")
    return faults


def to_float16(tape: Tape) -> None:
    """Store every float32 weight float16, read through a Cast to float32 named `{weight}/float32`
    (the Casts first in the graph, in the weights' order)."""
    casts = []
    for name in _float_weights(tape):
        array = tape.initializers[name]
        tape.initializers[name] = array.astype(np.float16)
        cast = f"{name}/float32"
        for node in tape.nodes:
            node.inputs = [cast if i == name else i for i in node.inputs]
        reader = _reader_of(tape, cast)
        casts.append(Node("Cast", [name], [cast], {"to": TensorProto.FLOAT}, cast,
                          reader.owner if reader is not None else ""))
        tape.annotate(cast, array.shape, TensorProto.FLOAT)
    tape.nodes[:0] = casts


# -- int8 -----------------------------------------------------------------------------------------
def _registry() -> set[str]:
    try:
        from onnxruntime.quantization.registry import IntegerOpsRegistry
    except ImportError:
        raise ExportRefused([f"quantize='dynamic' {RUNTIME_NEEDED}"]) from None
    return set(IntegerOpsRegistry)


def quantize_faults(tape: Tape) -> list[str]:
    """Nodes holding weights that ONNX Runtime's dynamic quantization has no integer form for."""
    known = _registry()
    return [f"step {node.owner}: node {node.name!r} ({node.op_type}) holds weights "
            f"({', '.join(i for i in node.inputs if i in tape.weights)}) that ONNX Runtime's "
            f"dynamic quantization has no int8 form for (it quantizes {', '.join(sorted(known))}); "
            f"export it float32 or with weights='float16'"
            for node in tape.nodes
            if node.op_type in WEIGHT_NODES and node.op_type not in known
            and any(i in tape.weights for i in node.inputs)]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The quantizer logs advice (pre-processing, opset) through the root logger: not ours to
    print on every export."""
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(before)


def quantize_dynamic(model: onnx.ModelProto, weights: set[str]) -> onnx.ModelProto:
    """The int8 graph ONNX Runtime's `quantize_dynamic` makes of `model`; refused when it leaves
    one of `weights` float32 in a node of the WEIGHT_NODES types."""
    _registry()
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as quantize

    with tempfile.TemporaryDirectory() as folder, _quiet():
        out = Path(folder) / "int8.onnx"
        try:
            quantize(model, out, weight_type=QuantType.QInt8, reduce_range=True)
        except Exception as error:  # the quantizer's own errors name no type of theirs
            raise ExportRefused([f"ONNX Runtime's quantize_dynamic refused the graph: "
                                 f"{type(error).__name__}: {error}"]) from None
        quantized = onnx.load(str(out))
    floats = {t.name for t in quantized.graph.initializer if t.data_type == TensorProto.FLOAT}
    left = [f"node {node.name!r} ({node.op_type}): ONNX Runtime's quantize_dynamic left weight "
            f"{name!r} float32" for node in quantized.graph.node if node.op_type in WEIGHT_NODES
            for name in node.input if name in weights and name in floats]
    if left:
        raise ExportRefused(left)
    return quantized
