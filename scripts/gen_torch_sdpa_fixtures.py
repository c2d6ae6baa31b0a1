"""Reference values for nabla-nn's scaled_dot_product_attention, computed by PyTorch in float64
(torch.nn.functional.scaled_dot_product_attention).

Writes crates/nabla-nn/tests/fixtures/sdpa.json. Each case holds its arguments (is_causal, scale,
enable_gqa, a mask given as 0/1 floats with "mask_kind" "bool" or as a float bias), the inputs
q, k, v, the output, the weights w of the loss sum(output * w), and the gradients of that loss with
respect to q, k and v. Cases cover plain, causal (L < S and L > S, top-left aligned), a custom
scale, bool and float masks, grouped-query heads, broadcast batch axes, and sizes past one block of
the fused kernel (128 keys, 64 queries).

Run from the repository root: python3 scripts/gen_torch_sdpa_fixtures.py
"""

import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)
OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-nn", "tests", "fixtures", "sdpa.json")


def enc(t):
    return {"shape": list(t.shape), "data": t.detach().flatten().tolist()}


def case(name, q_shape, k_shape, v_shape, is_causal=False, scale=None, gqa=False, mask=None):
    q, k, v = (torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in (q_shape, k_shape, v_shape))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale, enable_gqa=gqa)
    w = torch.randn_like(out)
    gq, gk, gv = torch.autograd.grad((out * w).sum(), (q, k, v))
    c = {"name": name, "is_causal": is_causal, "scale": scale, "enable_gqa": gqa,
         "q": enc(q), "k": enc(k), "v": enc(v), "out": enc(out), "w": enc(w),
         "grad_q": enc(gq), "grad_k": enc(gk), "grad_v": enc(gv)}
    if mask is not None:
        c["mask_kind"] = "bool" if mask.dtype == torch.bool else "float"
        c["mask"] = enc(mask.to(torch.float64))
    return c


def bool_mask(*shape):
    m = torch.rand(*shape) > 0.4
    m[..., 0] = True  # every query may attend to some key
    return m


cases = [
    case("plain", [2, 3, 5, 4], [2, 3, 7, 4], [2, 3, 7, 6]),
    case("causal_short_queries", [2, 2, 5, 4], [2, 2, 7, 4], [2, 2, 7, 3], is_causal=True),
    case("causal_long_queries", [2, 2, 7, 4], [2, 2, 5, 4], [2, 2, 5, 3], is_causal=True),
    case("scaled_causal", [1, 2, 6, 5], [1, 2, 6, 5], [1, 2, 6, 5], is_causal=True, scale=0.3),
    case("bool_mask", [2, 2, 5, 4], [2, 2, 7, 4], [2, 2, 7, 3], mask=bool_mask(5, 7)),
    case("float_mask", [2, 2, 5, 4], [2, 2, 7, 4], [2, 2, 7, 3], mask=torch.randn(2, 1, 5, 7, dtype=torch.float64)),
    case("grouped_query", [1, 4, 5, 4], [1, 2, 7, 4], [1, 2, 7, 3], is_causal=True, gqa=True),
    case("broadcast_batch", [2, 3, 5, 4], [1, 3, 6, 4], [3, 6, 2]),
    case("unbatched", [5, 4], [6, 4], [6, 3]),
    case("blocks_causal", [1, 1, 140, 8], [1, 1, 150, 8], [1, 1, 150, 4], is_causal=True),
    case("blocks_plain", [1, 2, 70, 3], [1, 2, 133, 3], [1, 2, 133, 2]),
]

with open(OUT, "w") as f:
    json.dump({"generator": "scripts/gen_torch_sdpa_fixtures.py", "torch": torch.__version__, "cases": cases}, f)
print(f"wrote {len(cases)} cases to {OUT}")
