"""Neural-network functions with PyTorch's names, arguments and defaults (torch.nn.functional)."""
from .._C import (  # noqa: F401
    conv2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm, relu, leaky_relu, sigmoid,
    tanh, gelu, silu, elu, softplus, hardtanh, relu6, dropout, linear, softmax, log_softmax,
    cross_entropy, nll_loss, mse_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
)
from .._C import one_hot  # noqa: F401,E402
from .sparse import embedding  # noqa: F401,E402
