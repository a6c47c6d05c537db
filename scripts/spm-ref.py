#!/usr/bin/python3
"""The python3-sentencepiece side of the SentencePiece checks (tests/e2e-spm.sh, docs/PERFORMANCE.md).

  spm-ref.py train CORPUS PREFIX NORM [VOCAB [TYPE]]  trains a model PREFIX.model (normalisation NORM:
                                               nmt_nfkc or identity; TYPE unigram (default, byte fallback
                                               on), unigram-nobf (byte fallback off) or bpe; [PAD] [CLS]
                                               [SEP] [UNK] = 0..3, user-defined [MASK] <br> @@, control [CTL])
  spm-ref.py train-v3 CORPUS PREFIX VOCAB MASK a DeBERTa-V3-style model PREFIX.model for continued pretraining
                                               (tests/e2e-spm-pretrain.sh): nmt_nfkc, byte fallback, [PAD] [CLS]
                                               [SEP] [UNK] = 0..3, control [CTL], user-defined <br> @@ and, with
                                               MASK = user, [MASK] after them (id 7); MASK = none: no [MASK] piece,
                                               as the published spm.model (tokenizers append it after the last)
  spm-ref.py hard OUT                          writes the hard strings, one per line (UTF-8)
  spm-ref.py encode MODEL TEXT                 ids of every line of TEXT (split at '\\n' only), one line each,
                                               as `deberta encode --tokenizer MODEL TEXT` prints them
  spm-ref.py time MODEL TEXT                   wall and CPU seconds to encode the lines of TEXT (one thread)
"""
import sys
import time

import sentencepiece as spm


def lines_of(path):
    data = open(path, "rb").read()
    parts = data.split(b"\n")
    if data.endswith(b"\n"):
        parts.pop()
    return [p.decode("utf-8") for p in parts]


HARD = [
    "", " ", "   ", "\t", "a", " a", "a ", "  leading and trailing  ", "multiple    inner     spaces",
    "tab\tseparated\twords", "carriage\rreturn", "crlf line\r", "vertical\x0btab and form\x0cfeed",
    "control \x01\x02\x03\x1f\x7f chars", "nul\x00byte", "next line\x85and line\u2028separator",
    "no\u00a0break\u00a0space", "narrow\u202fnbsp and ideographic\u3000space", "zero\u200bwidth\u200djoiner\ufeffbom",
    "日本語のテキストと漢字", "中文文本，标点。", "한국어 텍스트", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "ﬁ ﬂ ligatures ㎏ ①",
    "emoji 😀 👍🏽 👩‍👩‍👧‍👦 🏳️‍🌈 🇩🇪", "combining e\u0301 a\u0308 o\u0302\u0323 n\u0303", "café naïve résumé",
    "Ελληνικά κείμενο", "Русский текст", "العربية نص", "עברית", "हिन्दी पाठ", "ภาษาไทย", "replacement \ufffd char",
    "literal \u2581 lower block", "\u2581\u2581", "user [MASK] symbols <br>here@@@and@@", "control [CTL] is text",
    "byte piece <0x41> is text", "[UNK] [PAD] [CLS] [SEP]", "x" * 10000, "supercalifragilistic" * 300,
    "日" * 3000, "😀" * 1000, "1234567890 3.14159 1,000,000", "punctuation!?...;:'\"()[]{}<>",
    "math ∑∫√∞≠≤≥ and arrows ←→↑↓", "private use \ue000\uf8ff and plane 15 \U000f0000", "music 𝄞 math 𝔸𝔹",
    "   \u00a0  ", "Ⅻ ⅷ ½ ¹²³ ™ ℃", "ＡＢＣ　ａｂｃ", "ｶﾀｶﾅ halfwidth", "a\u0300\u0301\u0302\u0303\u0304 stacked",
]


def main():
    cmd = sys.argv[1]
    if cmd == "train":
        corpus, prefix, norm = sys.argv[2:5]
        vocab = int(sys.argv[5]) if len(sys.argv) > 5 else 2000
        kind = sys.argv[6] if len(sys.argv) > 6 else "unigram"
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, model_type="bpe" if kind == "bpe" else "unigram", vocab_size=vocab,
            normalization_rule_name=norm, byte_fallback=kind != "unigram-nobf", hard_vocab_limit=False, pad_id=0, bos_id=1, eos_id=2, unk_id=3,
            pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]",
            user_defined_symbols=["[MASK]", "<br>", "@@"], control_symbols=["[CTL]"],
            num_threads=1, minloglevel=2)
    elif cmd == "train-v3":
        corpus, prefix, vocab, mask = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        if mask not in ("user", "none"):
            sys.exit("train-v3: MASK must be user or none")
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, model_type="unigram", vocab_size=vocab, normalization_rule_name="nmt_nfkc",
            byte_fallback=True, hard_vocab_limit=False, pad_id=0, bos_id=1, eos_id=2, unk_id=3,
            pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]",
            user_defined_symbols=["<br>", "@@"] + (["[MASK]"] if mask == "user" else []), control_symbols=["[CTL]"],
            num_threads=1, minloglevel=2)
    elif cmd == "hard":
        with open(sys.argv[2], "w", encoding="utf-8", newline="") as f:
            for s in HARD:
                assert "\n" not in s
                f.write(s + "\n")
    elif cmd == "encode":
        sp = spm.SentencePieceProcessor(model_file=sys.argv[2])
        out = sys.stdout
        for line in lines_of(sys.argv[3]):
            out.write(" ".join(map(str, sp.encode(line))) + "\n")
    elif cmd == "time":
        sp = spm.SentencePieceProcessor(model_file=sys.argv[2])
        lines = lines_of(sys.argv[3])
        t, c = time.perf_counter(), time.process_time()
        n = 0
        for line in lines:
            n += len(sp.encode(line))
        print("%d lines, %d ids: %.3f s wall, %.3f s CPU" % (len(lines), n, time.perf_counter() - t, time.process_time() - c))
    else:
        sys.exit("usage: see the docstring of " + sys.argv[0])


if __name__ == "__main__":
    main()
