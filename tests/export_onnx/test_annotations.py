"""The checker agrees with onnx's ReferenceEvaluator(check_shape_annotations=True) on the corpus,
on every engine that applies, and its verdict does not depend on the order nodes run in."""

from __future__ import annotations

import pytest
from tests.export_onnx.annotation_corpus import CASES, Case, reference_offender, reordered, topological_orders, two_value_infos

from deepsharp_export_onnx.check.annotations import check_annotations
from deepsharp_export_onnx.errors import AnnotationViolation


def engines_for(case: Case) -> list[str]:
    # "onnxruntime" refuses models with annotated bodies (tested in test_annotation_engines.py).
    return ["auto", "reference"] + ([] if case.has_bodies else ["onnxruntime"])


def verdict(model, feeds, engine: str) -> tuple[str | None, dict]:
    """(offending value or None, binding map or {})."""
    try:
        return None, check_annotations(model, feeds, engine=engine)
    except AnnotationViolation as violation:
        return violation.value, {}


PAIRS = [pytest.param(case, engine, id=f"{case.name}-{engine}") for case in CASES for engine in engines_for(case)]


def test_corpus_has_every_kind_of_case():
    kinds = " | ".join(case.kind for case in CASES)
    assert len(CASES) >= 30
    assert sum(case.offender is None for case in CASES) >= 10
    assert sum(case.offender is not None for case in CASES) >= 15
    for kind in (
        "rank", "constant", "symbol conflict between two values", "across an input and an output",
        "If body", "Loop body", "Scan body", "anonymous", "no annotation", "value_info",
        "Loop iterations", "precondition", "initializer",
    ):
        assert kind in kinds, kind


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_expected_verdicts_are_the_reference_evaluators(case: Case):
    assert reference_offender(*case.build()) == case.offender


@pytest.mark.parametrize(("case", "engine"), PAIRS)
def test_checker_agrees_with_reference_evaluator(case: Case, engine: str):
    model, feeds = case.build()
    offender, bindings = verdict(model, feeds, engine)
    assert offender == reference_offender(model, feeds) == case.offender
    assert bindings == (case.bindings if case.offender is None else {})


ORDERED = [case for case in CASES if len(topological_orders(case.build()[0].graph.node, limit=2)) > 1]


def test_corpus_has_graphs_with_several_node_orders():
    assert {case.name for case in ORDERED} >= {
        "parallel_branches", "two_value_infos_agree", "symbol_two_value_infos", "two_faults"
    }


@pytest.mark.parametrize("case", ORDERED, ids=[case.name for case in ORDERED])
def test_verdict_does_not_depend_on_node_order(case: Case):
    model, feeds = case.build()
    orders = topological_orders(model.graph.node)
    assert len(orders) > 1
    for order in orders:
        permuted = reordered(model, order)
        for engine in ("auto", "reference"):
            offender, bindings = verdict(permuted, feeds, engine)
            assert (offender is None) == (case.offender is None), (order, engine)
            assert bindings == case.bindings if case.offender is None else bindings == {}
            # The reference run in the same order names the same value.
            assert offender == reference_offender(permuted, feeds), (order, engine)


def test_order_decides_only_which_occurrence_binds_the_symbol():
    model, feeds = two_value_infos(h2_rows=1)  # h1 has 3 rows, h2 has 1; both declare 'k'
    seen = {}
    for order in topological_orders(model.graph.node):
        with pytest.raises(AnnotationViolation) as caught:
            check_annotations(reordered(model, order), feeds)
        seen[caught.value.value] = caught.value.bound_by.value
    assert seen == {"h2": "h1", "h1": "h2"}
