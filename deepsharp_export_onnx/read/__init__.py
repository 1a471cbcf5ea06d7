"""The reading direction: `OnnxFile` (file.py) normalises a graph (normalise/: constants folded,
shapes inferred, no-ops dropped, decompositions fused), settles its two ends (ends.py: the output
read, the input's order and example shape), then walks it through the reader table (readers/,
one reader per op type or pattern, by family) and lowers the layer specs it finds into a
network."""
