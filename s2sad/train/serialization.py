"""Checkpoints: ``save_checkpoint``, ``load_checkpoint``, ``load_param_into_net``.

The file is a NumPy ``.npz`` archive, one array per Parameter named after it,
written to exactly the path given (MindSpore scripts say ``net.ckpt``; no
suffix is added).  Every array is written and read with pickling refused, so
loading a checkpoint runs no code from the file.  MindSpore's own protobuf
``.ckpt`` files cannot be read; the error says so.

In data-parallel training every rank holds the same Parameters, so only
rank 0 writes: on the other ranks ``save_checkpoint`` does nothing (N
processes writing one path would race, and N copies are N times the disk).
"""
import os
import zipfile

import numpy as np

from .. import communication
from ..context import ParallelMode, get_auto_parallel_context
from ..nn.cell import Cell
from ..tensor import Tensor, Parameter

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net"]


def save_checkpoint(save_obj, ckpt_file_name):
    """Write the Parameters of ``save_obj`` to ``ckpt_file_name``.

    ``save_obj`` is a Cell (all its Parameters, trainable or not), a list of
    ``{"name": ..., "data": ...}`` dicts (MindSpore's other form) or a dict
    name -> Parameter/Tensor/array.  Data parallel, only rank 0 writes (the
    arguments are checked on every rank).
    """
    if not isinstance(ckpt_file_name, (str, os.PathLike)):
        raise TypeError("save_checkpoint: 'ckpt_file_name' must be a str or path, but got %s"
                        % type(ckpt_file_name).__name__)
    arrays = _named_arrays(save_obj)
    if not writes_checkpoints():
        return
    with zipfile.ZipFile(ckpt_file_name, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays:
            with archive.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def writes_checkpoints():
    """Whether this process writes checkpoints: always, except data-parallel ranks other than 0."""
    if get_auto_parallel_context("parallel_mode") != ParallelMode.DATA_PARALLEL:
        return True
    return not communication.management.initialized() or communication.get_rank() == 0


def load_checkpoint(ckpt_file_name, net=None, strict_load=False, filter_prefix=None):
    """The checkpoint as a dict name -> Parameter; loaded into ``net`` too when given.

    Names starting with ``filter_prefix`` (a str or a sequence of them) are
    left out, as in MindSpore.
    """
    prefixes = _prefixes(filter_prefix)
    path = os.fspath(ckpt_file_name)
    if not os.path.isfile(path):
        raise FileNotFoundError("load_checkpoint: no checkpoint file %s" % path)
    try:
        if not zipfile.is_zipfile(path):
            raise ValueError("not a zip archive")
        with np.load(path, allow_pickle=False) as archive:
            params = {name: Parameter(archive[name], name=name) for name in archive.files
                      if not name.startswith(prefixes)}
    except (ValueError, zipfile.BadZipFile) as exc:
        raise ValueError("load_checkpoint: %s is not a checkpoint written by s2sad's "
                         "save_checkpoint (a NumPy .npz archive without pickled objects; "
                         "MindSpore's own .ckpt format cannot be read): %s"
                         % (path, exc)) from None
    if net is not None:
        load_param_into_net(net, params, strict_load=strict_load)
    return params


def load_param_into_net(net, parameter_dict, strict_load=False):
    """Copy the values of ``parameter_dict`` into ``net``'s Parameters of the same name.

    Returns ``(param_not_load, ckpt_not_load)``: the names of ``net``'s
    Parameters that got no value, and the names in ``parameter_dict`` that
    went nowhere.  A value of another shape raises ``ValueError`` naming the
    Parameter.  Without ``strict_load``, a value of another dtype is cast to
    the Parameter's, and a Parameter with no entry of its exact name takes
    the one entry whose name it ends with, or that ends with its name, after
    a dot (a network saved bare and loaded wrapped, or the reverse); with
    ``strict_load`` names must match exactly and another dtype is an error.
    """
    if not isinstance(net, Cell):
        raise TypeError("load_param_into_net: 'net' must be a Cell, but got %s"
                        % type(net).__name__)
    if not isinstance(parameter_dict, dict):
        raise TypeError("load_param_into_net: 'parameter_dict' must be a dict, but got %s"
                        % type(parameter_dict).__name__)
    for name, value in parameter_dict.items():
        if not isinstance(value, Parameter):
            raise TypeError("load_param_into_net: the values of 'parameter_dict' must be "
                            "Parameters, but %r is a %s" % (name, type(value).__name__))
    param_not_load, loads = [], []
    for name, param in _named_parameters(net):
        key = _matching_key(name, parameter_dict, strict_load)
        if key is None:
            param_not_load.append(name)
        else:
            loads.append((param, key, _checked(param, name, key, parameter_dict[key],
                                                strict_load)))
    # every value checked before any is set: a failing load leaves the network as it was
    for param, _key, data in loads:
        param.set_data(data)
    used = {key for _param, key, _data in loads}
    ckpt_not_load = [name for name in parameter_dict if name not in used]
    return param_not_load, ckpt_not_load


def _named_parameters(cell):
    """(name, Parameter) of every Parameter of ``cell``: its own name, else its path."""
    return [(p.name or path, p) for path, p in cell.parameters_and_names()]


def _named_arrays(save_obj):
    if isinstance(save_obj, Cell):
        pairs = _named_parameters(save_obj)
    elif isinstance(save_obj, dict):
        pairs = list(save_obj.items())
    elif isinstance(save_obj, list) and all(isinstance(e, dict) and set(e) == {"name", "data"}
                                            for e in save_obj):
        pairs = [(e["name"], e["data"]) for e in save_obj]
    else:
        raise TypeError("save_checkpoint: 'save_obj' must be a Cell, a dict name -> Parameter "
                        "or a list of {'name': ..., 'data': ...} dicts, but got %s"
                        % type(save_obj).__name__)
    arrays, seen = [], set()
    for name, value in pairs:
        if not isinstance(name, str) or not name:
            raise TypeError("save_checkpoint: parameter names must be non-empty strs, but got %r"
                            % (name,))
        if name in seen:
            raise ValueError("save_checkpoint: two parameters are named %r; give them distinct "
                             "names" % name)
        seen.add(name)
        array = value.asnumpy() if isinstance(value, Tensor) else np.asarray(value)
        if array.dtype.hasobject:
            raise TypeError("save_checkpoint: %r holds Python objects, which a checkpoint "
                            "cannot store; pass numbers" % name)
        arrays.append((name, array))
    return arrays


def _prefixes(filter_prefix):
    if filter_prefix is None:
        return ()
    if isinstance(filter_prefix, str):
        return (filter_prefix,)
    prefixes = tuple(filter_prefix)
    if not all(isinstance(p, str) for p in prefixes):
        raise TypeError("load_checkpoint: 'filter_prefix' must be a str or a sequence of strs")
    return prefixes


def _matching_key(name, parameter_dict, strict_load):
    """The entry of ``parameter_dict`` that ``name`` loads from, or None."""
    if name in parameter_dict:
        return name
    if strict_load:
        return None
    found = [key for key in parameter_dict
             if name.endswith("." + key) or key.endswith("." + name)]
    return found[0] if len(found) == 1 else None


def _checked(param, name, key, value, strict_load):
    """``value``'s data for ``param``: checked, cast, and a copy (updates must not leak back)."""
    data = value.asnumpy()
    if data.shape != param.shape:
        raise ValueError("load_param_into_net: the checkpoint's %r has shape %s but the "
                         "network's Parameter %r has shape %s; load a checkpoint saved from "
                         "the same network" % (key, data.shape, name, param.shape))
    target = param.asnumpy().dtype
    if data.dtype != target and strict_load:
        raise ValueError("load_param_into_net: the checkpoint's %r is %s but the network's "
                         "Parameter %r is %s; pass strict_load=False to cast it"
                         % (key, data.dtype, name, target))
    return np.array(data, dtype=target, copy=True)
