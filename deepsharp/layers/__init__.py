"""Layer families. Importing this package registers every layer kind (and its verb)."""

from deepsharp.layers import activations, dense, dropout  # noqa: F401
from deepsharp.layers import conv, norm, pool, resample, reshape, spatial_dropout  # noqa: F401
from deepsharp.layers import attention, embedding, low_rank, recurrent, series  # noqa: F401
from deepsharp.layers import attention_pool, data_format  # noqa: F401
from deepsharp.layers import composite  # noqa: F401  (after the others: it imports Sequential)
from deepsharp.layers.base import SPEC_KINDS, Flow, LayerSpec, Lowering, Step, layer

__all__ = ["SPEC_KINDS", "Flow", "LayerSpec", "Lowering", "Step", "layer"]
