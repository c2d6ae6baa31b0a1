"""The model zoo from Python: ``nb.nn.ResNet`` and ``nb.nn.GPT2`` are the Rust models of
``nabla::models`` (torchvision's and Hugging Face's names), loaded from the files those libraries
write (``nb.load_torch``, ``nb.load_safetensors``) and compared with their logits (the fixtures of
crates/nabla-models, written by scripts/gen_model_zoo_fixtures.py)."""

import os

import numpy as np
import pytest

import nabla_rs as nb

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "nabla-models", "tests", "fixtures")


def fixture(name):
    return os.path.join(FIXTURES, name)


def test_resnet_loads_torchvision_weights_and_matches_its_logits():
    ref = nb.load_safetensors(fixture("resnet_bottleneck_ref.safetensors"))
    model = nb.nn.ResNet("resnet50", num_classes=5, base_width=2, layers=[1, 1, 2, 1])
    model.load_state_dict(nb.load_torch(fixture("resnet_bottleneck.pt")))
    logits = model(ref["x"])
    want = ref["logits.f32"].numpy()
    np.testing.assert_allclose(logits.numpy(), want, atol=1e-4 * np.abs(want).max())
    names = [n for n, _ in model.named_parameters()]
    assert names[:3] == ["conv1.weight", "bn1.weight", "bn1.bias"]
    assert "layer2.0.downsample.0.weight" in names


def test_gpt2_loads_hugging_face_weights_and_matches_its_logits():
    ref = nb.load_safetensors(fixture("gpt2_tiny_ref.safetensors"))
    model = nb.nn.GPT2(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=4)
    for state in (nb.load_safetensors(fixture("gpt2_tiny.safetensors")), nb.load_torch(fixture("gpt2_tiny.bin"))):
        model.load_state_dict(nb.nn.gpt2_state(state))
        logits = model(ref["ids"])
        want = ref["logits.f32"].numpy()
        np.testing.assert_allclose(logits.numpy(), want, atol=1e-5 * np.abs(want).max())


def test_resnet18_has_torchvisions_size_and_bad_arguments_are_refused():
    model = nb.nn.ResNet("resnet18", num_classes=1000)
    assert sum(p.numel() for p in model.parameters()) == 11_689_512
    with pytest.raises(ValueError, match="arch"):
        nb.nn.ResNet("resnet19")
    with pytest.raises(ValueError, match="n_head must divide n_embd"):
        nb.nn.GPT2(n_embd=30, n_head=4, n_layer=1, vocab_size=8, n_positions=4)
    with pytest.raises(Exception, match="refusing the global"):
        nb.load_torch(os.path.join(os.path.dirname(__file__), "..", "..", "nabla-nn", "tests", "fixtures",
                                   "torch_files", "malicious.pt"))
