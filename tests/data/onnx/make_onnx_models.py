#!/usr/bin/env python3
"""Writes the small ONNX models used by tests/graphs/onnx_format_test.cc.

tiny_cnn.onnx and tiny_attention.onnx are exported with torch.onnx.export;
handmade.onnx, dangling.onnx, symbolic_batch.onnx, unnamed_dim.onnx,
depthwise.onnx and bad_group.onnx are
the .textproto files encoded with protoc; without torch only these are
written.

Run with Debian's python3-torch (on machines where pyenv shadows it, call
/usr/bin/python3 explicitly):
    /usr/bin/python3 tests/data/onnx/make_onnx_models.py
The weights are seeded, and the tests check only shapes and FLOPs, so
re-running the script gives files the tests accept.
"""
import os
import subprocess

try:
    import torch
    from torch import nn
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))


if torch is not None:
    class TinyCnn(nn.Module):
        """conv -> relu -> batchnorm -> maxpool -> flatten -> gemm -> softmax.

        The batch norm follows the ReLU so that the exporter cannot fold it into
        the convolution (it does so for conv -> bn in eval mode).
        """

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, kernel_size=3, padding=1)
            self.relu = nn.ReLU()
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(4 * 4 * 4, 10)
            # Distinct statistics: the exporter shares initializers with equal
            # values (fresh ones are all 0 or 1) through Identity nodes.
            with torch.no_grad():
                self.bn.weight.uniform_(0.5, 1.5)
                self.bn.bias.uniform_(-0.5, 0.5)
                self.bn.running_mean.uniform_(-0.5, 0.5)
                self.bn.running_var.uniform_(0.5, 1.5)

        def forward(self, x):
            x = self.pool(self.bn(self.relu(self.conv(x))))
            return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


    class TinyAttention(nn.Module):
        """Embedding (Gather) -> LayerNorm -> single-head attention -> GELU MLP."""

        def __init__(self, vocab=50, dim=16, hidden=32):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.norm = nn.LayerNorm(dim)
            self.q = nn.Linear(dim, dim)
            self.k = nn.Linear(dim, dim)
            self.v = nn.Linear(dim, dim)
            self.out = nn.Linear(dim, dim)
            self.up = nn.Linear(dim, hidden)
            self.down = nn.Linear(hidden, dim)
            self.scale = dim ** -0.5

        def forward(self, tokens):
            x = self.norm(self.embed(tokens))
            q, k, v = self.q(x), self.k(x), self.v(x)
            att = torch.softmax(torch.matmul(q, k.transpose(1, 2)) * self.scale, dim=-1)
            x = x + self.out(torch.matmul(att, v))
            return x + self.down(torch.nn.functional.gelu(self.up(x)))


def export(model, example, name, input_name):
    model.eval()
    path = os.path.join(HERE, name)
    torch.onnx.export(model, example, path, input_names=[input_name], output_names=["output"],
                      opset_version=17, do_constant_folding=True)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def encode_text(name):
    """NAME.textproto -> NAME.onnx with protoc and libonnx-dev's onnx.proto."""
    with open(os.path.join(HERE, name + ".textproto"), "rb") as text:
        data = subprocess.run(["protoc", "--encode=onnx.ModelProto", "-I/usr/include", "onnx/onnx.proto"],
                              stdin=text, check=True, capture_output=True).stdout
    path = os.path.join(HERE, name + ".onnx")
    with open(path, "wb") as out:
        out.write(data)
    print(f"wrote {path} ({len(data)} bytes)")


def main():
    if torch is None:
        print("no torch (python3-torch): keeping tiny_cnn.onnx and tiny_attention.onnx")
    else:
        torch.manual_seed(0)
        export(TinyCnn(), torch.randn(2, 3, 8, 8), "tiny_cnn.onnx", "image")
        export(TinyAttention(), torch.randint(0, 50, (2, 5)), "tiny_attention.onnx", "tokens")
    for name in ("handmade", "dangling", "symbolic_batch", "unnamed_dim", "depthwise", "bad_group"):
        encode_text(name)


if __name__ == "__main__":
    main()
