"""The checker's contract beyond the corpus: results, errors, engines, and where it differs from
the onnx reference evaluator on purpose."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx.reference import ReferenceEvaluator
from onnx.reference.shape_annotation_checker import ShapeAnnotationError
from tests.export_onnx.annotation_corpus import (
    F32, T, h, hidden, if_model, ir3, loop_model, mlp, model, ones, reference_offender,
    scan_model, transposed, tv, two_faults, two_inputs,
)

from deepsharp_export_onnx.check import engines as _annotation_engines
from deepsharp_export_onnx.check.annotations import check_annotations, check_inputs, run_annotation_check
from deepsharp_export_onnx.errors import AnnotationViolation, BoundBy, OnnxError


def violation(model, feeds, **kwargs) -> AnnotationViolation:
    with pytest.raises(AnnotationViolation) as caught:
        check_annotations(model, feeds, **kwargs)
    return caught.value


def runtime_session(model):
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


# --- results --------------------------------------------------------------------------------


def test_returns_the_binding_map_and_the_report_names_the_engine():
    model, feeds = hidden(("batch", 2))
    assert check_annotations(model, feeds) == {"batch": 2, "hidden": 6}
    report = run_annotation_check(model, feeds)
    assert (report.engine, report.reference_nodes, report.fallback) == ("onnxruntime", (), "")
    assert report.checks == 3  # x, h, y
    assert run_annotation_check(model, feeds, engine="reference").engine == "reference"


def test_annotated_bodies_are_checked_on_the_reference_evaluator_only():
    report = run_annotation_check(*if_model())
    assert report.engine == "onnxruntime+reference"
    assert report.reference_nodes == ("If 'choose'",)


def test_accepts_bytes_and_a_path(tmp_path):
    model, feeds = mlp()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    assert check_annotations(model.SerializeToString(), feeds) == {"batch": 5}
    assert check_annotations(str(path), feeds) == check_annotations(path, feeds) == {"batch": 5}


def test_the_model_given_is_not_modified():
    model, feeds = if_model(then_vi=("batch", 9))
    before = model.SerializeToString()
    violation(model, feeds)
    assert model.SerializeToString() == before


# --- violations -------------------------------------------------------------------------------


def test_a_symbol_violation_names_the_value_that_bound_it():
    found = violation(*transposed())  # x (2, 3) binds batch=2, feat=3; y is (3, 2)
    assert isinstance(found, OnnxError)
    assert (found.value, found.where, found.axis, found.declared, found.actual) == ("y", "graph output", 0, "batch", 3)
    assert found.bound_by == BoundBy("x", "graph input", 0, 2)
    assert found.shape == (3, 2)
    assert str(found).startswith(
        "value 'y' (graph output), axis 0: declared 'batch', which value 'x' (graph input) bound to 2 "
        "at axis 0; the run produced 3 (shape (3, 2))"
    )


def test_a_symbol_bound_by_an_intermediate_is_reported_as_such():
    found = violation(*hidden(("batch", "hidden")))
    assert found.bound_by == BoundBy("h", "value_info", 1, 6)
    assert (found.value, found.axis, found.actual) == ("y", 1, 2)


def test_a_rank_violation_gives_both_shapes():
    found = violation(*mlp(h_shape=("batch", None, 3)))
    assert (found.value, found.where, found.axis) == ("h", "value_info", None)
    assert (found.declared, found.actual) == (("batch", None, 3), (5, 3))
    assert str(found) == "value 'h' (value_info): declared rank 3 ('batch', ?, 3); the run produced rank 2 (shape (5, 3))"


def test_a_constant_violation():
    found = violation(*mlp(y_shape=("batch", 5)))
    assert (found.value, found.axis, found.declared, found.actual, found.bound_by) == ("y", 1, 5, 3, None)
    assert str(found) == "value 'y' (graph output), axis 1: declared 5; the run produced 3 (shape (5, 3))"


def test_every_violation_of_the_run_is_reported_once():
    found = violation(*two_faults())
    assert found.value == "y"
    assert [(v.value, v.axis) for v in found.also] == [("z", None)]
    assert "and 1 more in the same run:\n  - value 'z' (graph output): declared rank 1" in str(found)


def test_a_violation_inside_a_loop_names_the_body_and_iteration():
    found = violation(*loop_model(grow=True))
    assert found.where == "graph input in body 'body' of Loop 'repeat', iteration 1"
    assert found.bound_by == BoundBy("v0", "graph input", 0, 3)  # the main graph's v0 bound 'n'
    assert found.also[0].where == "graph input in body 'body' of Loop 'repeat', iteration 2"
    assert found.engine == "onnxruntime+reference"


@pytest.mark.parametrize("engine", ["auto", "reference"])
def test_a_broken_precondition_stops_before_the_run(engine):
    model, _ = mlp(x_shape=("batch", 4))
    found = violation(model, {"x": ones(3, 5)}, engine=engine)  # MatMul would fail on 5 != 4
    assert (found.value, found.where, found.axis, found.declared, found.actual, found.also) == ("x", "graph input", 1, 4, 5, ())


# --- feeds and engines ------------------------------------------------------------------------


def test_missing_and_unknown_feeds_are_named():
    model, _ = two_faults()
    with pytest.raises(ValueError, match=r"missing graph input 'x' \(float \[n, 3\]\); 'q' is not a graph input"):
        check_annotations(model, {"q": ones(1)})


def test_an_input_with_a_default_may_be_left_out():
    model, feeds = ir3()
    assert "w" not in feeds
    assert check_annotations(model, feeds) == {"batch": 2, "in": 4, "units": 3}


def test_an_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="engine must be one of auto, onnxruntime, reference; received 'ort'"):
        check_annotations(*mlp(), engine="ort")


def test_the_runtime_engine_refuses_annotated_bodies():
    with pytest.raises(ValueError, match="cannot see values inside subgraph bodies.*If 'choose'"):
        check_annotations(*if_model(), engine="onnxruntime")


def test_a_model_runtime_refuses_as_declared_is_still_checked():
    model, feeds = ir3((4, 5))  # the default w is (4, 3)
    with pytest.raises(Exception, match="Can't merge shape info"):
        runtime_session(model)
    found = violation(model, feeds)
    assert (found.value, found.engine) == ("w", "onnxruntime")


def test_a_scan_runtime_refuses_as_declared_is_still_checked():
    model, feeds = scan_model(s_in=(9,))
    for info, dims in zip(model.graph.input, ([3], [4, 3])):  # constants let Runtime see the conflict
        info.CopyFrom(tv(info.name, dims))
    with pytest.raises(Exception, match="Inferred=3 Declared=9"):
        runtime_session(model)
    found = violation(model, feeds)
    assert (found.value, found.declared, found.actual, found.engine) == ("s_in", 9, 3, "onnxruntime+reference")
    assert reference_offender(model, feeds) == "s_in"


def test_a_body_declaration_runtime_trusts_and_fails_on_is_still_checked():
    # Runtime allocates a body's outputs from their declared shapes, then fails when Relu makes (2, 3).
    model, feeds = if_model(then_vi=(9, 3))
    with pytest.raises(Exception, match=r"has shape \{9,3\} but the computed output shape for this run is \{2,3\}"):
        runtime_session(model).run(None, feeds)
    found = violation(model, feeds)
    assert (found.value, found.axis, found.declared, found.actual, found.engine) == ("t0", 0, 9, 2, "onnxruntime+reference")


def test_a_body_of_the_wrong_rank_falls_back_to_the_reference_evaluator():
    # The copy given to Runtime keeps body ranks, which Runtime needs for Scan; this one is wrong.
    found = violation(*scan_model(y_t=("d", 1)))
    assert (found.value, found.engine) == ("y_t", "reference")


def test_auto_falls_back_when_runtime_cannot_run_the_model(monkeypatch):
    def refuse(*args):
        raise _annotation_engines.RuntimeRefused("ONNX Runtime could not run the model: no")

    monkeypatch.setattr(_annotation_engines, "_runtime_values", refuse)
    report = run_annotation_check(*mlp())
    assert (report.engine, report.fallback, report.bindings) == ("reference", "ONNX Runtime could not run the model: no", {"batch": 5})
    with pytest.raises(RuntimeError, match="could not run the model: no"):
        check_annotations(*mlp(), engine="onnxruntime")


def test_a_model_newer_than_runtime_is_checked_on_the_reference_evaluator():
    # onnx 1.23.2 writes IR 14 by default; onnxruntime 1.31.1 reads up to IR 13.
    model, feeds = mlp()
    model.ir_version = 14
    report = run_annotation_check(model, feeds)
    assert (report.engine, report.bindings) == ("reference", {"batch": 5})
    assert report.fallback.endswith("Unsupported model IR version: 14, max supported IR version: 13")


def test_the_runtime_engine_says_what_runtime_could_not_run():
    node = h.make_node("Mystery", ["x"], ["y"], domain="example.unknown")
    mystery = model([node], [tv("x", [2])], [tv("y", [2])])
    mystery.opset_import.append(h.make_opsetid("example.unknown", 1))
    with pytest.raises(RuntimeError, match="ONNX Runtime could not run the model"):
        check_annotations(mystery, {"x": ones(2)}, engine="onnxruntime")


def test_engines_that_disagree_on_a_node_are_an_error_not_a_verdict():
    # onnx 1.23.2's reference Loop runs zero iterations when `cond` is omitted; Runtime runs M.
    model, feeds = loop_model(grow=True)
    model.graph.node[0].input[1] = ""
    del model.graph.input[1]
    feeds.pop("go")
    with pytest.raises(RuntimeError, match=r"disagree on the outputs of Loop 'repeat' \('v': reference \(3,\), Runtime \(24,\)\)"):
        check_annotations(model, feeds)


def test_a_sparse_initializer_read_by_an_annotated_body():
    values = onnx.numpy_helper.from_array(np.array([5.0, 7.0], F32), "s")
    indices = onnx.numpy_helper.from_array(np.array([1, 4], np.int64), "s_indices")
    sparse = onnx.helper.make_sparse_tensor(values, indices, [2, 3])
    then = h.make_graph([h.make_node("Add", ["x", "s"], ["t"])], "then", [], [tv("t", ["batch", 3])])
    other = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [], [tv("e", ["batch", 3])])
    made = model([h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], [tv("x", ["batch", 3]), tv("c", [], T.BOOL)], [tv("y", ["batch", 3])])
    made.graph.sparse_initializer.append(sparse)
    made.graph.value_info.append(tv("s", ["batch", 3]))
    feeds = {"x": ones(2, 3), "c": np.array(True)}
    # onnx 1.23.2's ReferenceEvaluator cannot load sparse initializers at all, so no oracle here:
    # the body is fed s made dense, and the main graph checks s from its declared dims.
    assert check_annotations(made, feeds) == {"batch": 2}
    made.graph.value_info[0].CopyFrom(tv("s", ["batch", 4]))
    found = violation(made, feeds)
    assert (found.value, found.axis, found.declared, found.actual) == ("s", 1, 4, 3)


def test_at_the_start_graph_inputs_are_checked_before_initializers():
    # x and the initializer w both declare 'in'; both are available when the run starts. The
    # checker takes graph inputs first, onnx's evaluator initializers first: the same conflict,
    # reported from the other side.
    made, _ = ir3()
    del made.graph.input[1]  # w: an initializer only, annotated by value_info
    made.graph.value_info.append(tv("w", ["in", "units"]))
    made.ir_version, made.opset_import[0].version = 10, 21
    feeds = {"x": ones(2, 5)}
    found = violation(made, feeds)
    assert (found.value, found.bound_by.value) == ("w", "x")
    assert reference_offender(made, feeds) == "x"


# --- where the checker and the onnx reference evaluator differ on purpose ---------------------


def test_each_annotation_of_a_value_is_checked():
    # onnx's evaluator keeps one annotation per name (the graph output's replaces the value_info's).
    made = model([h.make_node("Relu", ["x"], ["y"])], [tv("x", ["n", 2])], [tv("y", ["n", 2])], [tv("y", ["n", 3])])
    feeds = {"x": ones(4, 2)}
    assert reference_offender(made, feeds) is None
    found = violation(made, feeds)
    assert (found.value, found.where, found.axis, found.declared) == ("y", "value_info", 1, 3)


def test_element_types_are_not_shape_annotations():
    made = model([h.make_node("Relu", ["x"], ["h"]), h.make_node("Neg", ["h"], ["y"])], [tv("x", ["n"])], [tv("y", ["n"])], [tv("h", ["n"], T.INT64)])
    feeds = {"x": ones(3)}
    with pytest.raises(ShapeAnnotationError, match="Value 'h': declared element type int64"):
        ReferenceEvaluator(made, check_shape_annotations=True).run(None, feeds)
    assert check_annotations(made, feeds) == {"n": 3}


def test_annotations_inside_model_local_functions_are_not_checked_by_either_engine():
    # Runtime inlines functions and cannot show their values, so neither engine checks them
    # (the verdict must not depend on the engine); onnx's evaluator does check them.
    then = h.make_graph([h.make_node("Relu", ["a"], ["t"])], "then", [], [tv("t", [99])])
    other = h.make_graph([h.make_node("Neg", ["a"], ["e"])], "else", [], [tv("e", [99])])
    pick = h.make_node("If", ["c"], ["r"], then_branch=then, else_branch=other)
    function = h.make_function("local", "pick", ["a", "c"], ["r"], [pick], [h.make_opsetid("", 21)])
    made = model([h.make_node("pick", ["x", "c"], ["y"], domain="local")], [tv("x", ["n"]), tv("c", [], T.BOOL)], [tv("y", ["n"])])
    made.opset_import.append(h.make_opsetid("local", 1))
    made.functions.append(function)
    feeds = {"x": ones(3), "c": np.array(True)}
    assert reference_offender(made, feeds) == "t"
    assert run_annotation_check(made, feeds).engine == "onnxruntime"
    assert check_annotations(made, feeds) == check_annotations(made, feeds, engine="reference") == {"n": 3}


def test_check_inputs_checks_the_preconditions_without_running():
    assert check_inputs(*mlp()) == {"batch": 5}
    found = violation_of(check_inputs, two_inputs()[0], {"x": ones(2, 3), "z": ones(4, 2)})
    assert (found.value, found.axis, found.bound_by) == ("z", 0, BoundBy("x", "graph input", 0, 2))
    assert [(v.value, v.axis, v.declared, v.actual) for v in found.also] == [("z", 1, 3, 2)]
    node = h.make_node("Mystery", ["x"], ["y"], domain="example.unknown")  # could not run at all
    assert check_inputs(model([node], [tv("x", ["n"])], [tv("y", [99])]), {"x": ones(4)}) == {"n": 4}
    with pytest.raises(ValueError, match="missing graph input 'x'"):
        check_inputs(*mlp()[:1], {})


def violation_of(function, *args) -> AnnotationViolation:
    with pytest.raises(AnnotationViolation) as caught:
        function(*args)
    return caught.value
