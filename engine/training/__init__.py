"""Training: the Trainer and its state, the optimizers and schedule, the device and threads, mixed precision
and compilation, several processes, and whether a run repeats to the bit."""
