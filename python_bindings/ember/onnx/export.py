"""ember.onnx.export: an Ember module as an ONNX file, by tracing one run on an example input.

While the model runs, the input is a Value (_graph.py): the real tensor plus an ONNX name. The
layers Ember knows are intercepted at Module.__call__ and written as ONNX nodes (_emit.LAYERS);
the operators, Tensor methods and ember / ember.nn.functional functions that custom forwards use
are recorded by _ops.py; parameters and buffers a forward reads become initializers. Anything
else that meets a traced tensor raises UnsupportedOperatorError naming the operation and the
module: a graph is written only when every step that produced the output was recorded."""
import inspect
import os

from .. import _C
from ..autograd import no_grad
from ..nn import functional as F
from ..nn.layers import CppModule
from ..nn.modules import Module
from . import _emit, _ops
from ._graph import Graph, UnsupportedOperatorError, Value, find_graph, unwrap

__all__ = ["export", "UnsupportedOperatorError"]

_OPSETS = range(13, 18)
# Functions whose results a forward may use as constants (their values do not depend on data).
_FACTORIES = ("tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "arange", "eye",
              "linspace", "logspace")


def _import_onnx():
    try:
        import onnx
        import onnx.checker
        import onnx.helper
        import onnx.numpy_helper
    except ImportError as e:
        raise ImportError("ember.onnx.export needs the onnx Python package (Debian: python3-onnx, "
                          "or pip install onnx)") from e
    return onnx


class _Tracing:
    """Installs the recording hooks for one export and removes them on exit, whatever happens."""

    def __init__(self, g, root):
        import ember
        self.g = g
        self.paths = {id(m): (path, type(m).__name__) for path, m in root.named_modules()}
        self.namespaces = [(ember, "ember"), (F, "ember.nn.functional")]
        self.saved = []

    def __enter__(self):
        self._patch(Module, "__call__", self._call(Module.__call__))
        self._patch(Module, "__getattr__", self._getattr(Module.__getattr__))
        for ns, label in self.namespaces:
            for name, obj in list(vars(ns).items()):
                if (name.startswith("_") or not callable(obj) or isinstance(obj, type)
                        or inspect.ismodule(obj)):
                    continue
                self._patch(ns, name, self._function(obj, name, f"{label}.{name}"))
        return self

    def __exit__(self, *exc):
        for owner, name, old in reversed(self.saved):
            setattr(owner, name, old)
        return False

    def _patch(self, owner, name, new):
        self.saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, new)

    def _function(self, orig, name, label):
        g = self.g
        if _ops.handles(name):
            def recorded(*args, **kwargs):
                if find_graph(args, kwargs) is None:
                    return orig(*args, **kwargs)
                out = orig(*unwrap(args), **unwrap(kwargs))
                return _ops.handle(g, name, out, args, kwargs)
            return recorded
        if name in _FACTORIES:
            def factory(*args, **kwargs):
                if find_graph(args, kwargs) is not None:
                    g.fail(label, "it would fix the example input's values in the graph")
                t = orig(*args, **kwargs)
                g.constants[id(t)] = t
                return t
            return factory

        def refused(*args, **kwargs):
            if find_graph(args, kwargs) is not None:
                g.fail(label)
            return orig(*args, **kwargs)
        return refused

    def _call(self, orig_call):
        g, paths = self.g, self.paths

        def call(m, *args, **kwargs):
            if find_graph(args, kwargs) is None:
                return orig_call(m, *args, **kwargs)
            kind = type(m)
            g.path.append(paths.get(id(m), (f"<a {kind.__name__} outside the model>",
                                            kind.__name__)))
            try:
                cls = next((c for c in kind.__mro__ if c in _emit.LAYERS), None)
                if cls is not None and kind.forward is cls.forward:
                    out = orig_call(m, *unwrap(args), **unwrap(kwargs))
                    return _emit.emit_layer(g, m, cls, out, args, kwargs)
                if cls is not None or (isinstance(m, CppModule) and
                                       kind.forward.__module__.startswith("ember.")):
                    g.fail(kind.__name__, "Ember has no ONNX export for this layer" if cls is None
                           else f"a {cls.__name__} with its own forward")
                try:
                    return orig_call(m, *args, **kwargs)
                except TypeError as e:  # a C++ function refused the Value (_argcheck.py)
                    if not (isinstance(getattr(e, "ember_got", None), Value)
                            or "incompatible function arguments" in str(e)):
                        raise
                    g.fail("a C++ function called with a traced tensor",
                           "only the operations listed in docs/python.md are recorded")
            finally:
                g.path.pop()
        return call

    def _getattr(self, orig_getattr):
        g, paths = self.g, self.paths

        def getattr_(m, name):
            d = m.__dict__
            for store in ("_parameters", "_buffers"):
                if store in d and name in d[store]:
                    t = d[store][name]
                    if t is None:
                        return None
                    path = paths.get(id(m), ("", ""))[0]
                    return g.value(t, g.param(t, f"{path}.{name}" if path else name))
            return orig_getattr(m, name)
        return getattr_


def _names(given, n, default, what):
    if given is None:
        return [default] if n == 1 else [f"{default}_{i}" for i in range(n)]
    given = list(given)
    if len(given) != n or len(set(given)) != n or not all(isinstance(s, str) for s in given):
        _C._raise("value", f"ember.onnx.export: {what} must be {n} distinct strings, got {given}")
    return given


def _dynamic(dynamic_axes, names):
    """{value name: {axis: dim name}} from torch.onnx's forms ({name: [axes]} or {name: {axis:
    dim name}})."""
    dyn = {}
    for name, axes in (dynamic_axes or {}).items():
        if name not in names:
            _C._raise("value", f"ember.onnx.export: dynamic_axes names '{name}', which is not "
                               f"an input or output (they are {names})")
        dyn[name] = (dict(axes) if isinstance(axes, dict)
                     else {int(a): f"{name}_dim{a}" for a in axes})
    return dyn


def _value_info(g, name, tensor, dyn):
    shape = list(tensor.shape)
    for axis, label in dyn.get(name, {}).items():
        if not -len(shape) <= axis < len(shape):
            _C._raise("value", f"ember.onnx.export: dynamic axis {axis} of '{name}' is out of "
                               f"range for its shape {tuple(shape)}")
        shape[axis] = label
    return g.onnx.helper.make_tensor_value_info(name, g.elem_type(tensor.dtype), shape)


def _name_outputs(g, values, out_names, graph_inputs):
    """Gives the outputs their names: the producing node's output renamed, or an Identity where
    an output is an input, an initializer or another output."""
    seen = set()
    for v, new in zip(values, out_names):
        old = v._name
        producers = [n for n in g.nodes if old in n.output]
        if old in seen or old in graph_inputs or old in g.initializers or not producers:
            g.nodes.append(g.onnx.helper.make_node("Identity", [old], [new],
                                                   name=g.fresh("Identity")))
        else:
            for n in g.nodes:
                for field in (n.input, n.output):
                    for i, s in enumerate(field):
                        if s == old:
                            field[i] = new
            seen.add(new)
        seen.add(old)


def export(model, args, f, opset_version=13, input_names=None, output_names=None,
           dynamic_axes=None):
    """Writes `model` run on `args` (a tensor or a tuple of tensors) as an ONNX model to `f` (a
    path or a binary file object), as torch.onnx.export does: in eval mode (the modules' modes
    are restored afterwards), opsets 13 to 17, dynamic_axes as {name: [axes]} or {name: {axis:
    dim name}}. Raises UnsupportedOperatorError (an ember.Error) naming the operation and the
    module for anything it cannot write, ember.IOError when `f` cannot be written."""
    onnx = _import_onnx()
    if not isinstance(model, Module):
        raise TypeError(f"ember.onnx.export: expected an ember.nn.Module, got "
                        f"{type(model).__name__}")
    if opset_version not in _OPSETS:
        _C._raise("value", f"ember.onnx.export: opset_version must be 13 to 17, got "
                           f"{opset_version}")
    inputs = (args,) if isinstance(args, _C.Tensor) else tuple(args)
    if not inputs or not all(isinstance(t, _C.Tensor) for t in inputs):
        raise TypeError("ember.onnx.export: args must be a tensor or a tuple of tensors, got "
                        f"{[type(a).__name__ for a in inputs]}")
    in_names = _names(input_names, len(inputs), "input", "input_names")
    g = Graph(onnx, opset_version)
    for name in in_names:
        g._used.add(name)
    for m in model.modules():
        for t in vars(m).values():
            if isinstance(t, _C.Tensor):
                g.constants[id(t)] = t

    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        values = [g.value(t, n) for t, n in zip(inputs, in_names)]
        with _Tracing(g, model), no_grad():
            result = model(*values)
    finally:
        for m, mode in modes:
            object.__setattr__(m, "training", mode)
            m._on_train(mode)
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    for o in outs:
        if not isinstance(o, Value):
            g.path[:] = [("", type(model).__name__)]
            g.fail(f"an output of type {type(o).__name__}",
                   "outputs must be tensors computed from the inputs")
    out_names = _names(output_names, len(outs), "output", "output_names")
    if set(out_names) & set(in_names):
        _C._raise("value", "ember.onnx.export: input and output names must differ")
    dyn = _dynamic(dynamic_axes, in_names + out_names)
    _name_outputs(g, outs, out_names, set(in_names))

    used = {s for n in g.nodes for s in n.input} | set(out_names)
    helper = onnx.helper
    graph = helper.make_graph(
        g.nodes, type(model).__name__,
        [_value_info(g, n, t, dyn) for n, t in zip(in_names, inputs)],
        [_value_info(g, n, o._t, dyn) for n, o in zip(out_names, outs)],
        initializer=[t for name, t in g.initializers.items() if name in used])
    proto = helper.make_model(graph, producer_name="ember",
                              opset_imports=[helper.make_opsetid("", opset_version)])
    onnx.checker.check_model(proto)
    data = proto.SerializeToString()
    if hasattr(f, "write"):
        f.write(data)
        return
    try:
        with open(os.fspath(f), "wb") as out:
            out.write(data)
    except OSError as e:
        _C._raise("io", f"ember.onnx.export: cannot write '{f}': {e.strerror or e}")
