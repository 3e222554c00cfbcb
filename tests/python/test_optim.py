"""ember.optim against torch.optim 1.13 on the same inputs: every optimiser with its options over
several steps (values compared), parameter groups, edits of param_groups between steps,
add_param_group, state_dict's structure and round trips (also from a torch state dict), zero_grad,
and PyTorch's error messages."""
import numpy as np
import pytest

import ember
from conftest import torch

# (name, kwargs of the default group, kwargs of a second group); both libraries take the same.
CASES = [
    ("SGD", dict(lr=0.1), dict(lr=0.05)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01), dict(momentum=0.5)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), dict(weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, maximize=True), dict(lr=0.01, maximize=False)),
    ("Adam", dict(lr=0.01), dict(betas=(0.5, 0.9))),
    ("Adam", dict(lr=0.01, weight_decay=0.1, maximize=True), dict(eps=1e-3)),
    ("AdamW", dict(lr=0.01), dict(weight_decay=0.5)),
    ("RMSprop", dict(lr=0.01), dict(alpha=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.01), dict(centered=False)),
    ("RMSprop", dict(lr=0.005, momentum=0.5, maximize=True), dict(momentum=0.0)),
    ("Adagrad", dict(lr=0.1), dict(lr_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.01, initial_accumulator_value=0.3),
     dict(eps=1e-4)),
]


def _ids(c):
    return f"{c[0]}-{'-'.join(sorted(c[1]))}"


class Pair:
    """The same two parameters in ember and torch, with gradients set from numpy arrays."""

    def __init__(self, rng, dtype=np.float64, device="cpu"):
        self.w0 = rng.standard_normal((4, 3)).astype(dtype)
        self.b0 = rng.standard_normal(5).astype(dtype)
        self.e = [ember.tensor(self.w0, requires_grad=True, device=device),
                  ember.tensor(self.b0, requires_grad=True, device=device)]
        self.t = [torch.tensor(self.w0, requires_grad=True), torch.tensor(self.b0, requires_grad=True)]
        self.device, self.dtype = device, dtype

    def set_grads(self, rng):
        for e, t in zip(self.e, self.t):
            g = rng.standard_normal(tuple(e.shape)).astype(self.dtype)
            e.grad = ember.tensor(g, device=self.device)
            t.grad = torch.tensor(g)

    def check(self, rtol, atol):
        for e, t in zip(self.e, self.t):
            np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(), rtol=rtol,
                                       atol=atol)


def _make(lib, name, params, group_kwargs, extra):
    opt_cls = getattr(lib.optim, name)
    return opt_cls([{"params": [params[0]]}, {"params": [params[1]], **extra}], **group_kwargs)


@pytest.mark.parametrize("case", CASES, ids=_ids)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_optimiser_matches_torch_with_two_groups(case, dtype, rng):
    name, kwargs, extra = case
    p = Pair(rng, dtype)
    eo, to = _make(ember, name, p.e, kwargs, extra), _make(torch, name, p.t, kwargs, extra)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    for step in range(6):
        p.set_grads(rng)
        eo.step()
        to.step()
        p.check(**tol)


@pytest.mark.parametrize("case", [CASES[2], CASES[5], CASES[8], CASES[11]], ids=_ids)
def test_optimiser_matches_torch_on_emu(case, rng):
    name, kwargs, extra = case
    p = Pair(rng, np.float32, device="emu")
    eo, to = _make(ember, name, p.e, kwargs, extra), _make(torch, name, p.t, kwargs, extra)
    for _ in range(4):
        p.set_grads(rng)
        eo.step()
        to.step()
        p.check(rtol=2e-5, atol=2e-6)


def test_param_group_edits_take_effect(rng):
    p = Pair(rng)
    eo = ember.optim.SGD(p.e, lr=0.1, momentum=0.9)
    to = torch.optim.SGD(p.t, lr=0.1, momentum=0.9)
    for step in range(6):
        if step == 2:
            for g in (eo.param_groups[0], to.param_groups[0]):
                g["lr"] = 0.01
                g["momentum"] = 0.5
        if step == 4:
            eo.param_groups[0].update(nesterov=True, dampening=0.0)
            to.param_groups[0].update(nesterov=True, dampening=0.0)
        p.set_grads(rng)
        eo.step()
        to.step()
        p.check(rtol=1e-10, atol=1e-12)
    eo = ember.optim.Adam(p.e)
    to = torch.optim.Adam(p.t)
    for step in range(4):
        if step == 2:
            eo.param_groups[0]["betas"] = (0.5, 0.9)
            to.param_groups[0]["betas"] = (0.5, 0.9)
        p.set_grads(rng)
        eo.step()
        to.step()
        p.check(rtol=1e-10, atol=1e-12)


def test_add_param_group_and_repr(rng):
    p = Pair(rng)
    eo = ember.optim.RMSprop([p.e[0]], lr=0.01, momentum=0.5)
    to = torch.optim.RMSprop([p.t[0]], lr=0.01, momentum=0.5)
    eo.add_param_group({"params": p.e[1], "lr": 0.1, "centered": True})
    to.add_param_group({"params": p.t[1], "lr": 0.1, "centered": True})
    assert len(eo.param_groups) == 2
    assert {k: v for k, v in eo.param_groups[1].items() if k != "params"} == \
        {k: v for k, v in to.param_groups[1].items() if k != "params"}
    for _ in range(4):
        p.set_grads(rng)
        eo.step()
        to.step()
        p.check(rtol=1e-10, atol=1e-12)
    assert repr(eo) == repr(to)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        eo.add_param_group({"params": [p.e[0]]})


def _plain(x):
    """A state dict as numbers, for comparing ember's and torch's."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy().tolist()
    return x


@pytest.mark.parametrize("case", [CASES[1], CASES[4], CASES[6], CASES[8], CASES[11]], ids=_ids)
def test_state_dict_has_torchs_structure_and_round_trips(case, rng):
    name, kwargs, extra = case
    p = Pair(rng)
    eo, to = _make(ember, name, p.e, kwargs, extra), _make(torch, name, p.t, kwargs, extra)
    for _ in range(3):
        p.set_grads(rng)
        eo.step()
        to.step()
    es, ts = eo.state_dict(), to.state_dict()
    assert list(es) == ["state", "param_groups"]
    # Every key PyTorch has, with PyTorch's values (Ember's groups lack no option of torch's).
    for eg, tg in zip(es["param_groups"], ts["param_groups"]):
        assert list(eg) == list(tg)
        assert _plain(eg) == _plain(tg)
    assert list(es["state"]) == list(ts["state"])
    for i in ts["state"]:
        assert list(es["state"][i]) == list(ts["state"][i])
        for k in ts["state"][i]:
            e_v, t_v = _plain(es["state"][i][k]), _plain(ts["state"][i][k])
            np.testing.assert_allclose(np.asarray(e_v, dtype=float), np.asarray(t_v, dtype=float),
                                       rtol=1e-10, atol=1e-12)
    # Resume: a fresh optimiser loads ember's state (and another loads torch's); all continue alike.
    q = Pair(rng)
    for e, e_old in zip(q.e, p.e):
        with ember.no_grad():
            e.copy_(e_old)
    eo2 = _make(ember, name, q.e, kwargs, {})
    eo2.load_state_dict(es)
    r = Pair(rng)
    for e, e_old in zip(r.e, p.e):
        with ember.no_grad():
            e.copy_(e_old)
    eo3 = _make(ember, name, r.e, kwargs, {})
    eo3.load_state_dict(ts)
    assert _plain(eo3.state_dict()["param_groups"]) == _plain(es["param_groups"])
    for _ in range(3):
        g = [rng.standard_normal(tuple(e.shape)) for e in p.e]
        for params in (p.e, q.e, r.e):
            for e, gi in zip(params, g):
                e.grad = ember.tensor(gi)
        for t, gi in zip(p.t, g):
            t.grad = torch.tensor(gi)
        for o in (eo, eo2, eo3, to):
            o.step()
    for a, b, c in zip(p.e, q.e, r.e):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        np.testing.assert_allclose(c.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=1e-14)
    p.check(rtol=1e-10, atol=1e-12)
    # optimizer.state is keyed by the parameters.
    assert set(eo.state[p.e[0]]) == set(to.state[p.t[0]])


def test_state_dict_load_errors(rng):
    p = Pair(rng)
    eo = ember.optim.SGD(p.e, lr=0.1)
    two = ember.optim.SGD([{"params": [p.e[0]]}, {"params": [p.e[1]]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        eo.load_state_dict(two.state_dict())
    q = Pair(rng)
    other = ember.optim.SGD([{"params": [q.e[0], q.e[1]]}, {"params": [p.e[0]]}], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        two.load_state_dict(other.state_dict())


def test_zero_grad_as_torch_1_13(rng):
    p = Pair(rng)
    eo = ember.optim.SGD(p.e, lr=0.1)
    p.set_grads(rng)
    g = p.e[0].grad
    eo.zero_grad()  # 1.13's default: zeroed in place
    assert p.e[0].grad is not None and g.abs().sum().item() == 0
    eo.zero_grad(set_to_none=True)
    assert p.e[0].grad is None


@pytest.mark.parametrize("make, message", [
    (lambda lib, ps: lib.optim.SGD(ps, lr=-1), "Invalid learning rate: -1"),
    (lambda lib, ps: lib.optim.SGD(ps, lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda lib, ps: lib.optim.SGD(ps, lr=0.1, nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda lib, ps: lib.optim.SGD(ps), "parameter group didn't specify a value of required "
                                        "optimization parameter lr"),
    (lambda lib, ps: lib.optim.Adam(ps, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda lib, ps: lib.optim.Adam(ps, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda lib, ps: lib.optim.RMSprop(ps, alpha=-0.1), "Invalid alpha value: -0.1"),
    (lambda lib, ps: lib.optim.Adagrad(ps, lr_decay=-0.1), "Invalid lr_decay value: -0.1"),
    (lambda lib, ps: lib.optim.Adagrad([], lr=0.1), "optimizer got an empty parameter list"),
])
def test_errors_are_torchs(make, message, rng):
    p = Pair(rng)
    for lib, ps in ((ember, p.e), (torch, p.t)):
        with pytest.raises(ValueError) as info:
            make(lib, ps)
        assert str(info.value) == message
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        ember.optim.SGD(p.e[0], lr=0.1)
    with pytest.raises(ValueError, match="amsgrad=True is not supported"):
        ember.optim.Adam(p.e, amsgrad=True)


def test_grad_scaler_step_sees_group_edits(rng):
    p = Pair(rng, np.float32)
    eo = ember.optim.SGD(p.e, lr=0.1)
    scaler = ember.amp.GradScaler(init_scale=4.0)
    eo.param_groups[0]["lr"] = 0.0  # must reach the C++ group before the scaled step
    before = p.e[0].detach().numpy().copy()
    p.e[0].grad = ember.ones(4, 3) * 4.0
    p.e[1].grad = ember.ones(5) * 4.0
    scaler.scale(ember.ones(1))
    scaler.step(eo)
    scaler.update()
    np.testing.assert_array_equal(p.e[0].detach().numpy(), before)


class PlainSGD(ember.optim.Optimizer):
    """An optimiser written in Python, as PyTorch users write them."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    def step(self, closure=None):
        with ember.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self.state[p]["steps"] = self.state[p].get("steps", 0) + 1
                        p.copy_(p - group["lr"] * p.grad)


def test_optimizer_subclass_written_in_python(rng):
    p = Pair(rng)
    eo = PlainSGD([{"params": [p.e[0]]}, {"params": [p.e[1]], "lr": 0.5}])
    to = torch.optim.SGD([{"params": [p.t[0]]}, {"params": [p.t[1]], "lr": 0.5}], lr=0.1)
    es = ember.optim.lr_scheduler.StepLR(eo, 1, gamma=0.5)
    ts = torch.optim.lr_scheduler.StepLR(to, 1, gamma=0.5)
    for _ in range(3):
        p.set_grads(rng)
        eo.step()
        to.step()
        es.step()
        ts.step()
        p.check(rtol=1e-12, atol=1e-14)
    assert eo.state[p.e[0]] == {"steps": 3}
    sd = eo.state_dict()
    assert sd["state"] == {0: {"steps": 3}, 1: {"steps": 3}}
    fresh = PlainSGD([{"params": [p.e[0]]}, {"params": [p.e[1]]}])
    fresh.load_state_dict(sd)
    assert fresh.state[p.e[1]] == {"steps": 3} and fresh.param_groups[1]["lr"] == 0.5 * 0.125
    eo.zero_grad(set_to_none=True)
    assert p.e[0].grad is None
    with pytest.raises(NotImplementedError):
        ember.optim.Optimizer([p.e[0]], {}).step()
