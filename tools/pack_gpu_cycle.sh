#!/usr/bin/env bash
# Make the data pack of tools/gpu_cycle.sh here, from ../shared/data (run from the repository root):
#   runs/pack/            cleaned copies of every training corpus (python -m transformer.cli.clean; report.json
#                         says what went and why), filtered/ (the A/B's control), mono-sentences.txt.gz (French
#                         for back-translation) and dev/ (the dev sets the runs choose checkpoints on)
#   runs/carry/pack.tar.xz  the same, uncompressed inside and xz'd (about 27 MB: the device tool carries 64 MiB
#                         with the repository, so move assets/ and checkpoints/variants/ out of the index first)
# Then, in one device call (carry runs/carry and .whl with num2words, pysbd and cachetools wheels):
#   tar xJf runs/carry/pack.tar.xz -C /tmp && mv /tmp/plain runs/pack && \
#   find runs/pack -type f \( -name '*.tsv' -o -name '*.txt' \) -print0 | xargs -0 -P16 gzip -1 && \
#   FREN_MIN=2.0 P1_MIN=3.5 P2_MIN=2.5 DEADLINE=525 THREADS=4 bash tools/gpu_cycle.sh
set -euo pipefail
D=../shared/data
C=transformer/training/corpora
LAWS=${LAWS:-60000}          # laws-canada pairs kept after cleaning (legal register: about a tenth of the tokens)
MONO=${MONO:-300000}         # French sentences for back-translation
TECH=$(ls $D/tech-docs/*.tsv.gz | grep -v -e cnp3-ebook -e rust-book)      # those two are the dev and test sets
ML=$(ls $D/ml-courses/*.tsv.gz | grep -v dev.tsv)
rm -rf runs/pack
python3 -m transformer.cli.clean --out runs/pack \
  --train $D/tatoeba-eng-fra/train.tsv.gz $D/multi30k/train $C/classroom.train.tsv $C/coreference.train.tsv \
          $C/formal.train.tsv $C/lecture-ml.train.tsv $D/news-formal/news.train.tsv.gz $D/news-formal/hansard.train.tsv.gz \
          $D/news-formal/europarl-first3k.train.tsv.gz $D/news-formal/diabla.train.tsv.gz $D/news-formal/tico19.train.tsv.gz \
          $TECH $ML "$D/laws-canada/train.tsv.gz%$LAWS" \
  --mono "$D/french-mono/sentences.txt.gz%$MONO"
mkdir -p runs/pack/dev
cp $D/tatoeba-eng-fra/dev.tsv.gz runs/pack/dev/tatoeba-dev.tsv.gz
cp $D/news-formal/newstest2013.dev.tsv.gz runs/pack/dev/newstest2013.tsv.gz
cp $D/tech-docs/cnp3-ebook-fr.tsv.gz runs/pack/dev/cnp3-ebook.tsv.gz
cp $D/ml-courses/dev.tsv.gz runs/pack/dev/ml-courses-dev.tsv.gz
paste <(zcat $D/multi30k/val.en.gz) <(zcat $D/multi30k/val.fr.gz) | gzip -9 > runs/pack/dev/multi30k-val.tsv.gz
rm -rf runs/carry/plain && mkdir -p runs/carry && cp -r runs/pack runs/carry/plain
find runs/carry/plain -name '*.gz' -print0 | xargs -0 -P2 gunzip -f
tar cf - -C runs/carry plain | xz -T2 -9 > runs/carry/pack.tar.xz
rm -rf runs/carry/plain
ls -la runs/carry/pack.tar.xz
