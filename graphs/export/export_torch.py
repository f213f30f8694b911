#!/usr/bin/env python3
"""Exports one PyTorch training step of a named model as a gosim native-JSON graph.

A thin command line over gosim.torch.export (python/gosim/torch.py), which
does the tracing (make_fx in real mode, ShapeProp) and the costing for any
nn.Module. --model is any torchvision classification model
(torchvision.models.list_models(module=torchvision.models): resnet18,
resnet50, vgg16, mobilenet_v2, inception_v3, efficientnet_b0, vit_b_16, ...)
or transformer_encoder (a torch.nn.TransformerEncoder language model).

  python3 graphs/export/export_torch.py --model resnet50 --batch 32 \
      --out graphs/data/resnet50_train_b32.json.gz
  python3 graphs/export/export_torch.py --check graphs/data/resnet50_train_b32.json.gz

Export needs `make build` (the gosim package in build/python) and Debian's
python3-torch (1.13) and python3-torchvision; --check needs only the
standard library. See graphs/export/README.md.
"""

import argparse
import importlib.util
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Classification outputs with auxiliary heads (in training mode): weights of
# the auxiliary losses, as in the models' papers and torchvision's references.
AUX_WEIGHTS = {"inception_v3": 0.4, "googlenet": 0.3}


def load_rules():
    """gosim._export_rules without importing the gosim package (stdlib only)."""
    path = os.path.join(ROOT, "python", "gosim", "_export_rules.py")
    spec = importlib.util.spec_from_file_location("gosim_export_rules", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_gosim():
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    try:
        import gosim
        import gosim.torch
    except ImportError as e:
        raise SystemExit(f"cannot import gosim ({e}); run `make build` first, with Debian's python3 "
                         "(python3-torch python3-torchvision installed)")
    return gosim


def classification_models(torchvision):
    return sorted(torchvision.models.list_models(module=torchvision.models))


def build_model(opts, torch, torchvision):
    """(module, example input, target, loss function, metadata) of --model."""
    name, batch = opts.model, opts.batch
    if name == "transformer_encoder":
        model = transformer_lm(torch, opts)
        x = torch.randint(0, opts.vocab, (batch, opts.seq))
        y = torch.randint(0, opts.vocab, (batch, opts.seq))

        def loss_fn(out, target):
            return torch.nn.functional.cross_entropy(out.reshape(-1, opts.vocab), target.reshape(-1))
        desc = {"source": "torch.nn.TransformerEncoder with token and position embeddings "
                          "and a vocabulary projection (token-level cross entropy)",
                "layers": opts.layers, "d_model": opts.d_model, "heads": opts.heads,
                "ffn": 4 * opts.d_model, "seq": opts.seq, "vocab": opts.vocab,
                "dropout": 0.1, "input_shape": list(x.shape)}
        return model, x, y, loss_fn, desc
    names = classification_models(torchvision)
    if name not in names:
        raise SystemExit(f"unknown model '{name}'; give transformer_encoder or a torchvision classification "
                         f"model: {', '.join(names)}")
    kwargs = {"weights": None}
    if name in AUX_WEIGHTS:
        kwargs.update(aux_logits=opts.aux_logits, init_weights=True)
    model = torchvision.models.get_model(name, **kwargs)
    size = opts.image_size or (299 if name == "inception_v3" else 224)
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 1000, (batch,))
    aux_weight = AUX_WEIGHTS.get(name, 0.0)

    def loss_fn(out, target):
        if isinstance(out, tuple):  # e.g. InceptionOutputs(logits, aux_logits)
            main, aux = out[0], [a for a in out[1:] if a is not None]
            return (torch.nn.functional.cross_entropy(main, target)
                    + aux_weight * sum(torch.nn.functional.cross_entropy(a, target) for a in aux))
        return torch.nn.functional.cross_entropy(out, target)
    desc = {"source": f"torchvision {name}", "input_shape": list(x.shape), "num_classes": 1000}
    if name in AUX_WEIGHTS:
        desc["aux_logits"] = opts.aux_logits
    return model, x, y, loss_fn, desc


def transformer_lm(torch, opts):
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(opts.vocab, opts.d_model)
            self.pos = nn.Embedding(opts.seq, opts.d_model)
            layer = nn.TransformerEncoderLayer(opts.d_model, opts.heads, 4 * opts.d_model,
                                               dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, opts.layers, enable_nested_tensor=False)
            self.head = nn.Linear(opts.d_model, opts.vocab)

        def forward(self, tokens):
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            return self.head(self.encoder(self.embed(tokens) + self.pos(positions)))

    return Model()


def log(message):
    print(message, file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="transformer_encoder or a torchvision classification model name")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--image-size", type=int, help="image height and width (default 224; 299 inception_v3)")
    parser.add_argument("--out", help="output file (.json or .json.gz)")
    parser.add_argument("--name", help="graph name (default: the output file's base name)")
    parser.add_argument("--optimizer", choices=("sgd", "adam"),
                        help="SGD with momentum 0.9 (default for CNNs) or Adam (transformer)")
    parser.add_argument("--lr", type=float, help="learning rate (default: 0.1 SGD, 1e-4 Adam)")
    parser.add_argument("--weight-decay", type=float,
                        help="L2 weight decay folded into the gradient (default: 1e-4 SGD, 0 Adam)")
    parser.add_argument("--aux-logits", action="store_true", help="inception_v3, googlenet: keep the aux heads")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("auto", "cpu", "meta"), default="auto",
                        help="run the traced ops on the CPU or only infer their shapes (meta); "
                             "auto: meta for transformer_encoder, cpu for the CNNs")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--check", nargs="+", metavar="FILE", help="validate files and print a summary")
    opts = parser.parse_args(argv)
    if opts.check:
        rules = load_rules()
        failed = False
        for path in opts.check:
            graph = rules.read_graph(path)
            errors = rules.check_graph(graph)
            print(json.dumps({"file": path, "valid": not errors, **rules.summarize(graph)}))
            for e in errors[:20]:
                print(f"{path}: {e}")
            failed |= bool(errors)
        return 1 if failed else 0
    if not opts.model or not opts.out:
        parser.error("--model and --out are required unless --check is given")
    reexec_with_system_python()
    gosim = import_gosim()
    import torch
    import torchvision
    if opts.threads:
        torch.set_num_threads(opts.threads)
    if opts.optimizer is None:
        opts.optimizer = "adam" if opts.model == "transformer_encoder" else "sgd"
    sgd = opts.optimizer == "sgd"
    if opts.lr is None:
        opts.lr = 0.1 if sgd else 1e-4
    if opts.weight_decay is None:
        opts.weight_decay = 1e-4 if sgd else 0.0
    if opts.device == "auto":
        # Debian's torch multiplies matrices with the reference BLAS (well
        # under 1 GFLOP/s), so the matmul-heavy transformer is traced on the
        # meta device; torch 1.13 has no meta kernel for convolution_backward.
        opts.device = "meta" if opts.model == "transformer_encoder" else "cpu"
    if opts.name is None:
        opts.name = os.path.basename(opts.out).split(".json")[0]
    torch.manual_seed(opts.seed)
    torch.use_deterministic_algorithms(True)
    model, x, y, loss_fn, desc = build_model(opts, torch, torchvision)
    if opts.device != "cpu":
        model.to(opts.device)
        x, y = x.to(opts.device), y.to(opts.device)
    optimizer = gosim.torch.Optimizer(opts.optimizer, lr=opts.lr, weight_decay=opts.weight_decay,
                                      momentum=0.9 if sgd else 0.0)
    graph = gosim.torch.export_json(model, x, loss_fn=loss_fn, optimizer=optimizer, targets=y,
                                    name=opts.name, seed=opts.seed, log=log)
    meta = graph["metadata"]
    meta.update(desc)
    meta.update(model=opts.model, batch=opts.batch, trace_device=opts.device,
                torchvision_version=torchvision.__version__)
    gosim.torch.save(graph, opts.out)
    print(json.dumps({"file": opts.out, "bytes": os.path.getsize(opts.out), **gosim.torch.summarize(graph)}))
    return 0


def reexec_with_system_python():
    """Debian's torch lives in the system Python; re-run there if needed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.path.exists(system):
            os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])
        raise SystemExit("python3-torch is not installed (apt-get install python3-torch python3-torchvision)")


if __name__ == "__main__":
    sys.exit(main())
