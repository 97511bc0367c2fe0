"""Training: reading corpora and batching (data.py), generated pairs (augment.py), the loop (train.py),
and the project's own classroom corpus (corpora/)."""
