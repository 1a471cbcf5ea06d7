"""Cases for the core primitives: arithmetic, functions, activations, reductions, shapes, losses."""

from __future__ import annotations

import numpy as np

from tests.support.cases import away_from_zero, case, normal, positive

for _name in ("add", "sub", "mul"):
    case(_name, "broadcast")(lambda: ([normal(3, 4), normal(4)], {}))
    case(_name, "keepdims")(lambda: ([normal(2, 1, 4), normal(3, 1)], {}))
case("div")(lambda: ([normal(3, 4), positive(3, 1)], {}))
case("pow", "both")(lambda: ([positive(3, 4), normal(4)], {}))
case("maximum")(lambda: ([normal(3, 4), normal(3, 4)], {}))
case("minimum")(lambda: ([normal(3, 4), normal(1, 4)], {}))
case("where")(lambda: ([normal(3, 4) > 0, normal(3, 4), normal(4)], {}))
for _name in ("neg", "exp", "sin", "cos", "copy", "tanh", "sigmoid", "softplus", "silu"):
    case(_name)(lambda: ([normal(3, 5)], {}))
case("log")(lambda: ([positive(3, 5)], {}))
case("sqrt")(lambda: ([positive(3, 5)], {}))
case("abs")(lambda: ([away_from_zero(3, 5)], {}))
case("relu")(lambda: ([away_from_zero(3, 5)], {}))
case("leaky_relu")(lambda: ([away_from_zero(3, 5)], {"slope": 0.2}))
case("elu")(lambda: ([away_from_zero(3, 5)], {"alpha": 0.7}))
case("gelu", "erf")(lambda: ([normal(3, 5)], {"approximate": 0}))
case("gelu", "tanh")(lambda: ([normal(3, 5)], {"approximate": 1}))
case("softmax")(lambda: ([normal(3, 5)], {"axis": 1}))
case("softmax", "middle")(lambda: ([normal(2, 3, 4)], {"axis": 1}))
case("log_softmax")(lambda: ([normal(2, 3, 4)], {"axis": 2}))
case("matmul", "2d")(lambda: ([normal(3, 4), normal(4, 5)], {}))
case("matmul", "batched-by-matrix")(lambda: ([normal(2, 3, 4), normal(4, 5)], {}))
case("matmul", "broadcast")(lambda: ([normal(2, 1, 3, 4), normal(3, 4, 2)], {}))
case("sum")(lambda: ([normal(2, 3, 4)], {"axes": (0, 2), "keepdims": 0}))
case("mean")(lambda: ([normal(2, 3, 4)], {"axes": (1,), "keepdims": 1}))
case("max")(lambda: ([normal(2, 3, 4)], {"axes": (2,), "keepdims": 0}))
case("reshape")(lambda: ([normal(2, 6)], {"shape": (3, 4)}))
case("transpose")(lambda: ([normal(2, 3, 4)], {"perm": (2, 0, 1)}))
case("slice")(lambda: ([normal(5, 6)], {"starts": (1, 5), "stops": (4, -7), "steps": (2, -2)}))
case("concat")(lambda: ([normal(2, 3), normal(2, 1), normal(2, 2)], {"axis": 1}))
case("expand")(lambda: ([normal(3, 1)], {"shape": (2, 3, 4)}))
case("gather")(lambda: ([normal(5, 3), np.array([[0, 4], [4, -1]])], {"axis": 0}))
case("cast")(lambda: ([normal(3, 2)], {"to": "<f8"}))
case("dropout")(lambda: ([normal(4, 5), normal(4, 5) > 0], {"rate": 0.4}))
case("mse_loss")(lambda: ([normal(4, 3), normal(4, 3)], {}))
case("bce_logits_loss")(lambda: ([normal(4, 3), (normal(4, 3) > 0).astype(np.float64)], {}))
case("cross_entropy_loss")(lambda: ([normal(4, 3), np.array([[0.2, 0.5, 0.3]] * 4)], {}))
case("cross_entropy_ids_loss")(lambda: ([normal(2, 4, 3), np.array([[0, 2, 1, 2], [1, 1, 0, 2]])], {}))
case("matmul_add", "rows")(lambda: ([normal(3, 4), normal(4, 5), normal(5)], {}))
case("matmul_add", "batched")(lambda: ([normal(2, 3, 4), normal(4, 5), normal(5)], {}))
case("matmul_add_relu", "rows")(lambda: ([normal(3, 4), normal(4, 5), normal(5)], {}))
case("matmul_add_relu", "batched")(lambda: ([normal(2, 3, 4), normal(4, 5), normal(5)], {}))
