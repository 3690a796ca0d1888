"""Other programs' checkpoints turned into runs of ours: nanoGPT `out_dir`s and Hugging Face GPT-2 folders."""
