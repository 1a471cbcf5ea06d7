"""The one check of a graph's input and output names against the values inside it, shared by
layer stacks, traced modules and the preparation written in front of them."""

from __future__ import annotations

from typing import Sequence

from deepsharp_export_onnx.graph import Tape


def name_faults(tape: Tape, inputs: Sequence[str], outputs: Sequence[tuple[str, str]]) -> list[str]:
    """The graph's input and output names must name nothing else: an output name already taken
    by an internal value would make the graph answer that value (`output_name="2.dense"` gave
    logits instead of probabilities), an input name a node also produces is an invalid graph.

    `outputs` pairs each requested output name with the name the tape gave the value meant
    (different when the requested name was taken). Layer stacks and traced modules both use it.
    """
    faults = []
    produced = {o: node for node in tape.nodes for o in node.outputs}
    requested = list(inputs) + [name for name, _ in outputs]
    for name in sorted({n for n in requested if requested.count(n) > 1}):
        faults.append(f"the name {name!r} is given to more than one graph input or output")
    for name in inputs:
        if name in produced:
            node = produced[name]
            faults.append(f"input name {name!r} is also the name of a value inside the graph "
                          f"(node {node.name!r}, {node.op_type}, written for "
                          f"{node.owner or 'the graph'}); rename the input (input_name, or the column "
                          f"of the preparation)")
        elif name in tape.initializers:
            faults.append(f"input name {name!r} is also the name of a constant; rename the input "
                          f"(input_name, or the column of the preparation)")
    for name, written in outputs:
        if name != written:
            owner = produced[name].owner if name in produced else "a constant"
            faults.append(f"output name {name!r} is already the name of a value inside the graph "
                          f"(written for {owner or 'the graph'}), which the graph would answer "
                          f"instead; choose another output_name")
    return faults
