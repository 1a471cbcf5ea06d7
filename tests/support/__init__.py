"""Shared test helpers: a new layer needs a few lines of test, not a page."""

from tests.support.gradcheck import assert_gradients, assert_module_gradients
from tests.support.layers import Report, check_layer, normal_batch
from tests.support.onnx_check import (
    assert_graph_matches, assert_round_trip, assert_valid, run_ort, run_reference,
)

__all__ = ["Report", "assert_gradients", "assert_graph_matches", "assert_module_gradients",
           "assert_round_trip", "assert_valid", "check_layer", "normal_batch", "run_ort",
           "run_reference"]
