"""Neural-network building blocks: Cell and (later) layers, losses, optimizers."""
from .cell import Cell

__all__ = ["Cell"]
