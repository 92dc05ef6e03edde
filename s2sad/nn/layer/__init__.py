"""Layers with MindSpore's names, signatures and defaults.

Each layer's ``construct`` is plain Python over primitives, so s2sad inlines it
into the adjoint of any network that uses it.
"""
from .container import SequentialCell, CellList
from .activation import (ReLU, ReLU6, LeakyReLU, ELU, GELU, Sigmoid, SiLU, Tanh, Softplus,
                         Softmax, LogSoftmax, get_activation)
from .basic import Dense, Flatten, Dropout, Identity
from .conv import Conv1d, Conv2d, Conv2dTranspose
from .pooling import MaxPool2d, AvgPool2d, AdaptiveAvgPool2d
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm
from .embedding import Embedding
from .rnn import RNNCell, GRUCell, LSTMCell, RNN, GRU, LSTM
from .transformer import MultiheadAttention, TransformerEncoderLayer

__all__ = ["SequentialCell", "CellList", "ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU",
           "Sigmoid", "SiLU", "Tanh", "Softplus", "Softmax", "LogSoftmax", "get_activation",
           "Dense", "Flatten", "Dropout", "Identity", "Conv1d", "Conv2d", "Conv2dTranspose",
           "MaxPool2d",
           "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm",
           "GroupNorm", "Embedding", "RNNCell", "GRUCell", "LSTMCell", "RNN", "GRU", "LSTM",
           "MultiheadAttention", "TransformerEncoderLayer"]
