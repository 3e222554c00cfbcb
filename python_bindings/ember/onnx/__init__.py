"""Running ONNX models (ember.onnx.load) and writing Ember models as ONNX (ember.onnx.export).

    model = ember.onnx.load("resnet.onnx", device="cuda")
    logits = model(x)            # an ember.Tensor in, an ember.Tensor out
    logits = model(x.numpy())    # a NumPy array in, a NumPy array out

The model's graph is checked when it loads (everything Ember does not support is listed in one
ValueError), optimised (constant folding, batch norms folded into convolutions, conv+ReLU fused)
and run for inference on cpu, cuda or emu (docs/onnx.md)."""
import numpy as np

from .. import _C
from .. import _onnx
from .export import export, UnsupportedOperatorError  # noqa: F401

__all__ = ["load", "InferenceModel", "export", "UnsupportedOperatorError"]


def _device_str(device):
    return device if isinstance(device, str) else str(device)


class InferenceModel:
    """A loaded ONNX model: call it with the inputs in the order of `inputs` (or by name)."""

    def __init__(self, impl):
        self._impl = impl

    @property
    def inputs(self):
        """[(name, dtype name or None, shape tuple with None for symbolic dims, or None)]"""
        return self._impl.inputs

    @property
    def outputs(self):
        return self._impl.outputs

    @property
    def device(self):
        return _C.device(self._impl.device)

    @property
    def opset(self):
        return self._impl.opset

    @property
    def num_nodes(self):
        return self._impl.num_nodes

    @property
    def passes(self):
        """What the load-time passes did: folded_constants, folded_batch_norms, fused_relus,
        fused_clips, fused_adds, removed_nodes."""
        return self._impl.passes

    def last_run(self):
        """The last call's time (ms), the device allocator's peak (peak_bytes), the weights'
        bytes, and with profile=True per node (name, op_type, ms, kernel calls)."""
        return self._impl.last_run()

    def __call__(self, *args, profile=False, **kwargs):
        names = [name for name, _, _ in self._impl.inputs]
        if kwargs:
            unknown = sorted(set(kwargs) - set(names))
            if unknown:
                raise ValueError(f"ember.onnx: the model has no input {unknown[0]!r} "
                                 f"(its inputs: {names})")
            if args:
                raise TypeError("ember.onnx: give the inputs by position or by name, not both")
            missing = [n for n in names if n not in kwargs]
            if missing:
                raise ValueError(f"ember.onnx: input {missing[0]!r} is missing")
            args = [kwargs[n] for n in names]
        numpy_in = any(isinstance(a, np.ndarray) for a in args)
        tensors = [_C.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
                   for a in args]
        self._impl.set_profiling(profile)
        try:
            outs = self._impl.run(tensors)
        finally:
            if profile:
                self._impl.set_profiling(False)
        if numpy_in:
            outs = [o.cpu().numpy() for o in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self):
        ins = ", ".join(n for n, _, _ in self.inputs)
        outs = ", ".join(n for n, _, _ in self.outputs)
        return (f"ember.onnx.InferenceModel(opset {self.opset}, {self.num_nodes} nodes on "
                f"{self._impl.device}; inputs: {ins}; outputs: {outs})")


def load(f, device="cpu", optimize=True):
    """An ONNX model from a path or from bytes, ready to run on `device`."""
    if isinstance(f, (bytes, bytearray, memoryview)):
        return InferenceModel(_onnx.load_from_memory(bytes(f), _device_str(device), optimize))
    return InferenceModel(_onnx.load(str(f), _device_str(device), optimize))
