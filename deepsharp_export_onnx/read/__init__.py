"""The reading direction: `OnnxFile` walks a graph through the reader table (`readers/`, one
reader per op type or pattern) and lowers the layer specs it finds into a network."""
