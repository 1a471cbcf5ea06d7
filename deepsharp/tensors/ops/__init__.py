"""Importing this package registers every primitive in the table."""

from deepsharp.tensors.ops import activations, elementwise, linalg, losses, reduce, shape  # noqa: F401
from deepsharp.tensors.ops import conv, norm, pool, resample  # noqa: F401
from deepsharp.tensors.ops import attention, embedding, recurrent  # noqa: F401
from deepsharp.tensors.ops import arrange, compare, einsum, functions, index, linear  # noqa: F401
from deepsharp.tensors.ops import reductions, rounding, sort  # noqa: F401
from deepsharp.tensors.ops import assign  # noqa: F401
from deepsharp.tensors.ops import conv_pool, self_attention  # noqa: F401
