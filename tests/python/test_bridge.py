"""The Python bridge (python/attnscope) against the attnscope binary (ATTNSCOPE_BIN).

Run by ctest under Debian's /usr/bin/python3 (numpy; torch where present):
    ATTNSCOPE_BIN=build/attnscope PYTHONPATH=python python3 tests/python/test_bridge.py
Each test compares what the bridge wrote or returned with what the binary itself reads or
writes: `attnscope info` and CSV exports for save(), `attnscope export` for heatmap(),
`attnscope model --out` for run(), `attnscope compute` for scenario().
"""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import attnscope

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_gpt2 import write_tiny_gpt2  # noqa: E402

try:
    import torch
except ImportError:  # the tests that need it are skipped, the others run
    torch = None

BIN = os.environ["ATTNSCOPE_BIN"]


def attnscope_cli(*args):
    done = subprocess.run([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise AssertionError(f"attnscope {' '.join(args)}: {done.stderr.decode()}")
    return done.stdout


def info(path):
    return json.loads(attnscope_cli("info", path))["attention"]


def exported_head(path, layer, head, batch=None):
    """One head as attnscope reads it: its CSV export, as float32 [n_q, n_k], and the key
    labels of the header row."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "head.csv")
        args = ["export", path, "--layer", str(layer), "--head", str(head), "--out", out]
        if batch is not None:
            args += ["--batch", str(batch)]
        attnscope_cli(*args)
        with open(out, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    keys = rows[0][1:]
    values = np.array([[float(v) for v in row[1:]] for row in rows[1:]], dtype=np.float32)
    return values, keys


def softmax_rows(scores):
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)


def random_attention(shape, seed):
    """Row-stochastic random attention of `shape` (last two dims n_q x n_k)."""
    rng = np.random.default_rng(seed)
    return softmax_rows(rng.standard_normal(shape) * 2).astype(np.float32)


class Scratch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attnscope-pytest-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)


class SaveRoundTrip(Scratch):
    """save() -> `attnscope info` (shape, layout, labels) and the values of every head."""

    tokens = ["The", " cat", " sat", " on", " the"]

    def check(self, path, expected_lhqk, tokens, batch=None):
        """expected_lhqk: the [L, H, n_q, n_k] array attnscope must read."""
        L, H, nq, nk = expected_lhqk.shape
        read = info(path)
        self.assertEqual(read["shape"], [L, H, nq, nk])
        self.assertEqual(read["tokens"] is not None, tokens is not None)
        for layer in range(L):
            for head in range(H):
                values, keys = exported_head(path, layer, head, batch)
                np.testing.assert_array_equal(values, expected_lhqk[layer, head])
                self.assertEqual(keys, tokens if tokens is not None else [str(i) for i in range(nk)])
        return read

    def test_hugging_face_tuple_of_batch_layers(self):
        layers = tuple(random_attention((2, 3, 5, 5), seed) for seed in range(4))  # L=4, B=2, H=3
        path = attnscope.save(layers, self.tokens, self.path("hf.npz"))
        read = self.check(path, np.stack([a[0] for a in layers]), self.tokens)
        self.assertEqual(read["arrays_used"], [f"layer_{i}" for i in range(4)])
        self.assertEqual(read["batch_size"], 2)
        # The second item of the batch, chosen when reading (not when saving).
        values, _ = exported_head(path, 3, 2, batch=1)
        np.testing.assert_array_equal(values, layers[3][1, 2])

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_tuple_as_from_a_model(self):
        generator = torch.Generator().manual_seed(3)
        layers = tuple(torch.softmax(torch.randn(1, 2, 5, 5, generator=generator), dim=-1)
                       .requires_grad_() for _ in range(3))
        path = attnscope.save(layers, self.tokens, self.path("torch.npz"))
        expected = np.stack([t.detach().numpy()[0] for t in layers]).astype(np.float32)
        self.check(path, expected, self.tokens)

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_bfloat16_stacked_tensor(self):
        stacked = torch.softmax(torch.randn(2, 1, 2, 4, 4), dim=-1).to(torch.bfloat16)
        path = attnscope.save(stacked, None, self.path("bf16.npz"))
        self.check(path, stacked.float().numpy()[:, 0], None)

    def test_layers_heads_array(self):
        attention = random_attention((3, 2, 4, 5), 7)  # n_q 4 < n_k 5: decoding with a cache
        path = attnscope.save(attention, self.tokens, self.path("lhqk.npz"))
        self.check(path, attention, self.tokens)

    def test_layers_batch_heads_array(self):
        attention = random_attention((2, 3, 2, 5, 5), 8)  # [L, B, H, n, n]
        path = attnscope.save(attention, self.tokens, self.path("lbhqk.npz"))
        read = self.check(path, attention[:, 0], self.tokens)
        self.assertEqual(read["batch_size"], 3)
        values, _ = exported_head(path, 1, 1, batch=2)
        np.testing.assert_array_equal(values, attention[1, 2, 1])

    def test_single_matrix_and_no_tokens(self):
        matrix = random_attention((5, 5), 9)
        side = self.path("one.tokens.json")
        with open(side, "w") as f:
            json.dump(["stale"], f)  # an old side file with the wrong count is removed
        path = attnscope.save(matrix, None, self.path("one"))
        self.assertEqual(path, self.path("one.npz"))
        self.assertFalse(os.path.exists(side))
        self.check(path, matrix[None, None], None)

    def test_heads_array(self):
        attention = random_attention((4, 3, 3), 10)
        path = attnscope.save(attention, ["a", "b", "c"], self.path("hqk.npz"))
        self.check(path, attention[None], ["a", "b", "c"])

    def test_bad_inputs_name_the_problem(self):
        with self.assertRaisesRegex(ValueError, "3 tokens .* one token per key \\(5\\)"):
            attnscope.save(random_attention((5, 5), 1), ["a", "b", "c"], self.path("x.npz"))
        with self.assertRaisesRegex(ValueError, "not an array of shape \\[5\\]"):
            attnscope.save(np.ones(5), None, self.path("x.npz"))
        with self.assertRaisesRegex(ValueError, "layer 1 has shape \\[1, 2, 4, 4\\]"):
            attnscope.save((np.ones((1, 2, 5, 5)), np.ones((1, 2, 4, 4))), None, self.path("x.npz"))
        with self.assertRaisesRegex(ValueError, "writes an .npz"):
            attnscope.save(np.ones((2, 2)), None, self.path("x.npy"))


class Heatmaps(Scratch):
    def test_repr_png_is_the_exported_png(self):
        attention = random_attention((2, 3, 5, 5), 11)
        tokens = ["a", "b", "c", "d", "e"]
        shown = attnscope.heatmap(attention, tokens, layer=1, head=2, colormap="magma",
                                  digits=2, no_colorbar=True)
        png = shown._repr_png_()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        path = attnscope.save(attention, tokens, self.path("a.npz"))
        out = self.path("expected.png")
        attnscope_cli("export", path, "--layer", "1", "--head", "2", "--colormap", "magma",
                      "--digits", "2", "--no-colorbar", "--out", out)
        with open(out, "rb") as f:
            self.assertEqual(png, f.read())
        saved = shown.save(self.path("saved.png"))
        with open(saved, "rb") as f:
            self.assertEqual(f.read(), png)
        # Another head gives another picture.
        self.assertNotEqual(attnscope.heatmap(attention, tokens, layer=0, head=0).png, png)

    def test_an_error_of_attnscope_is_raised_with_its_message(self):
        with self.assertRaisesRegex(attnscope.AttnscopeError, "--layer.*out of range|layer 5"):
            attnscope.heatmap(random_attention((2, 1, 3, 3), 1), None, layer=5, head=0)


class ModelRuns(Scratch):
    def test_run_returns_the_arrays_of_attnscope_model(self):
        model = write_tiny_gpt2(self.path("tiny"))
        text = "the cat sat"
        result = attnscope.run(model, text, predict=3)
        npz = self.path("direct.npz")
        attnscope_cli("model", model, "--text", text, "--out", npz)
        with np.load(npz) as direct:
            np.testing.assert_array_equal(result.attention, direct["attention"])
            np.testing.assert_array_equal(result.token_ids, direct["token_ids"])
        # th e | Ġ c a t | Ġ s a t: 10 tokens (one merge, "t h")
        self.assertEqual(result.attention.shape, (2, 2, 10, 10))
        self.assertEqual(result.tokens[:2], ["th", "e"])
        self.assertEqual(result.attention.dtype, np.float32)
        with open(self.path("direct.tokens.json"), encoding="utf-8") as f:
            self.assertEqual(result.tokens, json.load(f))
        self.assertEqual("".join(result.tokens), text)
        # Causal, and every row sums to 1.
        self.assertEqual(float(np.triu(result.attention, k=1).max()), 0.0)
        np.testing.assert_allclose(result.attention.sum(axis=-1), 1.0, rtol=1e-5)
        self.assertEqual(len(result.next), 3)
        probabilities = [n["probability"] for n in result.next]
        self.assertEqual(probabilities, sorted(probabilities, reverse=True))

    def test_run_accepts_a_gguf_file(self):
        # a random llama GGUF file (Q8_0, 1 layer, 2 heads; tools/gen_gguf.cpp) with its own
        # SentencePiece-style vocabulary: run() gives what `attnscope model FILE.gguf` writes
        gen = os.environ.get("ATTNSCOPE_GEN_GGUF")
        if not gen:
            self.skipTest("ATTNSCOPE_GEN_GGUF (build/gen_gguf) not set")
        model = self.path("micro-q8_0.gguf")
        subprocess.run([gen, "--preset", "micro", "--type", "q8_0", "--out", model],
                       check=True, stdout=subprocess.PIPE)
        result = attnscope.run(model, "hi there", predict=2)
        npz = self.path("direct_gguf.npz")
        attnscope_cli("model", model, "--text", "hi there", "--out", npz)
        with np.load(npz) as direct:
            np.testing.assert_array_equal(result.attention, direct["attention"])
            np.testing.assert_array_equal(result.token_ids, direct["token_ids"])
        n = len(result.token_ids)
        self.assertEqual(result.attention.shape, (1, 2, n, n))
        self.assertEqual(float(np.triu(result.attention, k=1).max()), 0.0)
        np.testing.assert_allclose(result.attention.sum(axis=-1), 1.0, rtol=1e-5)
        self.assertEqual(len(result.next), 2)

    def test_a_bad_folder_is_an_error_naming_it(self):
        with self.assertRaisesRegex(attnscope.AttnscopeError, "nowhere"):
            attnscope.run(self.path("nowhere"), "hi")


class Scenarios(Scratch):
    def test_scenario_computes_what_numpy_computes(self):
        rng = np.random.default_rng(5)
        q = rng.standard_normal((3, 4)).astype(np.float32)
        k = rng.standard_normal((5, 4)).astype(np.float32)
        v = rng.standard_normal((5, 2)).astype(np.float32)
        path = attnscope.scenario(q, k, v, path=self.path("s.json"), score="scaled_dot",
                                  query_labels=["x", "y", "z"], name="from numpy")
        result = json.loads(attnscope_cli("compute", path))
        head = result["heads"][0] if "heads" in result else result
        weights = np.array(head["weights"], dtype=np.float64)
        expected = softmax_rows((q.astype(np.float64) @ k.T.astype(np.float64)) / 2.0)
        np.testing.assert_allclose(weights, expected, atol=1e-6)
        context = np.array(head["context"], dtype=np.float64)
        np.testing.assert_allclose(context, expected @ v.astype(np.float64), atol=1e-5)
        with open(path) as f:
            document = json.load(f)
        # Each number reads back as the same float32.
        np.testing.assert_array_equal(np.array(document["queries"], dtype=np.float32), q)

    def test_self_attention_and_a_rejected_field(self):
        x = np.eye(3, dtype=np.float32)
        path = attnscope.scenario(x, path=self.path("self.json"), mask="causal")
        with open(path) as f:
            self.assertEqual(json.load(f)["inputs"], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
        with self.assertRaisesRegex(attnscope.AttnscopeError, "scroe"):
            attnscope.scenario(x, path=self.path("bad.json"), scroe="dot")


class Binary(unittest.TestCase):
    def test_missing_binary_says_how_to_fix_it(self):
        saved = os.environ["ATTNSCOPE_BIN"]
        os.environ["ATTNSCOPE_BIN"] = "/nonexistent/attnscope"
        try:
            with self.assertRaisesRegex(attnscope.AttnscopeError, "ATTNSCOPE_BIN"):
                attnscope.find_binary()
        finally:
            os.environ["ATTNSCOPE_BIN"] = saved


if __name__ == "__main__":
    unittest.main(verbosity=2)
