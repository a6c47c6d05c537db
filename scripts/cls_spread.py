#!/usr/bin/python3
"""cls_spread.py — does a checkpoint's [CLS] vector carry its input?  For N_TRAIN + N_DEV windows of a
classification task, the discriminator's hidden states (deberta dump, dropout off) give per layer:
the spread of the [CLS] vector across windows over its mean magnitude, the mean L2 norm of the [CLS]
vector and of the (non-pad) token vectors, and the dev accuracy of a ridge
probe on the frozen [CLS] and on the mean-pooled tokens (features standardised on the train windows).

  /usr/bin/python3 scripts/cls_spread.py CHECKPOINT TASK_DIR [N_TRAIN N_DEV]   (default 1024 512)

TASK_DIR holds prep-task's train.h5 and dev.h5 (e.g. data/tasks/genre-T64).  deberta dump also computes
every gradient, so 1,536 windows of 64 tokens take minutes.  DEBERTA: the binary [build/deberta]."""
import os, subprocess, sys, tempfile
import h5py
import numpy as np

if len(sys.argv) not in (3, 5):
    sys.exit(__doc__)
ckpt, task = sys.argv[1], sys.argv[2]
try:
    n_tr, n_dv = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) == 5 else (1024, 512)
except ValueError:
    sys.exit("error: N_TRAIN and N_DEV must be whole numbers, got %r %r" % (sys.argv[3], sys.argv[4]))
if n_tr < 2 or n_dv < 1:
    sys.exit("error: N_TRAIN must be at least 2 and N_DEV at least 1")
rng = np.random.default_rng(0)


def take(split, n):
    path = os.path.join(task, split + ".h5")
    if not os.path.isfile(path):
        sys.exit("error: %s: no such file (a prep-task folder holds train.h5 and dev.h5)" % path)
    try:
        with h5py.File(path, "r") as f:
            kind = f.attrs["kind"]
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            if kind != "classification":
                sys.exit("error: %s: a %s task; the [CLS] probe wants a classification task (e.g. genre)" % (path, kind))
            if n > f["input_ids"].shape[0]:
                sys.exit("error: %s has %d windows, fewer than %d" % (path, f["input_ids"].shape[0], n))
            idx = np.sort(rng.choice(f["input_ids"].shape[0], n, replace=False))
            return f["input_ids"][idx], f["labels"][idx], int(f.attrs["n_labels"])
    except (OSError, KeyError) as e:
        sys.exit("error: %s: not a task file of deberta prep-task (%s)" % (path, e))


x_tr, y_tr, n_labels = take("train", n_tr)
x_dv, y_dv, _ = take("dev", n_dv)
ids = np.concatenate([x_tr, x_dv]).astype(np.int32)
mask = (ids != 0).astype(np.int32)
with tempfile.TemporaryDirectory() as tmp:
    batch, out = os.path.join(tmp, "batch.h5"), os.path.join(tmp, "dump.h5")
    labels = np.zeros_like(ids)
    labels[:, 3] = ids[:, 3]  # dump wants one masked position for its MLM loss; the features do not use it
    with h5py.File(batch, "w") as f:
        f["input_ids"], f["attention_mask"], f["labels"], f["replaced_ids"] = ids, mask, labels, ids
    if subprocess.run([os.environ.get("DEBERTA", "build/deberta"), "dump", "--weights", ckpt, "--batch", batch, "--out", out],
                      stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit("error: deberta dump failed on %s (its message above)" % ckpt)
    with h5py.File(out, "r") as d:
        hs = d["discriminator/hidden_states"]
        layers = [np.asarray(hs["layer_%d" % i], dtype=np.float64) for i in range(len(hs))]


def probe(feat):
    mu, sd = feat[:n_tr].mean(0), feat[:n_tr].std(0) + 1e-6
    tr, dv = (feat[:n_tr] - mu) / sd, (feat[n_tr:] - mu) / sd
    y = np.eye(n_labels)[y_tr]
    w = np.linalg.solve(tr.T @ tr + n_tr * np.eye(tr.shape[1]), tr.T @ (y - y.mean(0)))
    return float(((dv @ w).argmax(1) == y_dv).mean())


print("%d train / %d dev windows of %d tokens; majority class on dev %.3f" % (n_tr, n_dv, ids.shape[1],
      (y_dv == np.bincount(y_tr).argmax()).mean()))
m = mask[..., None].astype(np.float64)
for n, h in enumerate(layers):
    cls, mean = h[:, 0, :], (h * m).sum(1) / m.sum(1)
    spread = cls.std(0).mean() / np.abs(cls).mean()
    tok = np.linalg.norm(h, axis=2)[mask > 0]
    print("after layer %d: [CLS] spread / magnitude %.3f | L2 norm: [CLS] %.2f, tokens %.2f | probe dev accuracy: [CLS] %.3f, mean-pooled %.3f" %
          (n + 1, spread, np.linalg.norm(cls, axis=1).mean(), tok.mean(), probe(cls), probe(mean)))
