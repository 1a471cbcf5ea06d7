"""The benchmark harness's bookkeeping (benchmarks/side_by_side.py), without timing anything:
busy rounds are discarded and counted, never averaged in, and wall2's second row takes
deepsharp's columns from the data_parallel trainers while sharing PyTorch's rounds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import side_by_side  # noqa: E402


class _Scripted:
    """A worker answering scripted (cpu, wall, others) rounds."""

    def __init__(self, answers):
        self.answers = iter(answers)

    def __call__(self):
        return next(self.answers)


def test_busy_rounds_are_discarded_and_counted():
    quiet, starved, crowded = (1.0, 1.0, 0.0), (0.5, 1.0, 0.0), (1.0, 1.0, 1.5)
    workers = {"a": _Scripted([starved, crowded] + [quiet] * 5),
               "b": _Scripted([quiet] * 5)}
    results = side_by_side._rounds(workers, busy_check=True)
    assert results["a"]["busy"] == 2 and len(results["a"]["kept"]) == side_by_side.ROUNDS
    assert results["b"]["busy"] == 0 and len(results["b"]["kept"]) == side_by_side.ROUNDS


def test_a_measure_that_never_gets_a_quiet_round_gives_nan():
    workers = {label: _Scripted([(0.1, 1.0, 0.0)] * side_by_side.MAX_ROUNDS)
               for label in side_by_side.LABELS}
    row = side_by_side._row("x", "wall2", side_by_side._rounds(workers, busy_check=True), 1,
                            10, {})
    assert row["deepsharp busy"] == side_by_side.MAX_ROUNDS
    assert row["deepsharp"] != row["deepsharp"]  # nan


def test_the_dp_row_takes_deepsharps_columns_from_the_split_trainers():
    def kept(seconds):
        return {"kept": [(seconds, seconds, 0), (seconds * 2, seconds * 2, 1)], "busy": 0}

    results = {"deepsharp": kept(4.0), "numba": kept(3.0), "deepsharp dp": kept(5.0),
               "numba dp": kept(2.0), "torch": kept(3.0), "torch best": kept(2.5)}
    default = side_by_side._row("mlp", "wall2", results, 1, 1000, {})
    split = side_by_side._row("mlp", "wall2 dp", results, 1, 1000,
                              dict(zip(side_by_side.LABELS, side_by_side.SPLIT)))
    assert default["deepsharp"] == pytest.approx(4.0) and split["deepsharp"] == pytest.approx(5.0)
    assert split["numba"] == pytest.approx(2.0) and split["torch"] == default["torch"]
    assert split["x best"] == pytest.approx(2.5 / 5.0)
    assert default["deepsharp median"] == pytest.approx(6.0)
    assert split["x faster paired"] == pytest.approx(2.5 / 5.0)  # both turns: 2.5/5 and 5/10
    assert split["numba x faster paired"] == pytest.approx(2.5 / 2.0)


def test_the_paired_ratio_is_the_median_of_the_turns_both_kept():
    """PyTorch's round over deepsharp's, turn by turn; a turn in which either round was
    discarded as busy pairs nothing; no turn in common gives nan."""
    theirs = [(2.0, 2.0, 0), (3.0, 3.0, 1), (9.0, 9.0, 3)]
    ours = [(1.0, 1.0, 0), (2.0, 2.0, 1), (1.0, 1.0, 2), (1.0, 1.0, 4)]
    assert side_by_side._paired(theirs, ours, 1) == pytest.approx(1.75)  # 2/1 and 3/2
    busy = {"kept": [], "busy": 2}
    results = {label: {"kept": ours, "busy": 0} for label in side_by_side.LABELS}
    results["torch best"] = busy
    row = side_by_side._row("x", "wall2", results, 1, 1, {})
    assert row["x faster paired"] != row["x faster paired"]  # nan
    assert row["x faster"] != row["x faster"]
    paired = side_by_side._rounds({"a": _Scripted([(0.5, 1.0, 0.0)] + [(1.0, 1.0, 0.0)] * 5),
                                   "b": _Scripted([(2.0, 2.0, 0.0)] * 6)}, busy_check=True)
    assert [t[2] for t in paired["a"]["kept"]] == [1, 2, 3, 4, 5]  # turn 0 was busy
    assert side_by_side._paired(paired["b"]["kept"], paired["a"]["kept"], 1) == 2.0


def test_the_targets_figure_is_pytorchs_faster_variant_turn_by_turn():
    """Its default beats its 'best' variant in some turns (the CNN's channels_last at two
    threads): each turn pairs ours with the faster of PyTorch's two rounds of that turn, and a
    turn in which either variant's round was discarded pairs nothing."""
    ours = [(1.0, 1.0, 0), (1.0, 1.0, 1), (1.0, 1.0, 2), (1.0, 1.0, 3)]
    default = [(1.2, 1.2, 0), (2.0, 2.0, 1), (0.5, 0.5, 3)]        # turn 2 discarded
    best = [(1.5, 1.5, 0), (1.4, 1.4, 1), (1.1, 1.1, 2)]           # turn 3 discarded
    results = {"deepsharp": {"kept": ours, "busy": 0}, "numba": {"kept": ours, "busy": 0},
               "torch": {"kept": default, "busy": 1}, "torch best": {"kept": best, "busy": 1}}
    row = side_by_side._row("cnn", "wall2", results, 1, 1000, {})
    assert side_by_side._faster(default, best, 1) == [(1.2, 1.2, 0), (1.4, 1.4, 1)]
    assert row["x faster paired"] == pytest.approx((1.2 + 1.4) / 2)  # turns 0 and 1 only
    assert row["x faster"] == pytest.approx(0.5)          # the bests: 0.5 (default) over 1.0
    assert row["x best"] == pytest.approx(1.1) and row["x torch"] == pytest.approx(0.5)


def test_the_dp_trainers_split_the_batch_and_the_default_ones_do_not():
    asked = []
    trainers = side_by_side.factories(lambda threads: asked.append(threads) or threads,
                                      lambda best: best)
    assert trainers["deepsharp"](2) == 1 and trainers["deepsharp dp"](2) == 2
    assert trainers["torch best"](2) is True and asked == [1, 2]
    assert set(trainers) == set(side_by_side.LABELS + side_by_side.SPLIT)


def test_the_round_order_turns_and_two_thread_rounds_rest_first(monkeypatch):
    calls, rests = [], []
    monkeypatch.setattr(side_by_side.time, "sleep", rests.append)

    class _Named:
        def __init__(self, name):
            self.name = name

        def __call__(self):
            calls.append(self.name)
            return (1.0, 1.0, 0.0)

    workers = {name: _Named(name) for name in "abc"}
    side_by_side._rounds(workers, busy_check=True)
    assert calls[:6] == list("abcbca")  # each round starts one trainer later
    assert len(rests) == len(calls) and set(rests) == {side_by_side.SETTLE}
    rests.clear()
    side_by_side._rounds(workers, busy_check=False)  # CPU time at one thread needs no rest
    assert rests == []
