"""One model cache: a GPT per architecture, into which the weights of each step are loaded.

The model is built once per config on the meta device and each step's weights are assigned into it, not
copied (GPT.from_weights: a run's weights are its files' memory maps). `ModelCache` keeps the model of the last
config asked for and the step whose weights it holds, so asking for the same step again costs nothing. Not
thread-safe: its owner (RunAnalysis, or a pane's live-weights computer) calls it from one thread at a time.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from ..configs.config import ModelConfig
from ..errors import UserError
from ..configs.resolve import with_vocab


class ModelCache:
    def __init__(self):
        self._model = None
        self._holds: Hashable | None = None  # what the model's weights are now (a step, or a copy's key)

    def load(self, cfg: ModelConfig, weights: Mapping, key: Hashable, label: str = ""):
        """The GPT of `cfg` in eval mode holding `weights`; `key` names those weights (the same key is
        not loaded twice). The vocabulary is taken from the embedding's rows, so a draft config loads a
        run's weights; a copy that does not fit is one clear line."""
        from ..model.gpt import GPT
        from ..training.device import analysis_device

        cfg = with_vocab(cfg, int(weights["W_E"].shape[0]))
        if self._model is None or self._model.cfg != cfg:
            self._model, self._holds = None, None
        if self._holds != key:
            self._holds = None  # a failed load leaves the model half-assigned
            try:
                device = analysis_device()
                if device.type != "cpu":  # a copy on the GPU, from the file's or the published weights
                    weights = {k: v.to(device) for k, v in weights.items()}
                if self._model is None:
                    self._model = GPT.from_weights(cfg, dict(weights))
                else:
                    self._model.load_state_dict(dict(weights), assign=True)
            except RuntimeError as e:
                raise UserError(f"the weights {label or key} do not fit the model's config: "
                                f"{str(e).splitlines()[0][:160]}") from None
            self._holds = key
        return self._model
