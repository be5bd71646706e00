"""The Python session (attnscope.Model, python/attnscope/session.py) against the binary
(ATTNSCOPE_BIN): each call equals the command line's own output for the same input, the
model stays loaded (the second run is a kept model, and fast), encoders and GGUF files run,
and attnscope's refusals raise AttnscopeError with its message. Run by ctest as
Python.Session (cmake/install.cmake), like test_bridge.py."""

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

import attnscope

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_bert import write_tiny_bert  # noqa: E402
from tiny_gpt2 import write_tiny_gpt2  # noqa: E402
from tiny_vit import write_png, write_tiny_vit  # noqa: E402

BIN = os.environ["ATTNSCOPE_BIN"]


def read_safetensors(path):
    """F32 tensors of a .safetensors file as numpy arrays (the tiny folders are F32)."""
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(length))
        data = f.read()
    return {name: np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], dtype="<f4").reshape(e["shape"])
            for name, e in header.items() if name != "__metadata__"}


def cli(*args):
    done = subprocess.run([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise AssertionError(f"attnscope {' '.join(args)}: {done.stderr.decode()}")
    return done.stdout.decode()


class Session(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="attnscope-session-test-")
        cls.gpt2 = write_tiny_gpt2(os.path.join(cls.scratch.name, "gpt2"))
        cls.bert = write_tiny_bert(os.path.join(cls.scratch.name, "bert"))
        cls.model = attnscope.Model(cls.gpt2)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()
        cls.scratch.cleanup()

    def path(self, name):
        return os.path.join(self.scratch.name, name)

    def test_run_ids_equals_model_out_and_the_second_call_is_kept_and_fast(self):
        ids = [5, 17, 3, 200, 42, 9]
        first = self.model.run(ids=ids, predict=3)
        npz = self.path("direct.npz")
        printed = json.loads(cli("model", self.gpt2, "--ids", ",".join(map(str, ids)), "--out", npz,
                                 "--predict", "3"))
        with np.load(npz) as direct:
            np.testing.assert_array_equal(first.attention, direct["attention"])
            np.testing.assert_array_equal(first.token_ids, direct["token_ids"])
        self.assertEqual(first.attention.shape, (2, 2, 6, 6))
        self.assertEqual(first.next, printed["next"])
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            again = self.model.run(ids=ids)
            times.append(time.perf_counter() - t0)
            self.assertTrue(self.model.last["kept_model"])
        np.testing.assert_array_equal(again.attention, first.attention)
        self.assertLess(sorted(times)[2], 0.05, f"median of 5 kept runs: {sorted(times)[2] * 1e3:.1f} ms")

    def test_logits_and_residuals(self):
        r = self.model.run(text="the cat", logits=True, residuals=True, predict=2)
        n = len(r.token_ids)
        self.assertEqual(r.logits.shape, (n, 258))
        self.assertEqual(r.residuals.shape, (3, n, 8))
        # the last row of the logits is the prediction's
        top = int(np.argmax(r.logits[-1]))
        self.assertEqual(top, r.next[0]["id"])
        self.assertAlmostEqual(float(r.logits[-1, top]), r.next[0]["logit"], places=4)
        # independently, from the checkpoint's own tensors: the stream entering block 0 is
        # wte[id] + wpe[position], and the logits are LN_f(stream after the last block)·wteᵀ
        w = read_safetensors(os.path.join(self.gpt2, "model.safetensors"))
        ids = r.token_ids.astype(int)
        np.testing.assert_allclose(r.residuals[0], w["wte.weight"][ids] + w["wpe.weight"][:n], rtol=0, atol=1e-6)
        x = r.residuals[-1].astype(np.float64)
        normed = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
        expected = (normed * w["ln_f.weight"] + w["ln_f.bias"]) @ w["wte.weight"].T.astype(np.float64)
        np.testing.assert_allclose(r.logits, expected, rtol=0, atol=1e-4 * np.abs(expected).max())

    def test_batches(self):
        results = self.model.runs(["the cat", [1, 2, 3], {"text": "sat", "bos": True}])
        self.assertEqual([len(r.token_ids) for r in results], [6, 3, 4])  # th e Ġ c a t
        self.assertEqual(int(results[2].token_ids[0]), 257)  # <|endoftext|> first with bos

    def test_analyses_equal_the_commands(self):
        ablated = self.model.ablate(["1.0", (0, 1)], text="the cat sat", mode="zero", predict=3)
        direct = json.loads(cli("analyze", self.gpt2, "--text", "the cat sat", "--ablate", "1.0,0.1",
                                "--mode", "zero", "--predict", "3"))
        self.assertEqual(ablated, direct)
        patched = self.model.patch("the cat", "the hat", "t", "e", what="heads")
        out = self.path("patch.csv")
        cli("patch", self.gpt2, "--clean", "the cat", "--corrupt", "the hat", "--answer", "t", "--wrong", "e",
            "--what", "heads", "--out", out)
        with open(out, newline="") as f:
            rows = list(csv.reader(f))
        np.testing.assert_array_equal(patched["effect"], np.array([[float(v) for v in r[1:]] for r in rows[1:]]))
        self.assertEqual(patched["effect"].shape, (2, 2))
        lens = self.model.lens("the cat", top=3)
        self.assertEqual(len(lens["top"]), 3)
        scores = self.model.head_scores(text="the cat sat on the mat")
        self.assertEqual(scores["prev"].shape, (2, 2))
        self.assertTrue(np.all((scores["sink"] >= 0) & (scores["sink"] <= 1)))

    def test_an_encoder_with_predict(self):
        with attnscope.Model(self.bert) as bert:
            r = bert.run(text="the [MASK] sat", predict=2)
            self.assertEqual(r.attention.shape[0:2], (2, 2))
            self.assertEqual(r.next, r.prediction["masked"])
            self.assertEqual(len(r.next[0]["next"]), 2)
            # the module-level run() too (it raised KeyError on an encoder's "masked")
            self.assertEqual(attnscope.run(self.bert, "the [MASK] sat", predict=2).next, r.next)
            with self.assertRaisesRegex(attnscope.AttnscopeError, "--logits.*decoders only"):
                bert.run(text="the cat", logits=True)

    def read_csv_matrix(self, path):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        return np.array([[float(v) for v in r[1:]] for r in rows[1:]])

    def test_patching_an_encoder_and_a_vision_transformer(self):
        # an encoder: the fill-mask metric at the clean text's mask, answer and wrong optional
        with attnscope.Model(self.bert) as bert:
            patched = bert.patch("the [MASK] sat", "a [MASK] sat", what="heads")
            out = self.path("bert_patch.csv")
            direct = json.loads(cli("patch", self.bert, "--clean", "the [MASK] sat", "--corrupt", "a [MASK] sat",
                                    "--what", "heads", "--out", out))
            np.testing.assert_array_equal(patched["effect"], self.read_csv_matrix(out))
            self.assertEqual(patched["effect"].shape, (2, 2))
            self.assertEqual(patched["clean_metric"], direct["clean_metric"])
            self.assertEqual(patched["model_type"], "bert")
            resid = bert.patch("the [MASK] sat", "a [MASK] sat", answer="cat", wrong="dog", what="resid")
            self.assertEqual(resid["effect"].shape, (3, 5))  # L + 1 rows x [CLS] the [MASK] sat [SEP]
        # a vision transformer: two pictures, the label metric (answer: the clean top label)
        vit_folder = write_tiny_vit(self.path("vit"))
        rng = np.random.default_rng(11)
        clean = write_png(self.path("clean.png"), rng.integers(0, 256, (16, 16, 3)))
        corrupt = write_png(self.path("corrupt.png"), rng.integers(0, 256, (16, 16, 3)))
        with attnscope.Model(vit_folder) as vit:
            for what, shape in (("heads", (2, 2)), ("resid", (3, 5)), ("heads-by-position", (4, 5))):
                patched = vit.patch(clean_image=clean, corrupt_image=corrupt, wrong="bird", what=what)
                out = self.path("vit_patch.csv")
                direct = json.loads(cli("patch", vit_folder, "--clean-image", clean, "--corrupt-image", corrupt,
                                        "--wrong", "bird", "--what", what, "--out", out))
                np.testing.assert_array_equal(patched["effect"], self.read_csv_matrix(out))
                self.assertEqual(patched["effect"].shape, shape)
                self.assertEqual(patched["answer"], direct["answer"])
                self.assertEqual(patched["wrong"]["label"], "bird")
            with self.assertRaisesRegex(ValueError, "clean_image= and corrupt_image="):
                vit.patch("the cat", "the hat", clean_image=clean, corrupt_image=corrupt)
            with self.assertRaisesRegex(ValueError, "both clean_image= and corrupt_image="):
                vit.patch(clean_image=clean)
            with self.assertRaisesRegex(attnscope.AttnscopeError, "--clean-image.*missing"):
                vit.patch("the cat", "the hat", what="heads")

    def test_errors_raise_with_the_message_and_the_session_goes_on(self):
        with self.assertRaisesRegex(attnscope.AttnscopeError, "option '--ids': item 2 has id 99999, outside the vocabulary"):
            self.model.run(ids=[5, 99999])
        with self.assertRaisesRegex(attnscope.AttnscopeError, "does not run inside serve"):
            self.model._call(["screenshot", "x.json", "--out", "x.png"])
        self.assertEqual(self.model.run(ids=[1, 2]).attention.shape, (2, 2, 2, 2))
        with self.assertRaises(attnscope.AttnscopeError):
            attnscope.Model(self.path("nowhere"))

    def test_a_changed_folder_is_loaded_again(self):
        folder = write_tiny_gpt2(self.path("changing"), seed=5)
        with attnscope.Model(folder) as m:
            before = m.run(ids=[1, 2, 3]).attention
            m.run(ids=[1, 2, 3])
            self.assertTrue(m.last["kept_model"])
            time.sleep(0.01)
            write_tiny_gpt2(folder, seed=6)  # new weights, same path
            after = m.run(ids=[1, 2, 3]).attention
            self.assertFalse(m.last["kept_model"])
            self.assertGreater(float(np.abs(after - before).max()), 1e-3)

    def test_a_gguf_file(self):
        gen = os.environ.get("ATTNSCOPE_GEN_GGUF")
        if not gen:
            self.skipTest("ATTNSCOPE_GEN_GGUF (build/gen_gguf) not set")
        path = self.path("micro.gguf")
        subprocess.run([gen, "--preset", "micro", "--type", "q8_0", "--out", path], check=True, stdout=subprocess.PIPE)
        with attnscope.Model(path) as m:
            r = m.run(text="hi there")
            npz = self.path("gguf.npz")
            cli("model", path, "--text", "hi there", "--out", npz)
            with np.load(npz) as direct:
                np.testing.assert_array_equal(r.attention, direct["attention"])


class Protocol(unittest.TestCase):
    def test_malformed_lines_are_answered_and_serve_goes_on(self):
        lines = "not json\n{\"args\": []}\n{\"args\": [\"--version\"], \"id\": 4}\n"
        done = subprocess.run([BIN, "serve"], input=lines.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(done.returncode, 0)
        answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
        self.assertEqual([a["code"] for a in answers], [2, 2, 0])
        self.assertIn("request line 1", answers[0]["err"])
        self.assertIn("is not JSON", answers[0]["err"])
        self.assertIn("request line 2", answers[1]["err"])
        self.assertEqual(answers[2]["id"], 4)
        self.assertTrue(answers[2]["out"].startswith("attnscope "))


if __name__ == "__main__":
    unittest.main(verbosity=2)
