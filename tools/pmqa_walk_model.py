#!/usr/bin/env python3
# tools/pmqa_walk_model.py -- CPU model of kernels/qg_paged_mqa_logits.cuh's schedule, unit walk,
# producer block-table windows and math-side unit assignment (shared2 / shared4 / dual2;
# pipe2 was removed: tag exp/pmqa-pipe2-2026-11-28).
# Checks on random context lengths: every unit exactly once over the CTAs, the producer and each
# math warpgroup agree on the segments and on unit index -> (batch, block), the producer's
# block-table entries are right. Keep it in step with the kernel when the walk changes.
# The strided math walk (QG_PMQA_STRIDE_WALK: shared2s / shared4s / dual2s / shared3) is checked
# on the kernel's own code by tools/pmqa_walk_check.sh.
#   usage: python3 tools/pmqa_walk_model.py
import random
BLOCK = 64
def nb_of(ctx, b, next_n, max_len):
    m = 0
    for n in range(next_n):
        m = max(m, min(max(ctx[b*next_n+n], 0), max_len))
    return (m + BLOCK - 1)//BLOCK

def schedule(ctx, batch, next_n, max_len, num_ctas):
    nbs = [nb_of(ctx, b, next_n, max_len) for b in range(batch)]
    total = sum(nbs)
    sched = [None]*(num_ctas+1)
    sched[num_ctas] = (batch, 0)
    if total == 0:
        for i in range(num_ctas): sched[i] = (batch, 0)
        return sched
    p = 0
    for b in range(batch):
        nb = nbs[b]
        if nb > 0:
            i = (p*num_ctas + total - 1)//total
            while i < num_ctas:
                u = i*total//num_ctas
                if u >= p + nb: break
                sched[i] = (b, u - p); i += 1
        p += nb
    assert all(s is not None for s in sched), sched
    return sched

class Walk:
    def __init__(self, sched, ctx, max_len, batch, next_n, cta, ctas):
        self.ctx, self.max_len, self.next_n, self.batch, self.ctas = ctx, max_len, next_n, batch, ctas
        r = cta // ctas
        self.b = min(max(sched[r][0], 0), batch); self.k = max(sched[r][1], 0)
        self.end_b = min(max(sched[r+1][0], 0), batch); self.end_k = max(sched[r+1][1], 0)
        self.nb = nb_of(ctx, self.b, next_n, max_len) if self.b < batch else 0
        self.skip()
        if ctas == 2 and (cta & 1) and not self.done(): self.step()
    def done(self): return self.b > self.end_b or (self.b == self.end_b and self.k >= self.end_k)
    def skip(self):
        while self.b < self.batch and self.k >= self.nb and not self.done():
            self.b += 1; self.k = 0
            self.nb = nb_of(self.ctx, self.b, self.next_n, self.max_len) if self.b < self.batch else 0
        if self.b >= self.batch:
            self.b = self.end_b = self.batch; self.k = self.end_k = 0
    def step(self): self.k += 1; self.skip()
    def next(self):
        self.step()
        if self.ctas == 2 and not self.done(): self.step()

def producer(args, cta, ctas, bt, ahead):
    w = Walk(*args, cta, ctas)
    out = []; u = 0; seg_b = -1; win_k = -1; win = None; win_next = None; g = 0; segs = []
    while not w.done():
        if w.b != seg_b:
            seg_b = w.b; win_k = -1; segs.append(w.b); g += 1
        if win_k < 0 or w.k >= win_k + 32:
            row = bt[w.b]
            load = lambda k0: [row[k0+l] if k0+l < w.nb else 0 for l in range(32)]
            if ahead:
                if win_k >= 0 and w.k == win_k + 32: win = win_next
                else: win = load(w.k)
                win_k = w.k; win_next = load(win_k + 32)
            else:
                win_k = w.k; win = load(win_k)
        idx = w.k - win_k
        assert 0 <= idx < 32
        phys = win[idx]
        assert phys == bt[w.b][w.k], (phys, w.b, w.k)
        out.append((u, w.b, w.k)); u += 1
        w.next()
    return out, segs

def math_shared(args, cta, ctas, W, wg):
    w = Walk(*args, cta, ctas)
    out = []; u = 0; seg_b = -1; segs = []
    while not w.done():
        if w.b != seg_b: seg_b = w.b; segs.append(w.b)
        if u % W == wg: out.append((u, w.b, w.k))
        u += 1; w.next()
    return out, segs

random.seed(1)
for trial in range(3000):
    batch = random.choice([0, 1, 2, 3, 5, 7, 16, 33, 64])
    next_n = random.choice([1, 2])
    max_len = random.choice([1, 63, 64, 65, 300, 2000, 4100])
    num_sms = random.choice([1, 2, 3, 7, 16, 132])
    mode = random.random()
    ctx = []
    for i in range(batch*next_n):
        r = random.random()
        ctx.append(0 if r < 0.1 else -5 if r < 0.13 else max_len + 9 if r < 0.18 else random.randint(1, max_len))
    bt = [[random.randint(0, 10**6) for _ in range((max_len+63)//64 + 64)] for _ in range(batch)]
    sched = schedule(ctx, batch, next_n, max_len, num_sms)
    args = (sched, ctx, max_len, batch, next_n)
    allu = [(b, k) for b in range(batch) for k in range(nb_of(ctx, b, next_n, max_len))]
    for ctas, variants in ((1, ("shared2", "shared4")), (2, ("dual2",))):
        for var in variants:
            seen = []
            for cta in range(num_sms*ctas):
                prod, psegs = producer(args, cta, ctas, bt, var == "dual2")
                W = 4 if var == "shared4" else 2
                got = []
                for wg in range(W):
                    m, msegs = math_shared(args, cta, ctas, W, wg)
                    assert msegs == psegs, (var, msegs, psegs)
                    assert [x for x in prod if x[0] % W == wg] == m, (var, cta, wg)
                    got += m
                assert sorted(got) == prod
                seen += [(b, k) for _, b, k in prod]
            assert sorted(seen) == allu, (var, trial)
print("sim: 3000 trials OK")
