"""Trains a convolutional network on the bundled 8x8 digits with Ember's Python API, the way
one would with PyTorch, and prints the test accuracy after each epoch. The model is a Python
Module built from Ember's layers, or (--model lenet/mlp) one of the C++ ready-made models that
`ember train` uses.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_digits.py [--epochs N] [--model M]
"""
import argparse

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset


class DigitsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def accuracy(model, x, y):
    model.eval()
    with ember.no_grad():
        correct = (model(x).argmax(1) == y).sum().item()
    model.train()
    return 100.0 * correct / len(y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--model", default="python", choices=["python", "lenet", "mlp"])
    parser.add_argument("--out", default="digits_py.safetensors", help="where to save the weights")
    args = parser.parse_args()
    epochs = args.epochs
    ember.manual_seed(0)
    x_train, y_train = ember.datasets.load_digits("train")
    x_test, y_test = ember.datasets.load_digits("test")
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=64, shuffle=True, seed=0)
    model = DigitsNet() if args.model == "python" else nn.model(args.model)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    for epoch in range(1, epochs + 1):
        total, batches = 0.0, 0
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        sched.step()
        print(f"epoch {epoch:2d}  loss {total / batches:.4f}  test accuracy {accuracy(model, x_test, y_test):.1f}%")
    ember.save(model.state_dict(), args.out)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
