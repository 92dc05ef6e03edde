"""Primitive classes (MindSpore's ``mindspore.ops.operations``, usually imported as P)."""
from .math_ops import (Add, Sub, Mul, RealDiv, Div, Pow, Neg, Sin, Cos, Exp, Log, Tanh,
                       Sqrt, Square, Equal, NotEqual, Less, LessEqual, Greater,
                       GreaterEqual, MatMul, ReduceSum, ReduceMean)
from .array_ops import (Reshape, Transpose, ZerosLike, OnesLike, Shape, GetItem,
                        GetItemGrad, StopGradient, Depend, Unbroadcast, BroadcastLike,
                        ExpandReduced, ReducedCount, TransposeT,
                        CheckSens)
from ..primitive import Primitive
