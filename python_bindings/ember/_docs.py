"""Docstrings of the main functions and layers, as PyTorch words them (what help() shows).

The functions are C++ bindings wrapped at import (ember/_argcheck.py); their docstrings are set on
the wrappers here. A layer class that has a docstring of its own keeps it."""

FUNCTIONS = {
    "conv2d": r"""conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor

Applies a 2D convolution over an input image composed of several input planes, through Ember's
algorithm selector (ember.backends.conv: heuristic, benchmark, deterministic or forced).

Args:
    input: input tensor of shape (minibatch, in_channels, iH, iW)
    weight: filters of shape (out_channels, in_channels / groups, kH, kW)
    bias: optional bias tensor of shape (out_channels). Default: None
    stride: the stride of the convolving kernel. Can be a single number or a tuple (sH, sW).
        Default: 1
    padding: implicit zero padding on both sides of the input. Can be a single number or a tuple
        (padH, padW). Default: 0
    dilation: the spacing between kernel elements. Can be a single number or a tuple (dH, dW).
        Default: 1
    groups: split input into groups, in_channels should be divisible by the number of groups.
        Default: 1
""",
    "linear": r"""linear(input, weight, bias=None) -> Tensor

Applies a linear transformation to the incoming data: y = x A^T + b.

Args:
    input: (*, in_features)
    weight: (out_features, in_features)
    bias: (out_features) or None. Default: None
""",
    "max_pool2d": r"""max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)

Applies a 2D max pooling over an input signal composed of several input planes.

Args:
    kernel_size: size of the pooling region. Can be a single number or a tuple (kH, kW)
    stride: stride of the pooling operation. Default: kernel_size
    padding: implicit negative-infinity padding on both sides. Default: 0
    dilation: the stride between elements within a sliding window. Default: 1
    ceil_mode: when True, use ceil instead of floor to compute the output shape. Default: False
    return_indices: also return the argmax indices. Default: False
""",
    "avg_pool2d": r"""avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None) -> Tensor

Applies 2D average-pooling operation in kH x kW regions by step size sH x sW steps.
""",
    "adaptive_avg_pool2d": r"""adaptive_avg_pool2d(input, output_size) -> Tensor

Applies a 2D adaptive average pooling over an input signal composed of several input planes:
the output is output_size (an int or a pair) whatever the input size.
""",
    "batch_norm": r"""batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05) -> Tensor

Applies Batch Normalization for each channel across a batch of data; in training mode the
running statistics are updated with `momentum`.
""",
    "relu": "relu(input) -> Tensor\n\nApplies the rectified linear unit function element-wise: max(0, x).\n",
    "sigmoid": "sigmoid(input) -> Tensor\n\nApplies 1 / (1 + exp(-x)) element-wise.\n",
    "tanh": "tanh(input) -> Tensor\n\nApplies the hyperbolic tangent element-wise.\n",
    "gelu": r"""gelu(input, approximate='none') -> Tensor

Applies x * Phi(x), Phi the Gaussian CDF; approximate='tanh' uses the tanh approximation.
""",
    "dropout": r"""dropout(input, p=0.5, training=True) -> Tensor

During training, zeroes each element with probability p (Bernoulli, from the default generator:
the same mask on every device for the same seed) and scales the rest by 1 / (1 - p).
""",
    "softmax": r"""softmax(input, dim, dtype=None) -> Tensor

Applies exp(x_i) / sum_j exp(x_j) along `dim`; with dtype the input is cast to it first.
""",
    "log_softmax": r"""log_softmax(input, dim, dtype=None) -> Tensor

Applies log(softmax(x)) along `dim`, computed stably in one pass.
""",
    "cross_entropy": r"""cross_entropy(input, target, weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0) -> Tensor

The cross entropy loss between logits and class indices (log_softmax and nll_loss fused).

Args:
    input: logits of shape (N, C) or (N, C, d1, ...)
    target: class indices of shape (N) or (N, d1, ...), int64
    weight: a manual rescaling weight per class, of size C. Default: None
    ignore_index: a target value that is ignored. Default: -100
    reduction: 'none' | 'mean' | 'sum'. Default: 'mean'
    label_smoothing: amount of smoothing in [0, 1]. Default: 0.0
""",
    "nll_loss": r"""nll_loss(input, target, weight=None, ignore_index=-100, reduction='mean') -> Tensor

The negative log likelihood loss of log-probabilities and class indices.
""",
    "mse_loss": r"""mse_loss(input, target, reduction='mean') -> Tensor

The mean squared error between input and target, element-wise.
""",
    "matmul": r"""matmul(input, other) -> Tensor

Matrix product of two tensors, with NumPy's rules for 1-D operands and broadcast batches.
""",
    "cat": "cat(tensors, dim=0) -> Tensor\n\nConcatenates tensors along an existing dim.\n",
    "stack": "stack(tensors, dim=0) -> Tensor\n\nStacks tensors of one shape along a new dim.\n",
    "tensor": r"""tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor

Constructs a tensor (a copy) from data: a number, a nested list, a NumPy array or a tensor.
""",
}

CLASSES = {
    "Linear": r"""Linear(in_features, out_features, bias=True)

Applies a linear transformation to the incoming data: y = x A^T + b.

Args:
    in_features: size of each input sample
    out_features: size of each output sample
    bias: if False, the layer learns no additive bias. Default: True

Shape:
    Input (*, in_features); output (*, out_features).

Attributes:
    weight: (out_features, in_features), initialised U(-sqrt(k), sqrt(k)), k = 1 / in_features
    bias: (out_features), initialised likewise
""",
    "Conv2d": r"""Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True)

Applies a 2D convolution over an input signal composed of several input planes, through Ember's
algorithm selector (ember.backends.conv, ember.backends.cudnn).

Args:
    in_channels: number of channels in the input image
    out_channels: number of channels produced by the convolution
    kernel_size: size of the convolving kernel (square: an int, or a pair of equal ints)
    stride: stride of the convolution. Default: 1
    padding: zero padding added to both sides of the input. Default: 0
    dilation: spacing between kernel elements. Default: 1
    groups: number of blocked connections from input channels to output channels. Default: 1
    bias: if True, adds a learnable bias to the output. Default: True

Shape:
    Input (N, C_in, H_in, W_in); output (N, C_out, H_out, W_out) with
    H_out = floor((H_in + 2 * padding - dilation * (kernel_size - 1) - 1) / stride + 1).
""",
    "BatchNorm2d": r"""BatchNorm2d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)

Applies Batch Normalization over a 4D input (N, C, H, W), per channel.
""",
    "MaxPool2d": r"""MaxPool2d(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)

Applies a 2D max pooling over an input signal composed of several input planes.
""",
    "AvgPool2d": r"""AvgPool2d(kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True)

Applies a 2D average pooling over an input signal composed of several input planes.
""",
    "AdaptiveAvgPool2d": r"""AdaptiveAvgPool2d(output_size)

Applies a 2D adaptive average pooling: the output is output_size whatever the input size.
""",
    "Dropout": r"""Dropout(p=0.5)

During training, zeroes each element with probability p and scales the rest by 1 / (1 - p);
the identity in eval mode.
""",
    "ReLU": "ReLU()\n\nApplies the rectified linear unit function element-wise: max(0, x).\n",
    "Flatten": "Flatten(start_dim=1, end_dim=-1)\n\nFlattens a contiguous range of dims.\n",
    "CrossEntropyLoss": r"""CrossEntropyLoss(weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0)

The cross entropy loss between logits and class indices (see ember.nn.functional.cross_entropy).
""",
    "MSELoss": "MSELoss(reduction='mean')\n\nThe mean squared error between input and target.\n",
}


def apply(namespace, nn):
    """Sets the docstrings above on ember's functions (and through them nn.functional's, the
    same objects) and on the nn layers without one of their own."""
    for name, doc in FUNCTIONS.items():
        fn = namespace.get(name)
        if fn is not None:
            fn.__doc__ = doc
    for name, doc in CLASSES.items():
        cls = getattr(nn, name, None)
        if cls is not None and not cls.__dict__.get("__doc__"):
            cls.__doc__ = doc
