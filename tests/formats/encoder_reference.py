#!/usr/bin/env python3
"""An independent PyTorch forward pass of Hugging Face encoder and ViT folders, for the tests.

Usage:
  encoder_reference.py text ID,ID,... FOLDER [FOLDER ...]
      -> one JSON line per folder: {"attention": [L][H][n][n], "mlm": [n][V] or null}
         (mlm: the masked-language-model logits at every position; null without a head)
  encoder_reference.py image PIXELS.npy FOLDER [FOLDER ...]
      -> one JSON line per folder: {"attention": [L][H][T][T], "logits": [labels]}
         (PIXELS.npy: the preprocessed image, float32 [3, S, S])
  Either with --head-mask L.H,L.H,... first: Hugging Face's head_mask with those heads 0
  (attention_probs * head_mask, so the heads' context is 0); "attention" stays unmasked.
  With --head-mean after it, those heads' context rows are instead their mean over the
  positions (TransformerLens's mean ablation of hook_z in the same pass).
(several folders per run, because importing torch takes seconds)

Written from the equations of Hugging Face's modelling code in eval mode (BertForMaskedLM,
DistilBertForMaskedLM, RobertaForMaskedLM, ViTForImageClassification,
DeiTForImageClassificationWithTeacher), in float64 with plain torch ops: it does not use
`transformers` (not installed) and shares no code with attnscope. Reads config.json and
model.safetensors with its own small parser. Exit 3 when torch is missing.
"""
import json
import math
import os
import struct
import sys

try:
    import torch
except ImportError:  # the C++ test skips on this exit code
    sys.exit(3)

HEAD_MASK = set()  # (layer, head) pairs zeroed by --head-mask
HEAD_MEAN = [False]  # --head-mean: replace by the mean over positions instead of 0

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    start = 8 + length
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] not in DTYPES:
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[start + begin:start + end])
        t = torch.frombuffer(raw, dtype=DTYPES[entry["dtype"]]) if raw else torch.zeros(0)
        out[name] = t.reshape(entry["shape"]).to(torch.float64)
    return out


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def act(name, x):
    if name == "gelu":
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "relu":
        return torch.relu(x)
    raise ValueError(name)


def linear(t, name, x):
    return x @ t[name + ".weight"].T + t[name + ".bias"]


def norm_params(t, name):
    if name + ".weight" in t:
        return t[name + ".weight"], t[name + ".bias"]
    return t[name + ".gamma"], t[name + ".beta"]


def self_attention(q, k, v, heads, layer):
    """q, k, v [n, E] -> weights [H, n, n], context [n, E] (no mask: bidirectional)."""
    n, e = q.shape
    d = e // heads
    split = lambda x: x.reshape(n, heads, d).permute(1, 0, 2)
    qh, kh, vh = split(q), split(k), split(v)
    scores = qh @ kh.transpose(-1, -2) / math.sqrt(d)
    weights = torch.softmax(scores, dim=-1)
    head_mask = torch.tensor([0.0 if (layer, h) in HEAD_MASK else 1.0 for h in range(heads)],
                             dtype=weights.dtype).reshape(heads, 1, 1)
    z = (weights * head_mask) @ vh  # [H, n, d]
    if HEAD_MEAN[0]:
        z_all = weights @ vh
        z = z_all * head_mask + z_all.mean(dim=1, keepdim=True).expand_as(z_all) * (1 - head_mask)
    ctx = z.permute(1, 0, 2).reshape(n, e)
    return weights, ctx


def prefix(t, family):
    return family + "." if family + ".embeddings.word_embeddings.weight" in t else ""


def bert_like(cfg, t, ids):
    """BertForMaskedLM / RobertaForMaskedLM."""
    mt = cfg["model_type"]
    p = prefix(t, "roberta" if mt == "roberta" else "bert")
    eps = cfg.get("layer_norm_eps", 1e-12)
    n = len(ids)
    if mt == "roberta":  # create_position_ids_from_input_ids
        pad = cfg.get("pad_token_id", 1)
        mask = torch.tensor([1 if i != pad else 0 for i in ids])
        pos = (torch.cumsum(mask, 0) * mask + pad).tolist()
    else:
        pos = list(range(n))
    x = (t[p + "embeddings.word_embeddings.weight"][ids]
         + t[p + "embeddings.position_embeddings.weight"][pos]
         + t[p + "embeddings.token_type_embeddings.weight"][[0] * n])
    x = layer_norm(x, *norm_params(t, p + "embeddings.LayerNorm"), eps)
    attn = []
    hidden_act = cfg.get("hidden_act", "gelu")
    for l in range(cfg["num_hidden_layers"]):
        h = p + "encoder.layer.%d." % l
        q = linear(t, h + "attention.self.query", x)
        k = linear(t, h + "attention.self.key", x)
        v = linear(t, h + "attention.self.value", x)
        w, ctx = self_attention(q, k, v, cfg["num_attention_heads"], l)
        attn.append(w)
        a = layer_norm(linear(t, h + "attention.output.dense", ctx) + x,
                       *norm_params(t, h + "attention.output.LayerNorm"), eps)
        m = linear(t, h + "output.dense", act(hidden_act, linear(t, h + "intermediate.dense", a)))
        x = layer_norm(m + a, *norm_params(t, h + "output.LayerNorm"), eps)
    mlm = None
    if mt == "bert" and "cls.predictions.transform.dense.weight" in t:
        y = act(hidden_act, linear(t, "cls.predictions.transform.dense", x))
        y = layer_norm(y, *norm_params(t, "cls.predictions.transform.LayerNorm"), eps)
        dec = t.get("cls.predictions.decoder.weight", t[p + "embeddings.word_embeddings.weight"])
        if not cfg.get("tie_word_embeddings", True):
            dec = t["cls.predictions.decoder.weight"]
        mlm = y @ dec.T + t["cls.predictions.bias"]
    if mt == "roberta" and "lm_head.dense.weight" in t:
        y = act("gelu", linear(t, "lm_head.dense", x))  # RobertaLMHead: always gelu
        y = layer_norm(y, t["lm_head.layer_norm.weight"], t["lm_head.layer_norm.bias"], eps)
        dec = t.get("lm_head.decoder.weight", t[p + "embeddings.word_embeddings.weight"])
        mlm = y @ dec.T + t["lm_head.bias"]
    return attn, mlm


def distilbert(cfg, t, ids):
    """DistilBertForMaskedLM (LayerNorm eps 1e-12)."""
    p = prefix(t, "distilbert")
    eps = 1e-12
    n = len(ids)
    x = t[p + "embeddings.word_embeddings.weight"][ids] + t[p + "embeddings.position_embeddings.weight"][list(range(n))]
    x = layer_norm(x, *norm_params(t, p + "embeddings.LayerNorm"), eps)
    a_name = cfg.get("activation", "gelu")
    attn = []
    heads = cfg["n_heads"]
    for l in range(cfg["n_layers"]):
        h = p + "transformer.layer.%d." % l
        q = linear(t, h + "attention.q_lin", x)  # (DistilBERT divides q by sqrt(d) first:
        k = linear(t, h + "attention.k_lin", x)  # the same scores)
        v = linear(t, h + "attention.v_lin", x)
        w, ctx = self_attention(q, k, v, heads, l)
        attn.append(w)
        sa = layer_norm(linear(t, h + "attention.out_lin", ctx) + x, *norm_params(t, h + "sa_layer_norm"), eps)
        f = linear(t, h + "ffn.lin2", act(a_name, linear(t, h + "ffn.lin1", sa)))
        x = layer_norm(f + sa, *norm_params(t, h + "output_layer_norm"), eps)
    mlm = None
    if "vocab_transform.weight" in t:
        y = act(a_name, linear(t, "vocab_transform", x))
        y = layer_norm(y, t["vocab_layer_norm.weight"], t["vocab_layer_norm.bias"], eps)
        dec = t.get("vocab_projector.weight", t[p + "embeddings.word_embeddings.weight"])
        mlm = y @ dec.T + t["vocab_projector.bias"]
    return attn, mlm


def vision(cfg, t, pixels):
    """ViTForImageClassification / DeiTForImageClassificationWithTeacher on pixels [3, S, S]."""
    mt = cfg["model_type"]
    p = ("deit." if mt == "deit" else "vit.")
    if p + "embeddings.cls_token" not in t:
        p = ""
    eps = cfg.get("layer_norm_eps", 1e-12)
    patch = cfg["patch_size"]
    e = cfg["hidden_size"]
    # Conv2d(C, E, patch, stride=patch), written out as a convolution
    w = t[p + "embeddings.patch_embeddings.projection.weight"]
    b = t[p + "embeddings.patch_embeddings.projection.bias"]
    conv = torch.nn.functional.conv2d(pixels.unsqueeze(0), w, b, stride=patch)  # [1, E, R, C]
    x = conv.flatten(2).transpose(1, 2)[0]  # [P, E] row-major patches
    tokens = [t[p + "embeddings.cls_token"].reshape(1, e)]
    if mt == "deit":
        tokens.append(t[p + "embeddings.distillation_token"].reshape(1, e))
    x = torch.cat(tokens + [x], 0) + t[p + "embeddings.position_embeddings"].reshape(-1, e)
    attn = []
    for l in range(cfg["num_hidden_layers"]):
        h = p + "encoder.layer.%d." % l
        y = layer_norm(x, t[h + "layernorm_before.weight"], t[h + "layernorm_before.bias"], eps)
        q = linear(t, h + "attention.attention.query", y)
        k = linear(t, h + "attention.attention.key", y)
        v = linear(t, h + "attention.attention.value", y)
        wts, ctx = self_attention(q, k, v, cfg["num_attention_heads"], l)
        attn.append(wts)
        x = x + linear(t, h + "attention.output.dense", ctx)
        y = layer_norm(x, t[h + "layernorm_after.weight"], t[h + "layernorm_after.bias"], eps)
        x = x + linear(t, h + "output.dense", act(cfg.get("hidden_act", "gelu"), linear(t, h + "intermediate.dense", y)))
    x = layer_norm(x, t[p + "layernorm.weight"], t[p + "layernorm.bias"], eps)
    if "cls_classifier.weight" in t:
        logits = (linear(t, "cls_classifier", x[0]) + linear(t, "distillation_classifier", x[1])) / 2
    else:
        logits = linear(t, "classifier", x[0])
    return attn, logits


def read_npy(path):
    import numpy
    return torch.from_numpy(numpy.load(path).astype("float64"))


def main():
    if sys.argv[1] == "--head-mask":
        for item in sys.argv[2].split(","):
            layer, head = item.split(".")
            HEAD_MASK.add((int(layer), int(head)))
        del sys.argv[1:3]
        if sys.argv[1] == "--head-mean":
            HEAD_MEAN[0] = True
            del sys.argv[1]
    mode = sys.argv[1]
    folders = sys.argv[3:]
    for folder in folders:
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        t = read_safetensors(os.path.join(folder, "model.safetensors"))
        with torch.no_grad():
            if mode == "text":
                ids = [int(i) for i in sys.argv[2].split(",")]
                attn, mlm = (distilbert if cfg["model_type"] == "distilbert" else bert_like)(cfg, t, ids)
                print(json.dumps({"attention": [a.tolist() for a in attn],
                                  "mlm": None if mlm is None else mlm.tolist()}))
            else:
                attn, logits = vision(cfg, t, read_npy(sys.argv[2]))
                print(json.dumps({"attention": [a.tolist() for a in attn], "logits": logits.tolist()}))


if __name__ == "__main__":
    main()
