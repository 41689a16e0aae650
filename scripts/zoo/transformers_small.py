"""Compact PyTorch definitions of BERT-base and GPT-2 small for the on-demand model zoo.

The `transformers` package is not available here, so these follow Hugging Face's
BertModel and GPT2LMHeadModel layer by layer (same parameter shapes, same arithmetic, same
initialisation scheme: normal(0, 0.02) weights, zero biases, unit LayerNorm scales), without
dropout (inference), caching, or head pruning. Weights are random; nothing is downloaded.

Used by scripts/zoo/large_models.py (run with Debian's /usr/bin/python3).
"""
import math

import torch
from torch import nn


def init_weights(module, std=0.02):
    """Hugging Face's _init_weights: N(0, std) for Linear/Conv1D/Embedding, LayerNorm 1/0."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, Conv1D)):
            nn.init.normal_(m.weight, 0.0, std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, std)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


# --------------------------------------------------------------------------------------------
# BERT-base (bert-base-uncased configuration)
# --------------------------------------------------------------------------------------------

class BertConfig:
    vocab_size = 30522
    hidden = 768
    layers = 12
    heads = 12
    ffn = 3072
    max_positions = 512
    type_vocab = 2
    ln_eps = 1e-12


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.head_dim = c.heads, c.hidden // c.heads
        self.query = nn.Linear(c.hidden, c.hidden)
        self.key = nn.Linear(c.hidden, c.hidden)
        self.value = nn.Linear(c.hidden, c.hidden)

    def split_heads(self, x):                       # [B, S, H] -> [B, heads, S, head_dim]
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + additive_mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        b, s = ctx.shape[:2]
        return ctx.view(b, s, self.heads * self.head_dim)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertSelfAttention(c)
        self.attention_output = nn.Linear(c.hidden, c.hidden)
        self.attention_norm = nn.LayerNorm(c.hidden, eps=c.ln_eps)
        self.intermediate = nn.Linear(c.hidden, c.ffn)
        self.output = nn.Linear(c.ffn, c.hidden)
        self.output_norm = nn.LayerNorm(c.hidden, eps=c.ln_eps)

    def forward(self, x, additive_mask):
        # Post-LN, as in the original BERT.
        x = self.attention_norm(x + self.attention_output(self.attention(x, additive_mask)))
        h = nn.functional.gelu(self.intermediate(x))          # exact GELU (erf)
        return self.output_norm(x + self.output(h))


class BertBase(nn.Module):
    """input_ids [B, S] int64, attention_mask [B, S] int64 (1 = token, 0 = padding)
    -> last_hidden_state [B, S, 768]. Token type ids are all zero (single segment)."""

    def __init__(self, c=BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden)
        self.position_embeddings = nn.Embedding(c.max_positions, c.hidden)
        self.token_type_embeddings = nn.Embedding(c.type_vocab, c.hidden)
        self.embeddings_norm = nn.LayerNorm(c.hidden, eps=c.ln_eps)
        self.layers = nn.ModuleList(BertLayer(c) for _ in range(c.layers))
        self.register_buffer("position_ids", torch.arange(c.max_positions).unsqueeze(0),
                             persistent=False)
        init_weights(self)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        token_type_ids = torch.zeros_like(input_ids)
        x = (self.word_embeddings(input_ids)
             + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(self.position_ids[:, :seq]))
        x = self.embeddings_norm(x)
        # HF get_extended_attention_mask: [B, S] -> [B, 1, 1, S], 0 where attended,
        # the most negative float32 where padded.
        mask = attention_mask[:, None, None, :].to(x.dtype)
        additive_mask = (1.0 - mask) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, additive_mask)
        return x


# --------------------------------------------------------------------------------------------
# GPT-2 small
# --------------------------------------------------------------------------------------------

class GPT2Config:
    vocab_size = 50257
    hidden = 768
    layers = 12
    heads = 12
    ffn = 3072
    max_positions = 1024
    ln_eps = 1e-5


class Conv1D(nn.Module):
    """GPT-2's 'Conv1D': a linear layer with the weight stored [in, out] (x @ W + b)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias


def gelu_tanh(x):
    """GPT-2's gelu_new: the tanh approximation of GELU."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.head_dim, self.hidden = c.heads, c.hidden // c.heads, c.hidden
        self.c_attn = Conv1D(c.hidden, 3 * c.hidden)
        self.c_proj = Conv1D(c.hidden, c.hidden)
        causal = torch.tril(torch.ones(c.max_positions, c.max_positions, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, c.max_positions, c.max_positions),
                             persistent=False)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.hidden, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        s = x.shape[1]
        w = w.masked_fill(~self.causal[:, :, :s, :s], torch.finfo(w.dtype).min)
        ctx = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        return self.c_proj(ctx.view(x.shape[0], s, self.hidden))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.hidden, eps=c.ln_eps)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c.hidden, eps=c.ln_eps)
        self.c_fc = Conv1D(c.hidden, c.ffn)
        self.mlp_proj = Conv1D(c.ffn, c.hidden)

    def forward(self, x):
        # Pre-LN.
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(gelu_tanh(self.c_fc(self.ln_2(x))))


class GPT2Small(nn.Module):
    """input_ids [B, S] int64 -> logits [B, S, 50257]; LM head tied to the token embedding."""

    def __init__(self, c=GPT2Config):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.hidden)
        self.wpe = nn.Embedding(c.max_positions, c.hidden)
        self.h = nn.ModuleList(GPT2Block(c) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.hidden, eps=c.ln_eps)
        self.register_buffer("position_ids", torch.arange(c.max_positions).unsqueeze(0),
                             persistent=False)
        init_weights(self)
        # GPT-2's scaled init of the residual projections: std 0.02 / sqrt(2 * layers).
        for block in self.h:
            for proj in (block.attn.c_proj, block.mlp_proj):
                nn.init.normal_(proj.weight, 0.0, 0.02 / math.sqrt(2 * c.layers))

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe(self.position_ids[:, :seq])
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return torch.matmul(x, self.wte.weight.t())        # tied LM head, no bias
