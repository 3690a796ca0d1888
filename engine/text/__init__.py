"""Text: the corpora, the character and BPE tokenizers, the train/validation split and the batches."""
