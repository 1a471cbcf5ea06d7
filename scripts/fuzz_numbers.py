"""The long fuzz of numbers: random layer stacks and modules held to their references, each
case rebuilt from its seed, every fault printed with the seed that replays it.

- the cases of tests/support/random_networks.py: `export`, `paths`, `recurrent`, `trace`,
  `winograd` (the suite runs a few of each: tests/fuzz/test_numbers.py);
- here, needing torch as the benchmarks do: `gradients` (the `trace` chains on PyTorch's tensors
  too, outputs and gradients held to PyTorch's), `pytorch` and `pytorch-series` (random PyTorch
  image models, and recurrent or attention series models, exported by torch.onnx with dynamic
  axes, read by OnnxFile, held to PyTorch's own answer within 1e-5), `pytorch-encoder`,
  `pytorch-mlp`, `pytorch-text`, `pytorch-mobile` and `pytorch-crnn` (encoder stacks, MLPs with
  norms, branches and fifteen activations, embedding text models, MobileNetV3-like blocks,
  convolutional front ends into recurrent layers), each family also as `<family>-dynamo`
  (PyTorch's default exporter, torch.export's graphs; odd seeds at its default operator set).

    .venv/bin/python scripts/fuzz_numbers.py [--cases export=200,paths=100,recurrent=500,trace=500,
                                               winograd=500,pytorch=100,pytorch-series=100,
                                               gradients=500]
                                              [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pytorch_families import (  # noqa: E402  (beside this script)
    SKIPPED, pytorch_case, pytorch_crnn_case, pytorch_encoder_case, pytorch_mlp_case,
    pytorch_mobile_case, pytorch_series_case, pytorch_text_case,
)


def gradients_case(seed: int) -> list[str]:
    """The chain of a `trace` case (tests/support/random_networks.py), the same code run on
    deepsharp's tensors and on PyTorch's (F as torch's functions), in half the cases one
    operation on an input in steps of 0.5 (ties, zeros, the clamp's bounds): the output and the
    gradients of the input and both weights against PyTorch's, within 1e-4 of their size
    (float32)."""
    import types

    import numpy as np
    import torch
    import torch.nn.functional as tF

    from deepsharp import functional as F
    from deepsharp.tensors import Tensor
    from tests.support.random_networks import _C, _CHAIN

    g = np.random.default_rng(seed)
    names = [list(_CHAIN)[i] for i in g.integers(0, len(_CHAIN), int(g.integers(1, 6)))]
    arrays = [g.standard_normal(s).astype(np.float32) * k
              for s, k in (((3, 7, _C), 1.0), ((_C, _C), 0.5), ((2 * _C, _C), 0.5))]
    if g.random() < 0.5:
        # ties and zeros on one operation's input (relu and abs at 0, clamp at its bounds, amax
        # and where): its own rule at the kink. Not after other operations, whose rounding may
        # land a value a hair either side of a kink, nor topk and sort, whose choice among ties
        # PyTorch leaves unspecified (docs/tensors.md)
        names = [n for n in names if n not in ("topk", "sort")][:1] or ["relu"]
        arrays[0] = np.round(arrays[0] * 2) / 2
    weights = g.standard_normal((3, _C)).astype(np.float32)
    torch_f = types.SimpleNamespace(gelu=tF.gelu, cat=torch.cat, where=torch.where,
                                    layer_norm=tF.layer_norm, rms_norm=tF.rms_norm, pad=tF.pad,
                                    einsum=torch.einsum, normalize=tF.normalize)

    def run(make, functions):
        x, w, w2 = (make(a) for a in arrays)
        module = types.SimpleNamespace(w=w, w2=w2)
        y = x
        for name in names:
            y = _CHAIN[name](module, y, functions)
        y = y.mean(dim=1)
        (y * make(weights, False)).sum().backward()
        return [v.detach().numpy() if hasattr(v, "detach") else v._data for v in (y,)] + \
            [t.grad.numpy() if hasattr(t.grad, "numpy") and not isinstance(t.grad, np.ndarray)
             else t.grad for t in (x, w, w2)]

    ours = run(lambda a, grad=True: Tensor(a, requires_grad=grad), F)
    theirs = run(lambda a, grad=True: torch.tensor(a, requires_grad=grad), torch_f)
    exact = None  # PyTorch in float64, made only where the two float32 answers part
    faults = []
    for index, what in enumerate(("output", "x's gradient", "w's gradient", "w2's gradient")):
        a, b = ours[index], theirs[index]
        if a is None and b is None:  # a weight the chain does not use
            continue
        a = np.zeros_like(b) if a is None else np.asarray(a)
        b = np.zeros_like(a) if b is None else np.asarray(b)
        gap = float(np.abs(a - b).max()) if a.shape == b.shape else np.inf
        if gap <= 1e-4 * max(1.0, float(np.abs(b).max())):
            continue
        # a chain may amplify float32 rounding (a layer norm of a row that relu made constant
        # divides by sqrt(eps)): ours passes where it is no farther from PyTorch's float64
        # answer than PyTorch's own float32 one is
        if exact is None:
            exact = run(lambda v, grad=True: torch.tensor(v.astype(np.float64),
                                                          requires_grad=grad), torch_f)
        truth = np.zeros_like(a, np.float64) if exact[index] is None else np.asarray(exact[index])
        if a.shape == truth.shape and np.abs(a - truth).max() <= np.abs(b - truth).max():
            continue
        faults.append(f"seed {seed}: {names}: {what} {gap} from PyTorch's")
    return faults


def _answers(call, lib: str):
    """(outputs as numpy arrays, whether each needs a gradient, the inputs' gradients for a random
    upstream gradient, the error raised); lib is "torch" or "ours"."""
    import numpy as np

    from tests.support.parity_cases import outputs_of

    if lib == "torch":
        import torch
        namespace, make = torch, (lambda a, grad: torch.tensor(a, requires_grad=grad))
    else:
        from deepsharp import functional as namespace
        from deepsharp.tensors import Tensor
        make = (lambda a, grad: Tensor(a, requires_grad=grad))
    tensors = [make(a.copy(), grad) for a, grad in zip(call.arrays, call.grads)]
    try:
        outputs = outputs_of(call.run(namespace, tensors))
    except Exception as error:  # noqa: BLE001 (what either side raises is the answer)
        return None, None, None, error
    arrays = [np.asarray(o.detach().numpy() if lib == "torch" else o.numpy()) for o in outputs]
    needs = [bool(o.requires_grad) for o in outputs]
    g = np.random.default_rng(len(arrays))
    total = None
    for out, array, need in zip(outputs, arrays, needs):
        if need:
            up = g.standard_normal(array.shape).astype(array.dtype)
            term = (out * (torch.from_numpy(up) if lib == "torch" else up)).sum()
            total = term if total is None else total + term
    grads = None
    if total is not None:
        try:
            total.backward()
        except Exception as error:  # noqa: BLE001
            if lib == "torch":  # PyTorch has no derivative here: ours is held to finite
                return arrays, needs, None, None  # differences by the suite instead
            return arrays, needs, None, error
        grads = [None if t.grad is None else np.asarray(t.grad.numpy() if lib == "torch"
                                                         else t.grad)
                 for t in tensors]
    return arrays, needs, grads, None


def _differs(a, b, tolerance: float) -> str:
    """Why array a is not b (shape, dtype, NaN or inf places, or the largest gap), or ''."""
    import numpy as np

    if a.shape != b.shape:
        return f"shape {a.shape} against {b.shape}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} against {b.dtype}"
    if a.dtype.kind not in "fc":
        return "" if np.array_equal(a, b) else f"values {a.ravel()[:6]} against {b.ravel()[:6]}"
    if not np.array_equal(np.isnan(a), np.isnan(b)) or \
            not np.array_equal(np.where(np.isinf(a), a, 0), np.where(np.isinf(b), b, 0)):
        return "NaN or inf in other places"
    finite = np.isfinite(b)
    gap = float(np.abs(a[finite] - b[finite]).max()) if finite.any() else 0.0
    scale = max(1.0, float(np.abs(b[finite]).max())) if finite.any() else 1.0
    return "" if gap <= tolerance * scale else f"{gap:.3g} from PyTorch's"


def tensors_case(seed: int) -> list[str]:
    """A random call of the tensor vocabulary (tests/support/random_calls.py) on PyTorch's
    tensors and on ours: the same outputs, dtypes and gradients, or an error. Neither our
    refusal of a call PyTorch answers (when it is the project's error) nor our answer to a call
    PyTorch refuses is a fault: both are listed, to be read."""
    from deepsharp.errors import DeepsharpError
    from tests.support.random_calls import random_call

    call = random_call(seed)
    theirs, ours = _answers(call, "torch"), _answers(call, "ours")
    label = f"seed {seed}: {call.text}"
    if ours[3] is not None and not isinstance(ours[3], DeepsharpError):
        return [f"{label}: raised {type(ours[3]).__name__}: {str(ours[3])[:160]}"
                + ("" if theirs[3] is None else f" (PyTorch too: {str(theirs[3])[:80]})")]
    if theirs[3] is not None:
        if ours[3] is None and "ZeroDivisionError" in str(theirs[3]):
            # PyTorch refuses these values (an integer quotient by zero), not the call: a number
            # in its place is a silent difference
            return [f"{label}: answered where PyTorch raised {str(theirs[3])[:80]}"]
        if ours[3] is None:
            WIDER.append(f"{label}: PyTorch raised {str(theirs[3])[:120]}")
        return []
    if ours[3] is not None:
        REFUSED.append(f"{label}: {str(ours[3])[:160]}")
        return []
    import numpy as np

    faults = []
    if len(ours[0]) != len(theirs[0]):
        return [f"{label}: {len(ours[0])} outputs, PyTorch {len(theirs[0])}"]
    for k, (a, b, need, their_need) in enumerate(zip(ours[0], theirs[0], ours[1], theirs[1])):
        why = _differs(a, b, 1e-5) or ("" if need == their_need else
                                        f"requires_grad {need}, PyTorch's {their_need}")
        if why:
            faults.append(f"{label}: output {k}: {why}")
    finite = all(np.isfinite(a).all() for a in call.arrays + theirs[0] if a.dtype.kind == "f")
    for k, (a, b) in enumerate(zip(ours[2] or [], theirs[2] or [])):
        # gradients are held where the inputs and outputs are finite and PyTorch's gradient is a
        # number (at inf or NaN each framework's rule reaches its own NaN, inf or number: a
        # division by zero's gradient, prod's where an entry is inf; docs/tensors.md)
        if a is None and b is None or not finite:
            continue
        a = np.zeros_like(b) if a is None else a
        b = np.zeros_like(a) if b is None else b
        a, b = a.astype(b.dtype), b.copy()
        a[~np.isfinite(b)] = b[~np.isfinite(b)]
        why = _differs(a, b, 1e-4)
        if why:
            faults.append(f"{label}: gradient {k}: {why}")
    return faults


REFUSED: list[str] = []
WIDER: list[str] = []


def main() -> int:
    from tests.support.random_networks import CASES as SUITE_CASES

    CASES = {**SUITE_CASES, "pytorch": pytorch_case, "pytorch-series": pytorch_series_case,
             "pytorch-dynamo": lambda seed: pytorch_case(seed, dynamo=True),
             "pytorch-series-dynamo": lambda seed: pytorch_series_case(seed, dynamo=True),
             "pytorch-mlp": pytorch_mlp_case,
             "pytorch-mlp-dynamo": lambda seed: pytorch_mlp_case(seed, dynamo=True),
             "pytorch-text": pytorch_text_case,
             "pytorch-text-dynamo": lambda seed: pytorch_text_case(seed, dynamo=True),
             "pytorch-mobile": pytorch_mobile_case,
             "pytorch-mobile-dynamo": lambda seed: pytorch_mobile_case(seed, dynamo=True),
             "pytorch-crnn": pytorch_crnn_case,
             "pytorch-crnn-dynamo": lambda seed: pytorch_crnn_case(seed, dynamo=True),
             "pytorch-encoder": pytorch_encoder_case,
             "pytorch-encoder-dynamo": lambda seed: pytorch_encoder_case(seed, dynamo=True),
             "gradients": gradients_case, "tensors": tensors_case}

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases",
                        default="export=200,paths=100,recurrent=500,trace=500,winograd=500,"
                                "pytorch=100,pytorch-series=100,gradients=500,tensors=3000")
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed")
    args = parser.parse_args()
    try:
        counts = {name: int(count) for name, count in
                  (part.split("=") for part in args.cases.split(",") if part)}
    except ValueError:
        parser.error(f"--cases takes name=count pairs, received {args.cases!r}")
    unknown = sorted(set(counts) - set(CASES))
    if unknown:
        parser.error(f"no such cases {unknown}; known: {sorted(CASES)}")
    found = 0
    for name, count in counts.items():
        started, faults = time.perf_counter(), []
        for seed in range(args.seed, args.seed + count):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                faults += CASES[name](seed)
        found += len(faults)
        print(f"{name:10s} {count:6d} cases  {len(faults):3d} faults  "
              f"{time.perf_counter() - started:7.1f} s")
        for fault in faults:
            print("   ", fault)
        for what, listed in (("refused (our error, where PyTorch answers)", REFUSED),
                             ("answered where PyTorch raised", WIDER)):
            if name == "tensors" and listed:
                print(f"    {what}: {len(listed)}")
                for line in listed:
                    print("     ", line)
        if SKIPPED:  # PyTorch's own exporter refused these models: listed, to be read
            print(f"    not exported by PyTorch: {len(SKIPPED)}")
            for line in SKIPPED:
                print("     ", line)
            SKIPPED.clear()
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
