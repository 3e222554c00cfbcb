"""What a PyTorch user sees: repr(tensor) equal to torch's for a table of cases, grad_fn nodes
(names, next_functions, AccumulateGrad.variable) shaped as torch's, dtype aliases, the cpu's
thread count, Tensor.new_* and the *_like factories, the backend switches wired to the
convolution selector, argument errors as TypeErrors naming the function and the argument, and
docstrings."""
import inspect

import pytest

import ember
from conftest import torch

F_E, F_T = ember.nn.functional, torch.nn.functional

REPR_CASES = [
    lambda L: L.tensor([1.0, 2.0, 3.0]),
    lambda L: L.tensor([0.1, 2.5, -3.25]),
    lambda L: L.tensor([1e-5, 1.0]),
    lambda L: L.tensor([1e10, 1.0]),
    lambda L: L.tensor([123456.789, 0.001]),
    lambda L: L.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
    lambda L: L.tensor([float("nan"), 0.5]),
    lambda L: L.tensor([0.0, -0.0, 0.0]),
    lambda L: L.tensor([[1.5, -2.0], [3.0, 4.0]]),
    lambda L: L.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]]),
    lambda L: L.tensor([3, -40, 500]),
    lambda L: L.tensor([True, False]),
    lambda L: L.tensor(1.5),
    lambda L: L.tensor(7),
    lambda L: L.tensor([1.25, 2.5], dtype=L.float64),
    lambda L: L.tensor([1.0, 2.0], dtype=L.float16),
    lambda L: L.tensor([0.1, 2.0], dtype=L.bfloat16),
    lambda L: L.tensor([1, 2], dtype=L.int32),
    lambda L: L.tensor([1, 255], dtype=L.uint8),
    lambda L: L.tensor([]),
    lambda L: L.zeros(0, 3),
    lambda L: L.zeros(0, dtype=L.int64),
    lambda L: L.zeros(2, 0, dtype=L.float64),
    lambda L: L.arange(30, dtype=L.float32) * 1.5,
    lambda L: L.arange(2000, dtype=L.float32) / 7,
    lambda L: L.arange(2400).reshape(12, 200),
    lambda L: L.arange(64, dtype=L.float64).reshape(4, 4, 4) - 10.5,
    lambda L: L.tensor([1.0, 2.0], requires_grad=True),
    lambda L: L.tensor([1.0, 2.0], requires_grad=True) * 2,
    lambda L: L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True).sum(),
    lambda L: (L.arange(40, dtype=L.float64) / 3).requires_grad_() + 1,
]


@pytest.mark.parametrize("case", range(len(REPR_CASES)))
def test_repr_equals_torchs(case):
    e, t = REPR_CASES[case](ember), REPR_CASES[case](torch)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert str(e) == repr(e)


def test_repr_of_a_device_tensor_and_parameter():
    assert repr(ember.tensor([1.0, 2.0], device="emu")) == "tensor([1., 2.], device='emu:0')"
    p = ember.nn.Parameter(ember.ones(2))
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2)))
    ember.set_printoptions(precision=2)
    try:
        assert repr(ember.tensor([1.2345])) == "tensor([1.23])"
    finally:
        ember.set_printoptions(profile="default")


def _walk(e_node, t_node, e_leaves, t_leaves, depth=0):
    """Asserts two autograd graphs have the same shape: names, edges, input indices, leaves."""
    assert (e_node is None) == (t_node is None)
    if e_node is None:
        return
    # torch names its accumulator "torch::autograd::AccumulateGrad" (repr strips the namespace).
    assert e_node.name() == t_node.name().rsplit("::", 1)[-1]
    if e_node.name() == "AccumulateGrad":
        i = [id(x) for x in t_leaves].index(id(t_node.variable))
        assert e_node.variable.data_ptr() == e_leaves[i].data_ptr()
        return
    assert len(e_node.next_functions) == len(t_node.next_functions), t_node.name()
    for (en, ei), (tn, ti) in zip(e_node.next_functions, t_node.next_functions):
        assert ei == ti
        _walk(en, tn, e_leaves, t_leaves, depth + 1)


GRAPH_CASES = {
    "mul_sum": lambda L, F, x, y, i, w: (x * y).sum(),
    "add_scalar": lambda L, F, x, y, i, w: x + 2,
    "mul_scalar": lambda L, F, x, y, i, w: x * 2,
    "sub_relu_mean": lambda L, F, x, y, i, w: (x - y).relu().mean(),
    "exp_log_div": lambda L, F, x, y, i, w: x.exp().log() / y,
    "sigmoid_tanh": lambda L, F, x, y, i, w: x.sigmoid() * x.tanh(),
    "mean_dim": lambda L, F, x, y, i, w: x.mean(1),
    "sum_dim": lambda L, F, x, y, i, w: (x * x).sum(0),
    "pow": lambda L, F, x, y, i, w: x ** 2 + x ** y,
    "view_transpose_permute": lambda L, F, x, y, i, w: x.view(12).view(4, 3).transpose(0, 1)
    .permute(1, 0),
    "cat_slice": lambda L, F, x, y, i, w: L.cat([x, y])[1:],
    "maximum_where": lambda L, F, x, y, i, w: L.where(x > 0, L.maximum(x, y), y),
    "clone_to": lambda L, F, x, y, i, w: x.clone().double(),
    "softmax_mse": lambda L, F, x, y, i, w: F.mse_loss(F.softmax(x, 1), F.log_softmax(y, 1)),
    "conv_pool": lambda L, F, x, y, i, w: F.max_pool2d(F.conv2d(i, w[0], w[1], padding=1), 2),
    "avg_pool_gelu": lambda L, F, x, y, i, w: F.gelu(F.avg_pool2d(i, 2)),
}


@pytest.mark.parametrize("name", list(GRAPH_CASES))
def test_grad_fn_graph_is_torchs(name, rng):
    xs = [rng.standard_normal((4, 3)) + 2, rng.standard_normal((4, 3)) + 2,
          rng.standard_normal((1, 2, 4, 4)), rng.standard_normal((3, 2, 3, 3)),
          rng.standard_normal(3)]
    e = [ember.tensor(v, requires_grad=True) for v in xs]
    t = [torch.tensor(v, requires_grad=True) for v in xs]
    eo = GRAPH_CASES[name](ember, F_E, e[0], e[1], e[2], (e[3], e[4]))
    to = GRAPH_CASES[name](torch, F_T, t[0], t[1], t[2], (t[3], t[4]))
    _walk(eo.grad_fn, to.grad_fn, e, t)
    assert repr(eo.grad_fn).startswith(f"<{to.grad_fn.name()} object at 0x")


def test_grad_fn_of_leaves_and_custom_functions():
    x = ember.ones(2, requires_grad=True)
    assert x.grad_fn is None and (x * 1).grad_fn.next_functions[0][0].name() == "AccumulateGrad"
    acc = (x * 1).grad_fn.next_functions[0][0]
    assert (x + 1).grad_fn.next_functions[0][0] is acc  # one accumulator per leaf, as torch's
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute 'variable'"):
        (x * 1).grad_fn.variable
    assert acc.next_functions == ()


def test_dtype_aliases_and_threads():
    assert ember.float is ember.float32 and ember.double is ember.float64
    assert ember.half is ember.float16 and ember.long is ember.int64 and ember.int is ember.int32
    assert not hasattr(ember, "short") and not hasattr(ember, "cfloat")  # no int16, no complex
    assert ember.zeros(2, dtype=ember.double).dtype == ember.float64
    n = ember.get_num_threads()
    assert n >= 1
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        x = ember.randn(2, 3, 8, 8)
        assert ember.conv2d(x, ember.randn(4, 3, 3, 3)).shape == (2, 4, 6, 6)
    finally:
        ember.set_num_threads(n)
    assert ember.get_num_threads() == n
    with pytest.raises(ValueError, match="expected a positive number of threads"):
        ember.set_num_threads(0)


@pytest.mark.parametrize("make", [
    lambda L, x: x.new_zeros(2, 3), lambda L, x: x.new_zeros((2, 3), dtype=L.float64),
    lambda L, x: x.new_ones([4]), lambda L, x: x.new_full((2,), 2.5),
    lambda L, x: x.new_full((2,), 7, dtype=L.int64), lambda L, x: x.new_empty(3).fill_(1),
    lambda L, x: L.full_like(x, 3), lambda L, x: L.full_like(x, 2.7, dtype=L.int64),
    lambda L, x: L.full_like(x.long(), 2.7), lambda L, x: L.full_like(x, True, dtype=L.bool),
    lambda L, x: L.empty_like(x).fill_(0), lambda L, x: L.ones_like(x, dtype=L.float64),
    lambda L, x: L.zeros_like(x, requires_grad=True),
])
def test_new_and_like_factories_match_torch(make):
    e = make(ember, ember.tensor([[1.0, 2.0]], dtype=ember.float32))
    t = make(torch, torch.tensor([[1.0, 2.0]], dtype=torch.float32))
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]
    assert e.tolist() == t.tolist() and e.requires_grad == t.requires_grad
    assert ember.tensor([1.0], device="emu").new_zeros(2).device == ember.device("emu:0")


def test_backend_switches_reach_the_convolution_selector():
    conv, cudnn = ember.backends.conv, ember.backends.cudnn
    shape = ((2, 8, 9, 9), (4, 8, 3, 3))
    try:
        cudnn.deterministic = True
        assert conv.policy() == "deterministic" and ember.are_deterministic_algorithms_enabled()
        r = conv.explain(*shape, padding=1)
        assert r["policy"] == "deterministic"
        chosen = [c for c in r["candidates"] if c["name"] == r["chosen"]][0]
        assert chosen["deterministic"]
        assert all(not c["supported"] or c["deterministic"] or c["rank"] < 0
                   for c in r["candidates"]), r["candidates"]
        cudnn.benchmark = True  # benchmark + deterministic: deterministic candidates only
        assert conv.policy() == "benchmark" and cudnn.deterministic
        r = conv.explain(*shape, padding=1)
        chosen = [c for c in r["candidates"] if c["name"] == r["chosen"]][0]
        assert chosen["deterministic"]
        cudnn.benchmark = False
        ember.use_deterministic_algorithms(False)
        assert conv.policy() == "heuristic" and not cudnn.deterministic
        with cudnn.flags(enabled=False, deterministic=True):
            assert not cudnn.enabled and conv.policy() == "deterministic"
            row = [c for c in conv.explain(*shape, padding=1, device="cuda")["candidates"]
                   if c["name"] == "cudnn"][0]
            assert not row["supported"]
        assert cudnn.enabled and not cudnn.deterministic and conv.policy() == "heuristic"
        assert cudnn.benchmark_limit == 10 and not cudnn.is_acceptable(ember.ones(1))
    finally:
        cudnn.benchmark = False
        cudnn.deterministic = False
        cudnn.enabled = True


TYPE_ERRORS = [
    (lambda: ember.conv2d(ember.ones(1, 1, 3, 3), ember.ones(1, 1, 1, 1), stride="a"),
     "conv2d(): argument 'stride' must be int or tuple of ints, not str"),
    (lambda: ember.conv2d(ember.ones(1, 1, 3, 3), "w"),
     "conv2d(): argument 'weight' must be Tensor, not str"),
    (lambda: ember.nn.functional.max_pool2d(ember.ones(1, 1, 4, 4), kernel_size=2.5),
     "max_pool2d(): argument 'kernel_size' must be int or tuple of ints, not float"),
    (lambda: ember.relu([1.0]), "relu(): argument 'input' must be Tensor, not list"),
    (lambda: ember.softmax(ember.ones(3), dim="x"), "softmax(): argument 'dim' must be int, not str"),
    (lambda: ember.ones(2, 3).view(2, "3"),
     "view(): argument 'size' must be tuple of ints, but found element of type str at pos 1"),
    (lambda: ember.ones(2, 3).sum(dim="a"), "sum(): argument 'dim' must be tuple of ints, not str"),
    (lambda: ember.zeros("a"), "zeros(): argument 'size' must be tuple of ints, not str"),
    (lambda: ember.ones(2, dtype=3), "ones(): argument 'dtype' must be ember.dtype, not int"),
    (lambda: ember.full_like([1.0], 2), "full_like(): argument 'input' must be Tensor, not list"),
    (lambda: ember.nn.Conv2d(3, 4, 3, padding=1.5),
     "Conv2d(): argument 'padding' must be int or tuple of 2 ints, not float"),
    (lambda: ember.nn.Conv2d(3, 4, (3, "3")),
     "Conv2d(): argument 'kernel_size' must be int or tuple of 2 ints, not tuple"),
    (lambda: ember.nn.ConvTranspose2d(3, 4, 3, stride=(1, 2, 3)),
     "ConvTranspose2d(): argument 'stride' must be int or tuple of 2 ints, not tuple"),
    (lambda: ember.nn.Linear("3", 4), "Linear(): argument 'in_features' must be int, not str"),
    (lambda: ember.cat(3), "cat(): argument 'tensors' must be tuple of Tensors, not int"),
    (lambda: ember.conv2d(ember.ones(1, 1, 3, 3)),
     'conv2d() missing 1 required positional argument: "weight"'),
    (lambda: ember.conv2d(ember.ones(1, 1, 3, 3), ember.ones(1, 1, 1, 1), strides=2),
     "conv2d() got an unexpected keyword argument 'strides'"),
]


@pytest.mark.parametrize("case", range(len(TYPE_ERRORS)))
def test_argument_errors_name_the_function_and_argument(case):
    fn, message = TYPE_ERRORS[case]
    with pytest.raises(TypeError) as info:
        fn()
    assert str(info.value) == message
    assert "incompatible function arguments" not in str(info.value)
    assert info.value.__cause__ is None  # no pybind11 signature dump chained underneath



def test_bad_padding_strings_are_value_errors_as_in_torch():
    with pytest.raises(ValueError, match="Invalid padding string 'same!'"):
        ember.nn.Conv2d(3, 4, 3, padding="same!")
    with pytest.raises(ValueError, match="not supported for strided convolutions"):
        ember.nn.Conv1d(3, 4, 3, stride=2, padding="same")

def test_docstrings_show_in_help():
    doc = ember.nn.Conv2d.__doc__
    assert "in_channels" in doc and "kernel_size" in doc and "Default: 1" in doc
    assert list(inspect.signature(ember.nn.Conv2d).parameters)[:3] == \
        ["in_channels", "out_channels", "kernel_size"]
    assert ember.conv2d.__doc__.startswith("conv2d(input, weight, bias=None, stride=1")
    assert list(inspect.signature(ember.conv2d).parameters) == \
        ["input", "weight", "bias", "stride", "padding", "dilation", "groups"]
    assert ember.nn.functional.conv2d is ember.conv2d
    for obj in (ember.optim.SGD, ember.optim.Adam, ember.optim.RMSprop, ember.optim.Adagrad,
                ember.optim.lr_scheduler.OneCycleLR, ember.utils.data.DataLoader,
                ember.nn.utils.clip_grad_norm_, ember.cross_entropy, ember.nn.Linear):
        assert obj.__doc__ and len(obj.__doc__) > 40, obj
