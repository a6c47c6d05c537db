# lib-brown.sh — a small synthetic tagged corpus in the Brown format, for the fine-tuning tests
# (tests/e2e-finetune.sh, tests/e2e-finetune-table.sh); each sources it:  . tests/lib-brown.sh
# Not a test itself (tests/run-all.sh runs only tests/e2e-*.sh).
#   make_brown_corpus DIR   DIR/brown-tagged/c{a,b}0{1..5} (two genres, five texts each: ..2 dev, ..3
#                           test; 25 sentences of 10 tagged words), DIR/brown.txt (their plain form, as
#                           scripts/fetch-corpus.sh writes it) and DIR/other.txt (40 untagged documents)
make_brown_corpus() {
    mkdir -p "$1/brown-tagged"
    for g in a b; do
        for n in 1 2 3 4 5; do
            awk -v seed="$n$g" -v genre=$g 'BEGIN {
                srand(length(seed) * 7 + (genre == "a" ? 11 : 29) + substr(seed, 1, 1) * 3);
                split("the a this every", DT, " "); split("big small red old quiet", JJ, " ");
                split(genre == "a" ? "dog cat house tree man car" : "ship star planet engine pilot moon", NN, " ");
                split("saw liked took found moved", VB, " "); split("in on near under", IN, " ");
                for (s = 0; s < 25; s++) {
                    printf "\n\n\t%s/at %s/jj %s/nn %s/vbd %s/at %s/nn %s/in %s/at %s/nn ./.\n",
                        DT[int(rand()*4)+1], JJ[int(rand()*5)+1], NN[int(rand()*6)+1], VB[int(rand()*5)+1],
                        DT[int(rand()*4)+1], NN[int(rand()*6)+1], IN[int(rand()*4)+1], DT[int(rand()*4)+1], NN[int(rand()*6)+1]
                } }' > "$1/brown-tagged/c${g}0$n"
        done
    done
    for f in "$1"/brown-tagged/c*; do  # plain form: tags stripped, words joined by spaces
        tr -s ' \t\n' '\n' <"$f" | grep . | sed 's|/[^/]*$||' | tr '\n' ' ' | sed 's/ $//'; printf '\n\n'
    done > "$1/brown.txt"
    for i in $(seq 1 40); do echo "Other text number $i: a dog and a ship met near the old house."; echo; done > "$1/other.txt"
}
