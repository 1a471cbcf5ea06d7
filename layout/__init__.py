"""Layout: the one place that knows how a number is laid out elsewhere.

Pure numpy functions, one per conversion, used by the exporter's writers and the importer's
readers alike (so the two cannot disagree), each with a round-trip test.
"""

from layout.conv import (
    channels_first_flat_order, channels_first_to_flat_rows, conv_kernel_onnx_perm,
    conv_kernel_to_onnx, conv_kernel_to_torch, conv_transpose_kernel_onnx_perm,
    conv_transpose_kernel_to_onnx, conv_transpose_kernel_to_torch,
    flat_rows_to_channels_first, onnx_to_conv_kernel, onnx_to_conv_transpose_kernel,
    torch_to_conv_kernel, torch_to_conv_transpose_kernel,
)
from layout.dense import (
    dense_kernel_to_gemm, dense_kernel_to_matmul, dense_kernel_to_torch, gemm_to_dense_kernel,
    matmul_to_dense_kernel, torch_to_dense_kernel,
)
from layout.orders import Order, permute_dims, to_channels_first, to_channels_last

__all__ = [
    "Order", "dense_kernel_to_gemm", "dense_kernel_to_matmul", "dense_kernel_to_torch",
    "gemm_to_dense_kernel", "matmul_to_dense_kernel", "permute_dims", "to_channels_first",
    "to_channels_last", "torch_to_dense_kernel",
    # convolution kernels and rows flattened from images (layout.conv)
    "channels_first_flat_order", "channels_first_to_flat_rows", "conv_kernel_onnx_perm",
    "conv_kernel_to_onnx", "conv_kernel_to_torch", "conv_transpose_kernel_onnx_perm",
    "conv_transpose_kernel_to_onnx", "conv_transpose_kernel_to_torch",
    "flat_rows_to_channels_first", "onnx_to_conv_kernel", "onnx_to_conv_transpose_kernel",
    "torch_to_conv_kernel", "torch_to_conv_transpose_kernel",
]
from layout.recurrent import (  # noqa: E402
    GRU_GATES, GRU_GATES_ONNX, LSTM_GATES, LSTM_GATES_ONNX, gru_biases_to_onnx,
    gru_kernel_to_onnx, in_projection_biases, in_projection_to_kernels, kernels_to_in_projection,
    kernels_to_torch_in_projection, lstm_biases_to_onnx,
    lstm_kernel_to_onnx, onnx_to_gru_biases, onnx_to_gru_kernel, onnx_to_lstm_biases,
    onnx_to_lstm_kernel, recurrent_kernel_to_torch, reorder_gates, torch_in_projection_to_kernels,
    torch_to_recurrent_kernel,
)

__all__ += [
    "GRU_GATES", "GRU_GATES_ONNX", "LSTM_GATES", "LSTM_GATES_ONNX", "gru_biases_to_onnx",
    "gru_kernel_to_onnx", "in_projection_biases", "in_projection_to_kernels",
    "kernels_to_in_projection", "kernels_to_torch_in_projection", "lstm_biases_to_onnx",
    "lstm_kernel_to_onnx", "onnx_to_gru_biases", "onnx_to_gru_kernel", "onnx_to_lstm_biases",
    "onnx_to_lstm_kernel", "recurrent_kernel_to_torch", "reorder_gates",
    "torch_in_projection_to_kernels", "torch_to_recurrent_kernel",
]
