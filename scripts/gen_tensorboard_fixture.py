#!/usr/bin/env python3
"""TensorBoard's own reader against nabla's event files, and a fixture written by PyTorch for nabla's
reader.

With no argument: writes `crates/nabla-train/tests/fixtures/torch.tfevents` with PyTorch's
`torch.utils.tensorboard.SummaryWriter` (scalars at steps 1 and 2 and a histogram of 0..9 in 5
buckets), which `crates/nabla-train/tests/tensorboard.rs` reads with `read_events`.

With a directory: reads the event files nabla wrote there (`nabla train --tensorboard DIR`) with
TensorBoard's `EventAccumulator`, prints what it found and fails unless it finds per-step losses,
epoch metrics, weight histograms and the hyperparameters.

    python3 scripts/gen_tensorboard_fixture.py            # regenerate the fixture
    python3 scripts/gen_tensorboard_fixture.py runs/      # check nabla's files with TensorBoard
"""

import os
import shutil
import sys
import tempfile

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-train", "tests", "fixtures",
                       "torch.tfevents")


def write_fixture():
    import numpy as np
    from torch.utils.tensorboard import SummaryWriter

    d = tempfile.mkdtemp()
    w = SummaryWriter(d)
    w.add_scalar("train/loss", 0.5, 1)
    w.add_scalar("train/loss", 0.25, 2)
    w.add_histogram("weights/w", np.arange(10.0), 2, bins=5)
    w.close()
    (name,) = [f for f in os.listdir(d) if f.startswith("events.out.tfevents")]
    shutil.copyfile(os.path.join(d, name), FIXTURE)
    print(f"wrote {FIXTURE} ({os.path.getsize(FIXTURE)} bytes)")


def check(directory):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    acc = EventAccumulator(directory, size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    steps = acc.Scalars("train/batch_loss")
    print(f"{len(steps)} step losses, first {steps[0].value:.4f} at step {steps[0].step}, "
          f"last {steps[-1].value:.4f} at step {steps[-1].step}")
    for tag in sorted(t for t in tags["scalars"] if t.startswith("epoch/")):
        s = acc.Scalars(tag)
        print(f"{tag}: {[round(e.value, 4) for e in s]}")
    histos = [t for t in tags["histograms"] if t.startswith("weights/")]
    print(f"{len(histos)} weight histograms, e.g. {histos[0]}: "
          f"{acc.Histograms(histos[0])[-1].histogram_value.num:.0f} values")
    content = acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    info = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    hparams = {k: v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind")) for k, v in info.hparams.items()}
    print(f"hyperparameters: {hparams}")
    assert steps and histos and hparams and "epoch/train_loss" in tags["scalars"]


if __name__ == "__main__":
    if len(sys.argv) > 1:
        check(sys.argv[1])
    else:
        write_fixture()
