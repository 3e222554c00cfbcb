"""Model utilities: gradient clipping and parameter vectors (clip_grad.py, as torch.nn.utils) and
fuse_for_inference (batch norm folded into the convolution before it)."""
from .. import _C
from .clip_grad import (  # noqa: F401
    clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters,
)
from .modules import Parameter


def _kind(module):
    cpp = getattr(module, "_cpp", None)
    return cpp.name() if cpp is not None else None


def _resync(module):
    # The C++ convolution may have gained a bias: its Python wrapper lists it too.
    for name, t in module._cpp.named_parameters(False):
        if name not in module._parameters:
            module._parameters[name] = Parameter._wrap(t)
    for name in list(module._parameters):
        if name not in dict(module._cpp.named_parameters(False)):
            del module._parameters[name]


def _fuse_tree(module, prefix, fused, skipped, undo):
    children = list(module._modules.items())
    for i, (name, child) in enumerate(children):
        if _kind(child) == "BatchNorm2d":
            prev = children[i - 1] if i > 0 else None
            if prev is None or _kind(prev[1]) != "Conv2d":
                skipped.append(f"{prefix}{name}: not registered right after a Conv2d")
                continue
            why, u = _C._fold_batch_norm(prev[1]._cpp, child._cpp)
            if why:
                skipped.append(f"{prefix}{name}: {why}")
                continue
            _resync(prev[1])
            undo.append((u, prev[1]))
            fused.append(f"{prefix}{prev[0]}+{name}")
        else:
            _fuse_tree(child, f"{prefix}{name}.", fused, skipped, undo)


def _fold_relus(module, prefix, relus, undo):
    # In each Sequential: Conv2d, [folded BatchNorm2d], ReLU -> the ReLU into the convolution.
    from .modules import Sequential
    children = list(module._modules.items())
    if isinstance(module, Sequential) or _kind(module) == "Sequential":
        for i, (name, child) in enumerate(children):
            if _kind(child) != "Conv2d":
                continue
            j = i + 1
            while j < len(children) and _kind(children[j][1]) == "BatchNorm2d" and \
                    _C._bn_folded(children[j][1]._cpp):
                j += 1
            if j < len(children) and _kind(children[j][1]) == "ReLU" and \
                    not _C._fold_relu(child._cpp, children[j][1]._cpp):
                undo.append((child._cpp, children[j][1]._cpp))
                relus.append(f"{prefix}{name}+{children[j][0]}")
    for name, child in children:
        if getattr(child, "_cpp", None) is None or child._modules:
            _fold_relus(child, f"{prefix}{name}.", relus, undo)


def fuse_for_inference(model, example=None):
    """Folds every BatchNorm2d into the Conv2d registered just before it in the same parent (as in
    nn.Sequential, or conv1/bn1 in a block), for inference: the convolution's weights and bias
    take the batch norm's effect and the batch norm becomes an identity (it refuses to run in
    training mode). The model must be in eval mode. With `example`, an input the model takes,
    the outputs before and after are compared; where they differ by more than 1e-4 relative the
    model is restored and ember.ValueError names the pairs. Then in each Sequential a ReLU right
    after a convolution moves into it (one cuDNN graph conv + bias + relu on cuda). Returns a
    dict: "fused" (the pairs, "conv1+bn1"), "skipped" (batch norms left alone, with the reason)
    and "relu" (the ReLUs moved, "0+2")."""
    if model.training:
        _C._raise("value", "fuse_for_inference: expected a model in eval mode (call eval() first: "
                           "the batch norms are folded with their running statistics)")
    from .. import no_grad
    fused, skipped, undo = [], [], []
    with no_grad():
        before = model(example) if example is not None else None
        _fuse_tree(model, "", fused, skipped, undo)
        relus, relu_undo = [], []
        _fold_relus(model, "", relus, relu_undo)
        if before is not None:
            after = model(example)
            diff = float((after - before).abs().max()) / max(float(before.abs().max()), 1e-300)
            if diff > _C._fuse_tolerance:
                for u, conv in undo:
                    u.restore()
                    _resync(conv)
                for conv, relu in relu_undo:
                    _C._unfold_relu(conv, relu)
                _C._raise("value", f"fuse_for_inference: the fused model's output differs from "
                                   f"the model's by {diff:g} (relative) on the example, so some "
                                   "batch norm does not normalise the convolution registered "
                                   "before it; the model is left as it was (pairs tried: "
                                   f"{', '.join(fused)})")
    return {"fused": fused, "skipped": skipped, "relu": relus}
