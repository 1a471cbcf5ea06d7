"""Write tests/fixtures/torch_reference.json: what PyTorch computes for the optimizers (two steps
from fixed gradients), the learning-rate schedulers, gradient-norm clipping, the losses and the
activations, on small fixed inputs. The tests compare deepsharp against these numbers; torch is
needed only to run this script (`pip install torch==2.13.0`)."""

import json
from pathlib import Path

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(2026)
P0 = rng.standard_normal(5).round(4)
G1 = rng.standard_normal(5).round(4)
G2 = rng.standard_normal(5).round(4)


def two_steps(make):
    p = torch.nn.Parameter(torch.tensor(P0))
    opt = make([p])
    steps = []
    for g in (G1, G2):
        p.grad = torch.tensor(g)
        opt.step()
        steps.append(p.detach().numpy().tolist())
    return steps


OPTIMIZERS = {
    "SGD(lr=0.1)": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "SGD(lr=0.1, momentum=0.9)": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "SGD(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)":
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "SGD(lr=0.1, momentum=0.5, dampening=0.3)":
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.5, dampening=0.3),
    "Adam(lr=0.01)": lambda ps: torch.optim.Adam(ps, lr=0.01),
    "Adam(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)":
        lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "AdamW(lr=0.01)": lambda ps: torch.optim.AdamW(ps, lr=0.01),
    "AdamW(lr=0.01, weight_decay=0.5)": lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.5),
    "RMSprop(lr=0.01)": lambda ps: torch.optim.RMSprop(ps, lr=0.01),
    "RMSprop(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)":
        lambda ps: torch.optim.RMSprop(ps, lr=0.01, momentum=0.9, centered=True, weight_decay=0.1),
}


def schedule(make, epochs=12):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=0.5)
    sched = make(opt)
    rates = []
    for _ in range(epochs):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return rates


SCHEDULES = {
    "StepDecay(every=3, gamma=0.5)": lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.5),
    "ExponentialDecay(gamma=0.9)": lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9),
    "Cosine(period=8, minimum=0.01)": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 8, 0.01),
    "LinearWarmup(length=4, start=0.25)":
        lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4),
}


def clip():
    ps = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))]
    ps[0].grad, ps[1].grad = torch.tensor([3.0, -4.0, 1.0]), torch.tensor([2.0, 2.0])
    norm = torch.nn.utils.clip_grad_norm_(ps, 2.5)
    return {"norm": float(norm), "grads": [p.grad.numpy().tolist() for p in ps]}


def losses():
    z = rng.standard_normal((4, 3)).round(3)
    y = (rng.random((4, 3)) > 0.5).astype(float)
    ids = np.array([0, 2, 1, 2])
    shares = rng.dirichlet(np.ones(3), 4).round(4)
    shares /= shares.sum(axis=1, keepdims=True)
    out = {"z": z.tolist(), "y": y.tolist(), "ids": ids.tolist(), "shares": shares.tolist()}
    for name, fn, target in [
        ("mse", torch.nn.functional.mse_loss, torch.tensor(y)),
        ("bce", torch.nn.functional.binary_cross_entropy_with_logits, torch.tensor(y)),
        ("ce_ids", torch.nn.functional.cross_entropy, torch.tensor(ids)),
        ("ce_shares", torch.nn.functional.cross_entropy, torch.tensor(shares)),
    ]:
        zt = torch.tensor(z, requires_grad=True)
        value = fn(zt, target)
        value.backward()
        out[name] = {"value": float(value), "grad": zt.grad.numpy().tolist()}
    return out


def activations():
    x = np.linspace(-4, 4, 17)
    t = torch.tensor(x)
    f = torch.nn.functional
    return {"x": x.tolist(), **{k: v.numpy().tolist() for k, v in {
        "relu": f.relu(t), "sigmoid": torch.sigmoid(t), "tanh": torch.tanh(t),
        "gelu": f.gelu(t), "gelu_tanh": f.gelu(t, approximate="tanh"), "silu": f.silu(t),
        "elu_0.7": f.elu(t, 0.7), "leaky_relu_0.2": f.leaky_relu(t, 0.2), "softplus": f.softplus(t),
        "softmax": torch.softmax(t, 0),
    }.items()}}


reference = {
    "torch": torch.__version__, "p0": P0.tolist(), "g1": G1.tolist(), "g2": G2.tolist(),
    "optimizers": {k: two_steps(v) for k, v in OPTIMIZERS.items()},
    "schedules": {k: schedule(v) for k, v in SCHEDULES.items()},
    "clip": clip(), "losses": losses(), "activations": activations(),
}
path = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "torch_reference.json"
path.write_text(json.dumps(reference, indent=1))
print(f"wrote {path}")
