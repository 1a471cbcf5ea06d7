"""Properties over random inputs (hypothesis, derandomized so the suite is repeatable):

- a random valid stack trains one step with finite numbers, and its exported graph gives the
  network's numbers in ONNX Runtime at two batch sizes;
- a random call of any verb with values of the wrong kind is refused at the verb with a
  SpecError (never another exception, never a silent conversion).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepsharp import Adam, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp.errors import SpecError
from deepsharp.layers.base import SPEC_KINDS, _scalar_kinds, make_spec
from deepsharp_export_onnx import OnnxExport
from tests.support import run_ort
from tests.support.fuzz import TOKENS

SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
LOSS = CrossEntropy()

ROW_LAYERS = [
    st.integers(1, 6).map(lambda k: lambda s: s.dense(k)),
    st.just(lambda s: s.relu()), st.just(lambda s: s.gelu()), st.just(lambda s: s.tanh()),
    st.just(lambda s: s.sigmoid()), st.just(lambda s: s.layer_norm()),
    st.floats(0.0, 0.9).map(lambda r: lambda s: s.dropout(r)),
    st.floats(0.0, 0.5).map(lambda a: lambda s: s.leaky_relu(a)),
]
SERIES_LAYERS = [
    st.tuples(st.integers(1, 4), st.integers(1, 3)).map(
        lambda a: lambda s: s.conv1d(a[0], kernel=a[1], padding="same")),
    st.integers(1, 4).map(lambda k: lambda s: s.lstm(k, return_sequences=True)),
    st.integers(1, 4).map(lambda k: lambda s: s.gru(k, return_sequences=True)),
    st.just(lambda s: s.relu()), st.just(lambda s: s.layer_norm()),
]


def _build(verbs, tail) -> Sequential:
    stack = Sequential()
    for verb in verbs:
        stack = verb(stack)
    return tail(stack)


def _train_one_step_and_export(stack: Sequential, shape: Shape, seed: int) -> None:
    network = stack.lower(shape, RandomStream(seed))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, *shape)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    history = network.fit(x, y, loss=LOSS, optimizer=Adam(1e-2), epochs=1, batch_size=8, progress=False)
    assert np.isfinite(history["loss"][0])
    for path, value in network.state_dict().items():
        assert np.all(np.isfinite(value)), path
    data = OnnxExport(shape).to_bytes(network, LOSS)
    for batch in (3, 7):
        probe = rng.standard_normal((batch, *shape)).astype(np.float32)
        np.testing.assert_allclose(run_ort(data, probe), network.predict(probe, LOSS), atol=1e-5)


@settings(max_examples=10, **SETTINGS)
@given(st.lists(st.one_of(ROW_LAYERS), max_size=4), st.integers(0, 1000))
def test_random_row_stacks_train_and_export_with_the_networks_numbers(verbs, seed):
    _train_one_step_and_export(_build(verbs, lambda s: s.dense(3)), Shape(4), seed)


@settings(max_examples=6, **SETTINGS)
@given(st.lists(st.one_of(SERIES_LAYERS), min_size=1, max_size=3), st.integers(0, 1000))
def test_random_series_stacks_train_and_export_with_the_networks_numbers(verbs, seed):
    stack = _build(verbs, lambda s: s.global_avg_pool().dense(3))
    _train_one_step_and_export(stack, Shape(5, 2), seed)


KINDS = sorted(SPEC_KINDS)


@settings(max_examples=150, **SETTINGS)
@given(st.sampled_from(KINDS), st.lists(st.sampled_from(sorted(TOKENS)), max_size=3))
def test_any_verb_with_any_values_is_built_or_refused_with_a_spec_error(kind, tokens):
    try:
        getattr(Sequential(), kind)(*(TOKENS[t]() for t in tokens))
    except SpecError:
        pass


def _typed_fields():
    """(kind, field, scalar kinds) for every field of a scalar type."""
    found = []
    for kind in KINDS:
        for name, field in SPEC_KINDS[kind].model_fields.items():
            kinds = _scalar_kinds(field.annotation)
            if kinds and kinds & {int, float, bool, str}:
                found.append((kind, name, frozenset(kinds)))
    return found


@settings(max_examples=120, **SETTINGS)
@given(st.sampled_from(_typed_fields()), st.sampled_from(["true", "str", "float", "np_int", "none", "list"]))
def test_a_value_of_the_wrong_kind_is_refused_at_the_verb_naming_the_argument(field, token):
    kind, name, kinds = field
    value = TOKENS[token]()
    plain = value.item() if isinstance(value, np.generic) else value
    wrong = ((isinstance(plain, bool) and bool not in kinds) or (isinstance(plain, str) and str not in kinds)
             or (type(plain) is float and float not in kinds))
    if not wrong:
        return
    with pytest.raises(SpecError, match=f"{kind}: {name} must be"):  # what the verb calls
        make_spec(SPEC_KINDS[kind], kind, **{name: value})
