"""The run-time shape-annotation checker (`annotations`) and the engines that show it a run's
values (`engines`: ONNX Runtime, the onnx reference evaluator)."""
