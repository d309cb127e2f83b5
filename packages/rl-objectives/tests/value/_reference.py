"""Float64 reference loops for the value functions, written per scalar sequence."""

from __future__ import annotations

import torch


def seq_gae(gamma, lmbda, v, nv, r, done, term):
    """Lists in, list out: one sequence, plain Python arithmetic."""
    T = len(r)
    adv = [0.0] * T
    nxt = 0.0
    for t in reversed(range(T)):
        boot = 0.0 if term[t] else gamma * nv[t]
        delta = r[t] + boot - v[t]
        carry = 0.0 if (done[t] or t == T - 1) else gamma * lmbda * nxt
        adv[t] = delta + carry
        nxt = adv[t]
    return adv


def seq_td_lambda(gamma, lmbda, nv, r, done, term):
    T = len(r)
    out = [0.0] * T
    for t in reversed(range(T)):
        if term[t]:
            out[t] = r[t]
        elif done[t] or t == T - 1:
            out[t] = r[t] + gamma * nv[t]
        else:
            out[t] = r[t] + gamma * ((1 - lmbda) * nv[t] + lmbda * out[t + 1])
    return out


def seq_vtrace(gamma, rho_bar, c_bar, lp, lm, v, nv, r, done, term):
    import math

    T = len(r)
    ratio = [math.exp(a - b) for a, b in zip(lp, lm)]
    vs = [0.0] * T
    for t in reversed(range(T)):
        rho = min(rho_bar, ratio[t])
        c = min(c_bar, ratio[t])
        boot = 0.0 if term[t] else gamma * nv[t]
        delta = rho * (r[t] + boot - v[t])
        if done[t] or t == T - 1:
            vs[t] = v[t] + delta
        else:
            vs[t] = v[t] + delta + gamma * c * (vs[t + 1] - v[t + 1])
    adv = []
    for t in range(T):
        rho = min(rho_bar, ratio[t])
        # IMPALA's v_{s+1}: the next step's V-trace target inside an episode; the bootstrap
        # value where the episode or the data stops
        nxt = nv[t] if (done[t] or t == T - 1) else vs[t + 1]
        boot = 0.0 if term[t] else gamma * nxt
        adv.append(rho * (r[t] + boot - v[t]))
    return adv, vs


def apply_per_sequence(fn, time_dim, *tensors):
    """Moves time last, loops over every other index, calls ``fn`` on Python lists."""
    moved = [t.movedim(time_dim, -1).double() for t in tensors]
    shape = moved[0].shape
    flat = [m.reshape(-1, shape[-1]).tolist() for m in moved]
    outs = None
    for i in range(len(flat[0])):
        res = fn(*[f[i] for f in flat])
        res = res if isinstance(res, tuple) else (res,)
        if outs is None:
            outs = [[] for _ in res]
        for o, x in zip(outs, res):
            o.append(x)
    return [torch.tensor(o, dtype=torch.float64).reshape(shape).movedim(-1, time_dim) for o in outs]
