"""Writes the model zoo's test fixtures (crates/nabla-models/tests/fixtures) from the reference
libraries themselves: tiny torchvision ResNets (torchvision's own blocks and forward, with narrower
stages than the published 64 to 512 so the files stay small) and a tiny Hugging Face GPT-2, with
random weights, inputs, and their logits and every parameter's gradient in float32 and float64;
a tiny BERT (`BertModel`, with a padding mask and two segments) and a tiny ViT
(`ViTForImageClassification`) likewise.

    pip install torch torchvision transformers safetensors
    python scripts/gen_model_zoo_fixtures.py

Files, per model:
- <model>.pt / .safetensors: the weights as the library saves them (torch.save of the state dict for
  torchvision; save_pretrained's model.safetensors and torch.save's pytorch_model.bin for GPT-2, BERT
  and ViT; BERT's .bin is that of `BertForSequenceClassification`, with the `bert.` prefix and a
  classifier head).
- <model>_ref.safetensors: the input, then `logits.f32`, `logits.f64` (and, for ResNets,
  `eval_logits.f32`: the logits in evaluation mode, from the running statistics after the training
  step), and `grad.f32.<name>` / `grad.f64.<name>` for every parameter of the cross-entropy loss.
"""

import os

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-models", "tests", "fixtures")


class NarrowResNet(ResNet):
    """torchvision's ResNet with `base` channels in the first stage instead of 64 (torchvision fixes
    64); the blocks, `_make_layer` and the forward pass are torchvision's."""

    def __init__(self, block, layers, num_classes, base):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = base, 1, 1, 64
        self.conv1 = nn.Conv2d(3, base, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, base, layers[0])
        self.layer2 = self._make_layer(block, 2 * base, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 4 * base, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 8 * base, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * base * block.expansion, num_classes)


def grads(model, loss):
    names = [n for n, _ in model.named_parameters()]
    gs = torch.autograd.grad(loss, [p for _, p in model.named_parameters()])
    return dict(zip(names, gs))


def resnet(name, block, layers, base):
    torch.manual_seed(0)
    model = NarrowResNet(block, layers, num_classes=5, base=base)
    with torch.no_grad():  # batch norm's affine parameters away from their 1/0 start
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    torch.save(model.state_dict(), os.path.join(OUT, f"{name}.pt"))
    x = torch.randn(4, 3, 32, 32)
    labels = torch.tensor([0, 3, 1, 4])
    ref = {"x": x, "labels": labels}
    for dtype, tag in [(torch.float32, "f32"), (torch.float64, "f64")]:
        m = NarrowResNet(block, layers, num_classes=5, base=base).to(dtype)
        m.load_state_dict(torch.load(os.path.join(OUT, f"{name}.pt")))
        m.train()
        logits = m(x.to(dtype))
        loss = F.cross_entropy(logits, labels)
        ref[f"logits.{tag}"] = logits.detach()
        for n, g in grads(m, loss).items():
            ref[f"grad.{tag}.{n}"] = g
        if tag == "f32":
            m.eval()
            ref["eval_logits.f32"] = m(x).detach()
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(OUT, f"{name}_ref.safetensors"))


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0, activation_function="gelu_new", bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():  # biases and norms away from their 0/1 start
        for n, p in model.named_parameters():
            if n.endswith("bias") or "ln_" in n:
                p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(os.path.join(OUT, "gpt2_tiny_hf"), safe_serialization=True)
    os.replace(os.path.join(OUT, "gpt2_tiny_hf", "model.safetensors"), os.path.join(OUT, "gpt2_tiny.safetensors"))
    for leftover in os.listdir(os.path.join(OUT, "gpt2_tiny_hf")):
        os.remove(os.path.join(OUT, "gpt2_tiny_hf", leftover))
    os.rmdir(os.path.join(OUT, "gpt2_tiny_hf"))
    torch.save(model.state_dict(), os.path.join(OUT, "gpt2_tiny.bin"))
    ids = torch.randint(0, 64, (2, 12))
    ref = {"ids": ids}
    for dtype, tag in [(torch.float32, "f32"), (torch.float64, "f64")]:
        m = GPT2LMHeadModel(config).to(dtype)
        m.load_state_dict(model.state_dict())
        m.eval()  # no dropout (the rates are 0 anyway)
        logits = m(ids).logits
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, 64), ids[:, 1:].reshape(-1))
        ref[f"logits.{tag}"] = logits.detach()
        for n, g in grads(m, loss).items():
            ref[f"grad.{tag}.{n.removeprefix('transformer.')}"] = g
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(OUT, "gpt2_tiny_ref.safetensors"))


def perturb_biases_and_norms(model):
    """Moves biases and norms away from their 0/1 start, so a mix-up of the two shows."""
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("bias") or "norm" in n.lower() or "ln_" in n:
                p.add_(0.1 * torch.randn_like(p))


def save_hf(model, name):
    """save_pretrained's model.safetensors as <name>.safetensors (the names `transformers` writes)."""
    tmp = os.path.join(OUT, f"{name}_hf")
    model.save_pretrained(tmp, safe_serialization=True)
    os.replace(os.path.join(tmp, "model.safetensors"), os.path.join(OUT, f"{name}.safetensors"))
    for leftover in os.listdir(tmp):
        os.remove(os.path.join(tmp, leftover))
    os.rmdir(tmp)


def bert():
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=48, max_position_embeddings=16, type_vocab_size=2,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0)
    torch.manual_seed(1)
    model = BertModel(config)
    perturb_biases_and_norms(model)
    save_hf(model, "bert_tiny")
    task = BertForSequenceClassification(config)
    task.bert.load_state_dict(model.state_dict())
    torch.save(task.state_dict(), os.path.join(OUT, "bert_tiny.bin"))
    ids = torch.randint(1, 64, (2, 10))
    ids[1, 7:] = 0  # padding
    mask = (ids != 0).long()
    types = torch.zeros_like(ids)
    types[:, 5:] = 1
    weights_h = torch.randn(2, 10, 32, dtype=torch.float64)
    weights_p = torch.randn(2, 32, dtype=torch.float64)
    ref = {"ids": ids, "attention_mask": mask, "token_type_ids": types, "weights_h": weights_h,
           "weights_p": weights_p}
    for dtype, tag in [(torch.float32, "f32"), (torch.float64, "f64")]:
        m = BertModel(config).to(dtype)
        m.load_state_dict(model.state_dict())
        m.eval()
        out = m(input_ids=ids, attention_mask=mask, token_type_ids=types)
        h, pooled = out.last_hidden_state, out.pooler_output
        loss = (h * weights_h.to(dtype)).sum() + (pooled * weights_p.to(dtype)).sum()
        ref[f"hidden.{tag}"] = h.detach()
        ref[f"pooled.{tag}"] = pooled.detach()
        for n, g in grads(m, loss).items():
            ref[f"grad.{tag}.{n}"] = g
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(OUT, "bert_tiny_ref.safetensors"))


def vit():
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=48, num_labels=5, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
    torch.manual_seed(2)
    model = ViTForImageClassification(config)
    perturb_biases_and_norms(model)
    save_hf(model, "vit_tiny")
    torch.save(model.state_dict(), os.path.join(OUT, "vit_tiny.bin"))
    # transformers 5 names the modules `vit.layers.0.attention.q_proj` but writes files with the
    # published checkpoints' names (`vit.encoder.layer.0.attention.attention.query`), which the zoo
    # uses: each parameter's file name is found by its (random, so unique) values.
    saved = load_file(os.path.join(OUT, "vit_tiny.safetensors"))
    names = {n: next(k for k, v in saved.items() if v.shape == p.shape and torch.equal(v, p.detach()))
             for n, p in model.named_parameters()}
    assert len(set(names.values())) == len(names)
    x = torch.randn(3, 3, 16, 16)
    labels = torch.tensor([4, 0, 2])
    ref = {"x": x, "labels": labels}
    for dtype, tag in [(torch.float32, "f32"), (torch.float64, "f64")]:
        m = ViTForImageClassification(config).to(dtype)
        m.load_state_dict(model.state_dict())
        m.eval()
        logits = m(pixel_values=x.to(dtype)).logits
        loss = F.cross_entropy(logits, labels)
        ref[f"logits.{tag}"] = logits.detach()
        for n, g in grads(m, loss).items():
            ref[f"grad.{tag}.{names[n]}"] = g
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(OUT, "vit_tiny_ref.safetensors"))


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.backends.cudnn.deterministic = True
    resnet("resnet_basic", BasicBlock, [2, 1, 1, 1], base=4)
    resnet("resnet_bottleneck", Bottleneck, [1, 1, 2, 1], base=2)
    gpt2()
    bert()
    vit()
    print("wrote", OUT)


if __name__ == "__main__":
    main()
