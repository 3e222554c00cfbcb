"""Trains a small convolutional network on the bundled 8x8 digits with Ember's Python API, the
way one would with PyTorch, and prints the test accuracy after each epoch.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_digits.py [epochs]
"""
import sys

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
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    ember.manual_seed(0)
    x_train, y_train = ember.datasets.load_digits("train")
    x_test, y_test = ember.datasets.load_digits("test")
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=64, shuffle=True, seed=0)
    model = DigitsNet()
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
    ember.save(model.state_dict(), "digits_py.safetensors")


if __name__ == "__main__":
    main()
