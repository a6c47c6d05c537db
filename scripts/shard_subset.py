#!/usr/bin/python3
"""Write a train shard that holds every K-th document of another (docs/RECIPE.md, "Repetition").

    /usr/bin/python3 scripts/shard_subset.py SRC.h5 DST.h5 K

The copy keeps the source's datasets, filters, attributes and tokenizer (docs/FORMATS.md, "Shard")
and is sealed like deberta prep's shards, so deberta pretrain reads it as one of its own. Used to
measure whether repeating a smaller corpus limits the curve: the same steps on 1/K of the documents.
"""
import os
import sys
import zlib

import h5py
import numpy as np


def seal(path):
    """Fill the 512-byte user block: magic, version 1, block size, file size, CRC-32 over the file."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        head = b"DBH5SEAL" + (1).to_bytes(4, "little") + (512).to_bytes(4, "little")
        head += len(data).to_bytes(8, "little") + bytes(4)
        data[0:len(head)] = head
        data[len(head):512] = bytes(512 - len(head))
        crc = zlib.crc32(bytes(data))
        data[24:28] = crc.to_bytes(4, "little")
        f.seek(0)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: shard_subset.py SRC.h5 DST.h5 K")
    src, dst, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if k < 1:
        sys.exit("error: K must be >= 1")
    with h5py.File(src, "r") as f:
        if f.attrs["format"] != b"deberta.c-shard" or f.attrs["split"] != b"train":
            sys.exit(f"error: {src} is not a deberta.c train shard")
        tokens, off = f["tokens"][:], f["doc_offsets"][:]
        tok_bytes, attrs = f["tokenizer"][:], dict(f.attrs)
    docs = range(0, len(off) - 1, k)
    parts = [tokens[off[d]:off[d + 1]] for d in docs]
    new_tokens = np.concatenate(parts).astype(tokens.dtype)
    new_off = np.zeros(len(parts) + 1, dtype=np.int64)
    new_off[1:] = np.cumsum([len(p) for p in parts])
    attrs.update(n_docs=np.int64(len(parts)), n_tokens=np.int64(len(new_tokens)),
                 max_token_id=np.int64(new_tokens.max()))
    tmp = dst + ".tmp"
    with h5py.File(tmp, "w", userblock_size=512, track_order=False) as g:
        g.create_dataset("tokens", data=new_tokens, chunks=(min(65536, len(new_tokens)),),
                         compression="gzip", compression_opts=4, shuffle=True, fletcher32=True)
        g.create_dataset("doc_offsets", data=new_off, chunks=(len(new_off),),
                         compression="gzip", compression_opts=4, shuffle=True, fletcher32=True)
        g.create_dataset("tokenizer", data=tok_bytes)
        for name, value in attrs.items():
            g.attrs[name] = value
    seal(tmp)
    os.replace(tmp, dst)
    print(f"{dst}: {len(parts)} of {len(off) - 1} documents, {len(new_tokens)} of {len(tokens)} tokens")


if __name__ == "__main__":
    main()
