#!/usr/bin/env python3
"""PyTorch's side of scripts/bench-model-vs-pytorch.sh: the forward pass of a Hugging Face
decoder folder in float32, timed like `attnscope bench --model`.

Usage: bench_model_torch.py FOLDER TOKENS THREADS REPEAT DECODE SEED  ->  one JSON line:
  {"median_ms", "median_cpu_ms", "decode_median_ms", "times_ms", "threads", "torch", "top_id"}

A hand-written forward pass with plain torch ops (torch.addmm / F.linear, batched matmuls
over the heads, F.layer_norm, F.gelu / F.silu), the way one writes it for speed, with every
layer's attention weights kept (as attnscope keeps them) and the next-token logits after the
last token. Prefill and decode are the same function over a KV cache. Families: gpt2,
llama / mistral / qwen2, gpt_neox. Weights are read from the safetensors files with a small
parser and converted to float32 (BF16 / F16 checkpoints too). The token ids are seeded
random ids, not the same generator as attnscope's (the cost does not depend on the ids).
"""
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
SIZES = {"F32": 4, "F16": 2, "BF16": 2}


def read_safetensors(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = bytearray(f.read())
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        if entry["dtype"] not in DTYPES:  # buffers of other types are not needed
            continue
        t = torch.frombuffer(data, dtype=DTYPES[entry["dtype"]], count=(end - begin) // SIZES[entry["dtype"]],
                             offset=begin)
        out[name] = t.reshape(entry["shape"]).to(torch.float32).contiguous()
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
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.cfg = cfg = json.load(f)
        self.w = read_checkpoint(folder)
        self.kind = cfg.get("model_type", "gpt2")
        if self.kind == "gpt2":
            self.L, self.H, self.E = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
            self.Hkv = self.H
            self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        else:
            self.L, self.H, self.E = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
            self.Hkv = cfg.get("num_key_value_heads") or self.H
            self.eps = cfg.get("layer_norm_eps", 1e-5) if self.kind == "gpt_neox" else cfg.get("rms_norm_eps", 1e-6)
        self.dh = self.E // self.H
        if self.kind == "gpt_neox":
            self.rot = int(self.dh * cfg.get("rotary_pct", 0.25))
            theta = cfg.get("rotary_emb_base", cfg.get("rope_theta", 10000))
        elif self.kind == "gpt2":
            self.rot, theta = 0, 1.0
        else:
            self.rot, theta = self.dh, cfg.get("rope_theta", 10000.0)
        if self.rot:
            inv = 1.0 / (theta ** (torch.arange(0, self.rot, 2, dtype=torch.float64) / self.rot))
            self.inv_freq = inv
        self.window = cfg.get("sliding_window") or 0 if self.kind == "mistral" else 0
        w = self.w
        if self.kind == "gpt2":
            self.head = w["wte.weight"]
        elif self.kind == "gpt_neox":
            self.head = w["gpt_neox.embed_in.weight"] if cfg.get("tie_word_embeddings", False) else w["embed_out.weight"]
        else:
            self.head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]

    def rotary(self, t, n0):
        """t [heads, m, dh]: the first self.rot dims rotated at positions n0.."""
        m = t.shape[1]
        pos = torch.arange(n0, n0 + m, dtype=torch.float64)
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().float(), emb.sin().float()
        rot, rest = t[..., :self.rot], t[..., self.rot:]
        half = self.rot // 2
        rotated = torch.cat((-rot[..., half:], rot[..., :half]), dim=-1)
        return torch.cat((rot * cos + rotated * sin, rest), dim=-1)

    def step(self, ids, cache):
        """Appends ids to the cache (a list of per-layer (k, v) [Hkv, n, dh]); returns the last
        logits and the per-layer attention [H, m, n]."""
        w, E, H, Hkv, dh = self.w, self.E, self.H, self.Hkv, self.dh
        n0 = cache[0][0].shape[1] if cache else 0
        m = len(ids)
        n1 = n0 + m
        ids_t = torch.tensor(ids)
        mask = None
        if m > 1 or self.window:
            i = torch.arange(n0, n1).unsqueeze(1)
            j = torch.arange(n1).unsqueeze(0)
            visible = j <= i
            if self.window:
                visible = visible & (i - j < self.window)
            mask = torch.zeros(m, n1).masked_fill(~visible, float("-inf"))
        scale = 1.0 / math.sqrt(dh)
        attentions = []
        new_cache = []

        def attend(q, k, v, layer):
            if cache:
                k = torch.cat((cache[layer][0], k), dim=1)
                v = torch.cat((cache[layer][1], v), dim=1)
            new_cache.append((k, v))
            if Hkv != H:
                k = k.repeat_interleave(H // Hkv, dim=0)
                v = v.repeat_interleave(H // Hkv, dim=0)
            if mask is not None:
                scores = torch.baddbmm(mask.expand(H, m, n1), q, k.transpose(1, 2), alpha=scale)
            else:
                scores = torch.bmm(q, k.transpose(1, 2)) * scale
            weights = torch.softmax(scores, dim=-1)
            attentions.append(weights)
            return torch.bmm(weights, v).transpose(0, 1).reshape(m, H * dh)

        if self.kind == "gpt2":
            x = w["wte.weight"][ids_t] + w["wpe.weight"][n0:n1]
            for l in range(self.L):
                h = f"h.{l}."
                a = F.layer_norm(x, (E,), w[h + "ln_1.weight"], w[h + "ln_1.bias"], self.eps)
                qkv = torch.addmm(w[h + "attn.c_attn.bias"], a, w[h + "attn.c_attn.weight"])
                q, k, v = qkv.view(m, 3, H, dh).permute(1, 2, 0, 3)
                ctx = attend(q, k, v, l)
                x = torch.addmm(w[h + "attn.c_proj.bias"], ctx, w[h + "attn.c_proj.weight"]).add_(x)
                a = F.layer_norm(x, (E,), w[h + "ln_2.weight"], w[h + "ln_2.bias"], self.eps)
                hid = F.gelu(torch.addmm(w[h + "mlp.c_fc.bias"], a, w[h + "mlp.c_fc.weight"]), approximate="tanh")
                x = torch.addmm(w[h + "mlp.c_proj.bias"], hid, w[h + "mlp.c_proj.weight"]).add_(x)
            x = F.layer_norm(x[-1:], (E,), w["ln_f.weight"], w["ln_f.bias"], self.eps)
        elif self.kind == "gpt_neox":
            x = w["gpt_neox.embed_in.weight"][ids_t]
            for l in range(self.L):
                h = f"gpt_neox.layers.{l}."
                a = F.layer_norm(x, (E,), w[h + "input_layernorm.weight"], w[h + "input_layernorm.bias"], self.eps)
                qkv = F.linear(a, w[h + "attention.query_key_value.weight"], w[h + "attention.query_key_value.bias"])
                qkv = qkv.view(m, H, 3 * dh).transpose(0, 1)
                q, k, v = qkv[..., :dh], qkv[..., dh:2 * dh], qkv[..., 2 * dh:]
                q, k = self.rotary(q, n0), self.rotary(k, n0)
                o = F.linear(attend(q, k, v.contiguous(), l), w[h + "attention.dense.weight"], w[h + "attention.dense.bias"])
                b = F.layer_norm(x, (E,), w[h + "post_attention_layernorm.weight"], w[h + "post_attention_layernorm.bias"], self.eps)
                mlp = F.linear(F.gelu(F.linear(b, w[h + "mlp.dense_h_to_4h.weight"], w[h + "mlp.dense_h_to_4h.bias"])),
                               w[h + "mlp.dense_4h_to_h.weight"], w[h + "mlp.dense_4h_to_h.bias"])
                x = x + o + mlp
            x = F.layer_norm(x[-1:], (E,), w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"], self.eps)
        else:
            def rms(t, name):
                return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + self.eps) * w[name + ".weight"]

            def lin(t, name):
                return F.linear(t, w[name + ".weight"], w.get(name + ".bias"))

            x = w["model.embed_tokens.weight"][ids_t]
            for l in range(self.L):
                h = f"model.layers.{l}."
                a = rms(x, h + "input_layernorm")
                q = self.rotary(lin(a, h + "self_attn.q_proj").view(m, H, dh).transpose(0, 1), n0)
                k = self.rotary(lin(a, h + "self_attn.k_proj").view(m, Hkv, dh).transpose(0, 1), n0)
                v = lin(a, h + "self_attn.v_proj").view(m, Hkv, dh).transpose(0, 1)
                x = x + lin(attend(q, k, v, l), h + "self_attn.o_proj")
                a = rms(x, h + "post_attention_layernorm")
                x = x + lin(F.silu(lin(a, h + "mlp.gate_proj")) * lin(a, h + "mlp.up_proj"), h + "mlp.down_proj")
            x = rms(x[-1:], "model.norm")
        logits = F.linear(x, self.head)[0]
        cache[:] = new_cache
        return logits, attentions


def median(values):
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def main():
    folder = sys.argv[1]
    tokens, threads, repeat, decode, seed = (int(a) for a in sys.argv[2:7])
    torch.set_num_threads(threads)
    model = Model(folder)
    vocab = model.head.shape[0]
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (tokens + decode,), generator=gen).tolist()
    times, cpu = [], []
    with torch.inference_mode():
        start = time.perf_counter()
        while time.perf_counter() - start < 0.5:  # untimed, as attnscope bench
            model.step(ids[:tokens], [])
        for _ in range(repeat):
            cache = []
            t0, c0 = time.perf_counter(), time.process_time()
            logits, attentions = model.step(ids[:tokens], cache)
            times.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
        assert len(attentions) == model.L and attentions[0].shape == (model.H, tokens, tokens)
        top = int(torch.argmax(logits))
        decode_times = []
        for i in range(decode):
            t0 = time.perf_counter()
            model.step(ids[tokens + i:tokens + i + 1], cache)
            decode_times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"median_ms": median(times), "median_cpu_ms": median(cpu),
                      "decode_median_ms": median(decode_times) if decode_times else None,
                      "times_ms": times, "threads": torch.get_num_threads(),
                      "torch": torch.__version__, "top_id": top}))


if __name__ == "__main__":
    main()
