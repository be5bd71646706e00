"""attnscope.Model: a model kept loaded in one attnscope process (``attnscope serve``).

    import attnscope
    with attnscope.Model("path/to/gpt2") as m:          # a folder of any family, or a .gguf
        r = m.run(text="When Mary and John went to the store")
        r.attention            # float32 [layers, heads, n, n]
        r.logits               # float32 [n, V] with logits=True (decoders)
        m.run(ids=[464, 3797, 3332])                     # token ids, no tokenizer needed
        m.ablate(["9.6", (9, 9)], text="...", mode="zero")   # analyze --ablate
        m.patch(clean, corrupt, " Mary", " John", what="heads")  # patch: effect [L, H]
        m.lens(text="...", top=5)                        # lens
        m.head_scores(text="...")                        # heads: {score: [L, H]}

The first call loads the model; later calls reuse it while its files are unchanged. Every
call is the command line's command (the same numbers as ``attnscope model ... --out``); an
input attnscope refuses raises AttnscopeError with attnscope's one-line message. See
docs/python.md.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import subprocess
import tempfile
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import AttnscopeError, RunResult, find_binary

Head = Union[str, Tuple[int, int]]


def _ids_arg(ids: Sequence[int]) -> str:
    values = [int(i) for i in np.asarray(ids).ravel()]
    return ",".join(str(v) for v in values)


def _bos_args(bos: Optional[bool]) -> List[str]:
    return [] if bos is None else (["--bos"] if bos else ["--no-bos"])


def _heads_arg(heads: Sequence[Head]) -> str:
    items = []
    for h in heads:
        items.append(h if isinstance(h, str) else f"{int(h[0])}.{int(h[1])}")
    return ",".join(items)


def _read_matrix_csv(path: str) -> Tuple[np.ndarray, List[str], List[str]]:
    """A labelled matrix CSV (corner cell, column labels; row label, values)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    columns = rows[0][1:]
    labels = [r[0] for r in rows[1:]]
    values = np.array([[float(v) for v in r[1:]] for r in rows[1:]], dtype=np.float64)
    return values, labels, columns


class Model:
    """A model folder (any family attnscope runs) or a GGUF file, loaded once in a
    persistent ``attnscope serve`` process. Thread-safe (calls are serialised); close() or
    a ``with`` block ends the process."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], binary: Optional[str] = None):
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise AttnscopeError(f"attnscope: {self.path}: no such model folder or file")
        self._binary = binary or find_binary()
        self._folder = tempfile.TemporaryDirectory(prefix="attnscope-session-")
        self._lock = threading.Lock()
        self._count = 0
        self._files = itertools.count(1)
        self._process = subprocess.Popen([self._binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1)
        self.last = None  # the last answer: {"code", "out", "err", "kept_model", "ms"}

    # -- the pipe ---------------------------------------------------------------------------

    def _call(self, args: List[str]) -> Dict[str, Any]:
        """Runs one command in the serve process; returns its answer, or raises
        AttnscopeError with attnscope's message when the command failed."""
        with self._lock:
            if self._process is None:
                raise AttnscopeError("attnscope: this Model is closed")
            self._count += 1
            request = json.dumps({"args": args, "id": self._count})
            try:
                self._process.stdin.write(request + "\n")
                self._process.stdin.flush()
                line = self._process.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            if not line:
                err = self._process.stderr.read() if self._process.poll() is not None else ""
                self._process = None
                raise AttnscopeError(f"attnscope: the serve process ended unexpectedly {err.strip()}".strip())
            answer = json.loads(line)
        self.last = answer
        if answer["code"] != 0:
            message = answer["err"].strip().splitlines()
            raise AttnscopeError(message[-1] if message else f"attnscope exited with code {answer['code']}")
        return answer

    def _file(self, name: str) -> str:
        return os.path.join(self._folder.name, f"{next(self._files)}-{name}")

    def close(self) -> None:
        """Ends the serve process (the model is unloaded) and removes the temporary files."""
        with self._lock:
            if self._process is not None:
                self._process.stdin.close()
                self._process.wait(timeout=30)
                self._process.stdout.close()
                self._process.stderr.close()
                self._process = None
        self._folder.cleanup()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"<attnscope.Model {self.path!r}>"

    # -- inputs -----------------------------------------------------------------------------

    def _input_args(self, text: Optional[str], ids: Optional[Sequence[int]], image: Optional[str],
                    bos: Optional[bool]) -> List[str]:
        given = [x is not None for x in (text, ids, image)]
        if sum(given) != 1:
            raise ValueError("give exactly one of text=, ids= and image=")
        if text is not None:
            args = ["--text=" + text]
        elif ids is not None:
            args = ["--ids", _ids_arg(ids)]
        else:
            args = ["--image", os.fspath(image)]
        return args + _bos_args(bos)

    # -- the commands -----------------------------------------------------------------------

    def run(self, text: Optional[str] = None, ids: Optional[Sequence[int]] = None,
            image: Optional[str] = None, bos: Optional[bool] = None, predict: Optional[int] = None,
            logits: bool = False, residuals: bool = False,
            mechanisms: Optional[Sequence[str]] = None) -> RunResult:
        """`attnscope model PATH ... --out` on one input: RunResult with attention float32
        [layers, heads, n, n], token_ids, tokens, and: logits float32 [n, V] (logits=True; a
        decoder), residuals float32 [layers + 1, n, E] (residuals=True; a decoder: the stream
        entering each block, then after the last), the mechanisms' arrays (mechanisms=["norm",
        "flow", ...]) in r.arrays, and with predict=K the prediction (r.next: the next
        tokens of a decoder, the labels of a vision model; r.prediction: the whole JSON,
        e.g. an encoder's "masked")."""
        out = self._file("run.npz")
        args = ["model", self.path] + self._input_args(text, ids, image, bos) + ["--out", out]
        if predict is not None:
            args += ["--predict", str(int(predict))]
        if logits:
            args.append("--logits")
        if residuals:
            args.append("--residuals")
        if mechanisms:
            args += ["--mechanisms", ",".join(mechanisms)]
        answer = self._call(args)
        try:
            with np.load(out) as arrays:
                data = {name: arrays[name] for name in arrays.files}
            tokens_file = out[: -len(".npz")] + ".tokens.json"
            with open(tokens_file, encoding="utf-8") as f:
                tokens = json.load(f)
        finally:
            for path in (out, out[: -len(".npz")] + ".tokens.json"):
                if os.path.exists(path):
                    os.remove(path)
        prediction = json.loads(answer["out"]) if predict is not None else None
        next_tokens = None
        if prediction is not None:
            next_tokens = prediction.get("next", prediction.get("labels", prediction.get("masked")))
        result = RunResult(data["attention"], data["token_ids"], tokens, next_tokens, None)
        result.prediction = prediction
        result.logits = data.get("logits")
        result.residuals = data.get("residuals")
        result.arrays = data
        return result

    def runs(self, prompts: Sequence[Any], **options: Any) -> List[RunResult]:
        """run() over a batch: each item a text (str), a list of ids, or a dict of run()'s
        keyword arguments. One model load for all of them."""
        results = []
        for p in prompts:
            if isinstance(p, str):
                results.append(self.run(text=p, **options))
            elif isinstance(p, dict):
                results.append(self.run(**{**options, **p}))
            else:
                results.append(self.run(ids=p, **options))
        return results

    def ablate(self, heads: Sequence[Head], text: Optional[str] = None, image: Optional[str] = None,
               mode: str = "zero", predict: int = 5, bos: Optional[bool] = None) -> Dict[str, Any]:
        """`attnscope analyze PATH --ablate ...`: heads as "L.H" strings or (layer, head)
        pairs; mode "zero" or "mean". Returns analyze's JSON (clean and ablated predictions,
        losses, delta_logits)."""
        args = ["analyze", self.path] + self._input_args(text, None, image, bos)
        args += ["--ablate", _heads_arg(heads), "--mode", mode, "--predict", str(int(predict))]
        return json.loads(self._call(args)["out"])

    def patch(self, clean: Optional[str] = None, corrupt: Optional[str] = None, answer: Optional[str] = None,
              wrong: Optional[str] = None, what: str = "heads", bos: Optional[bool] = None,
              clean_image: Optional[str] = None, corrupt_image: Optional[str] = None,
              position: Optional[int] = None) -> Dict[str, Any]:
        """`attnscope patch`: what = "heads" ([L, H]), "resid" ([L+1, n]) or
        "heads-by-position" ([L·H, n]). A decoder takes clean and corrupt texts and both
        answer and wrong tokens; an encoder the two texts (fill-mask metric at the clean
        text's mask, or at `position`), answer and wrong optional; a vision transformer
        clean_image and corrupt_image (paths) instead of texts, answer and wrong as label
        names or indices, optional. Returns {"effect": array, "rows": labels, "columns":
        labels, and patch's JSON fields (clean_metric, corrupt_metric, tokens, bos, and for
        an encoder or ViT model_type, answer, wrong, position)}."""
        texts = clean is not None or corrupt is not None
        images = clean_image is not None or corrupt_image is not None
        if texts == images:
            raise ValueError("give clean= and corrupt= (texts) or clean_image= and corrupt_image= (images)")
        out = self._file("patch.csv")
        if texts:
            if clean is None or corrupt is None:
                raise ValueError("give both clean= and corrupt=")
            args = ["patch", self.path, "--clean=" + clean, "--corrupt=" + corrupt]
        else:
            if clean_image is None or corrupt_image is None:
                raise ValueError("give both clean_image= and corrupt_image=")
            args = ["patch", self.path, "--clean-image", os.fspath(clean_image),
                    "--corrupt-image", os.fspath(corrupt_image)]
        if answer is not None:
            args.append("--answer=" + str(answer))
        if wrong is not None:
            args.append("--wrong=" + str(wrong))
        if position is not None:
            args += ["--position", str(int(position))]
        args += ["--what", what, "--out", out] + _bos_args(bos)
        summary = json.loads(self._call(args)["out"])
        effect, rows, columns = _read_matrix_csv(out)
        os.remove(out)
        summary.update({"effect": effect, "rows": rows, "columns": columns})
        return summary

    def lens(self, text: str, top: int = 5, scale: str = "own", bos: Optional[bool] = None) -> Dict[str, Any]:
        """`attnscope lens`: {"tokens", "layers", "top": [layer][position][{"id", "text",
        "probability", "logit"}]} (scale "own" or "final": docs/analyses.md)."""
        out = self._file("lens.json")
        self._call(["lens", self.path, "--text=" + text, "--top", str(int(top)), "--scale", scale, "--out", out]
                   + _bos_args(bos))
        with open(out, encoding="utf-8") as f:
            result = json.load(f)
        os.remove(out)
        return result

    def head_scores(self, text: Optional[str] = None, image: Optional[str] = None,
                    scores: Optional[Sequence[str]] = None, bos: Optional[bool] = None) -> Dict[str, np.ndarray]:
        """`attnscope heads` on one prompt: {score name: float64 [layers, heads]}."""
        out = self._file("heads.csv")
        args = ["heads", self.path] + self._input_args(text, None, image, bos) + ["--out", out]
        if scores:
            args += ["--scores", ",".join(scores)]
        self._call(args)
        with open(out, newline="", encoding="utf-8") as f:
            rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
        os.remove(out)
        header, body = rows[0], rows[1:]
        layers = max(int(r[0]) for r in body) + 1
        heads = max(int(r[1]) for r in body) + 1
        table = {}
        for c, name in enumerate(header[2:], start=2):
            values = np.zeros((layers, heads))
            for r in body:
                values[int(r[0]), int(r[1])] = float(r[c])
            table[name] = values
        return table
