#!/usr/bin/env python3
"""PyTorch's side of the activation-patching benchmark (bench/bench_analysis.cpp): head
patching on GPT-2-small shapes (12 layers, 12 heads, width 768, vocabulary 50257) with random
float32 weights, clean and corrupt prompts of N tokens, the metric logit(answer) −
logit(wrong) after the last token, one site per (layer, head).

Usage: bench_patch_torch.py TOKENS THREADS REPEAT [cached|whole|both]  ->  one JSON line:
  {"cached_median_ms", "whole_median_ms", "cached_ms", "whole_ms", "cached_cpu_ms",
   "whole_cpu_ms" (process CPU time of each timed loop), "threads", "torch", "max_difference"}

Two loops, written the way one writes them for speed with plain torch ops:
  cached  TransformerLens's pattern with a cache: the clean run's z and the corrupt run's
          stream entering every block are kept; each site runs the blocks from the patched
          one on, starting from the cached stream, and reads the two logits it needs
          (what attnscope's activationPatching does);
  whole   a whole forward pass per site with the head's z replaced and the whole
          vocabulary's logits (what run_with_hooks does without a cache).
max_difference is the largest difference between the two loops' normalised effects (the same
numbers computed two ways; a check that the cached loop is right).
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

L, H, E, V, P = 12, 12, 768, 50257, 1024
DH = E // H


def weights(seed):
    g = torch.Generator().manual_seed(seed)

    def r(*shape, scale=0.02):
        return torch.randn(*shape, generator=g) * scale

    w = {"wte": r(V, E), "wpe": r(P, E, scale=0.01), "lnf_w": torch.ones(E), "lnf_b": torch.zeros(E)}
    for l in range(L):
        w[l] = {"ln1_w": torch.ones(E), "ln1_b": torch.zeros(E), "qkv_w": r(E, 3 * E), "qkv_b": torch.zeros(3 * E),
                "o_w": r(E, E), "o_b": torch.zeros(E), "ln2_w": torch.ones(E), "ln2_b": torch.zeros(E),
                "fc_w": r(E, 4 * E), "fc_b": torch.zeros(4 * E), "proj_w": r(4 * E, E), "proj_b": torch.zeros(E)}
    return w


def block(w, l, x, mask, patch=None):
    """x [n, E] entering block l; patch = (head, z [n, DH]) replaces that head's z."""
    b = w[l]
    n = x.shape[0]
    a = F.layer_norm(x, (E,), b["ln1_w"], b["ln1_b"], 1e-5)
    q, k, v = torch.addmm(b["qkv_b"], a, b["qkv_w"]).view(n, 3, H, DH).permute(1, 2, 0, 3)
    scores = torch.baddbmm(mask.expand(H, n, n), q, k.transpose(1, 2), alpha=1.0 / math.sqrt(DH))
    z = torch.bmm(torch.softmax(scores, dim=-1), v)  # [H, n, DH]
    if patch is not None:
        z[patch[0]] = patch[1]
    x = torch.addmm(b["o_b"], z.transpose(0, 1).reshape(n, E), b["o_w"]).add_(x)
    a = F.layer_norm(x, (E,), b["ln2_w"], b["ln2_b"], 1e-5)
    hid = F.gelu(torch.addmm(b["fc_b"], a, b["fc_w"]), approximate="tanh")
    return torch.addmm(b["proj_b"], hid, b["proj_w"]).add_(x), z


def run(w, ids, mask):
    x = w["wte"][ids] + w["wpe"][: len(ids)]
    streams, zs = [], []
    for l in range(L):
        streams.append(x)
        x, z = block(w, l, x, mask)
        zs.append(z)
    return x, streams, zs


def metric_from(w, x, answer, wrong, whole):
    last = F.layer_norm(x[-1:], (E,), w["lnf_w"], w["lnf_b"], 1e-5)[0]
    if whole:
        logits = w["wte"] @ last
        return float(logits[answer] - logits[wrong])
    return float(w["wte"][answer] @ last - w["wte"][wrong] @ last)


def patch_heads(w, clean, corrupt, answer, wrong, mask, cached):
    x_clean, _, z_clean = run(w, clean, mask)
    x_corrupt, streams, _ = run(w, corrupt, mask)
    m_clean = metric_from(w, x_clean, answer, wrong, not cached)
    m_corrupt = metric_from(w, x_corrupt, answer, wrong, not cached)
    effect = torch.zeros(L, H)
    for l in range(L):
        for h in range(H):
            if cached:
                x, _ = block(w, l, streams[l], mask, (h, z_clean[l][h]))
                for j in range(l + 1, L):
                    x, _ = block(w, j, x, mask)
            else:
                x = w["wte"][corrupt] + w["wpe"][: len(corrupt)]
                for j in range(L):
                    x, _ = block(w, j, x, mask, (h, z_clean[l][h]) if j == l else None)
            effect[l, h] = (metric_from(w, x, answer, wrong, not cached) - m_corrupt) / (m_clean - m_corrupt)
    return effect


def median(values):
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def main():
    n, threads, repeat = (int(a) for a in sys.argv[1:4])
    kinds = ("cached", "whole") if len(sys.argv) < 5 or sys.argv[4] == "both" else (sys.argv[4],)
    torch.set_num_threads(threads)
    w = weights(42)
    g = torch.Generator().manual_seed(7)
    clean = torch.randint(0, 50000, (n,), generator=g)
    corrupt = clean.clone()
    for i in (n // 5, n // 2, n - 2):
        corrupt[i] = (clean[i] + 911) % 50000
    mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
    times = {"cached": [], "whole": []}
    cpu = {"cached": [], "whole": []}
    effects = {}
    with torch.inference_mode():
        patch_heads(w, clean, corrupt, 1000, 2000, mask, True)  # untimed warm-up
        for _ in range(repeat):
            for kind in kinds:
                t0, c0 = time.perf_counter(), time.process_time()
                effects[kind] = patch_heads(w, clean, corrupt, 1000, 2000, mask, kind == "cached")
                times[kind].append((time.perf_counter() - t0) * 1e3)
                cpu[kind].append((time.process_time() - c0) * 1e3)
    print(json.dumps({"cached_median_ms": median(times["cached"]) if times["cached"] else None,
                      "whole_median_ms": median(times["whole"]) if times["whole"] else None,
                      "cached_ms": times["cached"], "whole_ms": times["whole"],
                      "cached_cpu_ms": cpu["cached"], "whole_cpu_ms": cpu["whole"], "threads": torch.get_num_threads(),
                      "torch": torch.__version__,
                      "max_difference": float((effects["cached"] - effects["whole"]).abs().max())
                      if len(effects) == 2 else None}))


if __name__ == "__main__":
    main()
