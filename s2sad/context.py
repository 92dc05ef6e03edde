"""MindSpore's ``set_context`` / ``get_context``: the settings of a run.

MindSpore scripts begin with ``set_context(mode=GRAPH_MODE, device_target="CPU")``;
they must run unchanged, so every common key is accepted.  Few of them mean
anything here, and each says so (``docs/guide-migrating.md`` has the table):

* ``mode``: recorded; both modes run the same code (Cell calls are eager,
  gradients and ``@jit`` functions compiled), so a script written for either
  runs.  Compiling every Cell call would run the Python side effects of
  ``construct`` once, while compiling, instead of on each call.
* ``device_target``: ``"CPU"``, or ``"GPU"`` through PyTorch's CUDA arrays
  (``docs/backends.md``, "Cells on PyTorch").  Asking for a GPU where none
  is available, or for Ascend, fails at once rather than running on the CPU
  while the user believes otherwise.
* ``array_library`` (s2sad's own key): ``"numpy"`` (the default on the CPU)
  or ``"torch"`` (the default on the GPU): the library the data of the
  Tensors and Parameters created from then on lives in.
* ``save_graphs`` / ``save_graphs_path``: every compiled gradient's source
  and IR are written under the path (``s2sad.saved_graphs``).
* the other keys (``KEYS``): recorded and returned by ``get_context``, no
  effect.

An unknown key raises ``ValueError``, as in MindSpore: a misspelt setting
must not be ignored silently.

``set_auto_parallel_context`` holds the settings of a multi-process run
(``docs/backends.md``, "Data-parallel training (MPI)"): ``parallel_mode``
is ``ParallelMode.STAND_ALONE`` (the default) or ``ParallelMode.DATA_PARALLEL``
(every rank holds the whole model; ``TrainOneStepCell`` averages or sums the
gradients over the ranks); the model-splitting modes raise, as they are not
available.
"""
import copy
import os

__all__ = ["set_context", "get_context", "GRAPH_MODE", "PYNATIVE_MODE", "ParallelMode",
           "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context"]

GRAPH_MODE = 0
PYNATIVE_MODE = 1

#: The device targets MindSpore knows; only the first is available here.
DEVICE_TARGETS = ("CPU", "GPU", "Ascend")

#: Every accepted key and its default (MindSpore's, where it has one).
KEYS = {
    # keys with an effect (see the module docstring)
    "mode": PYNATIVE_MODE,
    "device_target": "CPU",
    "save_graphs": False,
    "save_graphs_path": ".",
    "array_library": None,
    # accepted and recorded, no effect
    "device_id": 0,
    "max_call_depth": 1000,
    "pynative_synchronize": False,
    "enable_graph_kernel": False,
    "graph_kernel_flags": "",
    "jit_config": {},
    "jit_syntax_level": None,
    "max_device_memory": "1024GB",
    "variable_memory_max_size": "0",
    "mempool_block_size": "1GB",
    "op_timeout": 1900,
    "enable_dump": False,
    "save_dump_path": ".",
    "deterministic": "OFF",
    "print_file_path": "",
    "env_config_path": "",
    "precompile_only": False,
    "reserve_class_name_in_scope": True,
    "debug_level": None,
    "enable_reduce_precision": True,
    "aoe_tune_mode": "",
    "aoe_config": {},
    "check_bprop": False,
    "grad_for_scalar": False,
    "enable_compile_cache": False,
    "compile_cache_path": ".",
    "inter_op_parallel_num": 0,
    "runtime_num_threads": 30,
    "disable_format_transform": False,
    "support_binary": False,
    "memory_optimize_level": "O0",
    "memory_offload": "OFF",
    "ascend_config": {},
    "gpu_config": {},
    "enable_auto_mixed_precision": False,
}

#: The keys that change what s2sad does; the rest are recorded only.
EFFECTIVE = ("mode", "device_target", "save_graphs", "save_graphs_path", "array_library")

#: the values of ``array_library``
ARRAY_LIBRARIES = ("numpy", "torch")

#: ``(library, device)`` new Tensors' data is made on (``("torch", "cuda:0")``),
#: or None for NumPy; derived from ``device_target``, ``device_id`` and
#: ``array_library`` whenever they are set
array_target = None

_settings = copy.deepcopy(KEYS)      # a copy: a dict read back and changed must not change KEYS


def set_context(**kwargs):
    """Set run settings by keyword, as ``mindspore.set_context`` does.

    All keys are checked before any is set, so a failing call changes
    nothing.  Raises ``ValueError`` for an unknown key, a mode that is neither
    ``GRAPH_MODE`` nor ``PYNATIVE_MODE``, or a device other than the CPU.
    """
    for key, value in kwargs.items():
        _check(key, value)
    merged = dict(_settings, **kwargs)
    target = _array_target(merged)
    _settings.update(kwargs)
    _set_target(target)


def get_context(attr_key):
    """The value of one setting (its default when never set)."""
    if attr_key not in KEYS:
        raise ValueError(_unknown("get_context", attr_key))
    return _settings[attr_key]


def graphs_folder():
    """The folder compiled gradients are written to, or ``None`` when ``save_graphs`` is off."""
    if not _settings["save_graphs"]:
        return None
    return os.fspath(_settings["save_graphs_path"])


def _reset():
    """Every setting back to its default (for tests)."""
    _settings.clear()
    _settings.update(copy.deepcopy(KEYS))
    _set_target(None)


#: called with the new target when it changes (compiled-code caches forget
#: the call paths they prepared for the old one)
target_listeners = []


def _set_target(target):
    global array_target
    if target != array_target:
        array_target = target
        for listener in target_listeners:
            listener()


def _array_target(settings):
    """The ``(library, device)`` the settings ask new Tensors' data to be on (None: NumPy)."""
    device, library = settings["device_target"], settings["array_library"]
    if device == "CPU":
        return None if library in (None, "numpy") else (library, "cpu")
    if library == "numpy":
        raise ValueError("set_context: array_library='numpy' cannot hold data on the GPU; "
                         "use array_library='torch' (or leave it out) with device_target='GPU'")
    try:
        import torch
    except ImportError:
        raise ValueError("set_context: device_target='GPU' needs PyTorch with CUDA, which is "
                         "not installed: pip install 's2sad[torch]' (a CUDA build of torch, "
                         "https://pytorch.org), or use device_target='CPU'") from None
    if not torch.cuda.is_available():
        raise ValueError("set_context: device_target='GPU' needs a GPU that PyTorch can use, "
                         "but torch.cuda.is_available() is False (torch %s); install a CUDA "
                         "build of torch, or use device_target='CPU'" % torch.__version__)
    return ("torch", "cuda:%d" % settings["device_id"])


def _check(key, value):
    if key not in KEYS:
        raise ValueError(_unknown("set_context", key))
    if key == "mode" and (isinstance(value, bool) or value not in (GRAPH_MODE, PYNATIVE_MODE)):
        raise ValueError("set_context: 'mode' must be GRAPH_MODE (0) or PYNATIVE_MODE (1), "
                         "but got %r" % (value,))
    if key == "device_target":
        _check_device(value)
    if key == "array_library" and value is not None and value not in ARRAY_LIBRARIES:
        raise ValueError("set_context: 'array_library' must be one of %s, but got %r"
                         % (", ".join(map(repr, ARRAY_LIBRARIES)), value))
    if key == "save_graphs_path" and not isinstance(value, (str, os.PathLike)):
        raise TypeError("set_context: 'save_graphs_path' must be a str or path, but got %s"
                        % type(value).__name__)
    if key == "save_graphs" and not isinstance(value, (bool, int)):
        raise TypeError("set_context: 'save_graphs' must be a bool or an int, but got %s"
                        % type(value).__name__)


def _unknown(where, key, keys=KEYS):
    """The message for a key that is not a setting, with the nearest ones."""
    import difflib      # an error path: not paid by ``import s2sad``
    near = difflib.get_close_matches(str(key), keys, n=3)
    hint = " (did you mean %s?)" % " or ".join(repr(k) for k in near) if near else ""
    table = "KEYS" if keys is KEYS else "PARALLEL_KEYS"
    return ("%s: the keyword %r is not recognized%s; s2sad.context.%s lists the accepted "
            "keys" % (where, key, hint, table))


def _check_device(value):
    if value not in DEVICE_TARGETS:
        raise ValueError("set_context: 'device_target' must be one of %s, but got %r"
                         % (", ".join(map(repr, DEVICE_TARGETS)), value))
    if value == "Ascend":
        raise ValueError("set_context: device_target='Ascend' is not available: s2sad runs on "
                         "the CPU, or on a GPU through PyTorch (device_target='GPU'); use "
                         "device_target='CPU' (or leave it out)")


class ParallelMode:
    """The values of ``parallel_mode`` (MindSpore's names; the first two are available)."""
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"
    MODE_LIST = [STAND_ALONE, DATA_PARALLEL, HYBRID_PARALLEL, SEMI_AUTO_PARALLEL, AUTO_PARALLEL]


#: Every accepted auto-parallel key and its default; ``device_num`` 0 means
#: "the number of ranks" and ``global_rank`` 0 is recorded only.
PARALLEL_KEYS = {
    "parallel_mode": ParallelMode.STAND_ALONE,
    "gradients_mean": False,
    "device_num": 0,
    # accepted and recorded, no effect
    "global_rank": 0,
    "gradient_fp32_sync": True,
    "loss_repeated_mean": True,
    "parameter_broadcast": False,
    "full_batch": False,
    "search_mode": "dynamic_programming",
    "auto_parallel_search_mode": "dynamic_programming",
    "strategy_ckpt_load_file": "",
    "strategy_ckpt_save_file": "",
    "enable_parallel_optimizer": False,
    "all_reduce_fusion_config": [],
    "comm_fusion": {},
    "pipeline_stages": 1,
    "grad_accumulation_step": 1,
    "dataset_strategy": "data_parallel",
}

_parallel = copy.deepcopy(PARALLEL_KEYS)


def set_auto_parallel_context(**kwargs):
    """Set the settings of a multi-process run, as ``mindspore.set_auto_parallel_context``.

    All keys are checked before any is set.  ``parallel_mode`` other than
    STAND_ALONE and DATA_PARALLEL raises ``ValueError``: splitting one model
    over processes is not available.
    """
    for key, value in kwargs.items():
        _check_parallel(key, value)
    _parallel.update(kwargs)


def get_auto_parallel_context(attr_key):
    """The value of one auto-parallel setting (its default when never set)."""
    if attr_key not in PARALLEL_KEYS:
        raise ValueError(_unknown("get_auto_parallel_context", attr_key, PARALLEL_KEYS))
    return _parallel[attr_key]


def reset_auto_parallel_context():
    """Every auto-parallel setting back to its default (STAND_ALONE, no mean)."""
    _parallel.clear()
    _parallel.update(copy.deepcopy(PARALLEL_KEYS))


def _check_parallel(key, value):
    where = "set_auto_parallel_context"
    if key not in PARALLEL_KEYS:
        raise ValueError(_unknown(where, key, PARALLEL_KEYS))
    if key == "parallel_mode":
        if value not in ParallelMode.MODE_LIST:
            raise ValueError("%s: 'parallel_mode' must be one of %s, but got %r"
                             % (where, ParallelMode.MODE_LIST, value))
        if value not in (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL):
            raise ValueError("%s: parallel_mode=%r is not available: s2sad trains data "
                             "parallel only; use ParallelMode.DATA_PARALLEL" % (where, value))
    if key == "gradients_mean" and not isinstance(value, bool):
        raise TypeError("%s: 'gradients_mean' must be a bool, but got %s"
                        % (where, type(value).__name__))
    if key in ("device_num", "global_rank") and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 4096):
        raise ValueError("%s: %r must be an int in [0, 4096], but got %r" % (where, key, value))
