"""Train a small CNN on the 8x8 digits embedded in nabla, from Python, in the PyTorch style.

    python crates/nabla-py/examples/train_digits_cnn.py
"""

import numpy as np

import nabla_rs as nb
from nabla_rs import nn, optim
from nabla_rs.nn import functional as F

nb.manual_seed(0)
images, labels = nb.data.load_digits()  # [1797, 1, 8, 8] float32 and int64 NumPy arrays
order = np.random.default_rng(0).permutation(len(images))
(train_x, test_x), (train_y, test_y) = np.split(images[order], [1500]), np.split(labels[order], [1500])
train = nb.data.DataLoader(train_x, train_y, batch_size=64, shuffle=True)

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
)
opt = optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(8):
    model.train()
    for x, y in train:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with nb.no_grad():
        predicted = model(nb.tensor(test_x)).argmax(1)
        accuracy = (predicted == nb.tensor(test_y)).astype(nb.float32).mean().item()
    print(f"epoch {epoch}: loss {loss.item():.4f}, held-out accuracy {accuracy:.3f}")

nb.save_safetensors(model.state_dict(), "digits_cnn.safetensors")
