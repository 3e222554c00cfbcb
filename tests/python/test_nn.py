"""nn and optim: modules (C++ layers and Python subclasses), state dicts, training against
PyTorch from the same initial weights, optimisers, schedulers, save/load, DataLoader."""
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from conftest import torch

tnn = torch.nn


class Net(nn.Module):
    """A Python model mixing C++ layers, a Python Parameter and functional ops."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1, bias=False)  # a bias before batch norm gets only rounding noise, which Adam amplifies
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
        self.scale = nn.Parameter(ember.ones(1))

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.head(x) * self.scale


class TorchNet(tnn.Module):
    def __init__(self):
        super().__init__()
        self.conv = tnn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.bn = tnn.BatchNorm2d(4)
        self.head = tnn.Sequential(tnn.Flatten(), tnn.Linear(64, 10))
        self.scale = tnn.Parameter(torch.ones(1))

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.head(x) * self.scale


def test_registration_and_state_dict_keys_match_torch():
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    assert names == [n for n, _ in TorchNet().named_parameters()]
    assert list(m.state_dict()) == list(TorchNet().state_dict())
    assert set(m.state_dict()) == set(TorchNet().state_dict())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert isinstance(m.conv, nn.Conv2d) and len(list(m.modules())) == 6
    assert "Conv2d(" in repr(m)
    m.plain = 3
    assert m.plain == 3 and "plain" not in dict(m.named_parameters())


def test_load_state_dict_strict_and_shapes():
    m = Net()
    sd = m.state_dict()
    sd2 = OrderedDict((k, ember.zeros(*v.shape, dtype=v.dtype)) for k, v in sd.items())
    m.load_state_dict(sd2)
    assert m.conv.weight.abs().sum().item() == 0
    with pytest.raises(ember.ValueError, match="missing"):
        m.load_state_dict({"conv.weight": ember.zeros(4, 1, 3, 3)})
    m.load_state_dict({"conv.weight": ember.ones(4, 1, 3, 3)}, strict=False)
    assert m.conv.weight.sum().item() == 36
    with pytest.raises(ember.ShapeError, match="conv.weight"):
        m.load_state_dict({"conv.weight": ember.ones(2, 2)}, strict=False)


def copy_to_torch(m, tm):
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})


def digits_batch(n=32):
    x, y = ember.datasets.load_digits("train")
    return x[:n].contiguous(), y[:n].contiguous()


@pytest.mark.parametrize("device", ["cpu", "emu"])
@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw"])
def test_training_matches_torch_for_20_steps(opt, device):
    # On emu every op of the step (conv, batch norm, pooling, loss, optimiser) runs through the
    # CUDA kernels on the emulated GPU.
    ember.manual_seed(1)
    m, tm = Net(), TorchNet()
    copy_to_torch(m, tm)
    m.to(device)
    x, y = digits_batch(64)
    tx, ty = torch.tensor(x.numpy()), torch.tensor(y.numpy())
    x, y = x.to(device), y.to(device)
    if opt == "sgd":
        eo = ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        to = torch.optim.SGD(tm.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    elif opt == "adam":
        eo = ember.optim.Adam(m.parameters(), lr=0.01)
        to = torch.optim.Adam(tm.parameters(), lr=0.01)
    else:
        eo = ember.optim.AdamW(m.parameters(), lr=0.01)
        to = torch.optim.AdamW(tm.parameters(), lr=0.01)
    el, tl = [], []
    for step in range(20):
        xb, yb = x[(step % 2) * 32:(step % 2 + 1) * 32], y[(step % 2) * 32:(step % 2 + 1) * 32]
        eo.zero_grad()
        loss = F.cross_entropy(m(xb), yb)
        loss.backward()
        eo.step()
        el.append(loss.item())
        to.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tm(tx[(step % 2) * 32:(step % 2 + 1) * 32]),
                                                  ty[(step % 2) * 32:(step % 2 + 1) * 32])
        tloss.backward()
        to.step()
        tl.append(tloss.item())
    np.testing.assert_allclose(el, tl, rtol=1e-4)
    assert el[-1] < el[0]
    for k, v in m.state_dict().items():
        assert v.device == ember.device(device), k
        np.testing.assert_allclose(v.cpu().numpy(), tm.state_dict()[k].numpy(), rtol=1e-3, atol=1e-4, err_msg=k)


def test_python_subclass_trains_on_digits():
    ember.manual_seed(0)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Parameter(ember.randn(64, 32) * 0.1)
            self.b1 = nn.Parameter(ember.zeros(32))
            self.out = nn.Linear(32, 10)

        def forward(self, x):
            return self.out(ember.relu(x.flatten(1) @ self.w1 + self.b1))

    m = MLP()
    x, y = ember.datasets.load_digits("train")
    opt = ember.optim.Adam(m.parameters(), lr=0.01)
    for _ in range(60):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 0.3
    xt, yt = ember.datasets.load_digits("test")
    with ember.no_grad():
        acc = (m(xt).argmax(1) == yt).sum().item() / len(yt)
    assert acc > 0.9


def test_train_eval_reach_cpp_layers():
    m = Net()
    x = ember.randn(8, 1, 8, 8)
    m.eval()
    assert not m.training and not m.bn._cpp.training
    with ember.no_grad():
        a, b = m(x), m(x)
    assert a.tolist() == b.tolist()
    rm_before = m.bn.running_mean.tolist()
    m.train()
    m(x)
    assert m.bn.running_mean.tolist() != rm_before
    assert m.bn.num_batches_tracked.item() == 1


def test_module_to_double_keeps_cpp_layer_working():
    m = nn.Linear(3, 2)
    w = m.weight
    m.double()
    assert m.weight is w and w.dtype == ember.float64
    assert m(ember.ones(1, 3, dtype=ember.float64)).dtype == ember.float64
    m.weight = nn.Parameter(ember.zeros(2, 3, dtype=ember.float64))
    assert m(ember.ones(1, 3, dtype=ember.float64)).tolist() == [m.bias.tolist()]


def test_zero_grad_and_parameters_shared_with_optimizer():
    m = nn.Linear(4, 2)
    m(ember.ones(3, 4)).sum().backward()
    assert m.weight.grad is not None
    m.zero_grad()
    assert m.weight.grad is None


@pytest.mark.parametrize("sched", ["step", "cosine"])
def test_lr_schedulers_match_torch(sched):
    p, tp = nn.Parameter(ember.ones(1)), torch.nn.Parameter(torch.ones(1))
    eo, to = ember.optim.SGD([p], lr=0.1), torch.optim.SGD([tp], lr=0.1)
    if sched == "step":
        es, ts = ember.optim.lr_scheduler.StepLR(eo, 3, gamma=0.5), torch.optim.lr_scheduler.StepLR(to, 3, gamma=0.5)
    else:
        es = ember.optim.lr_scheduler.CosineAnnealingLR(eo, T_max=10, eta_min=0.01)
        ts = torch.optim.lr_scheduler.CosineAnnealingLR(to, T_max=10, eta_min=0.01)
    for _ in range(12):
        eo.step()
        to.step()
        es.step()
        ts.step()
        assert eo.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"], rel=1e-9)


def test_save_and_load_round_trip(tmp_path):
    m = Net()
    path = tmp_path / "net.safetensors"
    ember.save(m.state_dict(), str(path))
    sd = ember.load(path)
    assert list(sd) == list(m.state_dict())
    m2 = Net()
    m2.load_state_dict(sd)
    x = ember.randn(2, 1, 8, 8)
    m.eval()
    m2.eval()
    assert m(x).tolist() == m2(x).tolist()
    opt = ember.optim.Adam(m.parameters())
    m(x).sum().backward()
    opt.step()
    state = opt.state_dict()
    opt2 = ember.optim.Adam(m.parameters())
    opt2.load_state_dict(state)


def test_dataloader_over_lists_and_arrays():
    data = [(np.full(3, i, np.float32), i) for i in range(10)]
    dl = ember.utils.data.DataLoader(data, batch_size=4)
    batches = list(dl)
    assert len(batches) == 3 and len(dl) == 3
    xb, yb = batches[0]
    assert xb.shape == (4, 3) and yb.tolist() == [0, 1, 2, 3] and yb.dtype == ember.int64
    assert batches[-1][1].tolist() == [8, 9]
    dl = ember.utils.data.DataLoader(data, batch_size=4, drop_last=True, shuffle=True, seed=3)
    seen = [v for _, y in dl for v in y.tolist()]
    assert len(seen) == 8 and len(set(seen)) == 8 and seen != sorted(seen)
    x, y = ember.datasets.load_digits("test")
    ds = ember.utils.data.TensorDataset(x, y)
    xb, yb = next(iter(ember.utils.data.DataLoader(ds, batch_size=16)))
    assert xb.shape == (16, 1, 8, 8) and yb.shape == (16,)
    arrays = ember.utils.data.TensorDataset(np.zeros((5, 2)), np.arange(5))
    xb, yb = next(iter(ember.utils.data.DataLoader(arrays, batch_size=5)))
    assert xb.dtype == ember.float64 and yb.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        ember.utils.data.DataLoader(data, batch_size=0)


def test_ready_made_model():
    m = nn.model("lenet")
    assert isinstance(m, nn.Module) and len(list(m.parameters())) > 0
    out = m(ember.randn(2, 1, 8, 8))
    assert out.shape == (2, 10)


def test_init_functions_bounds_and_gains():
    w = nn.Parameter(ember.empty(64, 32))
    nn.init.kaiming_uniform_(w, a=0, nonlinearity="relu")
    bound = (2.0 ** 0.5) * (3.0 / 32) ** 0.5
    assert w.abs().max().item() <= bound and w.abs().max().item() > 0.8 * bound
    assert nn.init.calculate_gain("tanh") == pytest.approx(torch.nn.init.calculate_gain("tanh"))
    nn.init.zeros_(w)
    assert w.abs().sum().item() == 0 and w.requires_grad and w.grad_fn is None
    nn.init.xavier_normal_(w)
    assert abs(w.std().item() - (2.0 / 96) ** 0.5) < 0.02


def test_fuse_for_inference_matches_torchs_unfused_model():
    # Running statistics and affine parameters far from the defaults, copied into both models;
    # PyTorch's unfused model in eval mode is the reference for Ember's fused one.
    ember.manual_seed(4)
    m, tm = Net(), TorchNet()
    with torch.no_grad():
        tm.bn.running_mean.copy_(torch.randn(4))
        tm.bn.running_var.copy_(torch.rand(4) * 2 + 0.1)
        tm.bn.weight.copy_(torch.randn(4) + 1)
        tm.bn.bias.copy_(torch.randn(4))
    m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    m.eval()
    tm.eval()
    x = np.random.default_rng(0).standard_normal((5, 1, 8, 8)).astype(np.float32)
    want = tm(torch.tensor(x)).detach().numpy()
    report = nn.fuse_for_inference(m, ember.tensor(x))
    assert report == {"fused": ["conv+bn"], "skipped": [], "relu": []}
    assert "bias" in dict(m.conv.named_parameters())  # the folded shift
    got = m(ember.tensor(x)).detach().numpy()
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    m.train()
    with pytest.raises(ember.ValueError, match="eval mode only"):
        m(ember.tensor(x))


def test_fuse_for_inference_on_a_ready_made_model_and_bad_input():
    m = nn.model("resnet20", 3, 8)
    with pytest.raises(ember.ValueError, match="expected a model in eval mode"):
        nn.fuse_for_inference(m)
    m.eval()
    x = ember.randn(2, 3, 8, 8)
    with ember.no_grad():
        want = m(x).numpy()
        report = nn.fuse_for_inference(m)
        got = m(x).numpy()
    assert len(report["fused"]) == 21 and report["skipped"] == []
    assert "conv1+bn1" in report["fused"]
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_fuse_for_inference_moves_relus_in_a_sequential():
    ember.manual_seed(6)
    seq = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 2, 1),
                        nn.ReLU())
    seq.eval()
    x = ember.randn(2, 3, 7, 7)
    with ember.no_grad():
        want = seq(x).numpy()
        report = nn.fuse_for_inference(seq, x)
        got = seq(x).numpy()
    assert report["fused"] == ["0+1"] and report["relu"] == ["0+2", "3+4"]
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_hardtanh_and_relu6_modules_match_torch():
    x = ember.randn(3, 8) * 5
    xt = torch.tensor(x.numpy())
    for mine, theirs in ((nn.Hardtanh(-2.0, 3.0), torch.nn.Hardtanh(-2.0, 3.0)),
                         (nn.ReLU6(), torch.nn.ReLU6())):
        np.testing.assert_allclose(mine(x).numpy(), theirs(xt).numpy(), rtol=0, atol=0)
    assert "Hardtanh(min_val=-2, max_val=3)" in repr(nn.Hardtanh(-2.0, 3.0))
    with pytest.raises(ember.ValueError, match="min_val .* cannot be greater than max_val"):
        nn.Hardtanh(1.0, -1.0)
