"""The one check of a graph's input and output names against the values inside it, shared by
layer stacks, traced modules and the preparation written in front of them."""

from __future__ import annotations

from typing import Sequence

from deepsharp_export_onnx.graph import Tape


def name_faults(tape: Tape, inputs: Sequence[str], outputs: Sequence[tuple[str, str]]) -> list[str]:
    """The graph's input and output names must name nothing else: an output name already taken
    by an internal value would make the graph answer that value (`output_name="2.dense"` gave
    logits instead of probabilities), an input name a node also produces, or an output name an
    initializer or a second node holds, is an invalid graph; no name may be given twice.

    `outputs` pairs each requested output name with the name the tape gave the value meant
    (different when the requested name was taken). Checked once the output nodes are written;
    layer stacks and traced modules both use it.
    """
    faults = []
    producers: dict[str, list] = {}
    for node in tape.nodes:
        for o in node.outputs:
            producers.setdefault(o, []).append(node)
    requested = list(inputs) + [name for name, _ in outputs]
    for name in sorted({n for n in requested if requested.count(n) > 1}):
        faults.append(f"the name {name!r} is given to more than one graph input or output")
    for name in inputs:
        if name in producers:
            node = producers[name][0]
            faults.append(f"input name {name!r} is also the name of a value inside the graph "
                          f"(node {node.name!r}, {node.op_type}, written for "
                          f"{node.owner or 'the graph'}); rename the input (input_name, or the column "
                          f"of the preparation)")
        elif name in tape.initializers:
            faults.append(f"input name {name!r} is also the name of a constant; rename the input "
                          f"(input_name, or the column of the preparation)")
    for name, written in outputs:
        if name != written or len(producers.get(name, ())) > 1:
            node = producers[name][0] if name in producers else None
            owner = (node.owner or "the graph") if node is not None else "a constant"
            faults.append(f"output name {name!r} is already the name of a value inside the graph "
                          f"(written for {owner}), which the graph would answer instead; choose "
                          f"another output_name")
        elif name in tape.initializers:
            faults.append(f"output name {name!r} is already the name of the constant {name!r} "
                          f"(a parameter's path); choose another output_name")
    return faults
