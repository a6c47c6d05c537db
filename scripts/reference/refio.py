#!/usr/bin/python3
"""refio.py - file I/O for the PyTorch reference: HDF5 weights/inputs/outputs (docs/FORMATS.md,
'Parity and dump files') and a small self-written safetensors + config.json reader (spec 7.2)."""
import json
import os
import struct
import sys

import numpy as np

import refmodel


class FileError(Exception):
    pass


def _h5py():
    import h5py
    return h5py


def _attr(v):
    if isinstance(v, (bytes, np.bytes_)):
        return v.decode()
    if isinstance(v, np.ndarray) and v.shape == ():
        return v.item()
    if isinstance(v, np.ndarray) and v.size == 1:
        return v.reshape(()).item()
    if isinstance(v, np.generic):
        return v.item()
    return v


def read_h5_all(path):
    """All datasets of an HDF5 file as {name: ndarray}; nested groups are joined with '/'."""
    h5py = _h5py()
    out = {}
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise FileError("%s: cannot open as HDF5 (%s)" % (path, e))
    with f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]
        f.visititems(visit)
        attrs = {k: _attr(v) for k, v in f.attrs.items()}
    return out, attrs


def write_h5(path, datasets, attrs=None):
    """Write {name: ndarray or scalar}; a '/' in a name makes groups.  Written to a temporary
    name and renamed, so a crash never leaves a half file under the final name."""
    h5py = _h5py()
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        for k, v in (attrs or {}).items():
            if isinstance(v, str):
                f.attrs[k] = np.bytes_(v.encode())
            elif isinstance(v, float):
                f.attrs[k] = np.float64(v)
            elif isinstance(v, (bool, int, np.integer)):
                f.attrs[k] = np.int64(v)
            else:
                f.attrs[k] = v
        for k, v in datasets.items():
            f.create_dataset(k, data=np.asarray(v))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# safetensors (header: u64 little-endian length, JSON, then raw little-endian row-major data)
# ---------------------------------------------------------------------------------------------

_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
              "I8": "i1", "U8": "u1", "BOOL": "?"}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise FileError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise FileError("%s: header length %d exceeds file size %d" % (path, n, len(raw)))
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except ValueError as e:
        raise FileError("%s: header is not JSON (%s)" % (path, e))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = info.get("dtype")
        if dt == "BF16":
            b, e = info["data_offsets"]
            u = np.frombuffer(raw[base + b:base + e], dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32)
        elif dt in _ST_DTYPES:
            b, e = info["data_offsets"]
            if not (0 <= b <= e <= len(raw) - base):
                raise FileError("%s: tensor '%s' offsets [%d,%d) outside the data" % (path, name, b, e))
            arr = np.frombuffer(raw[base + b:base + e], dtype=_ST_DTYPES[dt])
        else:
            raise FileError("%s: tensor '%s' has unsupported dtype %s" % (path, name, dt))
        shape = tuple(info["shape"])
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise FileError("%s: tensor '%s' has %d elements for shape %s" % (path, name, arr.size, shape))
        out[name] = arr.reshape(shape).copy()
    return out


def config_from_hf(path):
    """config.json (spec 7.2) -> our config dict.  c2c is always on in DeBERTa; pos_att_type lists
    the position terms (a list or a '|' string); an explicit 'c2c' in it is accepted too."""
    with open(path) as f:
        j = json.load(f)
    if j.get("relative_attention") is not True:
        raise FileError("%s: relative_attention must be true" % path)
    if j.get("position_biased_input", True):
        raise FileError("%s: position_biased_input must be false (DeBERTa-V3)" % path)
    if not j.get("share_att_key", False):
        raise FileError("%s: share_att_key must be true" % path)
    if "layer_norm" not in str(j.get("norm_rel_ebd", "")):
        raise FileError("%s: norm_rel_ebd must contain layer_norm" % path)
    if j.get("hidden_act", "gelu") != "gelu":
        raise FileError("%s: hidden_act '%s' (only exact gelu)" % (path, j.get("hidden_act")))
    if int(j.get("type_vocab_size", 0)) != 0 or int(j.get("conv_kernel_size", 0)) != 0:
        raise FileError("%s: type_vocab_size and conv_kernel_size must be 0" % path)
    pat = j.get("pos_att_type", [])
    parts = pat.split("|") if isinstance(pat, str) else list(pat)
    if "c2c" not in parts:
        parts = ["c2c"] + parts
    cfg = {k: j[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                             "intermediate_size", "vocab_size", "max_position_embeddings") if k in j}
    cfg["attention_head_size"] = j.get("attention_head_size")
    cfg["position_buckets"] = j.get("position_buckets", -1)
    cfg["max_relative_positions"] = j.get("max_relative_positions", -1)
    cfg["layer_norm_eps"] = j.get("layer_norm_eps", 1e-7)
    cfg["pos_att_type"] = "|".join(parts)
    cfg["hidden_dropout_prob"] = j.get("hidden_dropout_prob", 0.1)
    cfg["attention_probs_dropout_prob"] = j.get("attention_probs_dropout_prob", 0.1)
    return refmodel.validate(cfg)


def _hf_paths(p):
    if os.path.isdir(p):
        return os.path.join(p, "model.safetensors"), os.path.join(p, "config.json")
    return p, os.path.join(os.path.dirname(os.path.abspath(p)), "config.json")


def read_hf(p):
    """A Hugging Face folder (or its model.safetensors) -> (cfg, {name: ndarray})."""
    st, cj = _hf_paths(p)
    if not os.path.exists(st):
        raise FileError("%s: no model.safetensors" % p)
    if not os.path.exists(cj):
        raise FileError("%s: no config.json next to the safetensors file" % p)
    return config_from_hf(cj), read_safetensors(st)


def is_hf(p):
    return os.path.isdir(p) or p.endswith(".safetensors")


def read_weights(path):
    """Weights file -> (cfg, {name: ndarray}).  HDF5 (config in root attributes) or HF folder."""
    if is_hf(path):
        return read_hf(path)
    if not os.path.exists(path):
        raise FileError("%s: no such file" % path)
    ds, attrs = read_h5_all(path)
    if attrs.get("format") == "deberta.c checkpoint":            # docs/FORMATS.md, Checkpoint
        attrs = parse_config_text(ds.get("config", b""), path)
        ds = {k[len("params/"):]: v for k, v in ds.items() if k.startswith("params/")}
    missing = [k for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                           "vocab_size", "max_position_embeddings") if k not in attrs]
    if missing:
        raise FileError("%s: root attribute(s) %s missing (see docs/FORMATS.md)" % (path, ", ".join(missing)))
    try:
        cfg = refmodel.validate(attrs)
    except refmodel.ConfigError as e:
        raise FileError("%s: %s" % (path, e))
    cfg["_given"] = sorted(attrs)
    params = {k.replace("/", "."): v for k, v in ds.items()}
    return cfg, params


def parse_config_text(text, path):
    """The `key = value` config text of a checkpoint ('#' comments) -> dict of typed values."""
    if isinstance(text, np.ndarray):
        text = text.reshape(-1)[0] if text.dtype.kind in "SUO" else text.tobytes()
    if isinstance(text, (bytes, np.bytes_)):
        text = bytes(text).decode("utf-8", "replace")
    out = {}
    for line in str(text).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" not in line:
            raise FileError("%s: config line '%s' is not key = value" % (path, line))
        k, v = (x.strip() for x in line.split("=", 1))
        if v in ("true", "false"):
            out[k] = int(v == "true")
            continue
        for conv in (int, float):
            try:
                out[k] = conv(v)
                break
            except ValueError:
                pass
        else:
            out[k] = v
    return out


def select_params(params, shapes, path, dtype):
    """Check names, shapes and dtypes against the expected parameter list; returns torch leaves."""
    import torch
    out = {}
    missing = [n for n in shapes if n not in params]
    if missing:
        more = " (and %d more)" % (len(missing) - 5) if len(missing) > 5 else ""
        raise FileError("%s: missing parameter(s) %s%s" % (path, ", ".join(missing[:5]), more))
    for n, shp in shapes.items():
        a = params[n]
        if a.dtype.kind != "f":
            raise FileError("%s: parameter '%s' has dtype %s, expected float32 or float64" % (path, n, a.dtype))
        if tuple(a.shape) != tuple(shp):
            raise FileError("%s: parameter '%s' has shape %s, expected %s" % (path, n, tuple(a.shape), tuple(shp)))
        if not np.all(np.isfinite(a)):
            raise FileError("%s: parameter '%s' has non-finite values" % (path, n))
        out[n] = torch.tensor(np.ascontiguousarray(a), dtype=dtype).requires_grad_(True)
    return out


def warn(msg):
    print("deberta_ref: warning: " + msg, file=sys.stderr)
