"""A tiny random GPT-2 folder in the Hugging Face layout, written with numpy only (the
Python twin of tests/support/gpt2_fixture.h): config.json, model.safetensors (F32),
vocab.json (GPT-2's 256 byte tokens in encoder.py's order, then <|endoftext|>) and
merges.txt (one merge, "t h" -> "th"; attnscope refuses a merges.txt without any)."""

import json
import os
import struct

import numpy as np


def _bytes_to_unicode():
    """encoder.py's bytes_to_unicode(): printable bytes map to themselves, the rest to
    U+0100 upwards, in byte order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return [chr(c) for c in chars]


def _safetensors(tensors):
    header, offset, data = {}, 0, b""
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def write_tiny_gpt2(folder, n_layer=2, n_head=2, n_embd=8, n_positions=32, seed=1):
    """Writes the folder and returns it."""
    os.makedirs(folder, exist_ok=True)
    vocab = {token: index for index, token in enumerate(_bytes_to_unicode())}
    vocab["th"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    V, E = len(vocab), n_embd
    rng = np.random.default_rng(seed)

    def values(*shape, scale=0.5, offset=0.0):
        return (offset + scale * rng.standard_normal(shape)).astype(np.float32)

    tensors = {"wte.weight": values(V, E), "wpe.weight": values(n_positions, E, scale=0.3)}
    for layer in range(n_layer):
        p = f"h.{layer}."
        tensors.update({
            p + "ln_1.weight": values(E, scale=0.1, offset=1.0), p + "ln_1.bias": values(E, scale=0.1),
            p + "attn.c_attn.weight": values(E, 3 * E, scale=0.8),
            p + "attn.c_attn.bias": values(3 * E, scale=0.2),
            p + "attn.c_proj.weight": values(E, E), p + "attn.c_proj.bias": values(E, scale=0.1),
            p + "ln_2.weight": values(E, scale=0.1, offset=1.0), p + "ln_2.bias": values(E, scale=0.1),
            p + "mlp.c_fc.weight": values(E, 4 * E), p + "mlp.c_fc.bias": values(4 * E, scale=0.1),
            p + "mlp.c_proj.weight": values(4 * E, E), p + "mlp.c_proj.bias": values(E, scale=0.1),
        })
    tensors["ln_f.weight"] = values(E, scale=0.1, offset=1.0)
    tensors["ln_f.bias"] = values(E, scale=0.1)
    config = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
              "bos_token_id": V - 1, "eos_token_id": V - 1, "layer_norm_epsilon": 1e-5,
              "model_type": "gpt2", "n_ctx": n_positions, "n_embd": E, "n_head": n_head,
              "n_inner": None, "n_layer": n_layer, "n_positions": n_positions, "vocab_size": V}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w") as f:
        f.write("#version: 0.2\nt h\n")
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(_safetensors(tensors))
    return folder
