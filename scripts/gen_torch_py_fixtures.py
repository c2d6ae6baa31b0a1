"""Reference values for the Python package's nn tests, from PyTorch (run once; the tests need no torch).

Writes crates/nabla-py/tests/fixtures/torch_nn.json: a small CNN's initial weights, a fixed batch,
and for SGD (momentum, Nesterov, weight decay), Adam and AdamW the losses and final weights after
three steps; plus conv2d / max_pool2d / cross-entropy values and gradients. Also writes
torch_state.safetensors, a state dict saved by `safetensors.torch.save_file`.

    /tmp/jaxenv/bin/python scripts/gen_torch_py_fixtures.py
"""

import json
import os

import torch
from safetensors.torch import save_file

torch.manual_seed(0)
OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-py", "tests", "fixtures")


def model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(3 * 2 * 2, 4),
    ).double()


base = model()
init = {k: v.tolist() for k, v in base.state_dict().items()}
x = torch.randn(5, 1, 4, 4, dtype=torch.float64)
y = torch.tensor([0, 3, 1, 2, 3])

optimizers = {
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.1),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True, weight_decay=0.01),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
}
runs = {}
for name, make in optimizers.items():
    m = model()
    m.load_state_dict(base.state_dict())
    opt = make(m.parameters())
    losses = []
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    runs[name] = {"losses": losses, "final": {k: v.tolist() for k, v in m.state_dict().items()}}

xg = x.clone().requires_grad_()
w = torch.randn(2, 1, 3, 3, dtype=torch.float64, requires_grad=True)
conv = torch.nn.functional.conv2d(xg, w, stride=1, padding=1)
pool = torch.nn.functional.max_pool2d(conv, 2)
logits = pool.flatten(1)[:, :4]
loss = torch.nn.functional.cross_entropy(logits, y, label_smoothing=0.1)
loss.backward()
ops = {
    "w": w.tolist(),
    "conv": conv.tolist(),
    "pool": pool.tolist(),
    "loss": loss.item(),
    "grad_x": xg.grad.tolist(),
    "grad_w": w.grad.tolist(),
}

bn = torch.nn.BatchNorm2d(3).double()
with torch.no_grad():
    bn.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
    bn.bias.copy_(torch.tensor([0.0, -1.0, 1.0]))
xb = torch.randn(4, 3, 2, 2, dtype=torch.float64, requires_grad=True)
train_out = bn(xb)
(train_out * torch.arange(48.0, dtype=torch.float64).reshape(4, 3, 2, 2)).sum().backward()
bn.eval()
eval_out = bn(xb.detach())
batch_norm = {
    "x": xb.tolist(),
    "train_out": train_out.tolist(),
    "grad_x": xb.grad.tolist(),
    "running_mean": bn.running_mean.tolist(),
    "running_var": bn.running_var.tolist(),
    "eval_out": eval_out.tolist(),
}

def recurrent(layer, *inputs):
    """A layer's parameters, its outputs on `inputs` and the gradients of a weighted sum of them."""
    layer = layer.double()
    inputs = [t.double().requires_grad_() for t in inputs]
    out = layer(*inputs)
    flat = [out[0]] + (list(out[1]) if isinstance(out[1], tuple) else [out[1]])
    total = sum((t * torch.linspace(-1, 1, t.numel(), dtype=torch.float64).reshape(t.shape)).sum() for t in flat)
    total.backward()
    return {
        "params": {k: v.tolist() for k, v in layer.state_dict().items()},
        "inputs": [t.tolist() for t in inputs],
        "outputs": [t.tolist() for t in flat],
        "grads": {k: p.grad.tolist() for k, p in layer.named_parameters()},
        "input_grads": [t.grad.tolist() for t in inputs],
    }


layers = {
    "lstm": recurrent(torch.nn.LSTM(3, 4, num_layers=2), torch.randn(5, 2, 3)),
    "gru": recurrent(torch.nn.GRU(3, 4, batch_first=True), torch.randn(2, 5, 3)),
    "attention": recurrent(torch.nn.MultiheadAttention(8, 2), torch.randn(4, 2, 8), torch.randn(6, 2, 8), torch.randn(6, 2, 8)),
}

with open(os.path.join(OUT, "torch_nn.json"), "w") as f:
    json.dump({"init": init, "x": x.tolist(), "y": y.tolist(), "runs": runs, "ops": ops, "batch_norm": batch_norm, "layers": layers}, f)
save_file({k: v.float().contiguous() for k, v in base.state_dict().items()}, os.path.join(OUT, "torch_state.safetensors"))
print("wrote", OUT)
