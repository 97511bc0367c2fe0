"""Training: the loop (train.py), a run's setup and state (run.py), what it measures and records
(evaluation.py), reading corpora and batching with corpus weights (data.py), generated pairs (augment.py
and augment_words.json), a new vocabulary carried over (vocab_transfer.py), and the project's own
corpora (corpora/)."""
