"""The tensor vocabulary behind `Tensor`'s methods and `deepsharp.functional`: each function
checks its arguments (PyTorch's names and meanings, numpy's keywords accepted beside them) and
applies one primitive or a short composition. The submodules are imported by
`deepsharp.tensors` once `Tensor` exists (its methods reach them as `api.<module>.<function>`)."""
