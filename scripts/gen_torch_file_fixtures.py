"""Writes the PyTorch-file fixtures of nabla-nn's tests (crates/nabla-nn/tests/fixtures/torch_files):
small archives written by torch.save itself, and the values nabla must read from them (JSON).

    python scripts/gen_torch_file_fixtures.py

- state_dict.pt: a Linear + BatchNorm1d state dict with tensors of every dtype nabla holds that
  torch.save writes, a transposed (strided) view, two views of one storage, a 0-d and an empty tensor.
- checkpoint.pt: a training checkpoint dictionary ({"model": ..., "optimizer": ..., "epoch": 3}).
- malicious.pt: an object whose unpickling would call os.system (must be refused, never run).
- legacy.pt: the format before PyTorch 1.6 (not a zip archive; refused with a clear error).
- scripted.pt: a TorchScript archive (torch.jit.save; refused: it holds code).
- expected.json: name -> dtype, shape and values (row-major; complex as [re, im] pairs) of state_dict.pt.
"""

import json
import os

import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-nn", "tests", "fixtures", "torch_files")


def values(t):
    if t.is_complex():
        return [[z.real, z.imag] for z in t.flatten().tolist()]
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.float().flatten().tolist()
    return t.flatten().tolist()


def state_dict():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    model.train()
    model(torch.randn(5, 3))  # running statistics and num_batches_tracked move
    sd = model.state_dict()
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
    sd["transposed"] = base.t()
    whole = torch.arange(10, dtype=torch.float64) * 0.5
    sd["shared.whole"] = whole
    sd["shared.tail"] = whole[6:]
    sd["half"] = torch.tensor([0.5, -1.25, 3.0], dtype=torch.float16)
    sd["bfloat"] = torch.tensor([[1.5, -2.0], [0.0078125, 256.0]], dtype=torch.bfloat16)
    sd["long"] = torch.tensor([-(2**40), 7, 0], dtype=torch.int64)
    sd["int"] = torch.tensor([[-3, 4]], dtype=torch.int32)
    sd["short"] = torch.tensor([-300, 300], dtype=torch.int16)
    sd["char"] = torch.tensor([-7, 8], dtype=torch.int8)
    sd["byte"] = torch.tensor([0, 255], dtype=torch.uint8)
    sd["mask"] = torch.tensor([True, False, True])
    sd["complex"] = torch.tensor([1 + 2j, -0.5j], dtype=torch.complex64)
    sd["scalar"] = torch.tensor(2.5)
    sd["empty"] = torch.zeros(0, 3)
    return sd


def main():
    os.makedirs(OUT, exist_ok=True)
    sd = state_dict()
    torch.save(sd, os.path.join(OUT, "state_dict.pt"))
    expected = {
        name: {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "values": values(t)}
        for name, t in sd.items()
    }
    with open(os.path.join(OUT, "expected.json"), "w") as fh:
        json.dump(expected, fh, indent=1)
        fh.write("\n")

    model = {k: v for k, v in sd.items() if k.startswith(("0.", "1."))}
    params = [model["0.weight"], model["0.bias"]]
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    params[0].grad = torch.ones_like(params[0])
    optimizer.step()
    checkpoint = {"model": model, "optimizer": optimizer.state_dict(), "epoch": 3}
    torch.save(checkpoint, os.path.join(OUT, "checkpoint.pt"))

    class Payload:
        def __reduce__(self):
            return (os.system, ("echo nabla-must-not-run-this",))

    torch.save({"weight": torch.ones(2), "payload": Payload()}, os.path.join(OUT, "malicious.pt"))
    torch.save({"weight": torch.ones(2)}, os.path.join(OUT, "legacy.pt"), _use_new_zipfile_serialization=False)
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(OUT, "scripted.pt"))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
