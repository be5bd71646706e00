"""A tiny random vision transformer folder (ViTForImageClassification layout) written with
numpy only: config.json with id2label, preprocessor_config.json and model.safetensors (F32:
vit.* with the patch projection as a [E, 3, p, p] convolution weight, the classifier). The
Python twin of tests/support/vit_fixture.h's vit folder, for the Python session's patching
test; write_png writes the RGB pictures it runs on."""

import json
import os
import struct
import zlib

import numpy as np

from tiny_gpt2 import _safetensors

LABELS = ["cat", "dog", "bird"]


def write_tiny_vit(folder, layers=2, heads=2, hidden=8, inner=16, image_size=16, patch=8, seed=5):
    """Writes the folder and returns it."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    E, F, p = hidden, inner, patch
    tokens = 1 + (image_size // patch) ** 2

    def values(*shape, scale=0.4, offset=0.0):
        return (offset + scale * rng.standard_normal(shape)).astype(np.float32)

    t = {}

    def linear(name, n_in, n_out):
        t[name + ".weight"] = values(n_out, n_in)
        t[name + ".bias"] = values(n_out, scale=0.1)

    def norm(name):
        t[name + ".weight"] = values(E, scale=0.1, offset=1.0)
        t[name + ".bias"] = values(E, scale=0.1)

    t["vit.embeddings.patch_embeddings.projection.weight"] = values(E, 3, p, p, scale=0.1)
    t["vit.embeddings.patch_embeddings.projection.bias"] = values(E, scale=0.1)
    t["vit.embeddings.cls_token"] = values(1, 1, E)
    t["vit.embeddings.position_embeddings"] = values(1, tokens, E, scale=0.2)
    for layer in range(layers):
        h = f"vit.encoder.layer.{layer}."
        for part in ("query", "key", "value"):
            linear(h + "attention.attention." + part, E, E)
        linear(h + "attention.output.dense", E, E)
        norm(h + "layernorm_before")
        linear(h + "intermediate.dense", E, F)
        linear(h + "output.dense", F, E)
        norm(h + "layernorm_after")
    norm("vit.layernorm")
    linear("classifier", E, len(LABELS))
    config = {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": E,
              "num_hidden_layers": layers, "num_attention_heads": heads, "intermediate_size": F,
              "hidden_act": "gelu", "layer_norm_eps": 1e-12, "image_size": image_size, "patch_size": p,
              "num_channels": 3, "qkv_bias": True, "encoder_stride": p,
              "id2label": {str(k): name for k, name in enumerate(LABELS)},
              "label2id": {name: k for k, name in enumerate(LABELS)}}
    preprocessor = {"do_normalize": True, "do_rescale": True, "do_resize": True,
                    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2,
                    "rescale_factor": 1.0 / 255.0, "size": {"height": image_size, "width": image_size},
                    "image_processor_type": "ViTImageProcessor"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
        json.dump(preprocessor, f, indent=2)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(_safetensors(t))
    return folder


def write_png(path, pixels):
    """pixels: uint8 [height, width, 3]. An 8-bit RGB PNG, unfiltered rows."""
    height, width, _ = pixels.shape

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + pixels[r].astype(np.uint8).tobytes() for r in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return path
