"""Model code of the bench suite that is not torchvision's or the calibration
recorder's (calibration/hardware/record_gpu_traces.py): Llama-like decoder
blocks, a mixture-of-experts transformer, GNMT-8-sized LSTM and GRU
encoder-decoders unrolled step by step, two GNNs, a diffusion U-Net and the
torchvision segmentation nets. Each builder has the recorder's interface:
build() -> (module, make_batch(device), loss(module, inputs), optimizer name,
settings dict).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------- Llama-like


class RmsNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, cos, sin):
    """Rotary position embedding of x [B x H x S x Dh] (halves rotated)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class LlamaBlock(nn.Module):
    """Pre-norm decoder block: RMSNorm, grouped-query attention with rotary
    positions (scaled_dot_product_attention, causal), SwiGLU feed-forward."""

    def __init__(self, d, heads, kv_heads, ff):
        super().__init__()
        self.heads, self.kv_heads, self.dh = heads, kv_heads, d // heads
        self.norm1, self.norm2 = RmsNorm(d), RmsNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * kv_heads * self.dh, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate, self.up = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x, cos, sin):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.heads, self.dh).transpose(1, 2)
        k, v = self.kv(h).view(b, s, 2, self.kv_heads, self.dh).permute(2, 0, 3, 1, 4)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        repeat = self.heads // self.kv_heads
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class LlamaLM(nn.Module):
    def __init__(self, vocab, d, heads, kv_heads, ff, layers, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([LlamaBlock(d, heads, kv_heads, ff) for _ in range(layers)])
        self.norm = RmsNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        dh = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, dh // 2, dtype=torch.float32) / (dh // 2)))
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, ids):
        x = self.tok(ids)
        for block in self.blocks:
            x = block(x, self.cos, self.sin)
        return self.head(self.norm(x))


def token_lm(model, vocab, seq, batch):
    """make / loss of a next-token language model on random ids."""

    def make(device):
        return (torch.randint(0, vocab, (batch, seq), device=device),
                torch.randint(0, vocab, (batch, seq), device=device))

    def loss(m, inputs):
        ids, target = inputs
        return F.cross_entropy(m(ids).reshape(-1, vocab), target.reshape(-1))

    return model, make, loss


def language_model(make_model, source, vocab, seq, batch, **settings):
    """A builder of an AdamW-trained next-token language model."""

    def build():
        model, make, loss = token_lm(make_model(), vocab, seq, batch)
        return model, make, loss, "adamw", {"source": source, "vocab": vocab, **settings, "seq_len": seq,
                                            "batch": batch}

    return build


def llama(vocab, d, heads, kv_heads, ff, layers, seq, batch):
    return language_model(lambda: LlamaLM(vocab, d, heads, kv_heads, ff, layers, seq),
                          "graphs/bench/models.py LlamaLM (RMSNorm, RoPE, GQA, SwiGLU)", vocab, seq, batch,
                          d_model=d, heads=heads, kv_heads=kv_heads, d_ff=ff, layers=layers)


# ----------------------------------------------------------- mixture of experts


class MoeBlock(nn.Module):
    """Transformer block whose feed-forward is a top-2 mixture of `experts`
    experts. Dispatch is dense (every expert runs on every token, weighted by
    the sparse top-2 gate), so the step's shapes do not depend on the data."""

    def __init__(self, d, heads, ff, experts):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.router = nn.Linear(d, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, d, ff) / math.sqrt(d))
        self.w2 = nn.Parameter(torch.randn(experts, ff, d) / math.sqrt(ff))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        h = self.ln2(x).reshape(b * s, d)
        logits = self.router(h)
        top, index = logits.topk(2, dim=-1)
        gate = torch.zeros_like(logits).scatter(1, index, torch.softmax(top, dim=-1))  # [T x E]
        hidden = F.gelu(torch.einsum("td,edf->etf", h, self.w1))
        out = torch.einsum("etf,efd->etd", hidden, self.w2)
        return x + torch.einsum("te,etd->td", gate, out).view(b, s, d)


class MoeLM(nn.Module):
    def __init__(self, vocab, d, heads, ff, experts, layers, seq):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([MoeBlock(d, heads, ff, experts) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def moe(vocab, d, heads, ff, experts, layers, seq, batch):
    return language_model(lambda: MoeLM(vocab, d, heads, ff, experts, layers, seq),
                          "graphs/bench/models.py MoeLM (top-2 gate, dense dispatch)", vocab, seq, batch,
                          d_model=d, heads=heads, d_ff=ff, experts=experts, layers=layers)


# ------------------------------------------- recurrent encoder-decoders (GNMT)


class Gnmt(nn.Module):
    """GNMT-style encoder-decoder unrolled step by step: `layers` stacked
    LSTM (or GRU) cells on each side, residual connections from the third
    layer, the first encoder layer bidirectional, additive attention from the
    first decoder layer's output over the encoder's outputs."""

    def __init__(self, vocab, hidden, layers, cell):
        super().__init__()
        make = nn.LSTMCell if cell == "lstm" else nn.GRUCell
        self.lstm = cell == "lstm"
        self.src_emb, self.tgt_emb = nn.Embedding(vocab, hidden), nn.Embedding(vocab, hidden)
        self.enc_back = make(hidden, hidden)
        self.enc = nn.ModuleList([make(hidden if i == 0 else (2 * hidden if i == 1 else hidden), hidden)
                                  for i in range(layers)])
        self.dec = nn.ModuleList([make(2 * hidden if i > 0 else hidden, hidden) for i in range(layers)])
        self.query, self.key = nn.Linear(hidden, hidden, bias=False), nn.Linear(hidden, hidden, bias=False)
        self.score = nn.Linear(hidden, 1, bias=False)
        self.out = nn.Linear(hidden, vocab)

    def step(self, cell, x, state):
        if self.lstm:
            h, c = cell(x, state)
            return h, (h, c)
        h = cell(x, state)
        return h, h

    def zero(self, x):
        h = torch.zeros(x.shape[0], self.out.in_features, device=x.device)
        return (h, h) if self.lstm else h

    def forward(self, src, tgt):
        emb = self.src_emb(src)
        steps = emb.shape[1]
        back, state = [], self.zero(emb[:, 0])
        for t in reversed(range(steps)):
            h, state = self.step(self.enc_back, emb[:, t], state)
            back.append(h)
        back.reverse()
        inputs = [emb[:, t] for t in range(steps)]
        for i, cell in enumerate(self.enc):
            state, outputs = self.zero(emb[:, 0]), []
            for t in range(steps):
                h, state = self.step(cell, inputs[t], state)
                outputs.append(h + inputs[t] if i >= 2 else h)
            inputs = [torch.cat([o, b], dim=1) for o, b in zip(outputs, back)] if i == 0 else outputs
        memory = torch.stack(inputs, dim=1)  # [B x S x H]
        keys = self.key(memory)
        states = [self.zero(emb[:, 0]) for _ in self.dec]
        logits = []
        temb = self.tgt_emb(tgt)
        for t in range(tgt.shape[1]):
            h, states[0] = self.step(self.dec[0], temb[:, t], states[0])
            weights = torch.softmax(self.score(torch.tanh(keys + self.query(h).unsqueeze(1))).squeeze(2), dim=1)
            context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
            x = h
            for i, cell in enumerate(self.dec[1:], start=1):
                y, states[i] = self.step(cell, torch.cat([x, context], dim=1), states[i])
                x = y + x if i >= 2 else y
            logits.append(self.out(x))
        return torch.stack(logits, dim=1)


def gnmt(vocab, hidden, layers, steps, batch, cell="lstm"):
    def build():
        model = Gnmt(vocab, hidden, layers, cell)

        def make(device):
            return (torch.randint(0, vocab, (batch, steps), device=device),
                    torch.randint(0, vocab, (batch, steps), device=device))

        def loss(m, inputs):
            src, tgt = inputs
            return F.cross_entropy(m(src, tgt).reshape(-1, vocab), tgt.reshape(-1))

        return model, make, loss, "adamw", {"source": f"graphs/bench/models.py Gnmt ({cell} cells, unrolled)",
                                            "vocab": vocab, "hidden": hidden, "layers": layers, "steps": steps,
                                            "batch": batch}

    return build


# ------------------------------------------------------------------------ GNNs


class Gcn(nn.Module):
    """Graph convolution (Kipf and Welling) over a fixed random graph: the
    normalized adjacency as a dense-index scatter (index_add), `layers`
    layers, node classification."""

    def __init__(self, features, hidden, classes, layers, sage):
        super().__init__()
        self.sage = sage
        dims = [features] + [hidden] * (layers - 1) + [classes]
        self.lin = nn.ModuleList([nn.Linear(dims[i] * (2 if sage else 1), dims[i + 1]) for i in range(layers)])

    def forward(self, x, src, dst, norm):
        for i, lin in enumerate(self.lin):
            messages = x.index_select(0, src) * norm.unsqueeze(1)
            aggregated = torch.zeros_like(x).index_add(0, dst, messages)
            x = lin(torch.cat([x, aggregated], dim=1) if self.sage else aggregated)
            if i + 1 < len(self.lin):
                x = F.dropout(F.relu(x), 0.5, self.training)
        return x


def gnn(nodes, edges, features, hidden, classes, layers, sage):
    def build():
        model = Gcn(features, hidden, classes, layers, sage)

        def make(device):
            g = torch.Generator().manual_seed(1)
            src = torch.randint(0, nodes, (edges,), generator=g)
            dst = torch.randint(0, nodes, (edges,), generator=g)
            degree = torch.zeros(nodes).index_add(0, dst, torch.ones(edges)).clamp_min(1)
            norm = (1.0 / degree)[dst] if sage else degree[src].rsqrt() * degree[dst].rsqrt()
            return (torch.randn(nodes, features).to(device), src.to(device), dst.to(device), norm.to(device),
                    torch.randint(0, classes, (nodes,)).to(device))

        def loss(m, inputs):
            x, src, dst, norm, y = inputs
            return F.cross_entropy(m(x, src, dst, norm), y)

        kind = "GraphSAGE (mean aggregation)" if sage else "GCN"
        return model, make, loss, "adamw", {"source": f"graphs/bench/models.py Gcn, {kind}", "nodes": nodes,
                                            "edges": edges, "features": features, "hidden": hidden,
                                            "classes": classes, "layers": layers}

    return build


# -------------------------------------------------------------- diffusion U-Net


class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(8, cin), nn.GroupNorm(8, cout)
        self.conv1, self.conv2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3, padding=1)
        self.time = nn.Linear(temb, cout)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x))) + self.time(t)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class UNet(nn.Module):
    """A DDPM-style U-Net: residual blocks with a sinusoidal timestep
    embedding, self-attention at the lowest resolution, skip connections."""

    def __init__(self, base, mults):
        super().__init__()
        temb = 4 * base
        self.base = base
        self.time = nn.Sequential(nn.Linear(base, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.inp = nn.Conv2d(3, base, 3, padding=1)
        chans, c = [base], base
        self.down = nn.ModuleList()
        for i, m in enumerate(mults):
            self.down.append(ResBlock(c, base * m, temb))
            c = base * m
            chans.append(c)
        self.mid = ResBlock(c, c, temb)
        self.attn = nn.MultiheadAttention(c, 4, batch_first=True)
        self.up = nn.ModuleList()
        for m in reversed(mults):
            skip = chans.pop()
            self.up.append(ResBlock(c + skip, base * m, temb))
            c = base * m
        self.out = nn.Conv2d(c + chans.pop(), 3, 3, padding=1)

    def forward(self, x, steps):
        half = self.base // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=x.device) / half)
        t = self.time(torch.cat([torch.sin(steps[:, None] * freqs), torch.cos(steps[:, None] * freqs)], dim=1))
        h = self.inp(x)
        skips = [h]
        for i, block in enumerate(self.down):
            h = block(h, t)
            skips.append(h)
            if i + 1 < len(self.down):
                h = F.avg_pool2d(h, 2)
        h = self.mid(h, t)
        b, c, hh, ww = h.shape
        seq = h.flatten(2).transpose(1, 2)
        h = h + self.attn(seq, seq, seq, need_weights=False)[0].transpose(1, 2).reshape(b, c, hh, ww)
        for i, block in enumerate(self.up):
            skip = skips.pop()
            if h.shape[-1] != skip.shape[-1]:
                h = F.interpolate(h, size=skip.shape[-2:], mode="nearest")
            h = block(torch.cat([h, skip], dim=1), t)
        return self.out(torch.cat([h, skips.pop()], dim=1))


def unet(base, mults, image, batch):
    def build():
        model = UNet(base, mults)

        def make(device):
            return (torch.randn(batch, 3, image, image, device=device),
                    torch.randint(0, 1000, (batch,), device=device).float(),
                    torch.randn(batch, 3, image, image, device=device))

        def loss(m, inputs):
            x, steps, noise = inputs
            return F.mse_loss(m(x, steps), noise)

        return model, make, loss, "adamw", {"source": "graphs/bench/models.py UNet (DDPM-style, noise prediction)",
                                            "base_channels": base, "multipliers": list(mults), "image": image,
                                            "batch": batch}

    return build


# ---------------------------------------------------- torchvision segmentation


def segmentation(name, batch, image, classes=21):
    def build():
        import torchvision
        model = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None,
                                                               num_classes=classes, aux_loss=False)

        def make(device):
            return (torch.randn(batch, 3, image, image, device=device),
                    torch.randint(0, classes, (batch, image, image), device=device))

        def loss(m, inputs):
            x, y = inputs
            return F.cross_entropy(m(x)["out"], y)

        return model, make, loss, "sgd", {"source": f"torchvision.models.segmentation.{name}", "batch": batch,
                                          "image": image, "classes": classes}

    return build
