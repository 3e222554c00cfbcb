"""ember.amp.GradScaler with PyTorch's names, defaults, messages and state_dict keys; scaled
training equal to plain training; the torch.cuda.amp alias."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn


def _run(seed=3):
    ember.manual_seed(seed)
    model = nn.Linear(5, 2)
    return model, ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def test_defaults_and_state_dict_keys_are_torchs():
    s = ember.amp.GradScaler()
    assert s.get_scale() == 65536.0 and s.get_growth_factor() == 2.0
    assert s.get_backoff_factor() == 0.5 and s.get_growth_interval() == 2000 and s.is_enabled()
    assert s.state_dict() == {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                              "growth_interval": 2000, "_growth_tracker": 0}
    other = ember.cuda.amp.GradScaler(init_scale=8.0)
    assert other.get_scale() == 8.0
    other.load_state_dict(s.state_dict())
    assert other.get_scale() == 65536.0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        other.load_state_dict({})
    assert ember.amp.GradScaler(enabled=False).state_dict() == {}
    with pytest.raises(ValueError, match="The growth factor must be > 1.0."):
        ember.amp.GradScaler(growth_factor=1.0)


def test_scaled_training_equals_plain_and_overflow_backs_off():
    plain_model, plain_opt = _run()
    model, opt = _run()
    scaler = ember.amp.GradScaler(init_scale=1024.0)
    ember.manual_seed(9)
    for step in range(3):
        x, y = ember.randn(6, 5), ember.randn(6, 2)
        plain_opt.zero_grad()
        nn.functional.mse_loss(plain_model(x), y).backward()
        plain_opt.step()
        opt.zero_grad()
        scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
        assert scaler.step(opt) is None
        scaler.update()
        for a, b in zip(model.parameters(), plain_model.parameters()):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    before = [p.detach().numpy().copy() for p in model.parameters()]
    opt.zero_grad()
    (scaler.scale(nn.functional.mse_loss(model(x), y)) * math.inf).backward()
    scaler.step(opt)
    scaler.update()
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), b)
    assert scaler.get_scale() == 512.0 and scaler.state_dict()["_growth_tracker"] == 0
    # Lists and tuples of outputs are scaled element by element.
    a, b = scaler.scale((ember.ones(2), [ember.ones(1)]))
    assert a.tolist() == [512.0, 512.0] and b[0].tolist() == [512.0]


def test_state_machine_messages_are_torchs():
    model, opt = _run()
    scaler = ember.amp.GradScaler()
    with pytest.raises(RuntimeError, match="Attempted unscale_ but _scale is None"):
        scaler.unscale_(opt)
    scaler.scale(nn.functional.mse_loss(model(ember.randn(2, 5)), ember.randn(2, 2))).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(opt)
    scaler.update()
    with pytest.raises(RuntimeError, match="No inf checks were recorded prior to update."):
        scaler.update()
    scaler.update(4.0)
    assert scaler.get_scale() == 4.0
    scaler.update(ember.full((1,), 2.0))
    assert scaler.get_scale() == 2.0
    with pytest.raises(ValueError, match="new_scale should be a float or a 1-element"):
        scaler.update(ember.zeros(3))
