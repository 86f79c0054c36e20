"""PyTorch pieces shared by the benchmarks' PyTorch workers (imported there only, after the
worker has set up torch): jaxcl's LARS and SimCLR's NT-Xent, written for torch."""

from __future__ import annotations

import torch
import torch.nn.functional as F


class LARS(torch.optim.Optimizer):
    """``optax.lars`` with jaxcl's masks, on ``torch._foreach`` kernels.

    Per tensor: ``u = g + wd * w`` and ``u *= eta * |w| / |u|`` (1 where a norm is 0)
    for groups with ``adapt=True`` (kernels), ``u = g`` otherwise (batch norm); then
    ``buf = momentum * buf - lr * u`` and ``w += buf`` (optax's ``trace`` after the
    learning rate).
    """

    def __init__(self, groups, *, momentum, weight_decay, trust_coefficient):
        defaults = dict(
            lr=0.0,
            momentum=momentum,
            weight_decay=weight_decay,
            trust_coefficient=trust_coefficient,
            adapt=True,
        )
        super().__init__(groups, defaults)

    @torch.no_grad()
    def step(self, lr):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad for p in params]
            if group["adapt"]:
                updates = torch._foreach_add(grads, params, alpha=group["weight_decay"])
                w_norm = torch.stack(torch._foreach_norm(params))
                u_norm = torch.stack(torch._foreach_norm(updates))
                ratio = torch.where(
                    (w_norm > 0) & (u_norm > 0),
                    group["trust_coefficient"] * w_norm / u_norm,
                    torch.ones_like(w_norm),
                )
                torch._foreach_mul_(updates, list(ratio.unbind(0)))
                torch._foreach_mul_(updates, -lr)
            else:
                updates = torch._foreach_mul(grads, -lr)
            bufs = []
            for p in params:
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                bufs.append(state["momentum_buffer"])
            torch._foreach_mul_(bufs, group["momentum"])
            torch._foreach_add_(bufs, updates)
            torch._foreach_add_(params, bufs)


def nt_xent(z1, z2, temperature):
    """SimCLR's NT-Xent over the 2N views: each row against its pair and the other
    2N - 2 rows, never itself; mean over the 2N anchors."""
    n = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = (z @ z.T) / temperature
    eye = torch.eye(2 * n, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(eye, float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(n)]).to(z.device)
    return F.cross_entropy(logits, targets)
