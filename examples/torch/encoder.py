"""A small PyTorch encoder classifier of the shape ``softhard import-torch`` reads (docs/torch.md).

``make_model()`` is the factory: ``softhard import-torch examples/torch/encoder.py:make_model
--state-dict W.pt -o model.json``.  Token id 0 is BOS, id k is ``alphabet[k-1]``; the read-out is
applied at the last position.  Runs on CPU in float64.
"""

from __future__ import annotations

import torch
from torch import nn

ALPHABET = ["a", "b"]


class EncoderClassifier(nn.Module):
    """Token + positional embedding, a TransformerEncoder (batch_first, ReLU), a linear read-out."""

    def __init__(self, *, d_model: int = 8, nhead: int = 2, layers: int = 1, ff: int = 16, max_len: int = 16,
                 norm_first: bool = False, final_norm: bool = False, classes: int = 2):
        super().__init__()
        self.alphabet = list(ALPHABET)
        self.read_at = "last"
        self.classes = ["reject", "accept"] if classes == 2 else [str(k) for k in range(classes)]
        self.tok = nn.Embedding(len(ALPHABET) + 1, d_model)
        self.pos = nn.Embedding(max_len + 1, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ff, dropout=0.0, activation="relu",
                                           batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d_model) if final_norm else None,
                                             enable_nested_tensor=False)
        self.readout = nn.Linear(d_model, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids`` (B, n+1) with column 0 = BOS (id 0); returns the logits (B, classes) at the last position.
        The BOS row attends to BOS only (softhard's format defines attention so; :func:`bos_mask`)."""
        n1 = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(n1))[None]
        return self.readout(self.encoder(x, mask=bos_mask(n1, x.dtype)))[:, -1]

    def encode(self, words: list[str]) -> torch.Tensor:
        """Token ids (B, n+1) of equal-length words, BOS first."""
        return torch.tensor([[0] + [self.alphabet.index(s) + 1 for s in w] for w in words])


def bos_mask(n1: int, dtype=torch.float32) -> torch.Tensor:
    """Additive attention mask (n+1, n+1): the BOS query row (0) sees only BOS; every other row sees all."""
    m = torch.zeros(n1, n1, dtype=dtype)
    m[0, 1:] = float("-inf")
    return m


def make_model() -> EncoderClassifier:
    """The factory ``softhard import-torch`` calls (the architecture trained by examples/train_torch.py)."""
    torch.manual_seed(0)
    return EncoderClassifier()


def make_prenorm_model() -> EncoderClassifier:
    """A two-layer pre-norm variant with a final norm (random weights; used by the tests)."""
    torch.manual_seed(1)
    return EncoderClassifier(layers=2, norm_first=True, final_norm=True)
