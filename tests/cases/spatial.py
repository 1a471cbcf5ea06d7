"""Cases for the spatial primitives: convolutions, pools, pad, resize and the normalisations.

Arrays are channels-last (N, *places, C). Max pools take values well apart so no window holds a
tie within the finite-difference step.
"""

from __future__ import annotations

import numpy as np

from tests.support.cases import case, normal, positive


def distinct(*shape: int) -> np.ndarray:
    """A permutation of well-separated values: every max is unique by a wide margin."""
    return np.random.default_rng(sum(shape)).permutation(int(np.prod(shape))).reshape(shape) * 0.1


def conv_attrs(nd: int, strides=None, dilations=None, pads=None, groups=1, auto_pad="NOTSET"):
    return {"strides": strides or (1,) * nd, "dilations": dilations or (1,) * nd,
            "pads": pads if pads is not None else (0,) * (2 * nd), "groups": groups,
            "auto_pad": auto_pad}


case("conv", "1d")(lambda: ([normal(2, 7, 3), normal(3, 3, 4)], conv_attrs(1)))
case("conv", "1d-bias-causal-dilated")(lambda: (
    [normal(2, 9, 2), normal(2, 2, 3), normal(3)], conv_attrs(1, dilations=(2,), pads=(2, 0))))
case("conv", "2d-stride-pad-bias")(lambda: (
    [normal(2, 6, 5, 3), normal(3, 2, 3, 4), normal(4)],
    conv_attrs(2, strides=(2, 1), pads=(1, 0, 1, 1))))
case("conv", "2d-groups-dilation")(lambda: (
    [normal(2, 7, 7, 4), normal(2, 2, 2, 6)], conv_attrs(2, dilations=(2, 1), groups=2)))
case("conv", "2d-same-upper-stride")(lambda: (
    [normal(1, 7, 6, 2), normal(2, 3, 2, 3)],
    conv_attrs(2, strides=(2, 3), pads=(), auto_pad="SAME_UPPER")))
case("conv", "3d")(lambda: ([normal(1, 4, 5, 4, 2), normal(2, 2, 3, 2, 3), normal(3)],
                            conv_attrs(3, strides=(1, 2, 1), pads=(0, 1, 0, 1, 0, 1))))
case("conv", "2d-many-channels-bias")(lambda: (
    [normal(2, 5, 4, 9), normal(2, 2, 9, 3), normal(3)], conv_attrs(2, pads=(1, 0, 0, 1))))
case("conv", "depthwise")(lambda: ([normal(2, 5, 5, 3), normal(3, 3, 1, 3)],
                                   conv_attrs(2, groups=3, pads=(1, 1, 1, 1))))

case("conv_transpose", "1d")(lambda: (
    [normal(2, 5, 3), normal(3, 3, 2)],
    {"strides": (2,), "dilations": (1,), "pads": (0, 0), "output_padding": (1,)}))
case("conv_transpose", "2d-pads-dilation-bias")(lambda: (
    [normal(2, 4, 3, 3), normal(3, 2, 3, 2), normal(2)],
    {"strides": (2, 1), "dilations": (1, 2), "pads": (1, 0, 0, 1), "output_padding": (1, 0)}))
case("conv_transpose", "3d")(lambda: (
    [normal(1, 3, 2, 3, 2), normal(2, 2, 2, 2, 3)],
    {"strides": (1, 2, 1), "dilations": (1, 1, 1), "pads": (0, 0, 1, 0, 1, 0),
     "output_padding": (0, 0, 0)}))

case("max_pool", "2d")(lambda: ([distinct(2, 6, 7, 3)],
                                {"kernel": (2, 2), "strides": (2, 2), "pads": (0, 0, 0, 0)}))
case("max_pool", "1d-overlap-pad-dilation")(lambda: (
    [distinct(2, 9, 3)], {"kernel": (3,), "strides": (1,), "pads": (1, 1), "dilations": (2,)}))
case("max_pool", "2d-same")(lambda: (
    [distinct(1, 5, 7, 2)], {"kernel": (3, 2), "strides": (2, 2), "pads": (),
                             "auto_pad": "SAME_UPPER"}))
case("max_pool", "3d")(lambda: ([distinct(1, 4, 4, 5, 2)],
                                {"kernel": (2, 2, 3), "strides": (2, 1, 2), "pads": (0,) * 6}))
case("avg_pool", "2d-excluding-pad")(lambda: (
    [normal(2, 5, 6, 3)], {"kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 0),
                           "count_include_pad": 0}))
case("avg_pool", "1d-including-pad")(lambda: (
    [normal(2, 7, 2)], {"kernel": (3,), "strides": (1,), "pads": (1, 1), "count_include_pad": 1}))
case("avg_pool", "3d-same")(lambda: (
    [normal(1, 3, 4, 5, 2)], {"kernel": (2, 2, 2), "strides": (2, 2, 2), "pads": (),
                              "auto_pad": "SAME_UPPER", "count_include_pad": 0}))
case("max_pool", "2d-ceil")(lambda: (  # 9 -> 5 (a sixth window would start in the padding)
    [distinct(2, 9, 6, 2)], {"kernel": (2, 3), "strides": (2, 2), "pads": (1, 1, 1, 0),
                             "ceil_mode": 1}))
case("avg_pool", "2d-ceil-including-pad")(lambda: (
    [normal(2, 7, 5, 2)], {"kernel": (3, 2), "strides": (2, 2), "pads": (1, 0, 1, 0),
                           "count_include_pad": 1, "ceil_mode": 1}))
case("avg_pool", "1d-ceil-excluding-pad")(lambda: (
    [normal(2, 10, 3)], {"kernel": (3,), "strides": (3,), "pads": (1, 1), "count_include_pad": 0,
                         "ceil_mode": 1}))
case("adaptive_avg_pool", "2d-unequal")(lambda: ([normal(2, 5, 7, 3)], {"sizes": (3, 4)}))
case("adaptive_avg_pool", "1d")(lambda: ([normal(2, 9, 2)], {"sizes": (4,)}))
case("adaptive_max_pool", "2d-unequal")(lambda: ([distinct(2, 5, 7, 3)], {"sizes": (3, 4)}))
case("adaptive_max_pool", "3d")(lambda: ([distinct(1, 4, 3, 5, 2)], {"sizes": (2, 2, 3)}))

case("pad", "constant")(lambda: ([normal(2, 3, 4)], {"pads": (0, 1, 2, 0, 2, 1), "mode": "constant",
                                                     "value": 0.5}))
case("pad", "reflect")(lambda: ([normal(2, 4, 5, 2)], {"pads": (0, 2, 1, 0, 0, 3, 4, 0),
                                                       "mode": "reflect"}))
case("pad", "edge")(lambda: ([normal(2, 3, 3, 2)], {"pads": (0, 4, 1, 0, 0, 2, 3, 0),
                                                    "mode": "edge"}))
case("resize", "nearest")(lambda: ([normal(2, 3, 4, 2)], {"sizes": (6, 7), "mode": "nearest"}))
case("resize", "bilinear")(lambda: ([normal(2, 3, 4, 2)], {"sizes": (7, 8), "mode": "linear",
                                                           "align_corners": 0}))
case("resize", "linear-align-corners")(lambda: ([normal(2, 5, 2)], {"sizes": (9,), "mode": "linear",
                                                                     "align_corners": 1}))

case("layer_norm")(lambda: ([normal(3, 4, 5), positive(5), normal(5)], {"eps": 1e-5}))
case("rms_norm")(lambda: ([normal(3, 4, 5), positive(5)], {"eps": 1e-5}))
case("batch_norm", "image")(lambda: ([normal(3, 2, 4, 5), positive(5), normal(5)], {"eps": 1e-5}))
case("batch_norm", "rows")(lambda: ([normal(6, 3), positive(3), normal(3)], {"eps": 1e-3}))
case("batch_norm_eval")(lambda: ([normal(3, 4, 5), positive(5), normal(5), normal(5), positive(5)],
                                 {"eps": 1e-5}))
case("group_norm")(lambda: ([normal(2, 3, 4, 6), positive(6), normal(6)], {"groups": 3, "eps": 1e-5}))
case("group_norm", "instance")(lambda: ([normal(2, 7, 3), positive(3), normal(3)],
                                        {"groups": 3, "eps": 1e-5}))
case("conv_relu_max_pool", "2d-border-floor")(lambda: (
    [normal(2, 7, 6, 2), normal(3, 3, 2, 3), normal(3)], {"pads": (1, 0, 1, 0), "pool": (2, 2)}))
case("conv_relu_max_pool", "1d-no-bias")(lambda: (
    [normal(2, 9, 3), normal(2, 3, 4)], {"pads": (0, 0), "pool": (3,)}))
