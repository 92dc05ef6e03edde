"""Neural-network primitives (activations, losses, convolution, normalisation)."""
from ..primitive import Primitive



__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive]
