"""A PyTorch training script, run as is by PyTorch and by Ember (`import ember as torch`): a small
CNN (GroupNorm, ConvTranspose2d, LayerNorm, Embedding) learns which quadrant of a noisy 8x8 image
is brightest. It uses random_split, a DataLoader
with a seeded RandomSampler and a collate_fn (and worker threads for validation), parameter groups
(no weight decay on biases), clip_grad_norm_, OneCycleLR stepped per batch, then Adam with
ReduceLROnPlateau stepped per epoch, and a checkpoint saved and loaded in the middle.

    python3 pytorch_style_train.py ember|torch DEVICE CHECKPOINT_PATH

prints one JSON line: the mean training loss of every epoch, the validation losses and accuracy,
and the validation loss before the checkpoint and after it was loaded into a fresh model."""
import json
import sys

import numpy as np

if sys.argv[1] == "torch":
    import torch
else:
    import ember as torch
# `import ember as torch` names the package only: submodules by attribute, not `import torch.nn`.
nn, F = torch.nn, torch.nn.functional
DataLoader, Dataset = torch.utils.data.DataLoader, torch.utils.data.Dataset
RandomSampler, random_split = torch.utils.data.RandomSampler, torch.utils.data.random_split

DEVICE, CKPT = sys.argv[2], sys.argv[3]


class Quadrants(Dataset):
    """Noisy 8x8 images; the label is the quadrant with the brightest 4x4 patch."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 4, n)
        self.images = rng.normal(0.0, 1.0, (n, 1, 8, 8)).astype(np.float32)
        for i, q in enumerate(self.labels):
            r, c = divmod(int(q), 2)
            self.images[i, 0, 4 * r:4 * r + 4, 4 * c:4 * c + 4] += 0.8

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])


def collate(batch):
    images, labels = zip(*batch)
    return torch.tensor(np.stack(images)), torch.tensor(labels)


class Net(nn.Module):
    """A small encoder-decoder CNN: GroupNorm after the first convolution, a ConvTranspose2d that
    brings the deeper features back to 8x8 to join the first ones, LayerNorm on the flattened
    features, and class prototypes in an Embedding that the features are compared with."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.norm1 = nn.GroupNorm(2, 8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.norm2 = nn.LayerNorm(8 * 4 * 4)
        self.prototypes = nn.Embedding(4, 8 * 4 * 4)

    def forward(self, x):
        h1 = F.relu(self.norm1(self.conv1(x)))            # [N, 8, 8, 8]
        h2 = F.relu(self.conv2(F.max_pool2d(h1, 2)))      # [N, 16, 4, 4]
        h = F.max_pool2d(F.relu(h1 + self.up(h2)), 2)     # [N, 8, 4, 4]
        f = self.norm2(torch.flatten(h, 1))               # [N, 128]
        classes = torch.arange(4, device=f.device)
        return f @ self.prototypes(classes).t() / 4.0     # [N, 4]


def param_groups(model, weight_decay):
    decay = [p for n, p in model.named_parameters() if not n.endswith("bias")]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def evaluate(model, loader):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(DEVICE), y.to(DEVICE)
            out = model(x)
            total += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            n += len(y)
    model.train()
    return total / n, correct / n


def train_epoch(model, opt, loader, sched=None):
    losses = []
    for x, y in loader:
        x, y = x.to(DEVICE), y.to(DEVICE)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(loss.item())
    return float(np.mean(losses))


def main():
    torch.manual_seed(0)
    data = Quadrants(320, seed=1)
    train_set, val_set = random_split(data, [256, 64], generator=torch.Generator().manual_seed(2))
    sampler = RandomSampler(train_set, generator=torch.Generator().manual_seed(3))
    train_loader = DataLoader(train_set, batch_size=32, sampler=sampler, collate_fn=collate)
    val_loader = DataLoader(val_set, batch_size=32, collate_fn=collate, num_workers=2)

    model = Net().to(DEVICE)
    opt = torch.optim.SGD(param_groups(model, 1e-4), lr=0.05, momentum=0.9, nesterov=True)
    epochs = 3
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, epochs=epochs,
                                                steps_per_epoch=len(train_loader))
    history = []
    for _ in range(epochs):
        history.append(train_epoch(model, opt, train_loader, sched))
    before, _ = evaluate(model, val_loader)
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "epoch": epochs, "history": history}, CKPT)

    ckpt = torch.load(CKPT, map_location="cpu")
    model = Net()
    model.load_state_dict(ckpt["model"])
    model.to(DEVICE)
    after, _ = evaluate(model, val_loader)
    opt = torch.optim.Adam(param_groups(model, 1e-4), lr=3e-3)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    val = []
    for _ in range(ckpt["epoch"], ckpt["epoch"] + 3):
        history.append(train_epoch(model, opt, train_loader))
        val_loss, acc = evaluate(model, val_loader)
        plateau.step(val_loss)
        val.append(val_loss)
    print(json.dumps({"train": history, "val": val, "accuracy": acc, "before_save": before,
                      "after_load": after, "lrs": [g["lr"] for g in opt.param_groups]}))


if __name__ == "__main__":
    main()
