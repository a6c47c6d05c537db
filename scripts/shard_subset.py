#!/usr/bin/python3
"""Write a train shard that holds every K-th document of another (docs/RECIPE.md, "Repetition").

    [DEBERTA=build/deberta] /usr/bin/python3 scripts/shard_subset.py SRC.h5 DST.h5 K

The copy keeps the source's datasets, filters, attributes and tokenizer (docs/FORMATS.md, "Shard")
and is sealed by `deberta seal` (which adds the 512-byte user block), so deberta pretrain
reads it as one of its own. Used to
measure whether repeating a smaller corpus limits the curve: the same steps on 1/K of the documents.
"""
import os
import subprocess
import sys

import h5py
import numpy as np


def fail(msg):
    sys.exit(f"error: shard_subset: {msg}")


def main():
    if len(sys.argv) != 4 or not sys.argv[3].isdigit() or int(sys.argv[3]) < 1:
        fail("usage: shard_subset.py SRC.h5 DST.h5 K (K >= 1)")
    src, dst, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    deberta = os.environ.get("DEBERTA", os.path.join(os.path.dirname(__file__), "..", "build", "deberta"))
    if not os.access(deberta, os.X_OK):
        fail(f"{deberta} is not built (make, or DEBERTA=path)")
    checked = subprocess.run([deberta, "seal", "--check", src], capture_output=True, text=True)
    if checked.returncode != 0:  # deberta's own line: missing, truncated, unsealed or damaged
        lines = checked.stderr.strip().splitlines() or [f"seal {src}: check failed"]
        fail(lines[-1].removeprefix("error: "))
    try:
        with h5py.File(src, "r") as f:
            if f.attrs.get("format") != b"deberta.c-shard" or f.attrs.get("split") != b"train":
                fail(f"{src} is not a deberta.c train shard")
            tokens, off = f["tokens"][:], f["doc_offsets"][:]
            tok_bytes, attrs = f["tokenizer"][:], dict(f.attrs)
    except (OSError, KeyError) as e:
        fail(f"{src}: {e}")
    docs = range(0, len(off) - 1, k)
    parts = [tokens[off[d]:off[d + 1]] for d in docs]
    new_tokens = np.concatenate(parts).astype(tokens.dtype)
    new_off = np.zeros(len(parts) + 1, dtype=np.int64)
    new_off[1:] = np.cumsum([len(p) for p in parts])
    attrs.update(n_docs=np.int64(len(parts)), n_tokens=np.int64(len(new_tokens)),
                 max_token_id=np.int64(new_tokens.max()))
    tmp = dst + ".tmp"
    try:
        with h5py.File(tmp, "w", track_order=False) as g:
            g.create_dataset("tokens", data=new_tokens, chunks=(min(65536, len(new_tokens)),),
                             compression="gzip", compression_opts=4, shuffle=True, fletcher32=True)
            g.create_dataset("doc_offsets", data=new_off, chunks=(len(new_off),),
                             compression="gzip", compression_opts=4, shuffle=True, fletcher32=True)
            g.create_dataset("tokenizer", data=tok_bytes)
            for name, value in attrs.items():
                g.attrs[name] = value
        sealed = subprocess.run([deberta, "seal", tmp], capture_output=True, text=True)
        if sealed.returncode != 0:
            raise OSError(sealed.stderr.strip())
        os.replace(tmp, dst)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        fail(f"cannot write {dst}: {e}")
    print(f"{dst}: {len(parts)} of {len(off) - 1} documents, {len(new_tokens)} of {len(tokens)} tokens")


if __name__ == "__main__":
    main()
