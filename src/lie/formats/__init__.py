"""The files that pass between stages, one module each owning its schema, writer and tolerant reader:
verl rows (``rows``), prompts rendered from them (``prompts``), a run's folder (``runs``), resumable
shards (``resumable``), generations (``generations``), graded evaluation output (``graded``),
and JSON lines with atomic writes (``jsonl``)."""
