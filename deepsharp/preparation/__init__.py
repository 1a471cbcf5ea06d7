"""Fitted preparation steps: what a network is trained behind, written into its graph.

    from deepsharp.preparation import Columns, FillMissing, OneHot, Standardizer
    prepare = Columns.fit(table, {"age": [FillMissing, Standardizer], "sex": [OneHot]})
    network.fit(prepare(table), y, ...)
    OnnxExport(Shape(prepare.width_out), prepare=prepare).write(network, loss, "model.onnx")

Every step is fitted once (`Step.fit(rows)`), then immutable; calling it prepares rows as float32,
exactly as the graph does (see docs/deploying.md).
"""

from deepsharp.preparation.base import Preparation
from deepsharp.preparation.categories import IndexEncoder, OneHot
from deepsharp.preparation.columns import Chain, Column, Columns, SelectColumns, as_columns
from deepsharp.preparation.scaling import FillMissing, MinMaxScaler, Standardizer

__all__ = ["Chain", "Column", "Columns", "FillMissing", "IndexEncoder", "MinMaxScaler", "OneHot",
           "Preparation", "SelectColumns", "Standardizer", "as_columns"]
