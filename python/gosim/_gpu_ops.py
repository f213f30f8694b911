"""What a GPU runs, recorded while tracing on the CPU (gosim.torch.export, target="cuda").

PyTorch picks an op's decomposition by device. Traced on the CPU, a model
gives the CPU's ops, which are not the GPU's: nn.LSTM unrolls into a dozen
ops per time step where cuDNN runs one `_cudnn_rnn` per call; dropout is a
`bernoulli_` and a multiply where the GPU runs one `native_dropout`;
F.scaled_dot_product_attention is a matmul-softmax-matmul chain (and does
not exist before PyTorch 2.0) where the GPU runs one fused kernel. A graph
of the CPU's ops prices the wrong kernels and, on a host-bound step, the
wrong number of dispatches (an LSTM language model's step came out 6x too
slow). While tracing for a CUDA target, these calls record the op the GPU
runs instead, with the GPU op's name and arguments, so that gosim prices it
with the calibrated profile's fit of that op and its FLOP rule
(gosim._export_rules):

- F.dropout / nn.Dropout in training: aten::native_dropout and its backward
  (PyTorch's fused kernel on CUDA);
- F.scaled_dot_product_attention: one fused attention op and its backward:
  `_scaled_dot_product_efficient_attention` in fp32 (PyTorch 2.x on an
  H100/H200 with fp32 inputs), `_scaled_dot_product_cudnn_attention` in 16
  bits (what the recorded bf16 steps ran);
- nn.LSTM: `_cudnn_rnn` and `_cudnn_rnn_backward`;
- nn.LSTMCell: the two gate products (aten::mm) and
  `_thnn_fused_lstm_cell` (and its backward), as ATen's lstm_cell does on
  CUDA;
- Adam and AdamW: their step count read back twice per parameter (the bias
  corrections of torch.optim's non-capturable multi-tensor code, `.item()`:
  `aten::_local_scalar_dense`, which makes the host wait for the GPU).

The stand-in ops compute nothing: they return tensors of the right shapes
and dtypes (an exported graph holds shapes, not values). Their names are
registered in the `gosim_gpu` namespace; the exporter writes them as
`aten::<name>`.
"""

import contextlib

_LIB = None
_DEFS = {
    "_scaled_dot_product_efficient_attention":
        "(Tensor query, Tensor key, Tensor value, bool is_causal) -> (Tensor, Tensor)",
    "_scaled_dot_product_efficient_attention_backward":
        "(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, "
        "bool is_causal) -> (Tensor, Tensor, Tensor)",
    "_scaled_dot_product_cudnn_attention":
        "(Tensor query, Tensor key, Tensor value, bool is_causal) -> (Tensor, Tensor)",
    "_scaled_dot_product_cudnn_attention_backward":
        "(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, "
        "bool is_causal) -> (Tensor, Tensor, Tensor)",
    "_cudnn_rnn":
        "(Tensor input, Tensor[] weight, Tensor hx, Tensor cx, int hidden_size, int num_layers, "
        "bool batch_first) -> (Tensor, Tensor, Tensor)",
    "_cudnn_rnn_backward":
        "(Tensor input, Tensor[] weight, Tensor hx, Tensor cx, Tensor output, Tensor grad_output, "
        "Tensor grad_hy, Tensor grad_cy, int hidden_size, int num_layers, bool batch_first) "
        "-> (Tensor, Tensor, Tensor, Tensor)",
    "_thnn_fused_lstm_cell":
        "(Tensor input_gates, Tensor hidden_gates, Tensor cx, Tensor input_bias, Tensor hidden_bias) "
        "-> (Tensor, Tensor, Tensor)",
    "_thnn_fused_lstm_cell_backward":
        "(Tensor grad_hy, Tensor grad_cy, Tensor cx, Tensor cy, Tensor workspace) -> (Tensor, Tensor, Tensor)",
    "_local_scalar_dense": "(Tensor self) -> Tensor",
}


def _define(torch):
    global _LIB
    if _LIB is not None:
        return
    lib = torch.library.Library("gosim_gpu", "DEF")
    for name, schema in _DEFS.items():
        lib.define(name + schema)

    def attention(q, k, v, is_causal):
        return q.new_zeros(q.shape[:-1] + v.shape[-1:]), q.new_zeros(q.shape[:-1], dtype=torch.float32)

    def attention_backward(grad, q, k, v, out, lse, is_causal):
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)

    def rnn(x, weights, hx, cx, hidden, layers, batch_first):
        shape = list(x.shape)
        shape[-1] = hidden
        return x.new_zeros(shape), torch.zeros_like(hx), torch.zeros_like(cx)

    def rnn_backward(x, weights, hx, cx, out, grad_out, grad_hy, grad_cy, hidden, layers, batch_first):
        # The weight gradients in one flat buffer, as cuDNN keeps its weights.
        flat = x.new_zeros(sum(w.numel() for w in weights))
        return torch.zeros_like(x), torch.zeros_like(hx), torch.zeros_like(cx), flat

    def cell(igates, hgates, cx, b_ih, b_hh):
        return torch.zeros_like(cx), torch.zeros_like(cx), torch.zeros_like(igates)

    def cell_backward(grad_hy, grad_cy, cx, cy, workspace):
        return torch.zeros_like(workspace), torch.zeros_like(cx), workspace.new_zeros(workspace.shape[-1:])

    def scalar(t):
        return t.detach().clone()

    for name, fn in (("_scaled_dot_product_efficient_attention", attention),
                     ("_scaled_dot_product_efficient_attention_backward", attention_backward),
                     ("_scaled_dot_product_cudnn_attention", attention),
                     ("_scaled_dot_product_cudnn_attention_backward", attention_backward),
                     ("_cudnn_rnn", rnn), ("_cudnn_rnn_backward", rnn_backward),
                     ("_thnn_fused_lstm_cell", cell), ("_thnn_fused_lstm_cell_backward", cell_backward),
                     ("_local_scalar_dense", scalar)):
        lib.impl(name, fn, "CompositeExplicitAutograd")  # any device: exports trace on the GPU too
    _LIB = lib


def _functions(torch):
    ops = torch.ops.gosim_gpu

    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, causal):
        # 16-bit inputs: cuDNN's kernel (the recorded bf16 steps); fp32: the
        # memory-efficient one (flash attention takes no fp32).
            sixteen = q.dtype in (torch.float16, torch.bfloat16)
            ctx.sixteen, ctx.causal = sixteen, causal
            fwd = ops._scaled_dot_product_cudnn_attention if sixteen else ops._scaled_dot_product_efficient_attention
            out, lse = fwd(q, k, v, causal)
            ctx.save_for_backward(q, k, v, out, lse)
            return out

        @staticmethod
        def backward(ctx, grad):
            q, k, v, out, lse = ctx.saved_tensors
            bwd = (ops._scaled_dot_product_cudnn_attention_backward if ctx.sixteen
                   else ops._scaled_dot_product_efficient_attention_backward)
            dq, dk, dv = bwd(grad.contiguous(), q, k, v, out, lse, ctx.causal)
            return dq, dk, dv, None

    class Rnn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, hx, cx, hidden, layers, batch_first, *weights):
            out, hy, cy = ops._cudnn_rnn(x, list(weights), hx, cx, hidden, layers, batch_first)
            ctx.save_for_backward(x, hx, cx, out, *weights)
            ctx.settings = (hidden, layers, batch_first)
            return out, hy, cy

        @staticmethod
        def backward(ctx, grad_out, grad_hy, grad_cy):
            x, hx, cx, out, *weights = ctx.saved_tensors
            hidden, layers, batch_first = ctx.settings
            grad_out = grad_out if grad_out is not None else torch.zeros_like(out)
            grad_hy = grad_hy if grad_hy is not None else torch.zeros_like(hx)
            grad_cy = grad_cy if grad_cy is not None else torch.zeros_like(cx)
            dx, dhx, dcx, flat = ops._cudnn_rnn_backward(x, weights, hx, cx, out, grad_out, grad_hy, grad_cy,
                                                         hidden, layers, batch_first)
            dw, offset = [], 0
            for w in weights:  # views of the flat buffer: no kernels
                dw.append(flat.narrow(0, offset, w.numel()).view(w.shape))
                offset += w.numel()
            return (dx, dhx, dcx, None, None, None, *dw)

    class Cell(torch.autograd.Function):
        @staticmethod
        def forward(ctx, igates, hgates, cx, b_ih, b_hh):
            hy, cy, workspace = ops._thnn_fused_lstm_cell(igates, hgates, cx, b_ih, b_hh)
            ctx.save_for_backward(cx, cy, workspace)
            return hy, cy

        @staticmethod
        def backward(ctx, grad_hy, grad_cy):
            cx, cy, workspace = ctx.saved_tensors
            grad_hy = grad_hy if grad_hy is not None else torch.zeros_like(cy)
            grad_cy = grad_cy if grad_cy is not None else torch.zeros_like(cy)
            dgates, dcx, dbias = ops._thnn_fused_lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace)
            return dgates, dgates, dcx, dbias, dbias

    return Attention, Rnn, Cell


class _VFProxy:
    """torch.nn.modules.rnn's _VF with lstm and lstm_cell recording the GPU's ops."""

    def __init__(self, vf, lstm, lstm_cell):
        self._vf, self._lstm, self._cell = vf, lstm, lstm_cell

    def __getattr__(self, name):
        if name == "lstm":
            return self._lstm
        if name == "lstm_cell":
            return self._cell
        return getattr(self._vf, name)


def sync(torch, t):
    """A read of `t` back to the host (.item()), as a traceable op."""
    _define(torch)
    return torch.ops.gosim_gpu._local_scalar_dense(t)


@contextlib.contextmanager
def recording(torch):
    """Within it, the calls above record the ops a CUDA GPU runs."""
    _define(torch)
    Attention, Rnn, Cell = _functions(torch)
    F = torch.nn.functional
    rnn_module = torch.nn.modules.rnn
    saved = {"dropout": F.dropout, "sdpa": getattr(F, "scaled_dot_product_attention", None),
             "vf": rnn_module._VF}

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0.0:
            return input
        return torch.ops.aten.native_dropout(input, p, True)[0]

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, **kwargs):
        if attn_mask is not None:
            raise NotImplementedError("gosim.torch.export: scaled_dot_product_attention with attn_mask is not "
                                      "recorded as a fused kernel yet (give is_causal, or target='cpu')")
        return Attention.apply(query, key, value, bool(is_causal))

    def lstm(*args):
        # _VF.lstm(input, hx, flat_weights, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        if len(args) != 9 or not isinstance(args[1], (tuple, list)):
            return saved["vf"].lstm(*args)  # packed sequences: the CPU's ops
        x, (hx, cx), weights, _, layers, _, _, bidirectional, batch_first = args
        if bidirectional:
            return saved["vf"].lstm(*args)
        out, hy, cy = Rnn.apply(x, hx, cx, hx.shape[-1], layers, bool(batch_first), *weights)
        return out, hy, cy

    def lstm_cell(x, hidden, w_ih, w_hh, b_ih=None, b_hh=None):
        hx, cx = hidden
        igates = torch.mm(x, w_ih.t())
        hgates = torch.mm(hx, w_hh.t())
        b_ih = b_ih if b_ih is not None else igates.new_zeros(igates.shape[-1:])
        b_hh = b_hh if b_hh is not None else igates.new_zeros(igates.shape[-1:])
        return Cell.apply(igates, hgates, cx, b_ih, b_hh)

    F.dropout = dropout
    F.scaled_dot_product_attention = sdpa
    rnn_module._VF = _VFProxy(saved["vf"], lstm, lstm_cell)
    try:
        yield
    finally:
        F.dropout = saved["dropout"]
        if saved["sdpa"] is None:
            del F.scaled_dot_product_attention
        else:
            F.scaled_dot_product_attention = saved["sdpa"]
        rnn_module._VF = saved["vf"]
