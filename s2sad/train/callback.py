"""Callbacks for ``Model.train``/``Model.eval``: the protocol and the usual ones.

A callback's methods receive a ``RunContext``; ``run_context.original_args()``
is the ``cb_params`` namespace the loop keeps up to date (``epoch_num``,
``batch_num``, ``cur_epoch_num``, ``cur_step_num`` counted over all epochs
from 1, ``net_outputs`` of the last step, ``train_network``, ``optimizer``,
``mode`` ...).  ``run_context.request_stop()`` ends training after the
current step.

Training calls ``on_train_begin``, then per epoch ``on_train_epoch_begin``,
per step ``on_train_step_begin``/``on_train_step_end``, then
``on_train_epoch_end``, and finally ``on_train_end``.  By default these call
the older names ``begin``, ``epoch_begin``, ``step_begin``, ``step_end``,
``epoch_end`` and ``end``, so callbacks written either way work.  Evaluation
calls ``on_eval_begin``, ``on_eval_step_begin``/``on_eval_step_end`` and
``on_eval_end`` (no-ops by default).
"""
import os
import time

import numpy as np

from ..tensor import Tensor
from .serialization import save_checkpoint, writes_checkpoints

__all__ = ["Callback", "RunContext", "LossMonitor", "TimeMonitor", "ModelCheckpoint",
           "CheckpointConfig"]


class _CallbackParams(dict):
    """A dict whose keys are also attributes (``cb_params.cur_step_num``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError("cb_params has no field %r; its fields are %s"
                                 % (name, sorted(self))) from None

    def __setattr__(self, name, value):
        self[name] = value


class RunContext:
    """What a callback is given: the loop's parameters and a way to stop it."""

    def __init__(self, original_args):
        self._original_args = original_args
        self._stop_requested = False

    def original_args(self):
        return self._original_args

    def request_stop(self):
        self._stop_requested = True

    def get_stop_requested(self):
        return self._stop_requested


class Callback:
    """Base class; override the methods you need (each does nothing by default)."""

    def begin(self, run_context):
        pass

    def epoch_begin(self, run_context):
        pass

    def epoch_end(self, run_context):
        pass

    def step_begin(self, run_context):
        pass

    def step_end(self, run_context):
        pass

    def end(self, run_context):
        pass

    def on_train_begin(self, run_context):
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context):
        self.epoch_begin(run_context)

    def on_train_epoch_end(self, run_context):
        self.epoch_end(run_context)

    def on_train_step_begin(self, run_context):
        self.step_begin(run_context)

    def on_train_step_end(self, run_context):
        self.step_end(run_context)

    def on_train_end(self, run_context):
        self.end(run_context)

    def on_eval_begin(self, run_context):
        pass

    def on_eval_step_begin(self, run_context):
        pass

    def on_eval_step_end(self, run_context):
        pass

    def on_eval_end(self, run_context):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _CallbackList(Callback):
    """Several callbacks called in the order given."""

    def __init__(self, callbacks):
        if callbacks is None:
            callbacks = []
        elif isinstance(callbacks, Callback):
            callbacks = [callbacks]
        else:
            callbacks = list(callbacks)
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError("callbacks: each callback must be an instance of "
                                "s2sad.train.Callback (subclass it), but got %s"
                                % type(cb).__name__)
        self.callbacks = callbacks

    def call(self, method, run_context):
        for cb in self.callbacks:
            getattr(cb, method)(run_context)


def _loss_value(outputs):
    """The loss as a float from a step's outputs (a Tensor, or a tuple led by one)."""
    if isinstance(outputs, (tuple, list)) and outputs:
        outputs = outputs[0]
    if isinstance(outputs, Tensor):
        outputs = outputs.asnumpy()
    return float(np.mean(outputs))


def _positive_int(value, name, who):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError("%s: '%s' must be a positive int, but got %r" % (who, name, value))
    return int(value)


class LossMonitor(Callback):
    """Prints ``epoch: E step: S, loss is L`` every ``per_print_times`` steps.

    ``S`` counts the steps of the current epoch from 1; ``L`` is the step's
    loss (the mean when it is not a scalar).  A loss that is NaN or infinite
    stops training with a ``ValueError`` naming the epoch and step.
    """

    def __init__(self, per_print_times=1):
        if isinstance(per_print_times, bool) or not isinstance(per_print_times,
                                                                (int, np.integer)) \
                or per_print_times < 0:
            raise ValueError("LossMonitor: 'per_print_times' must be an int >= 0, but got %r"
                             % (per_print_times,))
        self._per_print_times = int(per_print_times)

    def on_train_step_end(self, run_context):
        params = run_context.original_args()
        loss = _loss_value(params.net_outputs)
        step = (params.cur_step_num - 1) % params.batch_num + 1
        if not np.isfinite(loss):
            raise ValueError("epoch: %s step: %s. Invalid loss %s, training stopped."
                             % (params.cur_epoch_num, step, loss))
        if self._per_print_times and params.cur_step_num % self._per_print_times == 0:
            print("epoch: %s step: %s, loss is %s" % (params.cur_epoch_num, step, loss),
                  flush=True)


class TimeMonitor(Callback):
    """Prints each epoch's time and time per step, in milliseconds.

    ``data_size``: the steps per epoch used for the per-step time; the
    dataset's size when None.
    """

    def __init__(self, data_size=None):
        if data_size is not None:
            data_size = _positive_int(data_size, "data_size", "TimeMonitor")
        self.data_size = data_size
        self._start = None

    def on_train_epoch_begin(self, run_context):
        self._start = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        params = run_context.original_args()
        elapsed_ms = (time.perf_counter() - self._start) * 1000.0
        steps = self.data_size or params.batch_num
        print("epoch time: {:5.3f} ms, per step time: {:5.3f} ms"
              .format(elapsed_ms, elapsed_ms / steps), flush=True)


class CheckpointConfig:
    """When ``ModelCheckpoint`` saves and how many files it keeps.

    ``save_checkpoint_steps``: save every this many steps (counted over all
    epochs); ``keep_checkpoint_max``: delete the oldest file written in this
    run beyond this many.  The time-based options are accepted with their
    defaults only.
    """

    def __init__(self, save_checkpoint_steps=1, save_checkpoint_seconds=0,
                 keep_checkpoint_max=5, keep_checkpoint_per_n_minutes=0, integrated_save=True,
                 async_save=False, saved_network=None, append_info=None, **kwargs):
        self.save_checkpoint_steps = _positive_int(save_checkpoint_steps,
                                                   "save_checkpoint_steps", "CheckpointConfig")
        self.keep_checkpoint_max = _positive_int(keep_checkpoint_max, "keep_checkpoint_max",
                                                 "CheckpointConfig")
        if save_checkpoint_seconds or keep_checkpoint_per_n_minutes:
            raise ValueError("CheckpointConfig: time-based saving (save_checkpoint_seconds, "
                             "keep_checkpoint_per_n_minutes) is not supported; use "
                             "save_checkpoint_steps and keep_checkpoint_max")
        self.saved_network = saved_network


class ModelCheckpoint(Callback):
    """Saves the training network's Parameters as ``{prefix}-{epoch}_{step}.ckpt``.

    ``step`` counts within the epoch, as ``LossMonitor`` prints it.  The files
    go to ``directory`` (the working directory when None; created if
    missing), in ``save_checkpoint``'s format; a file of the same name is
    overwritten.  The last step is always saved when training ends.
    ``latest_ckpt_file_name`` is the path of the newest file.  Data
    parallel, only rank 0 writes (and removes old files); the other ranks
    do nothing.
    """

    def __init__(self, prefix="CKP", directory=None, config=None):
        if not isinstance(prefix, str) or not prefix or os.sep in prefix:
            raise ValueError("ModelCheckpoint: 'prefix' must be a non-empty file name "
                             "prefix, but got %r" % (prefix,))
        if config is not None and not isinstance(config, CheckpointConfig):
            raise TypeError("ModelCheckpoint: 'config' must be a CheckpointConfig, but got %s"
                            % type(config).__name__)
        self._prefix = prefix
        self._directory = os.fspath(directory) if directory is not None else os.getcwd()
        self._config = config or CheckpointConfig()
        self._written = []
        self._last_saved_step = None
        self.latest_ckpt_file_name = None

    def on_train_step_end(self, run_context):
        params = run_context.original_args()
        if params.cur_step_num % self._config.save_checkpoint_steps == 0:
            self._save(params)

    def on_train_end(self, run_context):
        params = run_context.original_args()
        if params.cur_step_num and self._last_saved_step != params.cur_step_num:
            self._save(params)

    def _save(self, params):
        if not writes_checkpoints():
            return
        os.makedirs(self._directory, exist_ok=True)
        step = (params.cur_step_num - 1) % params.batch_num + 1
        path = os.path.join(self._directory, "%s-%d_%d.ckpt"
                            % (self._prefix, params.cur_epoch_num, step))
        network = self._config.saved_network or params.train_network
        save_checkpoint(network, path)
        if path in self._written:
            self._written.remove(path)
        self._written.append(path)
        while len(self._written) > self._config.keep_checkpoint_max:
            old = self._written.pop(0)
            if os.path.exists(old):
                os.remove(old)
        self._last_saved_step = params.cur_step_num
        self.latest_ckpt_file_name = path
