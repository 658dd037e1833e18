#include <stdio.h>
#include <string.h>
#include "indexer_plan.h"
int main(int argc, char **argv) {
    const char *names[] = {"split4r112x", "split4r112p", "split4r112u"};
    for (int vi = 0; vi < 3; ++vi)
    for (int nn = 1; nn <= 2; ++nn) for (int h = 32; h <= 64; h *= 2)
    for (int d = 32; d <= 128; d *= 2) for (int cl = 0; cl < 2; ++cl) for (int bf = 0; bf < 2; ++bf) {
        qg_pmqa_plan p; const char *why = 0;
        if (qg__pmqa_plan(4096, nn, h, d, cl, bf, 132, &p, &why)) { printf("plan fail %s\n", why); return 1; }
        int v = vi == 0 ? QG_PMQA_VARIANT_SPLIT4R112X : vi == 1 ? QG_PMQA_VARIANT_SPLIT4R112P : QG_PMQA_VARIANT_SPLIT4R112U;
        if (qg__pmqa_plan_variant(&p, v)) return 2;
        char buf[4096], fn[128];
        if (qg__pmqa_source(buf, sizeof buf, &p) < 0) return 3;
        snprintf(fn, sizeof fn, "%s_n%d_h%d_d%d_c%d_b%d.cu", names[vi], nn, h, d, cl, bf);
        FILE *f = fopen(fn, "w"); fputs(buf, f); fclose(f);
    }
    return 0;
}
