"""The examples run and say what they claim (each checks its own results)."""

import os
import runpy

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


@pytest.mark.parametrize("name", ["per_example_grads.py", "hessian.py", "train_digits_cnn.py"])
def test_example_runs(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")
    out = capsys.readouterr().out
    assert out.strip()
    if name == "train_digits_cnn.py":
        accuracy = float(out.strip().splitlines()[-1].rsplit(" ", 1)[1])
        assert accuracy > 0.9
        assert (tmp_path / "digits_cnn.safetensors").exists()
