// pmqa_walk_check.cpp -- host run of kernels/qg_paged_mqa_logits.cuh's walks (the text between
// its "the walks" markers, extracted by tools/pmqa_walk_check.sh): for random context lengths,
// the schedule kernel's split (ported below) and random, inconsistent schedules, every CTA's
// producer walk (qg_pmqa_walk) against each math warpgroup's loop over the strided walk
// (qg_pmqa_swalk, the loop of the kernel's math branch re-stated here): the same segments in
// the same order (the q ring's barrier counts), unit u = wg + W j of the CTA with the
// producer's (b, k), stage u % STAGES and parity (u / STAGES) & 1; and for consistent
// schedules every unit exactly once over the CTAs. QG_PMQA_CTAS 1 or 2, W 2, 3, 4. split4's
// producer warp i runs warpgroup i's walk (first unit i): its block-table window is checked too.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
using std::min; using std::max;
struct dim { unsigned x; };
static dim blockIdx;
#define QG_DEVICE inline
#define __ldg(p) (*(p))
static int QG_PMQA_NEXT_N_RT = 1;
#define QG_PMQA_NEXT_N QG_PMQA_NEXT_N_RT
#define QG_PMQA_BLOCK 64
#define QG_PMQA_STRIDE_WALK 1
#include "pmqa_walks.inc"

struct Unit { int u, b, k; bool operator==(const Unit &o) const { return u == o.u && b == o.b && k == o.k; } };

static int nb_of(const std::vector<int> &ctx, int b, int max_len) { return qg_pmqa_nb(ctx.data(), b, max_len); }

static std::vector<int> schedule(const std::vector<int> &ctx, int batch, int max_len, int n) {
    std::vector<long long> nbs(batch);
    long long total = 0;
    for (int b = 0; b < batch; ++b) total += nbs[b] = nb_of(ctx, b, max_len);
    std::vector<int> s(2 * (n + 1), -7);
    s[2 * n] = batch, s[2 * n + 1] = 0;
    if (total == 0) { for (int i = 0; i < n; ++i) s[2 * i] = batch, s[2 * i + 1] = 0; return s; }
    long long p = 0;
    for (int b = 0; b < batch; ++b) {
        if (nbs[b] > 0)
            for (long long i = (p * n + total - 1) / total; i < n; ++i) {
                long long u = i * total / n;
                if (u >= p + nbs[b]) break;
                s[2 * i] = b, s[2 * i + 1] = (int)(u - p);
            }
        p += nbs[b];
    }
    return s;
}

int main() {
    srand(11);
    long long units = 0, checks = 0;
    int bad = 0;
    for (int trial = 0; trial < 4000 && bad < 5; ++trial) {
        const int batches[] = {0, 1, 2, 3, 5, 7, 16, 33, 64};
        const int lens[] = {1, 63, 64, 65, 130, 300, 2000, 4100};
        const int smss[] = {1, 2, 3, 7, 16, 132};
        const int batch = batches[rand() % 9], max_len = lens[rand() % 8], sms = smss[rand() % 6];
        QG_PMQA_NEXT_N_RT = 1 + rand() % 2;
        std::vector<int> ctx(batch * QG_PMQA_NEXT_N_RT + 1);
        for (auto &c : ctx) {
            int r = rand() % 100;
            c = r < 10 ? 0 : r < 13 ? -5 : r < 18 ? max_len + 9 : r < 30 ? 1 + rand() % 64 : 1 + rand() % max_len;
        }
        const bool garbage = trial % 5 == 4; /* an inconsistent schedule: the walks must still agree */
        std::vector<int> sched = schedule(ctx, batch, max_len, sms);
        if (garbage)
            for (auto &v : sched) v = rand() % 4 == 0 ? rand() % (batch + 3) - 1 : rand() % 8 == 0 ? rand() % 200 - 3 : v;
        std::vector<std::pair<int, int>> seen;
        for (int cta = 0; cta < sms * QG_PMQA_CTAS; ++cta) {
            blockIdx.x = (unsigned)cta;
            qg_pmqa_walk pw;
            pw.init(sched.data(), ctx.data(), max_len, batch);
            std::vector<Unit> prod;
            std::vector<int> psegs;
            int seg = -1;
            for (int u = 0; !pw.done(); ++u) {
                if (pw.b != seg) psegs.push_back(seg = pw.b);
                prod.push_back({u, pw.b, pw.k});
                seen.push_back({pw.b, pw.k});
                pw.next(batch);
            }
            units += prod.size();
            for (int W = 2; W <= 4; ++W) {
                const int STAGES = W * (1 + rand() % 6);
                for (int wg = 0; wg < W; ++wg) {
                    /* the kernel's math loop, QG_PMQA_STRIDE_WALK */
                    qg_pmqa_swalk wk;
                    std::vector<Unit> mine;
                    std::vector<int> msegs;
                    int s = wg, ph = 0, j = 0, guard = 0, win_b = -1, win_k = 0;
                    for (int ev = wk.init(sched.data(), ctx.data(), max_len, batch,
                                          (int)(blockIdx.x % QG_PMQA_CTAS) + QG_PMQA_CTAS * wg);
                         ev >= 0 && ++guard < 1000000;) {
                        if (ev > 0) { msegs.push_back(wk.b); ev = wk.settle(ctx.data(), max_len, batch); continue; }
                        const int u = wg + W * j++;
                        /* the unit's entry is the last segment reported (its q, weights, row) */
                        if (msegs.empty() || msegs.back() != wk.b) { printf("unit before its segment\n"); ++bad; }
                        if (s != u % STAGES || ph != (u / STAGES) % 2) { printf("stage/parity of u %d\n", u); ++bad; }
                        mine.push_back({u, wk.b, wk.k * 1});
                        /* split4's producer warp (the same walk, first unit wg): its block-table
                         * window, lane l holding entry win_k + W l of entry win_b (as the kernel) */
                        if (QG_PMQA_CTAS == 1) {
                            if (wk.b != win_b || wk.k >= win_k + 32 * W) win_b = wk.b, win_k = wk.k;
                            const int d = wk.k - win_k, lane = d / W;
                            if (d % W || lane < 0 || lane >= 32 || win_k + W * lane != wk.k) {
                                printf("split window: b %d k %d win_k %d\n", wk.b, wk.k, win_k);
                                ++bad;
                            }
                        }
                        s += W;
                        if (s >= STAGES) s -= STAGES, ph ^= 1;
                        wk.k += QG_PMQA_CTAS * W;
                        /* QG_PMQA_RUN: a unit before run_end() (taken at the run's start: the
                         * same entry b) is one settle() returns at once */
                        const int run_end = wk.run_end(), rk = wk.k;
                        ev = wk.settle(ctx.data(), max_len, batch);
                        if (rk < run_end && ev != 0) {
                            if (bad++ < 5) printf("run_end: b %d k %d run_end %d, settle %d\n", wk.b, rk, run_end, ev);
                        }
                    }
                    std::vector<Unit> want;
                    for (auto &x : prod) if (x.u % W == wg) want.push_back(x);
                    ++checks;
                    if (msegs != psegs || mine != want) {
                        if (bad++ < 5)
                            printf("MISMATCH trial %d%s batch %d sms %d cta %d W %d wg %d: segs %zu/%zu units %zu/%zu\n",
                                   trial, garbage ? " (garbage schedule)" : "", batch, sms, cta, W, wg,
                                   msegs.size(), psegs.size(), mine.size(), want.size());
                    }
                }
            }
        }
        if (!garbage) {
            std::vector<std::pair<int, int>> all;
            for (int b = 0; b < batch; ++b) for (int k = 0; k < nb_of(ctx, b, max_len); ++k) all.push_back({b, k});
            std::sort(seen.begin(), seen.end());
            if (seen != all && bad++ < 5) printf("coverage: trial %d\n", trial);
        }
    }
    printf("%s: CTAS %d, %lld producer units, %lld warpgroup walks compared, %d mismatches\n",
           bad ? "FAIL" : "PASS", QG_PMQA_CTAS, units, checks, bad);
    return bad ? 1 : 0;
}
