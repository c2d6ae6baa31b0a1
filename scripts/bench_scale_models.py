"""The models of scripts/bench_scale.py in PyTorch and JAX, with the sizes, fixed batches and work
counts they share with crates/nabla/examples/bench_scale.rs (which builds the same models in nabla,
with the same parameter names, so that one safetensors file of weights loads in every framework). The
ResNets are torchvision's in PyTorch and the model zoo's in nabla (torchvision's names); the script
needs torchvision.

- gpt2: GPT-2 small (see bench_scale.py), made of nn.TransformerEncoderLayer in PyTorch;
- bert: a BERT-base-sized encoder (see bench_scale.py), made of post-norm nn.TransformerEncoderLayer;
- resnet18: ResNet-18 in the CIFAR layout: a 3x3 stem of 64 channels, no max-pool, four stages of two
  residual blocks (64, 128, 256, 512 channels, stride 2 from the second stage, a 1x1 convolution with
  batch norm on the shortcut where the size changes), global average pooling, 10 classes;
- resnet50: ResNet-50 in ImageNet's layout: a 7x7 stride-2 stem, a 3x3 stride-2 max-pool, stages of 3,
  4, 6 and 3 bottleneck blocks (stride on the 3x3 convolution), 1,000 classes, batch 8 of 224x224.
"""

from __future__ import annotations

VOCAB, CONTEXT, WIDTH, LAYERS, HEADS, BATCH = 50257, 256, 768, 12, 12, 4
BERT_VOCAB, BERT_POSITIONS, BERT_SEQ, BERT_BATCH = 30522, 512, 128, 8
STAGES = (64, 128, 256, 512)
# The ResNets: blocks per stage, bottleneck blocks, ImageNet's stem and max-pool, classes, batch, size.
RESNETS = {
    "resnet18": {"depths": (2, 2, 2, 2), "bottleneck": False, "imagenet": False, "classes": 10, "images": 32, "size": 32},
    "resnet50": {"depths": (3, 4, 6, 3), "bottleneck": True, "imagenet": True, "classes": 1000, "images": 8, "size": 224},
}


def blocks(workload: str = "resnet18"):
    """(input channels, width, stride) of the ResNet's blocks (a bottleneck block puts out 4 x width)."""
    spec = RESNETS[workload]
    out, cin = [], 64
    for stage, width in enumerate(STAGES):
        for i in range(spec["depths"][stage]):
            out.append((cin, width, 2 if stage > 0 and i == 0 else 1))
            cin = 4 * width if spec["bottleneck"] else width
    return out


def flops(workload: str) -> float:
    """Floating-point operations of one training step: 3 x the forward's, 2 per multiply-add (GEMMs,
    convolutions, and attention's two products over the full context, as computed)."""
    if workload in ("gpt2", "gpt2-hf", "bert"):
        vocab, seq, batch = (BERT_VOCAB, BERT_SEQ, BERT_BATCH) if workload == "bert" else (VOCAB, CONTEXT, BATCH)
        per_layer = 2 * 12 * WIDTH * WIDTH + 2 * 2 * seq * WIDTH
        return 3 * batch * seq * (LAYERS * per_layer + 2 * WIDTH * vocab)
    spec = RESNETS[workload]
    size = spec["size"] // (2 if spec["imagenet"] else 1)
    macs = size * size * 64 * 3 * (49 if spec["imagenet"] else 9)  # the stem
    size //= 2 if spec["imagenet"] else 1  # the max-pool
    for cin, width, stride in blocks(workload):
        if spec["bottleneck"]:
            cout = 4 * width
            macs += size * size * cin * width  # 1x1 down, at the input's size
            size //= stride
            macs += size * size * width * (width * 9 + cout)
        else:
            cout = width
            size //= stride
            macs += size * size * cout * (cin * 9 + cout * 9)
        macs += size * size * cout * cin if stride != 1 or cin != cout else 0
    macs += STAGES[-1] * (4 if spec["bottleneck"] else 1) * spec["classes"]
    return 3 * 2 * spec["images"] * macs


def token(i: int, j: int, vocab: int = VOCAB) -> int:
    """Token j of sequence i of the fixed batch over `vocab` ids (as bench_scale.rs makes it)."""
    return (7919 * i + 104729 * j + 13) % vocab


def inputs(workload: str):
    """The fixed batch as nested lists: (ids [4, 256], targets [1024]) or (images [32, 3, 32, 32],
    labels [32])."""
    if workload in ("gpt2", "gpt2-hf"):
        ids = [[token(i, j) for j in range(CONTEXT)] for i in range(BATCH)]
        return ids, [token(i, j + 1) for i in range(BATCH) for j in range(CONTEXT)]
    if workload == "bert":
        # The targets are ids of other sequences, as a masked-language-model head predicts ids.
        ids = [[token(i, j, BERT_VOCAB) for j in range(BERT_SEQ)] for i in range(BERT_BATCH)]
        return ids, [token(i + BERT_BATCH, j, BERT_VOCAB) for i in range(BERT_BATCH) for j in range(BERT_SEQ)]
    spec = RESNETS[workload]
    images, size = spec["images"], spec["size"]
    pixel = lambda n, c, h, w: ((n * 131 + c * 31 + h * 7 + w * 3) % 17) / 17.0 - 0.5  # noqa: E731
    x = [[[[pixel(n, c, h, w) for w in range(size)] for h in range(size)] for c in range(3)] for n in range(images)]
    return x, [n % 10 for n in range(images)]


def torch_model(workload: str, context: int = CONTEXT):
    """The PyTorch model; GPT-2's position table has `context` positions (training uses CONTEXT)."""
    import torch
    from torch import nn

    class Gpt2(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, WIDTH)
            self.pos = nn.Embedding(context, WIDTH)
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True) for _ in range(LAYERS))
            self.norm = nn.LayerNorm(WIDTH)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(CONTEXT), persistent=False)

        def forward(self, ids):
            x = self.tok(ids) + self.pos(torch.arange(CONTEXT))
            for layer in self.layers:
                x = layer(x, src_mask=self.mask, is_causal=True)
            return self.norm(x).reshape(-1, WIDTH) @ self.tok.weight.t()

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(BERT_VOCAB, WIDTH)
            self.pos = nn.Embedding(BERT_POSITIONS, WIDTH)
            self.emb_norm = nn.LayerNorm(WIDTH)
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=False) for _ in range(LAYERS))

        def forward(self, ids):
            x = self.emb_norm(self.tok(ids) + self.pos(torch.arange(BERT_SEQ)))
            for layer in self.layers:
                x = layer(x)
            return x.reshape(-1, WIDTH) @ self.tok.weight.t()

    if workload in RESNETS:
        return torch_resnet(workload)
    if workload == "gpt2-hf":
        return hf_gpt2()
    return {"gpt2": Gpt2, "bert": Bert}[workload]()


def hf_gpt2():
    """Hugging Face's GPT2LMHeadModel at GPT-2 small's published configuration (1,024 positions,
    the tanh GELU, no dropout), whose names and layout nabla's model zoo shares; called on ids it
    returns the logits of every position as rows."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_positions=1024, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0)

    class Gpt2Rows(GPT2LMHeadModel):
        def forward(self, ids):
            return super().forward(input_ids=ids).logits.reshape(-1, VOCAB)

    return Gpt2Rows(config)


def torch_resnet(workload: str):
    """torchvision's ResNet (the names nabla's model zoo shares); in the CIFAR layout its stem is a
    3x3 stride-1 convolution and its max-pool is left out."""
    import torchvision
    from torch import nn

    spec = RESNETS[workload]
    model = getattr(torchvision.models, workload)(num_classes=spec["classes"])
    if not spec["imagenet"]:
        model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        model.maxpool = nn.Identity()
    return model


def block_prefixes(workload: str) -> list[str]:
    """torchvision's names of the blocks, in order: `layer1.0.`, `layer1.1.`, ..."""
    return [f"layer{s + 1}.{j}." for s, depth in enumerate(RESNETS[workload]["depths"]) for j in range(depth)]


def write_weights(workload: str, path: str, context: int = CONTEXT) -> None:
    """Draws the model's weights once (seed 0; PyTorch's default initialisation, GPT-2's for its
    embeddings: normal with standard deviation 0.02 for tokens, 0.01 for positions) and writes them."""
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(0)
    model = torch_model(workload, context)
    if workload == "gpt2-hf":
        # transformers' own initialisation; the head is tied to wte, so the file leaves it out.
        state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
        save_file({k: v.contiguous() for k, v in state.items()}, path)
        return
    if workload in ("gpt2", "bert"):
        with torch.no_grad():
            model.tok.weight.normal_(0.0, 0.02)
            model.pos.weight.normal_(0.0, 0.01)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path)


def torch_optimizer(workload: str, model):
    import torch

    if workload in ("gpt2", "gpt2-hf", "bert"):
        return torch.optim.AdamW(model.parameters())
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def sub(p: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}


def jax_transformer_loss(p, ids, targets, gpt: bool):
    """GPT-2's loss (pre-norm, causal, final norm) or BERT's (embedding norm, post-norm, bidirectional)."""
    import jax
    import jax.numpy as jnp

    seq = ids.shape[1]
    mask = jnp.tril(jnp.ones((seq, seq), bool)) if gpt else jnp.ones((seq, seq), bool)

    def layer_norm(x, q):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * q["weight"] + q["bias"]

    def attention(x, q):
        n, t, _ = x.shape
        qkv = x @ q["in_proj_weight"].T + q["in_proj_bias"]
        qh, kh, vh = (a.reshape(n, t, HEADS, WIDTH // HEADS).transpose(0, 2, 1, 3) for a in jnp.split(qkv, 3, -1))
        s = jnp.where(mask, qh @ kh.transpose(0, 1, 3, 2) / jnp.sqrt(WIDTH // HEADS), -jnp.inf)
        o = (jax.nn.softmax(s, -1) @ vh).transpose(0, 2, 1, 3).reshape(n, t, WIDTH)
        return o @ q["out_proj.weight"].T + q["out_proj.bias"]

    def feed_forward(x, lp):
        h = jax.nn.gelu(x @ lp["linear1.weight"].T + lp["linear1.bias"], approximate=False)
        return h @ lp["linear2.weight"].T + lp["linear2.bias"]

    x = p["tok.weight"][ids] + p["pos.weight"][jnp.arange(seq)]
    if not gpt:
        x = layer_norm(x, sub(p, "emb_norm."))
    for i in range(LAYERS):
        lp = sub(p, f"layers.{i}.")
        if gpt:
            x = x + attention(layer_norm(x, sub(lp, "norm1.")), sub(lp, "self_attn."))
            x = x + feed_forward(layer_norm(x, sub(lp, "norm2.")), lp)
        else:
            x = layer_norm(x + attention(x, sub(lp, "self_attn.")), sub(lp, "norm1."))
            x = layer_norm(x + feed_forward(x, lp), sub(lp, "norm2."))
    if gpt:
        x = layer_norm(x, sub(p, "norm."))
    logits = x.reshape(-1, WIDTH) @ p["tok.weight"].T
    return -jnp.take_along_axis(jax.nn.log_softmax(logits, -1), targets[:, None], 1).mean()


def jax_loss(workload: str):
    """The training loss of `workload` as a function of (params, inputs, targets)."""
    if workload in RESNETS:
        return lambda p, x, y: jax_resnet_loss(p, x, y, workload)
    return lambda p, x, y: jax_transformer_loss(p, x, y, gpt=workload == "gpt2")


def jax_resnet_loss(p, x, labels, workload: str):
    """The loss in training mode (batch statistics; the running statistics are not updated, which
    changes no gradient)."""
    import jax
    import jax.numpy as jnp

    spec = RESNETS[workload]

    def conv(h, w, stride):
        k = w.shape[-1] // 2
        return jax.lax.conv_general_dilated(h, w, (stride, stride), [(k, k), (k, k)],
                                            dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def bn(h, q):
        mu = h.mean((0, 2, 3), keepdims=True)
        var = ((h - mu) ** 2).mean((0, 2, 3), keepdims=True)
        return (h - mu) / jnp.sqrt(var + 1e-5) * q["weight"][:, None, None] + q["bias"][:, None, None]

    h = jax.nn.relu(bn(conv(x, p["conv1.weight"], 2 if spec["imagenet"] else 1), sub(p, "bn1.")))
    if spec["imagenet"]:
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 3, 3), (1, 1, 2, 2), [(0, 0), (0, 0), (1, 1), (1, 1)])
    for prefix, (_, _, stride) in zip(block_prefixes(workload), blocks(workload)):
        q = sub(p, prefix)
        s1, s2 = (1, stride) if spec["bottleneck"] else (stride, 1)
        y = jax.nn.relu(bn(conv(h, q["conv1.weight"], s1), sub(q, "bn1.")))
        y = bn(conv(y, q["conv2.weight"], s2), sub(q, "bn2."))
        if spec["bottleneck"]:
            y = bn(conv(jax.nn.relu(y), q["conv3.weight"], 1), sub(q, "bn3."))
        if "downsample.0.weight" in q:
            h = bn(conv(h, q["downsample.0.weight"], stride), sub(q, "downsample.1."))
        h = jax.nn.relu(y + h)
    logits = h.mean((2, 3)) @ p["fc.weight"].T + p["fc.bias"]
    return -jnp.take_along_axis(jax.nn.log_softmax(logits, -1), labels[:, None], 1).mean()


def jax_update(workload: str):
    """The optimizer's step as PyTorch computes it: AdamW (defaults) for gpt2, SGD with momentum for
    resnet18. Returns (init(params) -> state, update(params, grads, state, t) -> (params, state))."""
    import jax
    import jax.numpy as jnp

    zeros = lambda p: jax.tree.map(jnp.zeros_like, p)  # noqa: E731
    if workload in ("gpt2", "bert"):
        lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 0.01

        def update(p, g, state, t):
            m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state[0], g)
            v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state[1], g)
            step = lambda p, m, v: p * (1 - lr * wd) - lr * (m / (1 - b1**t)) / (jnp.sqrt(v / (1 - b2**t)) + eps)  # noqa: E731
            return jax.tree.map(step, p, m, v), (m, v)

        return lambda p: (zeros(p), zeros(p)), update

    def sgd(p, g, state, t):
        buf = jax.tree.map(lambda b, g: jnp.where(t == 1, g, 0.9 * b + g), state, g)
        return jax.tree.map(lambda p, b: p - 0.01 * b, p, buf), buf

    return zeros, sgd
