// check-hf-tokenizer.js TOKENIZER_JSON SAMPLE_JSON — loads our exported tokenizer.json with Hugging Face
// tokenizers (the official Rust library through its Node binding, npm package "tokenizers") and checks
// that it encodes every sample text to exactly our ids and decodes them back to the text.
// SAMPLE_JSON: [{"text": ..., "ids": [...]}, ...] as written by tests/e2e-hf-tokenizer.sh.
const { Tokenizer } = require("tokenizers");
const fs = require("fs");
(async () => {
  const tk = Tokenizer.fromFile(process.argv[2]);
  const docs = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
  let bad = 0;
  for (const d of docs) {
    const ids = (await tk.encode(d.text, null, { addSpecialTokens: false })).getIds();
    if (ids.length !== d.ids.length || ids.some((x, i) => x !== d.ids[i])) {
      let k = 0;
      while (ids[k] === d.ids[k]) k++;
      console.log(`ids differ at ${k}: hf ${JSON.stringify(ids.slice(k, k + 5))} ours ${JSON.stringify(d.ids.slice(k, k + 5))} in ${JSON.stringify(d.text.slice(0, 60))}`);
      bad++;
    }
    const dec = await tk.decode(d.ids, false);
    if (dec !== d.text) {
      console.log(`decode differs: ${JSON.stringify(dec.slice(0, 60))} vs ${JSON.stringify(d.text.slice(0, 60))}`);
      bad++;
    }
  }
  console.log(`check-hf-tokenizer: ${docs.length} texts, ${bad} mismatches`);
  process.exit(bad ? 1 : 0);
})();
