"""Many calls at once: batches, their checkpoints, and transcripts replayed."""
