"""Lowering a traced graph (`deepsharp.tracing`) to ONNX through the shared primitive node table
(`..write.nodes`)."""
