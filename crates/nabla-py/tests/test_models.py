"""The model zoo from Python: ``nb.nn.ResNet``, ``GPT2``, ``BERT`` and ``ViT`` are the Rust models of
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
        model.load_state_dict(nb.nn.hf_state("gpt2", state))
        logits = model(ref["ids"])
        want = ref["logits.f32"].numpy()
        np.testing.assert_allclose(logits.numpy(), want, atol=1e-5 * np.abs(want).max())


def test_bert_and_vit_load_hugging_face_weights_and_match_it():
    ref = nb.load_safetensors(fixture("bert_tiny_ref.safetensors"))
    bert = nb.nn.BERT(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=48, max_position_embeddings=16)
    # BertForSequenceClassification's file: `bert.` names and a classifier head, left out.
    bert.load_state_dict(nb.nn.hf_state("bert", nb.load_torch(fixture("bert_tiny.bin"))))
    bert.eval()
    hidden, pooled = bert(ref["ids"], attention_mask=ref["attention_mask"], token_type_ids=ref["token_type_ids"])
    for got, key in ((hidden, "hidden.f32"), (pooled, "pooled.f32")):
        want = ref[key].numpy()
        np.testing.assert_allclose(got.numpy(), want, atol=1e-5 * np.abs(want).max())
    ref = nb.load_safetensors(fixture("vit_tiny_ref.safetensors"))
    vit = nb.nn.ViT(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=48, num_labels=5)
    # torch.save under transformers 5's module names, mapped to the files' names.
    vit.load_state_dict(nb.nn.hf_state("vit", nb.load_torch(fixture("vit_tiny.bin"))))
    want = ref["logits.f32"].numpy()
    np.testing.assert_allclose(vit(ref["x"]).numpy(), want, atol=1e-5 * np.abs(want).max())
    with pytest.raises(ValueError, match="expected 'gpt2', 'bert' or 'vit'"):
        nb.nn.hf_state("t5", {})


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
