"""ember.optim.lr_scheduler against torch's 1.13 on the same optimisers (two parameter groups):
the lr of every group after every step, get_last_lr(), OneCycleLR's momentum and betas, chained
schedulers, step(epoch), ReduceLROnPlateau on a metric sequence, SequentialLR, and state_dict
round trips that resume the same sequence."""
import warnings

import numpy as np
import pytest

import ember
from conftest import torch

# torch's own warnings (step(epoch) inside SequentialLR, scheduler before optimizer steps).
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _opt(lib, name="SGD"):
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.4}]
    if name == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return getattr(lib.optim, name)(groups, lr=0.1)


def _lrs(opt):
    return [g["lr"] for g in opt.param_groups]


SCHEDULERS = {
    "StepLR": lambda lib, o: lib.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda lib, o: lib.optim.lr_scheduler.MultiStepLR(o, [2, 5, 5], gamma=0.1),
    "ExponentialLR": lambda lib, o: lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4,
                                                                                 eta_min=0.01),
    "LambdaLR": lambda lib, o: lib.optim.lr_scheduler.LambdaLR(
        o, [lambda e: 1 / (1 + e), lambda e: 0.95 ** e]),
    "MultiplicativeLR": lambda lib, o: lib.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.9),
    "ConstantLR": lambda lib, o: lib.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3),
    "LinearLR": lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=4),
    "OneCycleLR": lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=[1.0, 2.0],
                                                                   total_steps=14),
    "OneCycleLR-linear-3phase": lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(
        o, max_lr=0.5, epochs=2, steps_per_epoch=7, anneal_strategy="linear", three_phase=True,
        pct_start=0.25),
    "SequentialLR": lambda lib, o: lib.optim.lr_scheduler.SequentialLR(
        o, [lib.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=3),
            lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.5)], milestones=[3]),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_lr_sequence_matches_torch(name, opt_name):
    eo, to = _opt(ember, opt_name), _opt(torch, opt_name)
    es, ts = SCHEDULERS[name](ember, eo), SCHEDULERS[name](torch, to)
    steps = 14 if name.startswith("OneCycle") else 12
    for step in range(steps):
        assert _lrs(eo) == pytest.approx(_lrs(to), rel=1e-12, abs=1e-15), step
        assert es.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12, abs=1e-15)
        if name.startswith("OneCycle"):
            key = "momentum" if opt_name == "SGD" else "betas"
            for eg, tg in zip(eo.param_groups, to.param_groups):
                assert eg[key] == pytest.approx(tg[key], rel=1e-12)
        eo.step()
        to.step()
        es.step()
        ts.step()


def test_one_cycle_momentum_reaches_the_update_and_errors():
    eo = _opt(ember)
    s = ember.optim.lr_scheduler.OneCycleLR(eo, max_lr=0.1, total_steps=3)
    assert eo._cpp.group_options(0)["momentum"] != 0.95  # nothing pushed before a step
    eo.step()
    assert eo._cpp.group_options(0)["momentum"] == pytest.approx(eo.param_groups[0]["momentum"])
    for _ in range(3):
        s.step()
    with pytest.raises(ValueError, match="Tried to step 5 times. The specified number of total "
                                         "steps is 3"):
        s.step()
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        ember.optim.lr_scheduler.OneCycleLR(_opt(ember, "Adagrad"), max_lr=0.1, total_steps=3)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        ember.optim.lr_scheduler.OneCycleLR(_opt(ember), max_lr=0.1)


def test_chained_schedulers_and_step_with_epoch_match_torch():
    eo, to = _opt(ember), _opt(torch)
    e1, t1 = (lib.optim.lr_scheduler.StepLR(o, 2, 0.5) for lib, o in ((ember, eo), (torch, to)))
    e2, t2 = (lib.optim.lr_scheduler.ExponentialLR(o, 0.9) for lib, o in ((ember, eo), (torch, to)))
    for _ in range(7):
        for s in (e1, e2, t1, t2):
            s.step()
        assert _lrs(eo) == pytest.approx(_lrs(to), rel=1e-12)
    eo, to = _opt(ember), _opt(torch)
    es = ember.optim.lr_scheduler.CosineAnnealingLR(eo, T_max=10)
    ts = torch.optim.lr_scheduler.CosineAnnealingLR(to, T_max=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in (3, 7, 2):
            es.step(epoch)
            ts.step(epoch)
            assert _lrs(eo) == pytest.approx(_lrs(to), rel=1e-12)


@pytest.mark.parametrize("kwargs", [
    dict(patience=1, factor=0.5, cooldown=1, min_lr=[0.02, 0.0]),
    dict(mode="max", threshold_mode="abs", threshold=0.1, patience=0),
    dict(patience=2, threshold=0.05, eps=0.05),
])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    metrics = [1.0, 0.9, 0.9, 0.89995, 0.95, 0.95, 1.2, 0.5, 0.95, 0.95, 0.95, 0.3, 0.95, 0.95]
    eo, to = _opt(ember), _opt(torch)
    es = ember.optim.lr_scheduler.ReduceLROnPlateau(eo, **kwargs)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(to, **kwargs)
    for m in metrics:
        es.step(ember.tensor(m) if m == 0.5 else m)  # a 0-d tensor metric works too
        ts.step(m)
        assert _lrs(eo) == pytest.approx(_lrs(to), rel=1e-12)
        assert es.get_last_lr() == pytest.approx(_lrs(to), rel=1e-12)
        assert (es.best, es.num_bad_epochs, es.cooldown_counter) == \
            (ts.best, ts.num_bad_epochs, ts.cooldown_counter)
    sd = es.state_dict()
    assert set(sd) == set(ts.state_dict())
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        ember.optim.lr_scheduler.ReduceLROnPlateau(eo, factor=1.0)


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "LambdaLR", "OneCycleLR",
                                  "SequentialLR"])
def test_state_dict_resumes_the_sequence(name):
    eo = _opt(ember)
    es = SCHEDULERS[name](ember, eo)
    for _ in range(5):
        eo.step()
        es.step()
    sd, opt_sd = es.state_dict(), eo.state_dict()
    expect = []
    for _ in range(5):
        eo.step()
        es.step()
        expect.append(_lrs(eo))
    eo2 = _opt(ember)
    es2 = SCHEDULERS[name](ember, eo2)
    eo2.load_state_dict(opt_sd)
    es2.load_state_dict(sd)
    got = []
    for _ in range(5):
        eo2.step()
        es2.step()
        got.append(_lrs(eo2))
    np.testing.assert_allclose(got, expect, rtol=1e-12)
    assert "optimizer" not in sd
