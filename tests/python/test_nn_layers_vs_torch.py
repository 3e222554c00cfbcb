"""The layers and functions of ember.nn against PyTorch 1.13 on fresh random inputs: forward
values and gradients of every documented argument combination (padding modes, align_corners,
scale_factor vs size, output_padding, groups), in float32 and float64; the modules' attributes
and state_dict keys. Losses, attention and containers: test_nn_losses_attention_vs_torch.py."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from conftest import NP_DTYPE, close, torch
from nn_vs_torch import TF, away_from, away_from_zero, both, normal, positive, run_pair


PAD_SPECS = [
    ("constant", (1, 2), (2, 3, 4), 0.0),
    ("constant", (1, -1, 2, 0), (2, 3, 4), 1.5),
    ("constant", (1, 1, 1, 1, 1, 1), (2, 3, 4), 0.0),
    ("reflect", (2, 3, 1, 4), (1, 2, 5, 6), None),
    ("reflect", (3, -2), (2, 7), None),
    ("reflect", (1, 2, 2, 0, 1, 1), (1, 1, 3, 4, 5), None),
    ("replicate", (5, 0, 3, 7), (2, 3, 4, 5), None),
    ("replicate", (-2, 3), (2, 3, 6), None),
    ("circular", (2, 3, 4, 1), (1, 2, 4, 5), None),
    ("circular", (-1, 2), (2, 3, 6), None),
    ("circular", (1, 1, 2, 2, 3, 3), (1, 1, 3, 3, 3), None),
]


@pytest.mark.parametrize("mode,pads,shape,value", PAD_SPECS,
                         ids=[f"{s[0]}{s[1]}" for s in PAD_SPECS])
def test_pad(mode, pads, shape, value, dtype, rng):
    kw = {} if value is None else {"value": value}
    efn, tfn = both("pad", pads, mode, **kw)
    run_pair(efn, tfn, [normal(*shape)(rng).astype(NP_DTYPE[dtype])], dtype, rng, "pad")


INTERP_SPECS = [
    ((2, 3, 5, 7), dict(size=(9, 4))),
    ((2, 3, 5, 7), dict(size=4)),
    ((1, 2, 5, 6), dict(scale_factor=2)),
    ((1, 2, 5, 7), dict(scale_factor=(1.7, 2.3))),
    ((1, 2, 5, 7), dict(scale_factor=(1.7, 2.3), recompute_scale_factor=True)),
    ((2, 1, 9, 8), dict(scale_factor=0.5)),
    ((2, 3, 5), dict(size=11)),
    ((2, 3, 5), dict(scale_factor=2.5)),
]
LINEAR_SPECS = [
    ((2, 3, 5, 7), dict(size=(9, 4))),
    ((1, 2, 6, 5), dict(scale_factor=2)),
    ((1, 1, 8, 9), dict(size=(3, 4))),
    ((1, 2, 5, 7), dict(scale_factor=(1.7, 2.3))),
    ((1, 2, 5, 7), dict(scale_factor=(1.7, 2.3), recompute_scale_factor=True)),
    ((1, 1, 1, 1), dict(size=3)),
    ((1, 2, 4, 4), dict(size=1)),
    ((2, 3, 5), dict(size=13)),
    ((2, 3, 5), dict(scale_factor=0.6)),
]


@pytest.mark.parametrize("shape,kw", INTERP_SPECS, ids=[str(s) for s in INTERP_SPECS])
def test_interpolate_nearest(shape, kw, dtype, rng):
    efn, tfn = both("interpolate", mode="nearest", **kw)
    run_pair(efn, tfn, [normal(*shape)(rng).astype(NP_DTYPE[dtype])], dtype, rng, "nearest")


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("shape,kw", LINEAR_SPECS, ids=[str(s) for s in LINEAR_SPECS])
def test_interpolate_linear(shape, kw, align_corners, dtype, rng):
    mode = "bilinear" if len(shape) == 4 else "linear"
    efn, tfn = both("interpolate", mode=mode, align_corners=align_corners, **kw)
    run_pair(efn, tfn, [normal(*shape)(rng).astype(NP_DTYPE[dtype])], dtype, rng, mode)


def test_upsample_module(rng):
    x = normal(2, 3, 4, 5)(rng).astype(np.float32)
    for kw in (dict(scale_factor=2, mode="bilinear", align_corners=True), dict(size=(7, 3))):
        e, t = nn.Upsample(**kw), torch.nn.Upsample(**kw)
        close(e(ember.tensor(x)), t(torch.tensor(x)), ember.float32, f"Upsample {kw}")
        for a in ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"):
            assert getattr(e, a) == getattr(t, a), a


NORM_SPECS = [
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (5,), w, b), lambda x, w, b: TF.layer_norm(x, (5,), w, b),
     [normal(3, 4, 5), normal(5), normal(5)]),
    ("layer_norm_2d_no_affine", lambda x: F.layer_norm(x, [4, 5], eps=1e-3), lambda x: TF.layer_norm(x, [4, 5], eps=1e-3),
     [normal(3, 4, 5)]),
    ("layer_norm_long_row", lambda x, w, b: F.layer_norm(x, (1100,), w, b), lambda x, w, b: TF.layer_norm(x, (1100,), w, b),
     [normal(3, 1100), normal(1100), normal(1100)]),
    ("group_norm", lambda x, w, b: F.group_norm(x, 3, w, b), lambda x, w, b: TF.group_norm(x, 3, w, b),
     [normal(2, 6, 5, 4), normal(6), normal(6)]),
    ("group_norm_3d_no_affine", lambda x: F.group_norm(x, 2), lambda x: TF.group_norm(x, 2), [normal(3, 4, 7)]),
    ("group_norm_2d", lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: TF.group_norm(x, 2, w, b),
     [normal(5, 8), normal(8), normal(8)]),
    ("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b), lambda x, w, b: TF.instance_norm(x, weight=w, bias=b),
     [normal(2, 3, 4, 5), normal(3), normal(3)]),
    ("instance_norm_no_affine", lambda x: F.instance_norm(x), lambda x: TF.instance_norm(x), [normal(2, 3, 9)]),
]


@pytest.mark.parametrize("name,efn,tfn,makers", NORM_SPECS, ids=[s[0] for s in NORM_SPECS])
def test_norm_functions(name, efn, tfn, makers, dtype, rng):
    run_pair(efn, tfn, [m(rng).astype(NP_DTYPE[dtype]) for m in makers], dtype, rng, name)


def test_instance_norm_running_stats(dtype, rng):
    x = normal(3, 2, 4, 5)(rng).astype(NP_DTYPE[dtype])
    rm, rv = np.zeros(2, NP_DTYPE[dtype]), np.ones(2, NP_DTYPE[dtype])
    erm, erv, trm, trv = ember.tensor(rm), ember.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    ey = F.instance_norm(ember.tensor(x), erm, erv, use_input_stats=True, momentum=0.3)
    ty = TF.instance_norm(torch.tensor(x), trm, trv, use_input_stats=True, momentum=0.3)
    close(ey, ty, dtype, "instance_norm")
    close(erm, trm, dtype, "running_mean")
    close(erv, trv, dtype, "running_var")
    close(F.instance_norm(ember.tensor(x), erm, erv, use_input_stats=False),
          TF.instance_norm(torch.tensor(x), trm, trv, use_input_stats=False), dtype, "eval")


ACT_SPECS = [
    ("hardswish", F.hardswish, TF.hardswish, [away_from((-3, 3), 4, 9)]),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid, [away_from((-3, 3), 4, 9)]),
    ("mish", F.mish, TF.mish, [normal(3, 7)]),
    ("prelu_1", F.prelu, TF.prelu, [away_from_zero(2, 3, 4), positive(1)]),
    ("prelu_c", F.prelu, TF.prelu, [away_from_zero(2, 3, 4, 2), positive(3)]),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), lambda x: TF.pixel_shuffle(x, 2), [normal(2, 8, 3, 5)]),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 3), lambda x: TF.pixel_unshuffle(x, 3), [normal(1, 2, 6, 9)]),
    ("softmax2d", lambda x: nn.Softmax2d()(x), lambda x: torch.nn.Softmax2d()(x), [normal(2, 3, 4, 5)]),
]


@pytest.mark.parametrize("name,efn,tfn,makers", ACT_SPECS, ids=[s[0] for s in ACT_SPECS])
def test_activations(name, efn, tfn, makers, dtype, rng):
    # PyTorch 1.13's float64 hardsigmoid backward multiplies by 1/6 rounded to float32 (3e-8
    # off); Ember's exact gradient is checked against numpy below, PyTorch's within float32's
    # tolerance.
    grad_dtype = ember.float32 if name == "hardsigmoid" else None
    run_pair(efn, tfn, [m(rng).astype(NP_DTYPE[dtype]) for m in makers], dtype, rng, name,
             grad_dtype=grad_dtype)


def test_hardsigmoid_float64_gradient_is_exact(rng):
    x = away_from((-3, 3), 40)(rng)
    g = rng.standard_normal(40)
    ex = ember.tensor(x, requires_grad=True)
    (F.hardsigmoid(ex) * ember.tensor(g)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), np.where(np.abs(x) < 3, g / 6, 0.0), rtol=1e-15)


CONV_SPECS = [
    ("conv2d_rect", dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    ("conv2d_same_even", dict(kernel_size=(4, 3), padding="same", dilation=(1, 2))),
    ("conv2d_valid", dict(kernel_size=3, padding="valid", bias=False)),
    ("conv2d_reflect", dict(kernel_size=3, padding=2, padding_mode="reflect")),
    ("conv2d_replicate", dict(kernel_size=(3, 5), padding=(1, 2), padding_mode="replicate", groups=2)),
    ("conv2d_circular", dict(kernel_size=3, padding=1, stride=2, padding_mode="circular")),
    ("conv2d_same_reflect", dict(kernel_size=4, padding="same", padding_mode="reflect")),
]


@pytest.mark.parametrize("name,kw", CONV_SPECS, ids=[s[0] for s in CONV_SPECS])
def test_conv2d_module(name, kw, dtype, rng):
    torch.manual_seed(0)
    t = torch.nn.Conv2d(4, 6, **kw).to(torch.float64 if dtype == ember.float64 else torch.float32)
    e = nn.Conv2d(4, 6, **kw).to(dtype)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    assert list(e.state_dict()) == list(t.state_dict())
    for a in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
              "transposed", "output_padding", "groups", "padding_mode"):
        assert getattr(e, a) == getattr(t, a), a
    x = normal(2, 4, 7, 8)(rng).astype(NP_DTYPE[dtype])
    run_pair(e, t, [x], dtype, rng, name)
    close(e.weight.grad, t.weight.grad, dtype, f"{name} weight grad")


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, output_padding=1),
                                dict(kernel_size=(4, 3), stride=(2, 1), padding=(1, 0)),
                                dict(groups=2, dilation=2, bias=False),
                                dict(stride=1, dilation=2, output_padding=1)],
                         ids=["stride2_outpad", "rect", "groups_dilation", "outpad_ge_stride"])
def test_conv_transpose2d(kw, dtype, rng):
    kw = dict(kw)
    k = kw.pop("kernel_size", 3)
    torch.manual_seed(1)
    t = torch.nn.ConvTranspose2d(4, 6, k, **kw).to(torch.float64 if dtype == ember.float64 else torch.float32)
    e = nn.ConvTranspose2d(4, 6, k, **kw).to(dtype)
    e.load_state_dict({n: v.detach().numpy() for n, v in t.state_dict().items()})
    assert list(e.state_dict()) == list(t.state_dict())
    assert tuple(e.weight.shape) == tuple(t.weight.shape)
    for a in ("kernel_size", "stride", "padding", "dilation", "output_padding", "groups", "transposed"):
        assert getattr(e, a) == getattr(t, a), a
    run_pair(e, t, [normal(2, 4, 5, 4)(rng).astype(NP_DTYPE[dtype])], dtype, rng, "ConvTranspose2d")
    close(e.weight.grad, t.weight.grad, dtype, "weight grad")


def test_conv_transpose2d_output_size(rng):
    torch.manual_seed(2)
    t = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    e = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    e.load_state_dict({n: v.detach().numpy() for n, v in t.state_dict().items()})
    x = normal(1, 3, 4, 5)(rng).astype(np.float32)
    for size in ([8, 10], [7, 9], [1, 2, 8, 9]):
        close(e(ember.tensor(x), output_size=size), t(torch.tensor(x), output_size=size),
              ember.float32, f"output_size {size}")
    with pytest.raises(ember.ValueError, match="valid sizes range from 7 to 8"):
        e(ember.tensor(x), output_size=[9, 9])
    fx, fw = normal(2, 4, 3, 3)(rng).astype(np.float32), normal(4, 3, 3, 2)(rng).astype(np.float32)
    close(F.conv_transpose2d(ember.tensor(fx), ember.tensor(fw), stride=2, output_padding=1, groups=2),
          TF.conv_transpose2d(torch.tensor(fx), torch.tensor(fw), stride=2, output_padding=1, groups=2),
          ember.float32, "F.conv_transpose2d")


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1), dict(padding="same", dilation=2),
                                dict(padding=2, padding_mode="circular", groups=2),
                                dict(padding=1, padding_mode="reflect", bias=False)],
                         ids=["stride", "same", "circular_groups", "reflect"])
def test_conv1d(kw, dtype, rng):
    torch.manual_seed(3)
    t = torch.nn.Conv1d(4, 6, 4, **kw).to(torch.float64 if dtype == ember.float64 else torch.float32)
    e = nn.Conv1d(4, 6, 4, **kw).to(dtype)
    e.load_state_dict({n: v.detach().numpy() for n, v in t.state_dict().items()})
    for a in ("kernel_size", "stride", "padding", "dilation", "groups", "padding_mode"):
        assert getattr(e, a) == getattr(t, a), a
    run_pair(e, t, [normal(2, 4, 11)(rng).astype(NP_DTYPE[dtype])], dtype, rng, "Conv1d")
    fx, fw = normal(2, 4, 9)(rng).astype(NP_DTYPE[dtype]), normal(6, 2, 3)(rng).astype(NP_DTYPE[dtype])
    run_pair(lambda x, w: F.conv1d(x, w, stride=2, padding=1, groups=2),
             lambda x, w: TF.conv1d(x, w, stride=2, padding=1, groups=2), [fx, fw], dtype, rng, "F.conv1d")


def test_conv_errors():
    with pytest.raises(ember.ValueError, match="'bogus'.*'zeros', 'reflect', 'replicate', 'circular'|"
                                               "'zeros', 'reflect', 'replicate', 'circular'.*'bogus'"):
        nn.Conv2d(2, 3, 3, padding_mode="bogus")
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(2, 3, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding string"):
        nn.Conv2d(2, 3, 3, padding="full")
    with pytest.raises(ember.ValueError, match="zeros"):
        nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect")
    with pytest.raises(ember.ValueError, match="output padding must be smaller"):
        nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=2)
    with pytest.raises(ember.ValueError, match="unknown padding mode 'bogus'"):
        F.pad(ember.zeros(1, 2, 3), (1, 1), mode="bogus")
    with pytest.raises(ember.ValueError, match="less than the dim's size"):
        F.pad(ember.zeros(1, 2, 3), (3, 0), mode="reflect")


@pytest.mark.parametrize("cls,args,kw,shape,attrs", [
    ("BatchNorm1d", (4,), {}, (5, 4), ("num_features", "eps", "momentum", "affine", "track_running_stats")),
    ("BatchNorm1d", (4,), dict(affine=False, momentum=0.3), (5, 4, 3), ("affine",)),
    ("LayerNorm", ((3, 4),), dict(eps=1e-3), (2, 3, 4), ("normalized_shape", "eps", "elementwise_affine")),
    ("LayerNorm", (4,), dict(elementwise_affine=False), (2, 3, 4), ("normalized_shape",)),
    ("GroupNorm", (2, 6), {}, (3, 6, 4, 2), ("num_groups", "num_channels", "eps", "affine")),
    ("GroupNorm", (3, 6), dict(affine=False), (3, 6, 5), ("affine",)),
    ("InstanceNorm2d", (3,), {}, (2, 3, 4, 5), ("num_features", "eps", "momentum", "affine", "track_running_stats")),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), (2, 3, 4, 5), ("affine",)),
    ("InstanceNorm2d", (3,), dict(affine=True), (3, 4, 5), ("affine",)),
])
def test_norm_modules(cls, args, kw, shape, attrs, dtype, rng):
    e, t = getattr(nn, cls)(*args, **kw).to(dtype), getattr(torch.nn, cls)(*args, **kw)
    t = t.to(torch.float64 if dtype == ember.float64 else torch.float32)
    assert list(e.state_dict()) == list(t.state_dict())
    for a in attrs:
        assert getattr(e, a) == getattr(t, a), a
    with torch.no_grad():  # random affine parameters
        for p in t.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    x = normal(*shape)(rng).astype(NP_DTYPE[dtype])
    for mode in ("train", "eval"):
        getattr(e, mode)(), getattr(t, mode)()
        run_pair(e, t, [x], dtype, rng, f"{cls} {mode}")
        for k, v in t.state_dict().items():
            close(e.state_dict()[k], v, dtype if v.dtype != torch.int64 else None, f"{cls} {k}")


def test_norm_errors():
    with pytest.raises(ember.ValueError, match="divisible by num_groups"):
        nn.GroupNorm(4, 6)
    with pytest.raises(ember.ValueError, match="divisible by num_groups"):
        F.group_norm(ember.zeros(2, 6, 3), 4)
    with pytest.raises(ember.ShapeError, match="normalized_shape"):
        F.layer_norm(ember.zeros(2, 3), (4,))
    with pytest.raises(ember.ShapeError, match="normalized_shape"):
        nn.LayerNorm((3, 4))(ember.zeros(2, 4, 3))
    with pytest.raises(ember.ShapeError):
        nn.BatchNorm1d(3)(ember.zeros(2, 3, 4, 5))


def test_activation_modules_and_inplace(rng):
    x = away_from((-3, 3), 3, 4)(rng).astype(np.float32)
    for cls, kw in [("Hardswish", {}), ("Hardsigmoid", {}), ("Mish", {}), ("ReLU", {}),
                    ("LeakyReLU", dict(negative_slope=0.2)), ("ELU", dict(alpha=0.5)),
                    ("SiLU", {}), ("Hardtanh", dict(min_val=-2.0, max_val=2.0)), ("ReLU6", {})]:
        e, t = getattr(nn, cls)(**kw), getattr(torch.nn, cls)(**kw)
        assert e.inplace == t.inplace is False
        run_pair(e, t, [x], ember.float32, rng, cls)
        # inplace=True writes the result into the input and returns it.
        ex, tx = ember.tensor(x), torch.tensor(x)
        ey, ty = getattr(nn, cls)(inplace=True, **kw)(ex), getattr(torch.nn, cls)(inplace=True, **kw)(tx)
        assert ey is ex and ty is tx
        close(ex, tx, ember.float32, f"{cls} inplace")
        # Under autograd the input (not a leaf) takes the result and its history.
        ea, ta = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        eh, th = ea * 2, ta * 2
        getattr(nn, cls)(inplace=True, **kw)(eh), getattr(torch.nn, cls)(inplace=True, **kw)(th)
        (eh * eh).sum().backward(), (th * th).sum().backward()
        close(ea.grad, ta.grad, ember.float32, f"{cls} inplace grad")
    with pytest.raises(ember.ValueError, match="leaf"):
        F.hardswish(ember.tensor(x, requires_grad=True), inplace=True)


def test_prelu_module(rng):
    for n in (1, 3):
        e, t = nn.PReLU(n), torch.nn.PReLU(n)
        assert e.num_parameters == t.num_parameters and list(e.state_dict()) == ["weight"]
        close(e.weight, t.weight, ember.float32, "init")
        run_pair(e, t, [away_from_zero(2, 3, 4)(rng).astype(np.float32)], ember.float32, rng, "PReLU")
        close(e.weight.grad, t.weight.grad, ember.float32, "PReLU weight grad")


def test_dropout2d_channels(rng):
    ember.manual_seed(5)
    x = ember.ones(4, 6, 3, 3, requires_grad=True)
    d = nn.Dropout2d(0.5)
    assert d.p == 0.5 and d.inplace is False
    y = d(x)
    y.sum().backward()
    yv = y.detach().numpy().reshape(4, 6, 9)
    for v in yv.reshape(24, 9):
        assert np.all(v == 0) or np.allclose(v, 2.0)
    assert 0 < (yv[:, :, 0] == 0).sum() < 24
    np.testing.assert_allclose(x.grad.numpy().reshape(4, 6, 9), yv)
    d.eval()
    assert d(x) is x or np.array_equal(d(x).detach().numpy(), x.detach().numpy())
    with pytest.warns(UserWarning, match="3D input"):
        F.dropout2d(ember.ones(2, 3, 4))




@pytest.mark.parametrize("padding", ["same", "valid"])
def test_functional_conv2d_padding_strings(padding, dtype, rng):
    x, w = normal(2, 3, 7, 6)(rng).astype(NP_DTYPE[dtype]), normal(4, 3, 4, 3)(rng).astype(NP_DTYPE[dtype])
    b = normal(4)(rng).astype(NP_DTYPE[dtype])
    run_pair(lambda a, c, d: F.conv2d(a, c, d, padding=padding, dilation=(1, 2)),
             lambda a, c, d: TF.conv2d(a, c, d, padding=padding, dilation=(1, 2)),
             [x, w, b], dtype, rng, f"conv2d padding={padding}")
