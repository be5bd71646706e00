"""attnscope from Python: save, show and render attention, run a model, write a scenario.

A pure-Python bridge that calls the attnscope binary (found through ``ATTNSCOPE_BIN``, else
on ``PATH``); it links nothing. numpy is required; torch tensors are accepted when torch
is installed. See docs/python.md.

    import attnscope
    attnscope.save(outputs.attentions, tokens, "run.npz")    # the files attnscope reads
    attnscope.heatmap(outputs.attentions, tokens, layer=3, head=5)  # inline PNG
    window = attnscope.show(outputs.attentions, tokens, layer=3, head=5)  # does not block
    result = attnscope.run("gpt2", "The cat sat on the mat")  # attnscope model
    path = attnscope.scenario(q, k, v, score="scaled_dot", path="mine.json")

Shapes accepted as attention (float, rows = queries, columns = keys):
    a tuple or list of [B, H, n, n] (Hugging Face ``outputs.attentions``) or of [H, n, n]
    [L, H, n, n]      layers, heads
    [L, B, H, n, n]   ``torch.stack(outputs.attentions)``
    [H, n, n]         one layer
    [n, n]            one matrix
A str or pathlib.Path is taken as an existing .npy / .npz file and used as it is.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

__all__ = [
    "AttnscopeError",
    "Heatmap",
    "Model",
    "RunResult",
    "find_binary",
    "heatmap",
    "run",
    "save",
    "scenario",
    "show",
]

__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]


class AttnscopeError(RuntimeError):
    """attnscope refused an input or could not be run; the message is its error line."""


# =======================================================================================
# The binary
# =======================================================================================


def find_binary() -> str:
    """The attnscope executable: $ATTNSCOPE_BIN if set, else ``attnscope`` on PATH."""
    explicit = os.environ.get("ATTNSCOPE_BIN")
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise AttnscopeError(f"ATTNSCOPE_BIN={explicit!r} is not an executable file")
        return explicit
    found = shutil.which("attnscope")
    if found is None:
        raise AttnscopeError(
            "cannot find the attnscope binary: install it (cmake --install, or the .deb) "
            "so that it is on PATH, or set ATTNSCOPE_BIN to its path"
        )
    return found


def _call(args: Sequence[str]) -> subprocess.CompletedProcess:
    """Runs attnscope with `args` and returns the finished process; raises AttnscopeError
    with attnscope's own error line when it exits with a non-zero code."""
    done = subprocess.run(
        [find_binary(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False
    )
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or (
            f"attnscope {' '.join(args[:1])} exited with code {done.returncode}"
        )
        raise AttnscopeError(message)
    return done


def _option_args(options: Dict[str, Any]) -> List[str]:
    """Keyword options as command-line options: ``color_scale="log"`` -> ``--color-scale
    log``, ``no_title=True`` -> ``--no-title`` (False and None leave it out),
    ``labels=False`` -> ``--labels off`` for the on/off options."""
    on_off = {"labels", "axis_labels"}
    args: List[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if name in on_off:
            args += [flag, "on" if value else "off"]
        elif value is True:
            args.append(flag)
        elif value is False or value is None:
            continue
        else:
            args += [flag, str(value)]
    return args


# =======================================================================================
# Arrays
# =======================================================================================


def _to_numpy(value: Any) -> np.ndarray:
    """A numpy array of float32 from a numpy array, a torch tensor (any device, any float
    dtype, with or without grad) or nested lists."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch.Tensor, without importing torch
        value = value.detach().cpu()
        if hasattr(value, "float"):
            value = value.float()
        value = value.numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise TypeError(f"attention must hold numbers, not {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _attention_arrays(attention: Any) -> Dict[str, np.ndarray]:
    """The arrays of the .npz for `attention` (see the module docstring), named so that
    attnscope reads them with no --layout: one array `attention` for [n, n], [H, n, n] and
    [L, H, n, n]; per-layer arrays layer_0 ... layer_{L-1} for a tuple of layers and for
    [L, B, H, n, n] (attnscope refuses a 5-D array without a layout)."""
    if isinstance(attention, (tuple, list)) and attention and not np.isscalar(attention[0]):
        first = _to_numpy(attention[0])
        if first.ndim not in (2, 3, 4):
            raise ValueError(
                "each layer of an attention tuple must be [B, H, n, n], [H, n, n] or [n, n], "
                f"not {list(first.shape)}"
            )
        layers = {}
        for index, layer in enumerate(attention):
            array = first if index == 0 else _to_numpy(layer)
            if array.shape != first.shape:
                raise ValueError(
                    f"layer {index} has shape {list(array.shape)}, layer 0 {list(first.shape)}: "
                    "all layers must have the same shape"
                )
            layers[f"layer_{index}"] = array
        return layers
    array = _to_numpy(attention)
    if array.ndim in (2, 3, 4):
        return {"attention": array}
    if array.ndim == 5:
        return {f"layer_{index}": np.ascontiguousarray(array[index]) for index in range(len(array))}
    raise ValueError(
        "attention must be [n, n], [H, n, n], [L, H, n, n], [L, B, H, n, n] or a tuple of "
        f"[B, H, n, n] layers, not an array of shape {list(array.shape)}"
    )


def _token_side_files(path: pathlib.Path) -> List[pathlib.Path]:
    stem = path.with_suffix("")
    return [stem.with_name(stem.name + ".tokens.json"), stem.with_name(stem.name + ".tokens.txt")]


def save(attention: Any, tokens: Optional[Sequence[Any]], path: PathLike) -> str:
    """Writes `attention` as an .npz that attnscope opens with no option, and the tokens as
    its side file PATH_STEM.tokens.json (a JSON list of n_k strings; None = no labels, and
    an old side file is removed). Returns the path of the .npz.

    attention: see the module docstring; values are stored as float32.
    tokens:    n_k labels (str() of each), e.g. tokenizer.convert_ids_to_tokens(ids).
    path:      ends with .npz (added when there is no suffix).
    """
    target = pathlib.Path(path)
    if target.suffix == "":
        target = target.with_suffix(".npz")
    if target.suffix.lower() != ".npz":
        raise ValueError(f"{target}: save writes an .npz file (the suffix is {target.suffix!r})")
    arrays = _attention_arrays(attention)
    keys = next(iter(arrays.values())).shape[-1]
    queries = next(iter(arrays.values())).shape[-2]
    labels = None
    if tokens is not None:
        labels = [str(t) for t in tokens]
        if len(labels) != keys:
            raise ValueError(
                f"{len(labels)} tokens for an attention of {queries} queries x {keys} keys: "
                f"give one token per key ({keys})"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    np.savez(target, **arrays)
    json_side, txt_side = _token_side_files(target)
    for stale in (json_side, txt_side):
        if stale.exists():
            stale.unlink()
    if labels is not None:
        json_side.write_text(json.dumps(labels, ensure_ascii=False), encoding="utf-8")
    return str(target)


def _file_for(attention: Any, tokens: Optional[Sequence[Any]], folder: Optional[str] = None) -> str:
    """`attention` itself when it is a path, else a new .npz in a fresh temporary folder."""
    if isinstance(attention, (str, os.PathLike)):
        if tokens is not None:
            raise ValueError("tokens are read from the file's side file when attention is a path")
        return os.fspath(attention)
    folder = folder or tempfile.mkdtemp(prefix="attnscope-")
    return save(attention, tokens, os.path.join(folder, "attention.npz"))


def _selection_args(layer: Optional[int], head: Any, batch: Optional[int]) -> List[str]:
    args: List[str] = []
    if layer is not None:
        args += ["--layer", str(layer)]
    if head is not None:
        args += ["--head", str(head)]
    if batch is not None:
        args += ["--batch", str(batch)]
    return args


# =======================================================================================
# Inline heatmaps
# =======================================================================================


class Heatmap:
    """One exported heatmap. A notebook shows it inline (``_repr_png_``); ``png`` holds the
    bytes `attnscope export` wrote, and ``save`` writes them to a file."""

    def __init__(self, png: bytes, source: str, args: List[str]):
        self.png = png
        self.source = source  # the attention file it was exported from (None: temporary)
        self.args = args  # the export command's arguments (without --out)

    def _repr_png_(self) -> bytes:
        return self.png

    def save(self, path: PathLike) -> str:
        """Writes the PNG to `path` and returns it."""
        pathlib.Path(path).write_bytes(self.png)
        return os.fspath(path)

    def __repr__(self) -> str:
        return f"<attnscope.Heatmap {len(self.png)} bytes: attnscope {' '.join(self.args)}>"


def heatmap(
    attention: Any,
    tokens: Optional[Sequence[Any]] = None,
    layer: Union[int, str] = 0,
    head: Union[int, str] = 0,
    batch: Optional[int] = None,
    **export_options: Any,
) -> Heatmap:
    """One head (or head="mean"/"max", layer="rollout") as the PNG `attnscope export`
    writes, returned as a Heatmap that a notebook shows inline.

    export_options: the options of `attnscope export --help`, with _ for -:
    colormap="magma", color_scale="log", digits=2, scale=2, vmin=0, vmax=1, labels=False,
    no_colorbar=True, grid=True, ...
    """
    with tempfile.TemporaryDirectory(prefix="attnscope-") as folder:
        source = _file_for(attention, tokens, folder)
        out = os.path.join(folder, "heatmap.png")
        args = ["export", source, *_selection_args(None if export_options.get("grid") else layer,
                                                   None if export_options.get("grid") else head,
                                                   batch)]
        args += _option_args(export_options)
        _call([*args, "--out", out])
        png = pathlib.Path(out).read_bytes()
    if not isinstance(attention, (str, os.PathLike)):  # the temporary file is gone now
        args[1] = "(temporary .npz)"
        source = None
    return Heatmap(png, source, args)


# =======================================================================================
# The window
# =======================================================================================


def show(
    attention: Any,
    tokens: Optional[Sequence[Any]] = None,
    layer: Optional[int] = None,
    head: Optional[int] = None,
    batch: Optional[int] = None,
    view: Optional[str] = None,
) -> subprocess.Popen:
    """Opens the attnscope window on `attention` and returns at once with its process
    (subprocess.Popen: .poll(), .terminate(), .wait(); .log_path names the file that gets
    the window's messages). The attention is written to a temporary .npz that stays for the
    window; a path is opened as it is. layer, head: the head shown first (both or
    neither); view: heatmap | head | text | focus | compare."""
    if (layer is None) != (head is None):
        raise ValueError("give both layer and head, or neither")
    folder = tempfile.mkdtemp(prefix="attnscope-")
    source = _file_for(attention, tokens, folder)
    args = ["open", source]
    if layer is not None:
        args += ["--select", f"{layer},{head}"]
    if batch is not None:
        args += ["--batch", str(batch)]
    if view is not None:
        args += ["--view", view]
    # The window's messages go to a file, not a pipe: a pipe nobody reads would fill up and
    # stop the window.
    log_path = os.path.join(folder, "window.log")
    with open(log_path, "wb") as log:
        window = subprocess.Popen(
            [find_binary(), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # the notebook's interrupt does not close the window
        )
    window.log_path = log_path  # what attnscope printed (e.g. why it exited with code 2)
    return window


# =======================================================================================
# Models and scenarios
# =======================================================================================


class RunResult:
    """What `attnscope model` wrote: attention float32 [layers, heads, n, n] (row = query,
    causal), token_ids int64 [n], tokens (each token's text), and with predict=K the K most
    probable next tokens (a list of {"id", "text", "probability", "logit"})."""

    def __init__(self, attention: np.ndarray, token_ids: np.ndarray, tokens: List[str],
                 next_tokens: Optional[List[Dict[str, Any]]], path: Optional[str]):
        self.attention = attention
        self.token_ids = token_ids
        self.tokens = tokens
        self.next = next_tokens
        self.path = path  # the .npz, when out= was given
        self.prediction = None  # predict=K: the whole JSON (an encoder's "masked", ...)
        self.logits = None      # Model.run(logits=True): float32 [n, V]
        self.residuals = None   # Model.run(residuals=True): float32 [layers + 1, n, E]
        self.arrays = {}        # every array of the .npz (Model.run: mechanisms too)

    def __repr__(self) -> str:
        return (f"<attnscope.RunResult attention {list(self.attention.shape)}, "
                f"{len(self.tokens)} tokens>")


def run(model_dir: PathLike, text: str, predict: Optional[int] = None,
        out: Optional[PathLike] = None) -> RunResult:
    """Runs a model on `text` with `attnscope model` (CPU, offline) and returns its arrays
    (RunResult). model_dir: a Hugging Face model folder of any family attnscope runs, or a
    GGUF file (llama.cpp's, quantized or not; docs/models.md). out: also keep the .npz (and OUT.tokens.json) there;
    predict: the K most probable next tokens."""
    with tempfile.TemporaryDirectory(prefix="attnscope-") as folder:
        path = os.fspath(out) if out is not None else os.path.join(folder, "run.npz")
        args = ["model", os.fspath(model_dir), "--text=" + text, "--out", path]
        if predict is not None:
            args += ["--predict", str(predict)]
        done = _call(args)
        with np.load(path) as arrays:
            attention = arrays["attention"]
            token_ids = arrays["token_ids"]
        stem = pathlib.Path(path).with_suffix("")
        tokens_file = stem.with_name(stem.name + ".tokens.json")
        tokens = json.loads(tokens_file.read_text(encoding="utf-8"))
        prediction = json.loads(done.stdout) if predict is not None else None
    # the next tokens of a decoder, the labels of a vision model, an encoder's masked positions
    next_tokens = None
    if prediction is not None:
        next_tokens = prediction.get("next", prediction.get("labels", prediction.get("masked")))
    result = RunResult(attention, token_ids, tokens, next_tokens, os.fspath(out) if out else None)
    result.prediction = prediction
    return result


def _json_value(value: Any, field: str) -> Any:
    """Arrays and tensors as nested lists of floats whose text reads back as the same
    float32 (attnscope reads numbers as float32); everything else unchanged. NaN and inf
    (which JSON cannot hold) raise ValueError naming `field`."""
    if hasattr(value, "detach") or isinstance(value, np.ndarray):
        array = _to_numpy(value)
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{field}: NaN or inf values cannot be written to a scenario file")
        # Each float32 as the double of its shortest text (np.float32(0.1) -> 0.1, written
        # "0.1"), which attnscope parses into the same float32.
        shortest = np.array([float(str(v)) for v in array.ravel()], dtype=np.float64)
        return shortest.reshape(array.shape).tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, dict):
        return {k: _json_value(v, f"{field}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)) and value and not isinstance(value[0], str):
        return [_json_value(v, field) for v in value]
    return value


def scenario(queries: Any, keys: Any = None, values: Any = None,
             path: Optional[PathLike] = None, check: bool = True, **options: Any) -> str:
    """Writes a scenario file (docs/scenarios.md) from arrays and returns its path.

    queries [n_q, d], keys [n_k, d], values [n_k, d_v] (values default to the keys). With
    keys=None it is self attention over `queries` (the file's `inputs`). options are fields
    of the file, as named there: score="scaled_dot", heads=2, mask="causal",
    temperature=0.5, query_labels=[...], key_labels=[...], labels=[...], name="...",
    in_proj_weight=..., ... Arrays and tensors may be given for any matrix field.
    path: where to write (default: a new temporary file). check: run `attnscope compute`
    on it, so a field attnscope rejects raises AttnscopeError naming it.
    """
    document: Dict[str, Any] = {"version": 1}
    if keys is None:
        if values is not None:
            raise ValueError("values need keys (self attention takes one matrix, queries)")
        document["inputs"] = _json_value(queries, "queries")
    else:
        document["queries"] = _json_value(queries, "queries")
        document["keys"] = _json_value(keys, "keys")
        if values is not None:
            document["values"] = _json_value(values, "values")
    for name, value in options.items():
        document[name] = _json_value(value, name)
    for name in ("inputs", "queries", "keys", "values"):
        if name in document and (not isinstance(document[name], list) or
                                 not document[name] or not isinstance(document[name][0], list)):
            raise ValueError(f"{name} must be a matrix [rows, width] (a single row as [[...]])")
    if path is None:
        handle, path = tempfile.mkstemp(prefix="attnscope-", suffix=".json")
        os.close(handle)
    pathlib.Path(path).write_text(json.dumps(document, allow_nan=False), encoding="utf-8")
    if check:
        _call(["compute", os.fspath(path), "--out", os.devnull])
    return os.fspath(path)


from .session import Model  # noqa: E402  (it uses the names above)
