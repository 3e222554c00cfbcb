"""A custom differentiable op written in Python: a "scaled softsign" y = x / (1 + |x|) * s.

Its forward runs Ember ops without recording a graph; its backward is a Python function that
Ember's C++ autograd engine calls when the gradient reaches it. gradcheck confirms the backward
against finite differences, and the op then trains inside a model like any built-in one.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/custom_op.py
"""
import ember
import ember.nn as nn
import ember.nn.functional as F


class ScaledSoftsign(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x, scale)
        return x / (1 + x.abs()) * scale

    @staticmethod
    def backward(ctx, grad):
        x, scale = ctx.saved_tensors
        d = 1 + x.abs()
        grad_x = grad * scale / (d * d)
        grad_scale = (grad * x / d).sum().reshape(1)
        return grad_x, grad_scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.scale = nn.Parameter(ember.ones(1))
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(ScaledSoftsign.apply(self.fc1(x.flatten(1)), self.scale))


def main():
    x = ember.randn(4, 5, dtype=ember.float64, requires_grad=True)
    s = ember.tensor([1.5], dtype=ember.float64, requires_grad=True)
    ok = ember.autograd.gradcheck(ScaledSoftsign.apply, (x, s))
    print(f"gradcheck: {'passed' if ok else 'failed'}")

    ember.manual_seed(0)
    xs, ys = ember.datasets.load_digits("train")
    model = Net()
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    for step in range(50):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 49:
            print(f"step {step:2d}  loss {loss.item():.4f}  scale {model.scale.item():.3f}")
    xt, yt = ember.datasets.load_digits("test")
    with ember.no_grad():
        acc = 100.0 * (model(xt).argmax(1) == yt).sum().item() / len(yt)
    print(f"test accuracy {acc:.1f}%")


if __name__ == "__main__":
    main()
