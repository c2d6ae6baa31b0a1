"""``nb.onnx.export``: modules and functions written as ONNX models that ONNX Runtime runs with
nabla's results, a dynamic batch axis, evaluation mode during the export, and the refusals."""

import numpy as np
import onnxruntime as ort
import pytest

import nabla_rs as nb


def run_onnx(path, feeds):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def close(got, want):
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * max(1.0, float(np.abs(want).max())))


def test_a_module_runs_in_onnx_runtime_at_any_batch_size(tmp_path):
    nb.manual_seed(0)
    model = nb.nn.Sequential(
        nb.nn.Conv2d(3, 4, 3, padding=1), nb.nn.BatchNorm2d(4), nb.nn.ReLU(), nb.nn.MaxPool2d(2),
        nb.nn.Flatten(), nb.nn.Dropout(0.5), nb.nn.Linear(4 * 4 * 4, 5))
    path = tmp_path / "cnn.onnx"
    nb.onnx.export(model, (nb.randn(2, 3, 8, 8),), path, input_names=["x"], output_names=["logits"],
                   dynamic_batch=True)
    assert model.training, "the module is back in training mode after the export"
    model.eval()
    x = nb.randn(7, 3, 8, 8)
    (got,) = run_onnx(path, {"x": x.numpy()})
    close(got, model(x).numpy())


def test_the_zoo_vit_and_a_function_of_two_outputs_export(tmp_path):
    vit = nb.nn.ViT(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=48, num_labels=3)
    x = nb.randn(2, 3, 16, 16)
    nb.onnx.export(vit, x, tmp_path / "vit.onnx")
    (got,) = run_onnx(tmp_path / "vit.onnx", {"input0": x.numpy()})
    close(got, vit(x).numpy())

    def stats(a, b):
        return {"mean": (a * b).mean(dim=-1), "top": nb.topk(a - b, 2, dim=-1)[0]}

    a, b = nb.randn(3, 6), nb.randn(3, 6)
    nb.onnx.export(stats, (a, b), tmp_path / "stats.onnx", input_names=["a", "b"])
    got = run_onnx(tmp_path / "stats.onnx", {"a": a.numpy(), "b": b.numpy()})
    want = stats(a, b)
    close(got[0], want["mean"].numpy())
    close(got[1], want["top"].numpy())


def test_what_onnx_cannot_express_is_an_error_naming_it(tmp_path):
    x = nb.randn(3, 3)
    with pytest.raises(ValueError, match="atan2"):
        nb.onnx.export(lambda t: nb.atan2(t, t + 1), x, tmp_path / "a.onnx")
    with pytest.raises(ValueError, match="changes with the batch size"):
        nb.onnx.export(lambda t: t + nb.arange(t.shape[0]).reshape(-1, 1), x, tmp_path / "b.onnx",
                       dynamic_batch=True)
    with pytest.raises(ValueError, match="input name"):
        nb.onnx.export(lambda t: t * 2, x, tmp_path / "c.onnx", input_names=["a", "b"])
    assert not (tmp_path / "a.onnx").exists()
