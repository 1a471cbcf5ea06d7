"""deepsharp: declare a network as a stack of layers (or write it as code), train it with numpy,
export it to ONNX and read it back.

    from deepsharp import Sequential, Shape, RandomStream, BinaryCrossEntropy, Adam
    network = Sequential().dense(16).relu().dense(1).lower(Shape(14), RandomStream(1))
    history = network.fit(x, y, loss=BinaryCrossEntropy(), optimizer=Adam(1e-3), epochs=20)
    p = network.predict(x, BinaryCrossEntropy())
"""

from deepsharp import functional
from deepsharp.callbacks import (
    Callback, CSVLogger, EarlyStopping, History, ModelCheckpoint, ReduceLROnPlateau,
)
from deepsharp.errors import (
    DataError, DeepsharpError, MaskRefused, MissingExtra, OpError, PreparationError, SaveError,
    ShapeError, SpecError, StateError, TargetError, TrainingError,
)
from deepsharp.io import (
    load, load_checkpoint, load_state_dict, save, save_checkpoint, save_state_dict,
)
from deepsharp.losses import BinaryCrossEntropy, CrossEntropy, Loss, MeanSquaredError
from deepsharp.metrics import AUC, F1, MAE, R2, Accuracy, Metric, Precision, Recall, TopKAccuracy
from deepsharp.module import Module, Parameter
from deepsharp.network import Network
from deepsharp.optimizers import SGD, Adam, AdamW, Optimizer, RMSprop
from deepsharp.random import RandomStream
from deepsharp.schedules import Cosine, ExponentialDecay, LinearWarmup, Schedule, StepDecay
from deepsharp.sequential import Sequential
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, float64, no_grad
from deepsharp.tensors.api.build import arange
from deepsharp.tracing import TraceErrorKind, TraceException, TracedModel, Tracer

__version__ = "0.1.0"

__all__ = [
    "AUC", "Accuracy", "CSVLogger", "DataError", "F1", "MAE", "Metric", "MissingExtra",
    "ModelCheckpoint", "Precision", "R2", "Recall", "ReduceLROnPlateau", "TopKAccuracy", "Adam",
    "AdamW", "BinaryCrossEntropy", "Callback", "Cosine", "CrossEntropy", "DeepsharpError",
    "EarlyStopping", "ExponentialDecay", "History", "LinearWarmup", "Loss", "MaskRefused",
    "MeanSquaredError", "Module", "Network", "OpError", "Optimizer", "Parameter",
    "PreparationError", "RMSprop", "RandomStream", "SGD", "SaveError", "Schedule", "Sequential",
    "Shape", "ShapeError", "SpecError", "StateError", "StepDecay", "TargetError", "Tensor",
    "TraceErrorKind", "TraceException", "TracedModel", "Tracer", "TrainingError", "arange",
    "float64", "functional", "load", "load_checkpoint", "load_state_dict", "save_state_dict",
    "no_grad", "save", "save_checkpoint", "__version__",
]
