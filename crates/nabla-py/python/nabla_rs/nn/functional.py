"""``nabla_rs.nn.functional``: PyTorch's functional layers and losses on nabla's Rust kernels.

Every function takes eager or traced tensors, so it works under ``grad``, ``vmap`` and ``jit``.
"""

from .._nabla import nn as _rust

conv2d = _rust.conv2d
max_pool2d = _rust.max_pool2d
linear = _rust.linear
relu = _rust.relu
gelu = _rust.gelu
silu = _rust.silu
leaky_relu = _rust.leaky_relu
elu = _rust.elu
softplus = _rust.softplus
softmax = _rust.softmax
log_softmax = _rust.log_softmax
layer_norm = _rust.layer_norm
dropout = _rust.dropout
scaled_dot_product_attention = _rust.scaled_dot_product_attention
cross_entropy = _rust.cross_entropy
nll_loss = _rust.nll_loss
mse_loss = _rust.mse_loss
l1_loss = _rust.l1_loss
binary_cross_entropy_with_logits = _rust.binary_cross_entropy_with_logits
binary_cross_entropy = _rust.binary_cross_entropy
smooth_l1_loss = _rust.smooth_l1_loss
huber_loss = _rust.huber_loss
kl_div = _rust.kl_div
cosine_embedding_loss = _rust.cosine_embedding_loss
margin_ranking_loss = _rust.margin_ranking_loss
triplet_margin_loss = _rust.triplet_margin_loss


def sigmoid(x):
    """``1 / (1 + e^-x)``."""
    from .. import _nabla

    return _nabla.sigmoid(x)


def tanh(x):
    """Hyperbolic tangent."""
    from .. import _nabla

    return _nabla.tanh(x)
