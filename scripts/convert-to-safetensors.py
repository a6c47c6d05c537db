#!/usr/bin/python3
"""Converts a PyTorch pickle checkpoint (pytorch_model.bin, as older Hugging Face DeBERTa-V3 folders
ship) to model.safetensors next to it, so that `deberta import` can read it.  deberta.c itself reads
no pickles: unpickling runs Python code, and the format belongs to torch.  This script needs torch
(Debian: python3-torch) and says so when it is missing.

  /usr/bin/python3 scripts/convert-to-safetensors.py HF_DIR_OR_BIN [OUT.safetensors]

The file is loaded with torch.load(weights_only=True) (plain tensors only, no arbitrary objects).
Float tensors keep their dtype (float32, float16, bfloat16; float64 becomes float32); non-float
tensors (e.g. position_ids buffers) are left out and listed. Tensors sharing storage (tied weights)
are written once per name. Existing output is not overwritten.
"""
import json
import os
import struct
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    try:
        import torch
    except ImportError:
        sys.exit("convert-to-safetensors: this needs torch to read a PyTorch pickle: apt-get install python3-torch "
                 "(and run it with /usr/bin/python3)")
    src = sys.argv[1]
    if os.path.isdir(src):
        src = os.path.join(src, "pytorch_model.bin")
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(os.path.abspath(src)), "model.safetensors")
    if os.path.exists(out):
        sys.exit("convert-to-safetensors: %s exists; not overwriting it" % out)
    try:
        sd = torch.load(src, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any load failure is reported in one line
        sys.exit("convert-to-safetensors: cannot load %s: %s" % (src, str(e).splitlines()[0] if str(e) else type(e).__name__))
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F32"}
    header, blobs, off, skipped = {"__metadata__": {"format": "pt"}}, [], 0, []
    for name, t in sd.items():
        if not torch.is_tensor(t) or t.dtype not in names:
            skipped.append(name)
            continue
        t = t.detach().contiguous()
        if t.dtype == torch.float64:
            t = t.float()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, out)
    print("convert-to-safetensors: %s -> %s: %d tensors%s" % (src, out, len(header) - 1,
          "; left out (not float): " + ", ".join(skipped) if skipped else ""))


if __name__ == "__main__":
    main()
