"""What ember.onnx.export records: the ONNX nodes and initializers of one graph (Graph), and Value,
the stand-in for a tensor while a model runs under the exporter: it carries the real ember.Tensor
(so every shape is known) and the ONNX name of the value it stands for."""
import numpy as np

from .. import _C


class UnsupportedOperatorError(_C.Error):
    """A model uses something ember.onnx.export cannot write as ONNX (the message names the
    operation and the module it happened in)."""


class Graph:
    """Nodes in the order they ran, initializers by name, and the module path being traced."""

    def __init__(self, onnx, opset):
        self.onnx = onnx
        self.opset = opset
        self.nodes = []
        self.initializers = {}
        self.constants = {}   # id -> tensor: plain tensors a forward may use as constants
        self.params = {}      # id(tensor) -> initializer name of a parameter or buffer
        self.path = []        # (dotted module path, type name) of the modules being run
        self._used = set()

    # --- names and messages ----------------------------------------------------------------
    def fresh(self, hint):
        hint = hint or "v"
        name, i = hint, 1
        while name in self._used:
            name, i = f"{hint}_{i}", i + 1
        self._used.add(name)
        return name

    def where(self):
        if not self.path:
            return "the model"
        path, kind = self.path[-1]
        return f"'{path}' ({kind})" if path else f"the top-level module ({kind})"

    def fail(self, op, why=None):
        msg = f"ember.onnx.export: {op} in {self.where()} cannot be exported"
        raise UnsupportedOperatorError(msg + (f": {why}" if why else ""))

    # --- nodes and initializers ------------------------------------------------------------
    def node(self, op, inputs, outputs=1, **attrs):
        """Appends an `op` node; returns its output name (or names, when outputs > 1)."""
        outs = [self.fresh(f"{op}_out") for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(op, list(inputs), outs,
                                                     name=self.fresh(op), **attrs))
        return outs[0] if outputs == 1 else outs

    def const(self, array, hint="const"):
        name = self.fresh(hint)
        self.initializers[name] = self.onnx.numpy_helper.from_array(np.asarray(array), name)
        return name

    def ints(self, values, hint="shape"):
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1), hint)

    def scalar(self, value, dtype):
        return self.const(np.asarray(value, dtype=np_dtype(dtype)), "scalar")

    def param(self, tensor, name):
        """A parameter or buffer as an initializer, once however often it is used."""
        key = id(tensor)
        if key not in self.params:
            array = tensor.detach().cpu().numpy()
            self.params[key] = self.const(array, name)
            self.constants[key] = tensor
        return self.params[key]

    def elem_type(self, dtype):
        return self.onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(np_dtype(dtype))]

    def cast(self, name, from_dtype, to_dtype):
        if from_dtype == to_dtype:
            return name
        return self.node("Cast", [name], to=self.elem_type(to_dtype))

    def operand(self, v, dtype):
        """The ONNX name of an operand of an op whose values have `dtype`: a Value (cast when
        its dtype differs), a Python number, or a tensor the model holds as a constant."""
        if isinstance(v, Value):
            return self.cast(v._name, v.dtype, dtype)
        if isinstance(v, (bool, int, float, np.number)):
            return self.scalar(v, dtype)
        if isinstance(v, _C.Tensor):
            if id(v) not in self.constants:
                self.fail("a tensor computed outside the recorded operations",
                          "it is neither derived from the inputs by an operation the exporter "
                          "records nor a parameter, buffer, tensor attribute or a tensor made "
                          "by a factory (ember.tensor, ember.zeros, ...) in forward")
            return self.param(v, "const")
        self.fail(f"an operand of type {type(v).__name__}")

    def value(self, tensor, name):
        return Value(tensor, name, self)


def np_dtype(dtype):
    """The NumPy dtype of an ember dtype (bfloat16 has none: ONNX export refuses it)."""
    name = dtype.name if hasattr(dtype, "name") else str(dtype)
    if name == "bool":
        return np.bool_
    if name == "bfloat16":
        raise UnsupportedOperatorError("ember.onnx.export: bfloat16 tensors cannot be exported")
    return np.dtype(name)


def unwrap(a):
    """The real tensors behind Values, through lists, tuples and dicts."""
    if isinstance(a, Value):
        return a._t
    if isinstance(a, (list, tuple)):
        return type(a)(unwrap(x) for x in a)
    if isinstance(a, dict):
        return {k: unwrap(v) for k, v in a.items()}
    return a


def find_graph(args, kwargs=None):
    """The Graph of the first Value among the arguments (through lists and tuples), or None."""
    for a in list(args) + list((kwargs or {}).values()):
        if isinstance(a, Value):
            return a._g
        if isinstance(a, (list, tuple)):
            g = find_graph(a)
            if g is not None:
                return g
    return None


class Value:
    """A traced tensor: shape queries answer from the real tensor (they are constants of the
    graph, as in any tracer); operations are recorded by the methods that _ops.py installs;
    everything else a tensor can do raises UnsupportedOperatorError rather than leaking the
    example input's numbers into the graph."""

    __slots__ = ("_t", "_name", "_g")
    __array_priority__ = 10000  # numpy scalars defer to Value's reflected operators
    __hash__ = object.__hash__

    def __init__(self, tensor, name, graph):
        self._t, self._name, self._g = tensor, name, graph

    shape = property(lambda self: tuple(self._t.shape))
    dtype = property(lambda self: self._t.dtype)
    device = property(lambda self: self._t.device)
    ndim = property(lambda self: self._t.ndim)
    requires_grad = property(lambda self: False)
    is_cuda = property(lambda self: self._t.is_cuda)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return self._t.ndim

    def numel(self):
        return self._t.numel()

    def is_floating_point(self):
        return self._t.dtype.is_floating_point

    def __len__(self):
        return self.shape[0]

    def __getattr__(self, name):
        if hasattr(_C.Tensor, name):
            self._g.fail(f"Tensor.{name}")
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")

    def __repr__(self):
        return f"<ember.onnx traced value {self._name}: {self._t.dtype.name}{list(self.shape)}>"


def _refusal(op, why):
    def refuse(self, *args, **kwargs):
        self._g.fail(op, why)
    return refuse


_DATA = "it reads the values of a traced tensor, which the graph cannot fix in advance"
for _name, _op in {"__bool__": "bool(tensor)", "__float__": "float(tensor)",
                   "__int__": "int(tensor)", "__index__": "a tensor used as an index",
                   "__array__": "numpy.asarray(tensor)", "__iter__": "iterating over a tensor",
                   "item": "Tensor.item", "tolist": "Tensor.tolist",
                   "numpy": "Tensor.numpy"}.items():
    setattr(Value, _name, _refusal(_op, _DATA))
for _name, _op in {"__eq__": "==", "__ne__": "!=", "__lt__": "<", "__le__": "<=", "__gt__": ">",
                   "__ge__": ">=", "__setitem__": "item assignment (tensor[...] = ...)",
                   "__getitem__": "indexing (tensor[...])"}.items():
    setattr(Value, _name, _refusal(_op, None))
