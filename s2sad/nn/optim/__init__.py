"""Optimizers with MindSpore's names and update rules (plain Python, run eagerly)."""
from .optimizer import Optimizer
from .sgd import SGD, Momentum
from .adam import Adam, AdamWeightDecay

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamWeightDecay"]
