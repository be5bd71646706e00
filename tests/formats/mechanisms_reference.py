#!/usr/bin/env python3
"""An independent numpy reference for core/models/mechanisms.h (issue 30), for the tests.

Usage: mechanisms_reference.py FOLDER ID,ID,... [--normalize]  ->  one JSON object on stdout:
  {"norm_weighted": [L][H][n][n], "value_norms": [L][H][n] (||f_h(x_j)|| alone),
   "value_zeroing": [L][n][n], "attention_flow": [n][n], "alti": [L][n][n] (decoders),
   "circuits": [{"layer", "head", "kv_head", "qk": [8], "ov": [8], "copying"}, ...]}

Written from the definitions of docs/analyses.md, in float64, with numpy only (no torch, no
attnscope): its own safetensors reader (F32 / F16 / BF16, single file or sharded), its own
forward pass of the families the tests write (gpt2: LayerNorm, fused Conv1D c_attn,
learned positions, tanh GELU; llama: RMSNorm, q/k/v_proj [out, in], half-split RoPE with
rope_theta, grouped-query attention, SwiGLU; bert: post-LN, bidirectional, erf GELU, its
copying score through the MLM decoder, cls.predictions.decoder.weight, or the word
embedding when that is not written), and its own max-flow (Edmonds-Karp: shortest
augmenting paths by BFS, not Dinic's blocking flows).
  norm_weighted  N[l,h,i,j] = || a[l,h,i,j] * (LN1(x_j) W_V^g + b_V^g) W_O^h ||, g = h // (H / H_kv)
  value_zeroing  1 - cos(block_l(x)_i, block_l(x with v_j = 0 in every head)_i), j <= i (every j
                 in bert), rows / sum
  attention_flow max flow from (0, j) to (L, i); edges (k, j) -> (k+1, i) with capacity
                 A^_k[i, j], A^ = 0.5 mean_h A + 0.5 I, rows renormalised
  alti           max(0, |y_i|_1 - |y_i - T_i(x_j)|_1) / row sum, y the stream after attention,
                 T_i(x_j) = sum_h a[l,h,i,j] f_h(x_j) + [i = j] x_i (Ferrando et al. 2022)
  circuits       singular values of W_Q^h W_K^g.T and W_V^g W_O^h (the 8 largest); copying
                 = sum(eig) / sum(|eig|) of the E x E matrix W_OV W_U W_E
"""
import json
import math
import os
import struct
import sys
from collections import deque

try:
    import numpy as np
except ImportError:  # the C++ test skips on this exit code
    sys.exit(3)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    start = 8 + length
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = data[start + begin:start + end]
        if entry["dtype"] == "F32":
            values = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif entry["dtype"] == "F16":
            values = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif entry["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            values = bits.view(np.float32).astype(np.float64)
        elif entry["dtype"] == "I64":  # position_ids buffers: not weights
            continue
        else:
            raise SystemExit(f"{path}: {name}: dtype {entry['dtype']} not handled")
        out[name] = values.reshape(entry["shape"])
    return out


def read_checkpoint(folder):
    single = os.path.join(folder, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        index = json.load(f)
    out = {}
    for shard in sorted(set(index["weight_map"].values())):
        out.update(read_safetensors(os.path.join(folder, shard)))
    return out


class Model:
    """The weights of one folder as row-vector maps (x @ W), per layer."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        w = read_checkpoint(folder)
        self.kind = cfg["model_type"]
        if self.kind == "gpt2":
            self.L, self.H, self.E = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
            self.Hkv = self.H
            self.eps = cfg["layer_norm_epsilon"]
            self.embed = w["wte.weight"]
            self.positions = w["wpe.weight"]
            self.unembed = w["wte.weight"]  # tied: V x E
            self.final = (w["ln_f.weight"], w["ln_f.bias"])
            self.layers = []
            E = self.E
            for l in range(self.L):
                p = f"h.{l}."
                c_attn = w[p + "attn.c_attn.weight"]  # [E, 3E], columns q | k | v
                b = w[p + "attn.c_attn.bias"]
                self.layers.append({
                    "ln1": (w[p + "ln_1.weight"], w[p + "ln_1.bias"]),
                    "ln2": (w[p + "ln_2.weight"], w[p + "ln_2.bias"]),
                    "wq": c_attn[:, :E], "wk": c_attn[:, E:2 * E], "wv": c_attn[:, 2 * E:],
                    "bq": b[:E], "bk": b[E:2 * E], "bv": b[2 * E:],
                    "wo": w[p + "attn.c_proj.weight"], "bo": w[p + "attn.c_proj.bias"],
                    "up": w[p + "mlp.c_fc.weight"], "bup": w[p + "mlp.c_fc.bias"],
                    "down": w[p + "mlp.c_proj.weight"], "bdown": w[p + "mlp.c_proj.bias"],
                })
        elif self.kind == "llama":
            self.L, self.H, self.E = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
            self.Hkv = cfg.get("num_key_value_heads", self.H)
            self.eps = cfg["rms_norm_eps"]
            self.theta = cfg.get("rope_theta", 10000.0)
            self.embed = w["model.embed_tokens.weight"]
            self.positions = None
            self.unembed = w["lm_head.weight"] if "lm_head.weight" in w else self.embed
            self.final = (w["model.norm.weight"], None)
            self.layers = []
            for l in range(self.L):
                p = f"model.layers.{l}."
                self.layers.append({
                    "ln1": (w[p + "input_layernorm.weight"], None),
                    "ln2": (w[p + "post_attention_layernorm.weight"], None),
                    "wq": w[p + "self_attn.q_proj.weight"].T, "wk": w[p + "self_attn.k_proj.weight"].T,
                    "wv": w[p + "self_attn.v_proj.weight"].T,
                    "bq": None, "bk": None, "bv": None,
                    "wo": w[p + "self_attn.o_proj.weight"].T, "bo": None,
                    "gate": w[p + "mlp.gate_proj.weight"].T, "up": w[p + "mlp.up_proj.weight"].T,
                    "down": w[p + "mlp.down_proj.weight"].T,
                })
        elif self.kind == "bert":  # post-LN, bidirectional, erf GELU (BertForMaskedLM)
            self.L, self.H, self.E = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
            self.Hkv = self.H
            self.eps = cfg["layer_norm_eps"]
            p = "bert."
            self.embed = (w[p + "embeddings.word_embeddings.weight"] + 0.0)
            self.positions = w[p + "embeddings.position_embeddings.weight"]
            self.token_type = w[p + "embeddings.token_type_embeddings.weight"][0]
            self.embed_norm = (w[p + "embeddings.LayerNorm.weight"], w[p + "embeddings.LayerNorm.bias"])
            # W_U of the copying score: the MLM head's decoder (V x E), without its transform
            self.unembed = w.get("cls.predictions.decoder.weight", self.embed)
            self.layers = []
            for l in range(self.L):
                h = f"{p}encoder.layer.{l}."
                lin = lambda name: (w[h + name + ".weight"].T, w[h + name + ".bias"])  # noqa: E731
                (wq, bq), (wk, bk), (wv, bv) = lin("attention.self.query"), lin("attention.self.key"), lin("attention.self.value")
                (wo, bo), (up, bup), (down, bdown) = lin("attention.output.dense"), lin("intermediate.dense"), lin("output.dense")
                self.layers.append({
                    "wq": wq, "wk": wk, "wv": wv, "bq": bq, "bk": bk, "bv": bv, "wo": wo, "bo": bo,
                    "up": up, "bup": bup, "down": down, "bdown": bdown,
                    "ln1": (w[h + "attention.output.LayerNorm.weight"], w[h + "attention.output.LayerNorm.bias"]),
                    "ln2": (w[h + "output.LayerNorm.weight"], w[h + "output.LayerNorm.bias"]),
                })
        else:
            raise SystemExit(f"{folder}: model_type {self.kind} is not one this reference runs")
        self.dh = self.E // self.H

    def norm(self, x, weights):
        g, b = weights
        if b is None:  # RMSNorm
            return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * g
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * g + b

    def rope(self, t):
        """t [heads, n, d_h]: Hugging Face's rotate_half layout on every dimension."""
        n, d = t.shape[1], t.shape[2]
        inv = 1.0 / (self.theta ** (np.arange(0, d, 2) / d))
        ang = np.outer(np.arange(n), inv)
        cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
        rotated = np.concatenate([-t[..., d // 2:], t[..., :d // 2]], -1)
        return t * cos + rotated * sin

    def attention_inputs(self, layer, x):
        """q [H, n, d_h], k and v [H_kv, n, d_h] of block `layer` on the stream x [n, E]."""
        w, n, dh = self.layers[layer], x.shape[0], self.dh
        a = self.norm(x, w["ln1"])

        def proj(name, heads):
            y = a @ w["w" + name]
            if w["b" + name] is not None:
                y = y + w["b" + name]
            return y.reshape(n, heads, dh).transpose(1, 0, 2)

        q, k, v = proj("q", self.H), proj("k", self.Hkv), proj("v", self.Hkv)
        if self.kind == "llama":
            q, k = self.rope(q), self.rope(k)
        return q, k, v

    def pattern(self, q, k):
        """A [H, n, n]: causal softmax of q_h k_g.T / sqrt(d_h)."""
        n, group = q.shape[1], self.H // self.Hkv
        out = np.zeros((self.H, n, n))
        for h in range(self.H):
            s = q[h] @ k[h // group].T / np.sqrt(self.dh)
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            out[h] = s / s.sum(-1, keepdims=True)
        return out

    def finish_block(self, layer, x, A, v):
        """The block's output from its input x, its pattern A and values v (heads' z = A v)."""
        w, group = self.layers[layer], self.H // self.Hkv
        z = np.concatenate([A[h] @ v[h // group] for h in range(self.H)], 1)  # [n, H d_h]
        x = x + z @ w["wo"] + (w["bo"] if w["bo"] is not None else 0)
        a = self.norm(x, w["ln2"])
        if self.kind == "gpt2":
            h = a @ w["up"] + w["bup"]
            h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
            return x + h @ w["down"] + w["bdown"]
        g = a @ w["gate"]
        return x + ((g / (1 + np.exp(-g))) * (a @ w["up"])) @ w["down"]

    def finish_bert_block(self, layer, x, A, v):
        """BERT's post-LN block from its input x, pattern A and values v:
        a = LN1(x + ctx W_O + b_O), out = LN2(a + down(gelu_erf(up(a))))."""
        w = self.layers[layer]
        erf = np.vectorize(math.erf)
        z = np.concatenate([A[h] @ v[h] for h in range(self.H)], 1)
        a = self.norm(x + z @ w["wo"] + w["bo"], w["ln1"])
        hidden = a @ w["up"] + w["bup"]
        hidden = 0.5 * hidden * (1 + erf(hidden / math.sqrt(2)))
        return self.norm(a + hidden @ w["down"] + w["bdown"], w["ln2"])

    def run_bert(self, ids):
        """BERT: x = LN(word + position + type 0); per block, with no mask and no pre-norm,
        finish_bert_block."""
        n, dh, steps = len(ids), self.dh, []
        x = self.norm(self.embed[ids] + self.positions[:n] + self.token_type, self.embed_norm)
        for layer, w in enumerate(self.layers):
            q, k, v = [(x @ w["w" + t] + w["b" + t]).reshape(n, self.H, dh).transpose(1, 0, 2) for t in "qkv"]
            A = np.zeros((self.H, n, n))
            for h in range(self.H):
                s = q[h] @ k[h].T / np.sqrt(dh)
                s = np.exp(s - s.max(-1, keepdims=True))
                A[h] = s / s.sum(-1, keepdims=True)
            steps.append((x, A, v))
            x = self.finish_bert_block(layer, x, A, v)
        return steps, x

    def run(self, ids):
        """Per layer: its input stream, pattern, values; and the final stream."""
        if self.kind == "bert":
            return self.run_bert(ids)
        x = self.embed[ids]
        if self.positions is not None:
            x = x + self.positions[: len(ids)]
        steps = []
        for layer in range(self.L):
            q, k, v = self.attention_inputs(layer, x)
            A = self.pattern(q, k)
            steps.append((x, A, v))
            x = self.finish_block(layer, x, A, v)
        return steps, x


def norm_weighted(model, steps):
    """N [L, H, n, n], and the norms ||f_h(x_j)|| [L, H, n] alone."""
    n = len(steps[0][0])
    out, norms = np.zeros((model.L, model.H, n, n)), np.zeros((model.L, model.H, n))
    group, dh = model.H // model.Hkv, model.dh
    for l, (x, A, v) in enumerate(steps):
        wo = model.layers[l]["wo"]
        for h in range(model.H):
            f = v[h // group] @ wo[h * dh:(h + 1) * dh, :]  # [n, E]: f_h(x_j) per row j
            out[l, h] = np.linalg.norm(A[h][:, :, None] * f[None, :, :], axis=-1)
            norms[l, h] = np.linalg.norm(f, axis=-1)
    return out, norms


def value_zeroing(model, steps):
    n = len(steps[0][0])
    out = np.zeros((model.L, n, n))
    bert = model.kind == "bert"
    finish = model.finish_bert_block if bert else model.finish_block
    for l, (x, A, v) in enumerate(steps):
        clean = finish(l, x, A, v)
        for j in range(n):
            zeroed = v.copy()
            zeroed[:, j, :] = 0.0
            y = finish(l, x, A, zeroed)
            for i in range(0 if bert else j, n):  # a decoder's row i never reads a later j
                cos = clean[i] @ y[i] / (np.linalg.norm(clean[i]) * np.linalg.norm(y[i]))
                out[l, i, j] = 1.0 - cos
        out[l] /= out[l].sum(-1, keepdims=True)
    return out


def alti(model, steps):
    """ALTI [L, n, n] (Ferrando et al. 2022) of a pre-norm decoder, with the L1 distance:
    y_i = x_i + sum_h sum_j A[h,i,j] f_h(x_j) + b_O, T_i(x_j) = sum_h A[h,i,j] f_h(x_j) + [i = j] x_i,
    c_ij = max(0, |y_i|_1 - |y_i - T_i(x_j)|_1), rows divided by their sums."""
    n = len(steps[0][0])
    out = np.zeros((model.L, n, n))
    group, dh = model.H // model.Hkv, model.dh
    for l, (x, A, v) in enumerate(steps):
        w = model.layers[l]
        f = [v[h // group] @ w["wo"][h * dh:(h + 1) * dh, :] for h in range(model.H)]  # [n, E] each
        y = x + sum(A[h] @ f[h] for h in range(model.H)) + (w["bo"] if w["bo"] is not None else 0)
        for i in range(n):
            whole = np.abs(y[i]).sum()
            for j in range(i + 1):
                t = sum(A[h][i, j] * f[h][j] for h in range(model.H)) + (x[i] if i == j else 0)
                out[l, i, j] = max(0.0, whole - np.abs(y[i] - t).sum())
            out[l, i] /= out[l, i].sum()
    return out


def edmonds_karp(capacity, source, sink):
    """Max flow on a dense capacity matrix by shortest augmenting paths."""
    residual = capacity.copy()
    total = 0.0
    eps = 1e-15 * max(capacity.max(), 1e-300)
    while True:
        parent = [-1] * len(residual)
        parent[source] = source
        queue = deque([source])
        while queue and parent[sink] < 0:
            u = queue.popleft()
            for v in np.nonzero(residual[u] > eps)[0]:
                if parent[v] < 0:
                    parent[v] = u
                    queue.append(v)
        if parent[sink] < 0:
            return total
        path, v = [], sink
        while v != source:
            path.append((parent[v], v))
            v = parent[v]
        push = min(residual[u, v] for u, v in path)
        for u, v in path:
            residual[u, v] -= push
            residual[v, u] += push
        total += push


def attention_flow(model, steps, normalize):
    n, L = len(steps[0][0]), model.L
    capacity = np.zeros(((L + 1) * n, (L + 1) * n))
    for k, (_, A, _) in enumerate(steps):
        R = 0.5 * A.mean(0) + 0.5 * np.eye(n)
        R = R / R.sum(-1, keepdims=True)
        for i in range(n):
            for j in range(n):
                capacity[k * n + j, (k + 1) * n + i] = R[i, j]
    F = np.array([[edmonds_karp(capacity, j, L * n + i) for j in range(n)] for i in range(n)])
    if normalize:
        F = F / F.sum(-1, keepdims=True)
    return F


def circuits(model):
    group, dh = model.H // model.Hkv, model.dh
    unembed_embed = model.unembed.T @ model.embed  # W_U W_E, E x E
    rows = []
    for l, w in enumerate(model.layers):
        for h in range(model.H):
            g = h // group
            wq, wk = w["wq"][:, h * dh:(h + 1) * dh], w["wk"][:, g * dh:(g + 1) * dh]
            wv, wo = w["wv"][:, g * dh:(g + 1) * dh], w["wo"][h * dh:(h + 1) * dh, :]
            qk = np.linalg.svd(wq @ wk.T, compute_uv=False)[:8]
            ov_matrix = wv @ wo
            ov = np.linalg.svd(ov_matrix, compute_uv=False)[:8]
            eig = np.linalg.eigvals(ov_matrix @ unembed_embed)  # W_OV W_U W_E, E x E
            rows.append({"layer": l, "head": h, "kv_head": g, "qk": qk.tolist(), "ov": ov.tolist(),
                         "copying": float(eig.sum().real / np.abs(eig).sum())})
    return rows


def main():
    folder, ids = sys.argv[1], [int(t) for t in sys.argv[2].split(",")]
    normalize = "--normalize" in sys.argv[3:]
    model = Model(folder)
    steps, _ = model.run(ids)
    norm, value_norms = norm_weighted(model, steps)
    result = {"norm_weighted": norm.tolist(), "value_norms": value_norms.tolist(),
              "value_zeroing": value_zeroing(model, steps).tolist(),
              "attention_flow": attention_flow(model, steps, normalize).tolist(),
              "circuits": circuits(model)}
    if model.kind != "bert":  # ALTI of a post-LN block needs its LayerNorm linearised: decoders only
        result["alti"] = alti(model, steps).tolist()
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
